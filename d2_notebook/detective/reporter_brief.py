"""What the reporter reads: verdicts whole, the rows that establish each fact, nothing else.

The reporter writes from the board without querying, so its one prompt must carry every
fact it may cite — and nothing it will not use. :func:`reporter_brief` gives it:

- every hypothesis with its status, its whole verdict rationale (never cut) and the
  evidence the verdict cites, or why it was abandoned;
- every cited evidence: what it is (its analysis-tool call, not the generated SQL; of an
  analysis summary, the readings, not the lines listing what it covered) and the rows
  that carry the readings made of it: first the fewest rows that show every number
  the verdicts citing it state (:func:`~d2_notebook.detective.result_summary.covering_rows`),
  then, of an analysis result, its overall and flagged rows, then rows of the dimensions
  the readings name (:func:`~d2_notebook.detective.dimension_names.named_dimensions`);
- every other (exploration) result, as compact: what it is and the few rows that
  establish what was read from it, so a fact found while exploring can be cited too;
- the board-wide coverage lines (untouched and dismissed dimensions), once.

No column statistics, no per-hypothesis dimension lists, no head and tail rows. The
whole brief stays within :data:`REPORTER_BRIEF_TOKENS` (an eighth of a 200 K window;
the reporter's prompt used to be budgeted against the whole window): when it does not
fit, the exploration results and the cited evidence lose rows by turns, the cited
evidence never below the :data:`MIN_CITED_ROWS` rows that carry its readings most.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from d2_notebook.board import Board, Evidence, Hypothesis, Verdict
from d2_notebook.board.render import discount_line
from d2_notebook.data.plain_cells import plain_frame
from d2_notebook.detective.coverage_view import BoardCoverage
from d2_notebook.detective.dimension_names import named_dimension_rows
from d2_notebook.detective.evidence_view import evidence_source, tool_summary
from d2_notebook.detective.query_shape import limit_clause, result_order
from d2_notebook.detective.report import ranked_factors
from d2_notebook.detective.result_summary import claim_rows, covering_rows, render_rows
from d2_notebook.llm import estimate_tokens

REPORTER_BRIEF_TOKENS = 24_000
"""The most (estimated) tokens the reporter's first message may take. Today's models
have windows of 200 K tokens; a report needs the verdicts and the rows behind them,
not every stored row, so the brief is held to a small fraction of that (an eighth; the
estimate counts 3 characters a token, so about 18 K real tokens). At 16 K, real-model
boards of ten or more hypotheses reached the shortest form, where exploration results
lose every row and a fact found while exploring cannot be cited with its numbers."""
CITED_ROWS = 10
"""Rows shown per cited evidence when the budget allows (a result this small: whole)."""
EXPLORATION_ROWS = 4
"""Rows shown per exploration result when the budget allows."""
MIN_CITED_ROWS = 2
"""The rows carrying a cited evidence's readings that the brief always shows."""


_SHRINK_STEPS = [(CITED_ROWS, EXPLORATION_ROWS), (CITED_ROWS, 2), (6, 2), (6, 1), (3, 1),
                 (MIN_CITED_ROWS, 1), (MIN_CITED_ROWS, 0)]
"""(rows per cited evidence, rows per exploration result), most first."""


