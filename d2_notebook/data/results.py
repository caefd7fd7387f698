"""QueryResult: what one guarded query returned, and a compact text preview for models."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pandas as pd

from d2_notebook.data.fencing import escape_text
from d2_notebook.nested_values import is_nested, nested_text

__all__ = ["PREVIEW_SLACK", "PREVIEW_WHOLE_CHARS", "QueryResult", "cell_text", "text_table"]

PREVIEW_SLACK = 0.5
"""A result longer than ``max_rows`` by at most this fraction of it is previewed whole:
hiding the last 4 rows of 24 cost a real-model agent a query to fetch them, dearer than
the rows."""
PREVIEW_WHOLE_CHARS = 3_000
"""A stored result whose whole table takes at most this many characters (about 1,000
tokens) is previewed whole, however many rows: real-model agents spent a turn fetching
the 12 or 35 rows a preview hid of a narrow 32- or 55-row result, which costs more than
showing them."""


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

    more_rows_hint: ClassVar[str] = ("(to read them, narrow the query or page through it "
                                     "with ORDER BY and LIMIT/OFFSET)")
    """How a reader sees the rows a preview leaves out (a class-level default)."""

    @property
    def columns(self) -> list[str]:
        """Column names, in order."""
        return [str(c) for c in self.frame.columns]

    @property
    def dtypes(self) -> dict[str, str]:
        """Column name -> pandas dtype name."""
        return {str(c): str(t) for c, t in self.frame.dtypes.items()}

    def preview(
        self, max_rows: int = 20, max_chars: int = 8000, max_colwidth: int = 400
    ) -> str:
        """Render a compact, deterministic text table for a language model.

        Args:
            max_rows: Rows shown (the first ones); when at most
                ``max_rows * (1 + PREVIEW_SLACK)`` rows are kept, or the whole table takes
                at most :data:`PREVIEW_WHOLE_CHARS` characters (and ``max_chars``), all of
                them are.
            max_chars: Hard cap on the length of the returned text; when it cuts rows
                off, the last line says how many rows were shown out of how many.
            max_colwidth: Cell text longer than this is cut; a note then says how to
                read the rest.

        Returns:
            A header line with the row count, the table, and notes when rows or cells
            were cut.
        """
        total = self.row_count if self.row_count is not None else f"more than {len(self.frame)}"
        header = f"{total} rows x {len(self.frame.columns)} columns"
        if self.frame.empty:
            names = ", ".join(escape_text(c) for c in self.columns) or "(none)"
            return f"{header}\ncolumns: {names}"[:max_chars]
        shown, laid_out = self.frame, None
        if len(shown) > max_rows * (1 + PREVIEW_SLACK):
            laid_out = _table_within(shown, max_colwidth, min(PREVIEW_WHOLE_CHARS, max_chars))
            if laid_out is None:
                shown = shown.head(max_rows)
        table, long_cells = laid_out or text_table(shown, max_colwidth)
        hidden = (f"{self.row_count - len(shown)} more rows" if self.row_count is not None
                  else "more rows (how many was not counted in time)")
        more = (f"... {hidden} not shown {self.more_rows_hint}"
                if len(shown) < len(self.frame) or self.truncated else "")
        text = _join(header, table, more, _cell_note(long_cells, max_colwidth))
        if len(text) <= max_chars:
            return text
        # Too long: keep the rows that fit whole, then say what was left out (last line).
        for kept in range(len(shown) - 1, 0, -1):
            note = _cell_note(long_cells[:kept], max_colwidth)
            text = _join(header, table[: kept + 1], note, _cut_note(max_chars, kept, total))
            if len(text) <= max_chars:
                return text
        # Not even one row fits: show the start of the first one.
        note, cut = _cell_note(long_cells[:1], max_colwidth), _cut_note(max_chars, 0, total)
        room = max(0, max_chars - len(_join(header, note, cut)) - 5)
        partial = "\n".join(table[:2])[:room] + " ..."
        return _join(header, partial, note, cut)[:max_chars]


def _table_within(frame: pd.DataFrame, max_colwidth: int,
                  limit: int) -> tuple[list[str], list[bool]] | None:
    """:func:`text_table` of ``frame`` when it takes at most ``limit`` characters, else
    None (only frames of at most ``limit // 2`` rows are laid out to tell: each line takes
    two at least)."""
    if len(frame) > limit // 2:
        return None
    laid_out = text_table(frame, max_colwidth)
    return laid_out if sum(len(line) + 1 for line in laid_out[0]) <= limit else None


def text_table(frame: pd.DataFrame, max_colwidth: int = 400) -> tuple[list[str], list[bool]]:
    """``frame`` as aligned text lines (header first), and which rows had a cell cut.

    A plain formatter, ~50× faster than ``DataFrame.to_string`` on the small results
    an agent reads: numbers right-aligned, missing values as ``NULL``, cells longer than
    ``max_colwidth`` cut with ``…``.
    """
    columns = [escape_text(str(c)) for c in frame.columns]
    numeric = [pd.api.types.is_numeric_dtype(t) and not pd.api.types.is_bool_dtype(t)
               for t in frame.dtypes]
    cells: list[list[str]] = []
    long_cells: list[bool] = []
    for row in frame.itertuples(index=False, name=None):
        texts = [cell_text(value) for value in row]
        long_cells.append(any(len(t) > max_colwidth for t in texts))
        cells.append([t if len(t) <= max_colwidth else t[: max_colwidth - 1] + "…"
                      for t in texts])
    widths = [max([len(name), *(len(r[i]) for r in cells)]) for i, name in enumerate(columns)]

    def line(texts: list[str]) -> str:
        return "  ".join(t.rjust(w) if right else t.ljust(w)
                         for t, w, right in zip(texts, widths, numeric, strict=True)).rstrip()

    return [line(columns), *(line(r) for r in cells)], long_cells


def cell_text(value: object) -> str:
    """One cell as :func:`text_table` writes it (``NULL`` for a missing value, floats to
    six decimals), uncut."""
    if value is None or value is pd.NA or value is pd.NaT:
        return "NULL"
    if isinstance(value, float):
        if value != value:
            return "NULL"
        if abs(value) < 1e12:
            return f"{value:.6f}".rstrip("0").rstrip(".") or "0"
        return f"{value:.6g}"
    if is_nested(value):  # a list as [1, 2], not NumPy's [1 2]
        return escape_text(nested_text(value))
    return escape_text(str(value))  # one row, one line: no character starts a new one


def _cut_note(max_chars: int, kept: int, total: int | str) -> str:
    return (
        f"... preview cut at {max_chars} characters: {kept} of {total} rows shown in full; "
        "select fewer rows or columns to see more"
    )


def _cell_note(long_cells: list[bool], max_colwidth: int) -> str:
    if not any(long_cells):
        return ""
    return (
        f"(cells longer than {max_colwidth} characters were cut; select that column alone, "
        f"or use substr(col, {max_colwidth + 1}, {max_colwidth}), to read the rest)"
    )


def _join(*parts: str | list[str]) -> str:
    lines: list[str] = []
    for part in parts:
        lines.extend(part if isinstance(part, list) else [part] if part else [])
    return "\n".join(lines)
