"""What an analysis tool returns: a QueryResult with the rows, a summary and typed flags."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from enum import Enum

import pandas as pd

from d2_notebook.data.fencing import escape_lines
from d2_notebook.data.results import QueryResult

__all__ = ["AnalysisResult", "AnalysisTool", "Flag", "FlagKind", "capped", "escaped_summary"]


class AnalysisTool(Enum):
    """The analysis tools (the values are the tool names models call)."""

    SEGMENT_SCAN = "segment_scan"
    COMPARE_WITHIN = "compare_within"
    TREND = "trend"
    DECOMPOSE = "decompose"


class FlagKind(Enum):
    """What a flag reports; the summary leads with the flags in these words."""

    SEGMENT = "segment"
    CONFOUNDING = "confounding"
    SIMPSONS_PARADOX = "Simpson's paradox"
    HETEROGENEITY = "heterogeneity"
    CHANGE_POINT = "change point"
    SEASON = "season"
    TREND = "trend"
    DRIVER = "driver"
    MIX_SHIFT = "mix shift"
    """A segment whose own metric moved beyond chance and whose contribution to a change
    between two periods is material (``decompose``); a MIX SHIFT is a dimension whose
    segments' share of the rows moved, by a material amount of the change."""


@dataclass(frozen=True)
class Flag:
    """One finding that passed its test after correction for the number of tests.

    Attributes:
        kind: What it is.
        dimension: The dimension it concerns (None for the whole metric, e.g. a trend).
        text: One sentence a model reads, with the figures.
    """

    kind: FlagKind
    dimension: str | None
    text: str


@dataclass(frozen=True, eq=False)
class AnalysisResult(QueryResult):
    """A :class:`QueryResult` whose ``sql`` is the generated one-pass statement.

    Attributes:
        tool: Which tool produced it.
        summary: The text a model reads: flags first, in words, then the leading rows.
        flags: The flags, typed.
    """

    tool: AnalysisTool = AnalysisTool.SEGMENT_SCAN
    summary: str = ""
    flags: tuple[Flag, ...] = ()

    @property
    def more_rows_hint(self) -> str:  # type: ignore[override]
        """How to see the rows left out: a trend's rows are periods, not dimensions (a
        collector was told to name fewer dimensions, an input trend does not have)."""
        if self.tool is AnalysisTool.TREND:
            return "(a coarser grain or a narrower where gives fewer periods)"
        return "(name fewer dimensions to see theirs whole)"

    def preview(self, max_rows: int = 20, max_chars: int = 8000,
                max_colwidth: int = 400) -> str:
        """The summary, then the table of rows (as :meth:`QueryResult.preview`)."""
        table = super().preview(max_rows=max_rows, max_chars=max(0, max_chars
                                                                    - len(self.summary) - 2),
                                max_colwidth=max_colwidth)
        return f"{self.summary}\n\n{table}"[:max_chars]


def capped(
    tool: AnalysisTool, sql: str, frame: pd.DataFrame, max_rows: int, duration_s: float,
    summary: str, flags: list[Flag],
) -> AnalysisResult:
    """An AnalysisResult keeping at most ``max_rows`` rows (like any guarded query).

    The summary and the flags' texts quote the database's names and values (segments,
    strata, columns): each one holding a line break or another unsafe character is shown
    escaped (:func:`~d2_notebook.data.fencing.escape_lines`), so no value can start a
    forged line in the prompt that reads them."""
    quoted = _database_text(sql, frame)
    summary = escape_lines(summary, quoted)
    flags = [replace(flag, text=escape_lines(flag.text, quoted)) for flag in flags]
    truncated = len(frame) > max_rows
    kept = frame.iloc[:max_rows].reset_index(drop=True) if truncated else frame
    return AnalysisResult(sql, kept, len(frame), truncated, duration_s, tool, summary,
                          tuple(flags))


def escaped_summary(summary: str, sql: str, frame: pd.DataFrame) -> str:
    """``summary`` with the database names and values it quotes escaped (those of
    ``frame`` and of the generated ``sql``): see :func:`capped`. Also for a summary
    stored before summaries were escaped, served again with its stored rows."""
    return escape_lines(summary, _database_text(sql, frame))


_QUOTED = re.compile(r""""((?:[^"]|"")*)"|'((?:[^']|'')*)'""")
"""A quoted identifier or a string literal of the generated SQL."""


def _database_text(sql: str, frame: pd.DataFrame) -> set[str]:
    """The names and values a summary may quote: the result's column names and text
    cells, and the identifiers and literals its generated SQL quotes (the dimensions'
    column names, which the result holds only as labels)."""
    found = {str(name) for name in frame.columns}
    for name in frame.columns:
        column = frame[name]
        if column.dtype == object or pd.api.types.is_string_dtype(column):
            found.update(str(value) for value in column.dropna().unique())
    for identifier, literal in _QUOTED.findall(sql):
        found.add(identifier.replace('""', '"') if identifier else literal.replace("''", "'"))
    return found