@dataclass(frozen=True, eq=False)
class _Result:
    """One evidence as the reporter sees it; ``rows`` are the rows it may show, those
    that carry its readings first (of a cited one, those showing its verdicts' numbers
    before the strongest others), then the others (of an analysis
    result, the other rows of the dimensions its readings name first; of a result none
    of whose rows carries a reading, the rows holding each number column's ends)."""

    item: Evidence
    frame: pd.DataFrame
    source: str
    rows: list[int]
    carrying: int = 0
    """How many of ``rows`` (the first ones) carry its readings or findings."""
    ends: int = 0
    """How many of ``rows`` after the carrying ones hold a number column's least or
    greatest value (only when no row carries a reading)."""
    analysis: bool = False
    """An analysis tool's result: its description is the tool's summary."""
    order: str | None = None
    """What the query orders its rows by ("n DESC"), when it says."""

    def render(self, most_rows: int) -> str:
        size = f"{self.item.row_count:,} row{'s' if self.item.row_count != 1 else ''}"
        described = readings(self.item.description) if self.analysis else self.item.description
        cut = limit_clause(self.item.sql, self.item.row_count)
        head = (f"[{self.item.id}] {' '.join(described.split())} "
                f"({size}{cut}; {self.source})")
        shown = sorted(self.rows[:most_rows])
        if not shown:
            return head
        if len(shown) == self.item.row_count:
            return f"{head}\nall rows:\n{render_rows(self.frame, shown)}"
        return f"{head}\n{self._which(len(shown), most_rows)}:\n{render_rows(self.frame, shown)}"

    def _which(self, count: int, most_rows: int) -> str:
        """Which of its rows are shown, and in what order the result holds them."""
        carrying = min(self.carrying, count)
        if carrying == count:
            what = f"the {count} row{'s' if count != 1 else ''} that carry it"
        elif carrying:
            what = f"showing {count} of its rows ({carrying} that carry it, then the first others)"
        elif self.ends:
            what = (f"showing {count} of its rows (none carries a reading as written: the rows "
                    "holding each number column's least and greatest value, then the first "
                    "others)")
        else:
            what = f"showing its first {count} rows"
        if self.analysis:
            return f"{what}; numbered by place in the tool's result (overall first, then strongest)"
        order = f"ordered by {self.order}" if self.order else "in no stated order"
        return f"{what}; numbered by place in the result, which is {order}"


def reporter_brief(board: Board, investigation_id: str, *,
                   coverage: BoardCoverage | None = None,
                   budget_tokens: int = REPORTER_BRIEF_TOKENS) -> str:
    """The reporter's first message: the board's conclusions and the rows behind them.

    Args:
        board: the finished board.
        investigation_id: the investigation to report.
        coverage: the coverage map, for the untouched and dismissed dimensions.
        budget_tokens: the most the text may take (estimated tokens).

    Returns:
        The brief. Every cited evidence id appears with the rows that carry its
        readings; if even the shortest form exceeds the budget, the text says so.
    """
    hypotheses = board.list_hypotheses(investigation_id=investigation_id)
    cited_ids = list(dict.fromkeys(
        e for h in hypotheses if (v := board.latest_verdict(h.id)) is not None
        for e in v.evidence_ids))
    evidence = [e for e in board.list_evidence(investigation_id=investigation_id,
                                               include_reused=True)
                if not e.redundant or e.id in cited_ids]
    by_id = {e.id: e for e in evidence}
    cited = [_result(board, by_id[i], cited=True) for i in cited_ids if i in by_id]
    explored = [_result(board, e, cited=False) for e in evidence if e.id not in cited_ids]
    head = "\n".join(_hypothesis_lines(board, hypotheses) + _ranking_lines(board, hypotheses)
                     + (coverage.board_lines() if coverage is not None else []))
    for cited_rows, explored_rows in _SHRINK_STEPS:
        text = _assemble(head, cited, explored, cited_rows, explored_rows)
        if estimate_tokens(text) <= budget_tokens:
            return text
    return text + ("\n(every result is shown at its shortest: the board exceeds the "
                   "reporter's budget, but none is left out; the other results show no "
                   "rows here, so cite a number of theirs only as their description or a "
                   "verdict gives it)")


_COVERAGE_LINES = ("Dimensions checked:", "Dimensions scanned:", "Tested:",
                   "Strata without overlap", "Not tested (", "Too few rows per arm to test",
                   "Heterogeneity not tested for", "Left out of this scan",
                   "Effect with one dimension held fixed")
"""Lines of an analysis tool's summary that say what it covered, not what it found: the
judges weighed them; the report's coverage comes from the board's own sections. The
effect with each dimension held fixed in turn (a list of twenty) is for the judges
too: the adjustment a verdict rests on is in its size, its flags and its rows (on a
real-model board of 23 hypotheses these lines were a third of every cited
``compare_within``, and the brief could show no more than two rows of any evidence)."""


