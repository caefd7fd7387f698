"""The claim check: is every number in a report in the evidence it cites?

After the report is written, each number in it (see :mod:`.report_numbers` for what
counts as one) is looked up in the stored result rows of the evidence its sentence
cites, and in the verdict texts. Where to look:

1. the evidence ids (``E4``; ``Q3`` for the SQL-only baseline) of the number's
   sentence, else of its line, else of its section (the text under one heading);
2. when none of these cites anything the check knows, every evidence of the report;
3. always the verdict texts (and, from a board, the objective, the hypothesis
   statements, the evidence SQL, the settings and why collection stopped: restating
   them is not a claim).

An analysis evidence's own summary (the tool's words, not the recording agent's) counts
as that evidence's, like its rows, and so do its row count and the column statistics a
summarised view of it states (a median, a most-common count).

A quantity matches a stored value or a numeric column's total at the precision the
report wrote it (rounded or truncated; sign, percent and k/million forms allowed); with a
cited evidence, a quantity of two or more significant digits may also be the
difference, ratio or relative change of two of its values, or the total of the cells of
one of its columns that hold the other numbers of the sentence ("385 incidents: 92, 84,
78, 71 and 60 by agent"), and a number of days ("19 days") the span between two of its
dates or one of them and a date of the verdict texts.
Years match a value, a date part or a text cell; dates and times match as written.
Numbers not found are marked
"*(unverified)*" in :attr:`ClaimCheck.marked_report`, which ends with a one-line
summary. Checking a marked report again gives the same result (marks are removed
first).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from d2_notebook.board import Board
from d2_notebook.data.plain_cells import plain_frame
from d2_notebook.detective.date_spans import days_in_frame, days_in_text, says_days, spans
from d2_notebook.detective.evidence_view import tool_summary
from d2_notebook.detective.report_numbers import (
    NumberKind,
    ReportNumber,
    find_numbers,
    match_mask,
    matches_any,
    numbers_in_cells,
    numbers_in_text,
)
from d2_notebook.detective.result_summary import statistic_values

MARK = " *(unverified)*"
"""What follows an unverified number in the marked report."""
_FOOTER = re.compile(r"\n*---\n\*Claim check:[^\n]*\*\n*\Z")
_CITATION = re.compile(r"\b[EQ]\d+\b")
_HEADING = re.compile(r"^#{1,6}\s", re.MULTILINE)
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")
_CLAUSE_END = re.compile(r";|\s[\u2014\u2013]\s|\s--\s")
_MAX_DERIVED_VALUES = 200
MAX_SPAN_DATES = 12
"""A cited result with more dates than this gives no day spans unless the text names
its rows (see :meth:`_Source.day_spans`)."""


@dataclass(frozen=True)
class UnverifiedClaim:
    """A number of the report found neither in the evidence it cites nor in the verdicts.

    Attributes:
        number: the number as written ("23.7%").
        sentence: the sentence it is in.
        cited: the evidence ids that were searched because the text cites them (empty
            when nothing was cited and every evidence was searched).
    """

    number: str
    sentence: str
    cited: tuple[str, ...]


@dataclass(frozen=True)
class ClaimCheck:
    """The result of checking one report.

    Attributes:
        numbers_checked: numbers in the report that state a claim.
        unverified: those not found, in order of appearance.
        marked_report: the report with each unverified number marked, and a summary line.
    """

    numbers_checked: int
    unverified: tuple[UnverifiedClaim, ...]
    marked_report: str
    marked_text: str = ""
    """The text with each unverified number marked, without the summary line (for a
    short text stored on the board, such as a link's reading)."""

    @property
    def unverified_rate(self) -> float:
        """Share of checked numbers that are unverified; 0.0 when nothing was checked."""
        return len(self.unverified) / self.numbers_checked if self.numbers_checked else 0.0


@dataclass
class _Source:
    """What one evidence (or the verdict texts) offers to look numbers up in."""

    values: np.ndarray
    text: str
    days: np.ndarray = field(default_factory=lambda: np.empty(0), repr=False)
    """The dates it holds, as day numbers (see :mod:`.date_spans`)."""
    statistics: np.ndarray = field(default_factory=lambda: np.empty(0), repr=False)
    """Figures its summarised view states (:func:`.statistic_values`): matched as
    written, never combined (a mean over a count would match a share no row holds)."""
    _derived: np.ndarray | None = field(default=None, repr=False)
    derive_from: np.ndarray | None = field(default=None, repr=False)
    """The values whose pairs :meth:`derived` combines (None: all of ``values``)."""
    derive_days: np.ndarray | None = field(default=None, repr=False)
    """The dates whose spans count (None: all of ``days``, when they are few)."""
    columns: tuple[np.ndarray, ...] = field(default=(), repr=False)
    """Its numeric columns' values, column by column, for :meth:`stated_totals`."""
    _day_spans: dict[bytes, np.ndarray] = field(default_factory=dict, repr=False)

    @classmethod
    def of_frame(cls, frame: pd.DataFrame) -> _Source:
        """Its cells' values and numeric columns' totals, and apart, the statistics its
        summarised view states (a median, a most-common count, the row count)."""
        frame = plain_frame(frame)
        numbers: list[np.ndarray] = []
        columns: list[np.ndarray] = []
        texts: list[str] = []
        for name in frame.columns:
            column = frame[name]
            if pd.api.types.is_bool_dtype(column):
                texts.append(" ".join(map(str, column)))
            elif pd.api.types.is_numeric_dtype(column):
                values = column.dropna().to_numpy(dtype=float)
                numbers.append(values)
                columns.append(values[np.isfinite(values)])
                if len(values) > 1:  # a column's total ("81 interviews": 1+15+19+23+23)
                    numbers.append(np.array([values.sum()]))
            elif pd.api.types.is_datetime64_any_dtype(column):
                stamps = column.dropna()
                numbers.append(stamps.dt.year.to_numpy(dtype=float))
                texts.append(" ".join(map(str, stamps)))
            else:
                cells = " ".join(str(v) for v in column.dropna())
                texts.append(cells)
                numbers.append(np.array(numbers_in_cells(cells), dtype=float))
        values = np.concatenate(numbers) if numbers else np.empty(0)
        statistics = np.array(statistic_values(frame), dtype=float)
        return cls(values[np.isfinite(values)], "\n".join([" ".join(map(str, frame.columns)),
                                                          *texts]), days_in_frame(frame),
                   statistics=statistics[np.isfinite(statistics)], columns=tuple(columns))

    @classmethod
    def of_texts(cls, texts: Iterable[str]) -> _Source:
        """Numbers of ``texts``, except those marked unverified by an earlier check (a
        reading or verdict that states a figure no row holds is no source for it)."""
        joined = _without_marked("\n".join(texts))
        return cls(np.array(numbers_in_text(joined), dtype=float), joined, days_in_text(joined))

    def with_text(self, text: str) -> _Source:
        """This source with the numbers and words of ``text`` too (its dates too)."""
        return replace(self, values=np.concatenate([self.values,
                                                    np.array(numbers_in_text(text), float)]),
                       text=f"{self.text}\n{text}",
                       days=np.union1d(self.days, days_in_text(text)), _derived=None,
                       _day_spans={})

    def derived(self) -> np.ndarray:
        """Differences, ratios and relative changes of pairs of its distinct values."""
        if self._derived is None:
            base = self.values if self.derive_from is None else self.derive_from
            distinct = np.unique(base)[:_MAX_DERIVED_VALUES]
            a, b = np.meshgrid(distinct, distinct)
            with np.errstate(divide="ignore", invalid="ignore"):
                pairs = np.concatenate([(a - b).ravel(), (a / b).ravel(), ((a - b) / b).ravel()])
            self._derived = pairs[np.isfinite(pairs)]
        return self._derived

    def stated_totals(self, stated: list[ReportNumber]) -> np.ndarray:
        """Per numeric column, the total of its cells that hold a number of ``stated``
        (the other numbers of the sentence being checked), where two or more do:
        "Fred's 385 incidents are closed by Charlie 92, Fred 84, Luke 78, Howard 71 and
        Beth 60" adds up cells it names itself, which no two-value arithmetic finds."""
        totals = []
        for values in self.columns:
            held = np.zeros(len(values), dtype=bool)
            for number in stated:
                held |= match_mask(number, values)
            if held.sum() >= 2:
                totals.append(values[held].sum())
        return np.array(totals, dtype=float)

    def day_spans(self, text_days: np.ndarray) -> np.ndarray:
        """Days between two of its dates (those of the rows a text names, when it names
        some), or one of them and one of ``text_days`` (the question's, the SQL's). With
        no rows named, only a result of at most :data:`MAX_SPAN_DATES` dates counts:
        over a daily series every span up to its length is some pair's."""
        if self.derive_days is not None:
            base = self.derive_days
        elif self.days.size <= MAX_SPAN_DATES:
            base = self.days
        else:
            return np.empty(0)
        key = text_days.tobytes()
        if key not in self._day_spans:
            self._day_spans[key] = spans(base, np.concatenate([base, text_days]))
        return self._day_spans[key]


def check_claims(report: str, evidence_frames: Mapping[str, pd.DataFrame],
                 verdict_texts: Iterable[str], *,
                 also_cited: tuple[str, ...] = (),
                 derive_from: Mapping[str, pd.DataFrame] | None = None,
                 tool_summaries: Mapping[str, str] | None = None) -> ClaimCheck:
    """Look every number of ``report`` up in the evidence it cites and the verdict texts.

    Args:
        report: the Markdown report (marks of an earlier check are removed first).
        evidence_frames: the stored result rows of each evidence, by id.
        verdict_texts: texts whose numbers count as found (verdict rationales, ...).
        also_cited: evidence every number counts as citing besides what its text cites
            (a link's reading is about its evidence): differences and ratios of their
            values count too, as for a cited evidence.
        derive_from: for each evidence, the rows whose values' differences and ratios
            count (default: all its stored rows). Over many rows, two-value arithmetic
            matches almost any figure; a short text names the rows it reads.
        tool_summaries: for analysis evidence, the tool's own summary: its figures (the
            rows it scanned, an adjusted effect) are the evidence's as much as its rows.

    Returns:
        The count of numbers checked, the unverified ones and the marked report.
    """
    clean = strip_marks(report)
    sources = {key: _Source.of_frame(frame) for key, frame in evidence_frames.items()}
    for key, summary in (tool_summaries or {}).items():
        if key in sources:
            sources[key] = sources[key].with_text(summary)
    for key, rows in (derive_from or {}).items():
        if key in sources:
            named = _Source.of_frame(rows)
            sources[key].derive_from, sources[key].derive_days = named.values, named.days
    verdicts = _Source.of_texts(verdict_texts)
    cells = find_numbers(clean, small=True)  # what a sentence lists may be a total's cells
    numbers = [n for n in cells if not n.small_count]  # the claims: as find_numbers(clean)
    unverified: list[tuple[ReportNumber, UnverifiedClaim]] = []
    for number in numbers:
        cited, explicit = _where_to_look(clean, number, sources)
        if also_cited:
            cited = list(dict.fromkeys([*(cited if explicit else []),
                                        *(c for c in also_cited if c in sources)]))
            explicit = True
        if not _found(number, [sources[c] for c in cited], verdicts, explicit,
                      days=says_days(clean, number.end),
                      stated=_stated_groups(clean, number, cells)):
            unverified.append((number, UnverifiedClaim(
                number.text, _sentence(clean, number), tuple(cited) if explicit else ())))
    missing = [n for n, _ in unverified]
    return ClaimCheck(len(numbers), tuple(claim for _, claim in unverified),
                      _marked(clean, missing, len(numbers)), _marked(clean, missing, 0))


def _without_marked(text: str) -> str:
    """``text`` without the numbers an earlier check marked, found as it found them."""
    for number in reversed(find_numbers(text)):
        if text.startswith(MARK, number.end):
            text = f"{text[:number.start]} {text[number.end + len(MARK):]}"
    return text


def check_board_report(board: Board, investigation_id: str | None = None) -> ClaimCheck:
    """:func:`check_claims` on the stored report of an investigation (default: the last).

    See :func:`check_report` for what the report is checked against. An investigation
    without a report (or a board without investigations) gives an empty check.
    """
    investigations = board.list_investigations()
    if investigation_id is None and investigations:
        investigation_id = investigations[-1].id
    if investigation_id is None:
        return ClaimCheck(0, (), "")
    report = board.get_investigation(investigation_id).report
    return check_report(board, investigation_id, report) if report else ClaimCheck(0, (), "")


def check_report(board: Board, investigation_id: str, report: str, *,
                 queries: Mapping[str, pd.DataFrame] | None = None) -> ClaimCheck:
    """:func:`check_claims` on ``report``, a report of investigation ``investigation_id``.

    The evidence is the investigation's evidence on the board, plus ``queries`` (the
    results of the ``react_sql`` baseline's queries, by query id, which are not board
    evidence). The verdict texts are the verdicts' rationales, confidences and sizes, the
    objective, the hypothesis statements, the evidence SQL, and what the system itself
    wrote: the settings (budgets, limits) and why collection stopped. Without evidence or
    ``queries`` (a ``react_sql`` board read back later), the report is checked against
    the query results its agent read: the tool results of its recorded model calls.
    """
    investigation = board.get_investigation(investigation_id)
    evidence = board.list_evidence(investigation_id=investigation_id, include_reused=True)
    frames = {e.id: board.evidence_frame(e.id) for e in evidence}
    frames.update(queries or {})
    texts = [investigation.question, *(e.sql for e in evidence),
             json.dumps(investigation.settings)]
    texts += [str(event.payload.get("reason", "")) for event in board.events(
        kinds=["collection.stopped"]) if event.investigation_id == investigation_id]
    texts += [h.statement for h in board.list_hypotheses(investigation_id=investigation_id)]
    for verdict in board.list_verdicts():
        if verdict.investigation_id == investigation_id:
            texts += [verdict.rationale, f"confidence {verdict.confidence:.2f}"]
            if verdict.contribution is not None:  # as the board's own lines print it
                texts.append(verdict.contribution.describe())
    if not frames:
        texts += _tool_results(board, investigation_id)
    summaries = {e.id: tool_summary(e.description) for e in evidence
                 if board.tool_call_of(e.id) is not None}
    return check_claims(report, frames, texts, tool_summaries=summaries)


def strip_marks(report: str) -> str:
    """``report`` without the marks and the summary line of an earlier check."""
    return _FOOTER.sub("\n", report.replace(MARK, "")).rstrip("\n") + (
        "\n" if report.endswith("\n") else "")


# --- looking up ----------------------------------------------------------------------------


def _where_to_look(report: str, number: ReportNumber,
                   sources: Mapping[str, _Source]) -> tuple[list[str], bool]:
    """The cited evidence ids to search (and whether the text cites them), else all."""
    for start, end in (_sentence_span(report, number), _line_span(report, number),
                       _section_span(report, number)):
        cited = [c for c in dict.fromkeys(_CITATION.findall(report[start:end])) if c in sources]
        if cited:
            return cited, True
    return list(sources), False


def _found(number: ReportNumber, sources: list[_Source], verdicts: _Source,
           explicit: bool, *, days: bool = False,
           stated: list[list[ReportNumber]] = ()) -> bool:
    """Whether ``number`` is in ``sources`` or ``verdicts``; with ``days`` (it counts
    days) a span between two dates of a cited source (or one of it and one of the
    verdict texts, such as the question's date) counts too, and the total of a cited
    source's cells that hold the other numbers of its clause, or of its sentence (the
    groups of ``stated``), does."""
    everything = [*sources, verdicts]
    if number.kind is NumberKind.DATE:
        return any(number.text in s.text for s in everything)
    if any(matches_any(number, s.values) or matches_any(number, s.statistics)
           for s in everything):
        return True
    if number.kind is NumberKind.YEAR:
        year = re.compile(rf"(?<!\d){int(number.value)}(?!\d)")
        return any(year.search(s.text) for s in everything)
    if days and explicit and number.decimals == 0 and not number.percent and any(
            matches_any(number, s.day_spans(verdicts.days)) for s in sources):
        return True
    return (explicit and number.significant_digits >= 2
            and any(matches_any(number, s.derived())
                    or any(matches_any(number, s.stated_totals(group)) for group in stated)
                    for s in sources))


# --- where a number is ---------------------------------------------------------------------


def _line_span(report: str, number: ReportNumber) -> tuple[int, int]:
    start = report.rfind("\n", 0, number.start) + 1
    end = report.find("\n", number.end)
    return start, len(report) if end < 0 else end


def _sentence_span(report: str, number: ReportNumber) -> tuple[int, int]:
    line_start, line_end = _line_span(report, number)
    start = line_start
    for end in _SENTENCE_END.finditer(report, line_start, line_end):
        if end.end() > number.end:
            return start, end.end()
        start = end.end()
    return start, line_end


def _section_span(report: str, number: ReportNumber) -> tuple[int, int]:
    starts = [m.start() for m in _HEADING.finditer(report)]
    start = max([s for s in starts if s <= number.start], default=0)
    end = min([s for s in starts if s > number.start], default=len(report))
    return start, end


def _stated_groups(report: str, number: ReportNumber,
                   cells: list[ReportNumber]) -> list[list[ReportNumber]]:
    """The quantities other than ``number`` in its clause (its part of the sentence between
    semicolons or dashes), then those in its whole sentence, each with and without the
    small bare integers (``cells``: every quantity, small ones too): a total may add up
    the cells its clause lists when the sentence lists others too ("All 52 closed in Aug;
    Jul's 44 closed in Jul (24) and Aug (20); ..."), and cells of 10 or less ("42 fewer:
    23, 8, 6 and 5"), while a small number that is no cell ("in 5 groups") must not spoil
    a total of the others."""
    start, end = _sentence_span(report, number)
    others = [n for n in cells if start <= n.start < end and n.start != number.start
              and n.kind is NumberKind.QUANTITY]
    clause_start, clause_end = start, end
    for mark in _CLAUSE_END.finditer(report, start, end):
        if mark.end() <= number.start:
            clause_start = mark.end()
        elif mark.start() >= number.end:
            clause_end = mark.start()
            break
    groups: list[list[ReportNumber]] = []
    for group in ([n for n in others if clause_start <= n.start < clause_end], others):
        for kept in (group, [n for n in group if not n.small_count]):
            if len(kept) >= 2 and kept not in groups:
                groups.append(kept)
    return groups


def _sentence(report: str, number: ReportNumber) -> str:
    start, end = _sentence_span(report, number)
    return " ".join(report[start:end].split()).lstrip("-*# ")


# --- the marked report -----------------------------------------------------------------------


def _marked(report: str, unverified: list[ReportNumber], checked: int) -> str:
    marked = report
    for number in sorted(unverified, key=lambda n: n.end, reverse=True):
        marked = marked[:number.end] + MARK + marked[number.end:]
    if not checked:
        return marked
    numbers = f"{checked} number{'s' if checked != 1 else ''}"
    if unverified:
        were = "was" if len(unverified) == 1 else "were"
        summary = (f"*Claim check: {len(unverified)} of {numbers} {were} not found in the "
                   "evidence cited or the verdicts; marked (unverified).*")
    else:
        summary = f"*Claim check: every one of {numbers} was found in the evidence.*"
    return marked.rstrip("\n") + f"\n\n---\n{summary}\n"


def _tool_results(board: Board, investigation_id: str) -> list[str]:
    """The query results a board-less agent read: ``run_sql`` tool results it was sent."""
    texts: dict[str, None] = {}
    for call in board.list_model_calls(investigation_id=investigation_id):
        for message in call.request.get("messages", []):
            content = message.get("content", "") if message.get("role") == "tool" else ""
            if re.match(r"Q\d+:", content):
                texts[content] = None
    return list(texts)
