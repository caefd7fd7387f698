"""QueryResult: what one guarded query returned, and a compact text preview for models."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

__all__ = ["QueryResult"]


@dataclass(frozen=True, eq=False)
class QueryResult:
    """The outcome of one statement run by :class:`~d2_notebook.data.GuardedSQL`.

    Attributes:
        sql: The statement that actually ran (normalized: comments and trailing ``;``
            removed).
        frame: The rows kept, at most ``max_rows`` of them, in the order DuckDB returned.
        row_count: The true number of rows the statement produces. Equal to
            ``len(frame)`` unless ``truncated``; ``None`` only when truncated and the
            count could not be computed in time (or the statement is not countable).
        truncated: True when the statement produced more rows than were kept.
        duration_s: Wall-clock seconds spent running and fetching (and counting).
    """

    sql: str
    frame: pd.DataFrame
    row_count: int | None
    truncated: bool
    duration_s: float

    @property
    def columns(self) -> list[str]:
        """Column names, in order."""
        return [str(c) for c in self.frame.columns]

    @property
    def dtypes(self) -> dict[str, str]:
        """Column name -> pandas dtype name."""
        return {str(c): str(t) for c, t in self.frame.dtypes.items()}

    def preview(self, max_rows: int = 20, max_chars: int = 4000, max_colwidth: int = 40) -> str:
        """Render a compact, deterministic text table for a language model.

        Args:
            max_rows: Rows shown at most (the first ones).
            max_chars: Hard cap on the length of the returned text.
            max_colwidth: Cell text longer than this is cut.

        Returns:
            A header line with the row count, the table, and a note when rows were cut.
        """
        total = self.row_count if self.row_count is not None else f"more than {len(self.frame)}"
        header = f"{total} rows x {len(self.frame.columns)} columns"
        if self.frame.empty:
            return f"{header}\ncolumns: {', '.join(self.columns) or '(none)'}"[:max_chars]
        shown = self.frame.head(max_rows)
        body = shown.to_string(index=False, max_colwidth=max_colwidth)
        hidden = (self.row_count if self.row_count is not None else len(self.frame)) - len(shown)
        note = f"\n... {hidden} more rows not shown" if hidden > 0 or self.truncated else ""
        text = f"{header}\n{body}{note}"
        if len(text) > max_chars:
            cut = f"\n... (preview cut at {max_chars} chars)"
            text = text[: max(0, max_chars - len(cut))] + cut
        return text
