"""Displayable objects: a board and an investigation result.

Both implement ``_repr_mimebundle_``. Every board display carries the board snapshot
(:data:`MIME_TYPE`, drawn by the JupyterLab extension as the interactive graph, with no
kernel) beside ``text/html`` (inline SVG) and ``text/markdown`` for GitHub, nbviewer
and nbconvert. A *live* view adds the ipywidgets board widget, which follows a running
investigation; the ``%%investigate`` magic shows a live view while it runs and then
replaces it by a snapshot view, so the saved notebook reopens with the graph instead of
a widget whose kernel state is gone.

Every text/markdown and text/html part goes through :mod:`d2_notebook.safe_markdown`
(board text escaped; a report's HTML, images and unsafe links made text) and every
text/plain part through :func:`~d2_notebook.terminal_text.terminal_safe`: opening or
printing a display loads, runs and controls nothing.
"""

from __future__ import annotations

import asyncio
import os
from html import escape
from typing import Any

from d2_notebook.board import Board
from d2_notebook.errors import D2Error
from d2_notebook.notebook.board_faults import shows_board_faults
from d2_notebook.notebook.snapshot import board_snapshot
from d2_notebook.notebook.static import (
    board_html,
    board_markdown,
    board_svg,
    header_html,
    header_text,
)
from d2_notebook.notebook.style import MIME_TYPE
from d2_notebook.safe_markdown import escape_markdown, markdown_html, safe_markdown
from d2_notebook.terminal_text import terminal_safe

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


class BoardView:
    """A board to display: its snapshot with static fallbacks, and when ``live`` the
    :class:`~d2_notebook.notebook.widget.BoardWidget`.

    The widget is created on first live display (or first access of :attr:`widget`),
    so a view built outside a kernel costs nothing.
    """

    def __init__(self, board: Board, *, show_redundant: bool = True,
                 live: bool = False, interactive: bool = True,
                 investigation: str | None = None,
                 starting_after: str | None = None) -> None:
        """Wrap ``board``.

        Args:
            board: the board to show (read only).
            investigation: the investigation to show when the board holds several
                (``"I1"``); None: the newest (the live widget follows the newest, so a
                run that adds one shows it, and offers a dropdown to switch).
            starting_after: the live widget waits for a run to add an investigation
                after this one, showing an empty graph meanwhile (see
                :class:`~d2_notebook.notebook.widget.BoardWidget`).
            show_redundant: the widget starts with redundant evidence shown (dimmed).
            live: add the live widget to the display (it follows the board while an
                investigation writes it); otherwise the snapshot is the interactive view.
            interactive: False leaves out the snapshot and the widget (static HTML and
                Markdown only).
        """
        self.board = board
        self.show_redundant = show_redundant
        self.live = live
        self.interactive = interactive
        self.investigation = investigation
        self.starting_after = starting_after
        self._widget: Any = None

    @property
    def widget(self) -> Any:
        """The live widget (a :class:`~d2_notebook.notebook.widget.BoardWidget`)."""
        if self._widget is None:
            from d2_notebook.notebook.widget import BoardWidget

            self._widget = BoardWidget(self.board, show_redundant=self.show_redundant,
                                       investigation=self.investigation,
                                       starting_after=self.starting_after)
        return self._widget

    def refresh(self) -> None:
        """Bring the widget (if created) up to date with the board."""
        if self._widget is not None:
            self._widget.refresh()

    def __repr__(self) -> str:
        shown = "" if self.investigation is None else f", investigation={self.investigation!r}"
        return f"BoardView({self.board.path!r}{shown})"

    @property
    def _shown(self) -> str | None:
        """The investigation the static parts show: the widget's when it exists (its
        dropdown may have switched), else the one asked for (None: the newest)."""
        return self._widget.investigation_id if self._widget is not None else self.investigation

    @shows_board_faults("text/html")
    def _repr_html_(self) -> str:
        return board_html(self.board, investigation_id=self._shown)

    @shows_board_faults("text/markdown")
    def _repr_markdown_(self) -> str:
        return board_markdown(self.board, self._shown)

    @shows_board_faults()  # a damaged board: one line naming it and the fix
    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        shown = self._shown
        markdown = board_markdown(self.board, shown)
        bundle: dict[str, Any] = {
            "text/plain": terminal_safe(f"{self!r}\n{header_text(self.board, shown)}"),
            "text/html": board_html(self.board, investigation_id=shown),
            "text/markdown": markdown,
        }
        if self.interactive:
            bundle[MIME_TYPE] = board_snapshot(self.board, investigation_id=shown)
            if self.live:
                bundle.update(_widget_bundle(self.widget))
        return bundle


