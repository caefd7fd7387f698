"""How many tokens a model can read, and how many tokens a text is.

Context windows are looked up like prices (:mod:`.pricing`): by the *longest matching
prefix* of the model id, provider prefix ignored, in an editable table. A model not in
the table gets :data:`DEFAULT_CONTEXT_TOKENS`; set its real window with
:func:`set_context_window`, or per investigation with the setting
``context_window_tokens``.

Token counts are *estimates*: no tokenizer can be downloaded where this runs, and the
providers' tokenizers differ. :func:`estimate_tokens` counts one token per 3
characters. Claude's and GPT's tokenizers average 3.5–4.5 characters per token on
English prose and 2.5–3.5 on tables of numbers, ids and SQL, so the estimate is a
little high for prose and about right for query results: budgets made with it err on
the side of fitting.
"""

from __future__ import annotations

import math
import threading

CHARS_PER_TOKEN = 3.0
"""The estimate's ratio (see the module docstring for why 3)."""

DEFAULT_CONTEXT_TOKENS = 128_000
"""The window assumed for a model the table does not know (offline and local models)."""

DEFAULT_CONTEXT_WINDOWS: dict[str, int] = {
    "claude-": 200_000,  # every Claude 3.x and 4.x model (without the 1M-token beta)
    "gpt-5": 400_000,
    "gpt-4.1": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "o1": 200_000,
    "o3": 200_000,
    "o4-mini": 200_000,
}
"""Published context windows, in tokens, by model-id prefix."""


class ContextWindowTable:
    """A thread-safe, editable map of model-id prefixes to context windows."""

    def __init__(self, windows: dict[str, int] | None = None) -> None:
        """Start from ``windows`` (a copy of :data:`DEFAULT_CONTEXT_WINDOWS` when None)."""
        self._windows = dict(DEFAULT_CONTEXT_WINDOWS if windows is None else windows)
        self._lock = threading.Lock()

    def set_window(self, prefix: str, tokens: int) -> None:
        """Set the window of every model id starting with ``prefix``.

        Raises:
            ValueError: ``tokens`` is not positive.
        """
        if tokens < 1:
            raise ValueError(f"a context window must be at least 1 token, got {tokens}")
        with self._lock:
            self._windows[prefix] = tokens

    def window_for(self, model: str) -> int:
        """The window of ``model`` by longest matching prefix, else the default."""
        model_id = model.split(":", 1)[1] if ":" in model else model
        with self._lock:
            matches = [p for p in self._windows if model_id.startswith(p)]
            return self._windows[max(matches, key=len)] if matches else DEFAULT_CONTEXT_TOKENS


CONTEXT_WINDOWS = ContextWindowTable()
"""The table used when none is passed explicitly."""


def set_context_window(prefix: str, tokens: int) -> None:
    """Set a model family's window in the shared table :data:`CONTEXT_WINDOWS`."""
    CONTEXT_WINDOWS.set_window(prefix, tokens)


def context_window(model: str, table: ContextWindowTable | None = None) -> int:
    """The context window of ``model``, in tokens (shared table unless ``table``)."""
    return (table or CONTEXT_WINDOWS).window_for(model)


def estimate_tokens(text: str) -> int:
    """An upper-leaning estimate of the tokens of ``text`` (see the module docstring)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)