def readings(description: str) -> str:
    """An analysis tool's summary without its coverage lines (see
    :data:`_COVERAGE_LINES`; "Not tested: X determine(s) the metric exactly" is a
    finding and stays); a text without them is returned as it is."""
    return "\n".join(line for line in description.split("\n")
                     if not line.lstrip().startswith(_COVERAGE_LINES))


def _assemble(head: str, cited: list[_Result], explored: list[_Result], cited_rows: int,
              explored_rows: int) -> str:
    parts = [f"THE BOARD NOW:\n{head}"]
    if cited:
        parts.append("THE EVIDENCE THE VERDICTS CITE (the rows that carry each reading):\n"
                     + "\n\n".join(r.render(cited_rows) for r in cited))
    if explored:
        parts.append("THE OTHER RESULTS (exploration and uncited evidence; cite them too "
                     "if a fact in the report rests on them):\n"
                     + "\n\n".join(r.render(explored_rows) for r in explored))
    return "\n\n".join(parts)


def _result(board: Board, item: Evidence, *, cited: bool) -> _Result:
    frame = board.evidence_frame(item.id)
    said = []  # what the team wrote of it (the recording agent's words included)
    for link in board.list_links(evidence_id=item.id):
        said += [link.rationale, board.get_hypothesis(link.hypothesis_id).statement]
    said += [h.statement + " " + h.rationale for h in board.list_hypotheses()
             if item.id in h.motivated_by]
    verdicts = [_verdict_text(v) for v in board.list_verdicts() if item.id in v.evidence_ids]
    said += verdicts
    claims = [item.description, *said]
    most = min(len(frame), CITED_ROWS if cited else EXPLORATION_ROWS)
    analysis = board.tool_call_of(item.id) is not None
    named, found = [], []
    if analysis:
        own = item.description[len(tool_summary(item.description)):]
        named = named_dimension_rows(frame, [own, *said])
        found = _named_first(frame, [own, *said], named, most)
    found = found or claim_rows(frame, claims, most)
    anchors = analysis_anchor_rows(frame) if analysis else []
    judged = covering_rows(frame, verdicts, most, about=anchors + named + found) \
        if cited else []
    carrying = list(dict.fromkeys(judged + anchors + found))[:most]
    ends = [] if carrying or len(frame) <= most else column_ends(frame)[:most]
    others = [p for p in dict.fromkeys(named + ends + list(range(len(frame))))
              if p not in carrying]
    rows = carrying + others[:most - len(carrying)]
    return _Result(item, frame, evidence_source(board, item), rows, len(carrying),
                   len(ends), analysis, None if analysis else result_order(item.sql, frame))


def _verdict_text(verdict: Verdict) -> str:
    """What a verdict states: its rationale, and its size when it gives one."""
    if verdict.contribution is None:
        return verdict.rationale
    return f"{verdict.rationale}\n{verdict.headline}"


def column_ends(frame: pd.DataFrame) -> list[int]:
    """Positions of the rows holding each number column's least and greatest value (the
    first such row of each), column by column: the ends of a range a verdict states ("from
    1,200 to 1,850") when the rows that carry it are not otherwise known."""
    positions: list[int] = []
    frame = plain_frame(frame)
    for name in frame.columns:
        column = frame[name]
        if pd.api.types.is_bool_dtype(column) or not pd.api.types.is_numeric_dtype(column):
            continue
        values = pd.to_numeric(column, errors="coerce").reset_index(drop=True)
        if values.notna().any():
            positions += [int(values.idxmin()), int(values.idxmax())]
    return list(dict.fromkeys(positions))