class InvestigationView:
    """An :class:`~d2_notebook.detective.InvestigationResult` to display: the report and
    (unless ``show_graph=False``) the audit graph."""

    def __init__(self, result: Any, *, show_graph: bool = True) -> None:
        """Wrap ``result``; the magic passes ``show_graph=False`` when the live board is
        already shown above."""
        self.result = result
        self.show_graph = show_graph

    def __repr__(self) -> str:
        return (f"InvestigationView({self.result.investigation_id}, "
                f"state={self.result.state!r})")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        result = self.result
        stop = f"Stopped early: {result.stop_reason}" if result.stop_reason else ""
        markdown = safe_markdown(result.report)
        if stop:
            markdown += f"\n*{escape_markdown(stop)}*\n"
        html = f"<div>{markdown_html(markdown)}</div>"
        plain = f"{self!r}\n{result.report}" + (f"\n\n{stop}" if stop else "")
        charts = _cited_charts(result.board, result.report or "")
        if charts:
            html += f"<h4>Charts of the cited evidence</h4>{charts}"
        if self.show_graph:
            shown = result.investigation_id
            html = (f"{header_html(result.board, shown)}{html}<h4>Audit graph</h4>"
                    f"{board_svg(result.board, investigation_id=shown)}")
            markdown += "\n" + board_markdown(result.board, shown)
            plain += "\n\n" + header_text(result.board, shown)
        bundle: dict[str, Any] = {"text/plain": terminal_safe(plain),
                                  "text/markdown": markdown, "text/html": html}
        if self.show_graph:
            bundle[MIME_TYPE] = board_snapshot(result.board, investigation_id=shown)
        return bundle


def show(board: Board | str | os.PathLike[str], *, show_redundant: bool = True,
         live: bool = False, investigation: str | None = None) -> BoardView:
    """A displayable view of a board (an open one, or the path of a board file);
    ``live=True`` adds the widget, for a board another process is writing.

    A board holding several investigations (a follow-up, an ``--append`` re-run) is
    shown one investigation at a time: ``investigation`` (``"I1"``), by default the
    newest; the view names the others, and the live widget switches between them.

    A path is opened read-only: showing never writes to the file or beside it (an
    empty or foreign file is refused untouched, an older board is shown unmigrated).

    Raises:
        BoardError: the path is not a board file, or ``investigation`` is not on it
            (the message names the ids it holds); shown as one line in a notebook.
    """
    from d2_notebook.board.scopes import choose_investigation
    from d2_notebook.notebook.paths import open_existing_board

    opened = board if isinstance(board, Board) else open_existing_board(board, read_only=True)
    choose_investigation(opened, investigation,
                         option="show(board, investigation=...)")
    return BoardView(opened, show_redundant=show_redundant, live=live,
                     investigation=investigation)


def _cited_charts(board: Board, report: str) -> str:
    from d2_notebook.notebook.report_html import cited_charts_html

    return cited_charts_html(board, report)


def _widget_bundle(widget: Any) -> dict[str, Any]:
    """The widget's own mime bundle (the widget-view mimetype and its plain text)."""
    bundle = widget._repr_mimebundle_()
    return {k: v for k, v in (bundle or {}).items() if k != "text/plain"}


class BackgroundRunView:
    """The placeholder a ``%%investigate --background`` cell shows, replaced in place
    when the run ends: by the report (:class:`InvestigationView`) when it finished, by
    one line naming the error and the way to resume when it failed or was cancelled.

    The magic displays it with a display id and calls :meth:`finished` or
    :meth:`failed` from the run itself, then updates that display.
    """

    def __init__(self, board_path: str, handle_name: str | None = None) -> None:
        """A running placeholder for the run on ``board_path``; ``handle_name`` is the
        ``--out`` name the run handle is bound to (None: not bound)."""
        self.board_path = board_path
        self.handle_name = handle_name
        self.result: Any = None
        self.error: str | None = None

    @property
    def running(self) -> bool:
        """True until :meth:`finished` or :meth:`failed` is called."""
        return self.result is None and self.error is None

    def finished(self, result: Any) -> None:
        """The run ended with ``result`` (an ``InvestigationResult``)."""
        self.result = result

    def failed(self, error: BaseException) -> None:
        """The run ended with ``error`` (a cancellation included)."""
        resume = f"--resume --board {self.board_path}"
        if isinstance(error, asyncio.CancelledError):
            self.error = f"investigation cancelled: the board is left resumable ({resume})"
        elif isinstance(error, D2Error):
            self.error = f"investigation stopped: {_one_line(str(error))}"
        else:
            self.error = (f"investigation stopped: {type(error).__name__}: "
                          f"{_one_line(str(error))} (the board is left resumable: {resume})")

    def __repr__(self) -> str:
        if self.error is not None:
            return self.error
        if self.result is not None:
            return f"investigation {self.result.investigation_id} {self.result.state}"
        handle = (f"{self.handle_name}.wait(), {self.handle_name}.cancel()"
                  if self.handle_name else "pass --out NAME for a handle: NAME.wait(), "
                  "NAME.cancel()")
        return (f"investigation running in the background on {self.board_path}; the "
                f"report replaces this line when it ends ({handle})")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        if self.result is not None:
            return InvestigationView(self.result, show_graph=False)._repr_mimebundle_()
        text = repr(self)
        style = "color:#c62828" if self.error is not None else "color:#616161"
        return {"text/plain": terminal_safe(text),
                "text/html": f"<div class='d2-run' style='{style}'>{escape(text)}</div>"}


def _one_line(text: str) -> str:
    return " ".join(text.split())
