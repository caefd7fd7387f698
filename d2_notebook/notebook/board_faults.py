"""A board display that meets a fault shows one line, not a traceback.

A board can turn out damaged only when a display reads it (an unknown status, a result
that does not decode, a corrupt page). IPython prints a traceback when a ``_repr_*_``
method raises; :func:`shows_board_faults` turns a :class:`~d2_notebook.errors.BoardError`
into the line that names the board and the fix, in every format of the display.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from html import escape
from typing import Any, TypeVar

from d2_notebook.errors import BoardError

R = TypeVar("R")


def fault_bundle(exc: BoardError) -> dict[str, str]:
    """One line naming the fault and the fix, in every format a display may use."""
    kind, message = type(exc).__name__, str(exc)
    return {"text/plain": f"{kind}: {message}",
            "text/markdown": f"**{escape(kind)}:** {escape(message)}",
            "text/html": f"<pre>{escape(kind)}: {escape(message)}</pre>"}


def shows_board_faults(mime: str | None = None) -> Callable[[Callable[..., R]],
                                                           Callable[..., Any]]:
    """Decorate a ``_repr_*_`` method: a BoardError it raises becomes :func:`fault_bundle`
    (the whole bundle when ``mime`` is None, else that format's text)."""

    def wrap(render: Callable[..., R]) -> Callable[..., Any]:
        @functools.wraps(render)
        def shown(*args: Any, **kwargs: Any) -> Any:
            try:
                return render(*args, **kwargs)
            except BoardError as exc:
                bundle = fault_bundle(exc)
                return bundle if mime is None else bundle[mime]

        return shown

    return wrap