def _named_first(frame: pd.DataFrame, said: list[str], named: list[int],
                 most: int) -> list[int]:
    """Of the rows of the dimensions the team named (``named``), those matching the
    numbers or stratum values of what it ``said``, strongest first; none when none
    does (the caller then takes the whole result's carrying rows).

    Every row of a dimension repeats its standardised effect, so over the whole result
    "standardised over severity, ... by 0.12" matched the first stratum of any
    dimension whose effect rounds alike (a real-model brief showed a Wednesday row and
    a 2021-09 row for it, and no severity row). Within the named rows every match
    counts, a number on all of them included; the ``dimension`` column is left out,
    having named them already. The tool's own summary is left out too: its findings
    are the overall and flagged rows, shown anyway, and its other numbers (the crude
    effect, test levels, every dimension's standardised effect) would match a named
    dimension's rows by chance, so that no other row could carry what the team read.
    """
    if not named:
        return []
    inside = frame.iloc[named].drop(columns="dimension")
    return [named[p] for p in claim_rows(inside, said, most, common_share=1.0)]


def analysis_anchor_rows(frame: pd.DataFrame) -> list[int]:
    """The rows of an analysis tool's result that carry its findings whatever the readings
    say: its whole-population row (``(overall)``, ``(total)``) first, then its flagged
    rows in the tool's order (strongest first)."""
    anchors = []
    if "dimension" in frame.columns and len(frame):
        anchors += [p for p in range(min(len(frame), 2))
                    if str(frame["dimension"].iloc[p]).startswith("(")]
    for column in ("flagged", "flag"):
        if column in frame.columns:
            marked = frame[column].fillna("").astype(str).str.strip()
            anchors += [p for p, value in enumerate(marked)
                        if value not in ("", "False", "false", "0", "nan", "None")]
    return list(dict.fromkeys(anchors))


def _ranking_lines(board: Board, hypotheses: list[Hypothesis]) -> list[str]:
    """The factors in the order the board's "## Hypotheses" section lists them: the
    supported ones and those contradicted only as stated, whose size stands
    (:func:`~d2_notebook.detective.report.ranked_factors`)."""
    ranked = ranked_factors(board, hypotheses)
    if not any(v is not None and v.contribution is not None for _, v in ranked):
        return []
    return ["FACTORS BY SIZE (the order in which the board lists them under "
            "\"## Hypotheses\" after your text, each with its size, role, confidence and "
            "evidence: major before minor, by share of the change where one is given; "
            "effects on different measures are not ranked against each other; a factor "
            "contradicted as the main or only cause, or contradicted because the factor "
            "matters, is the contributor it is):"] + [
        f"  {hyp.id}: {verdict.headline if verdict else hyp.status.value}"
        for hyp, verdict in ranked]


def _hypothesis_lines(board: Board, hypotheses: list[Hypothesis]) -> list[str]:
    """The digest's lines (same layout), each verdict whole, each link one short line."""
    lines = ["HYPOTHESES (id | status | confidence | statement):"]
    for hyp in hypotheses:
        confidence = "-" if hyp.confidence is None else f"{hyp.confidence:.2f}"
        parent = f" (refines {hyp.parent_id})" if hyp.parent_id else ""
        lines.append(f"{hyp.id} | {hyp.status.value} | {confidence} | "
                     f"{' '.join(hyp.statement.split())}{parent}")
        if hyp.motivated_by:
            lines.append("    motivated by (exploration, not a test): "
                         + ", ".join(hyp.motivated_by))
        for link in board.list_links(hypothesis_id=hyp.id):
            item = board.get_evidence(link.evidence_id)
            if not item.redundant:
                lines.append(f"    {link.stance.value}: {item.id} ({item.row_count:,} rows)")
        verdict = board.latest_verdict(hyp.id)
        if verdict is not None:
            cites = ", ".join(verdict.evidence_ids) or "none"
            lines.append(f"    verdict ({verdict.status.value}, cites {cites}): "
                         f"{' '.join(verdict.rationale.split())}")
            lines.extend(f"      {' '.join(discount_line(d).split())}"
                         for d in verdict.discounted)
            if verdict.contribution is not None:
                lines.append(f"    SIZE: {verdict.headline}")
        elif hyp.status_reason:
            lines.append(f"    note: {' '.join(hyp.status_reason.split())}")
    return lines
