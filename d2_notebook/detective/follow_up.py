"""Follow-up questions: a new investigation on a board that builds on an earlier one.

A follow-up is started by :func:`~d2_notebook.detective.investigate` with
``follow_up=True`` (the board's newest finished investigation) or ``follow_up="I2"``.
Three things make it one:

- the board records which investigation it follows (:meth:`Board.record_follow_up`);
- every role's digest opens with the earlier investigation's conclusions, its evidence
  (ids the roles may cite and link) and its dismissed dimensions
  (:func:`earlier_digest`);
- a query or analysis-tool call identical to an earlier evidence's (same normalised SQL,
  same tool and arguments), on the same source, over tables whose data fingerprint has
  not changed since the earlier investigation ended, is not run again: the agent gets the
  stored result, and recording it links the earlier evidence and records the reuse
  (:class:`FollowUp`).

Data fingerprints (:mod:`d2_notebook.data.fingerprint`) are taken when an investigation
finishes (:func:`record_fingerprints`), of every table its evidence read; a follow-up
fingerprints the same tables once when it starts. A table it cannot fingerprint, or an
earlier investigation without fingerprints, makes the evidence resting on it run again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from d2_notebook.board import Board, Evidence, Investigation, ToolCall
from d2_notebook.data import QueryResult, SQLSource
from d2_notebook.data.analysis import AnalysisResult, spec_for
from d2_notebook.data.analysis.result import escaped_summary
from d2_notebook.data.fingerprint import fingerprint_tables, tables_read
from d2_notebook.data.plain_cells import plain_frame
from d2_notebook.detective.context import normalize_sql
from d2_notebook.detective.evidence_view import cut_at_word, tool_summary
from d2_notebook.errors import InvalidRecordError
from d2_notebook.llm import estimate_tokens

__all__ = ["FOLLOW_UP_HEADER", "FollowUp", "call_key", "choose_followed", "earlier_digest",
           "prepare_follow_up", "record_fingerprints"]

FOLLOW_UP_HEADER = "THIS IS A FOLLOW-UP OF INVESTIGATION"
"""How the digest of a follow-up opens (offline policies look for it)."""
ACTOR = "follow-up"
EARLIER_DIGEST_TOKENS = 3_000
"""The most the earlier investigation's evidence lines take in a follow-up's digest
(estimated tokens); evidence past it is listed by id only, so it can still be linked."""

def call_key(call: ToolCall) -> str:
    """What makes two analysis-tool calls the same (the key the query log uses)."""
    return normalize_sql(f"{call.tool} {json.dumps(call.args, sort_keys=True)}")


@dataclass
class FollowUp:
    """The investigation a follow-up follows and which of its evidence may be reused.

    Attributes:
        earlier: The investigation followed.
        reusable: Earlier evidence by its key (normalised SQL, or :func:`call_key` for an
            analysis-tool call) whose data is unchanged on the same source.
        changed_tables: Tables whose fingerprint differs from the earlier one (evidence
            reading them runs again).
        why_not_reused: Why nothing is reused, when nothing can be (another source, no
            fingerprints); empty otherwise.
        digest: :func:`earlier_digest` of ``earlier`` (it does not change while the
            follow-up runs).
    """

    earlier: Investigation
    digest: str = ""
    reusable: dict[str, Evidence] = field(default_factory=dict)
    changed_tables: tuple[str, ...] = ()
    why_not_reused: str = ""

    def reusable_sql(self, sql: str) -> Evidence | None:
        """The earlier evidence of this exact query, if its data is unchanged."""
        return self.reusable.get(normalize_sql(sql))

    def reusable_call(self, call: ToolCall) -> Evidence | None:
        """The earlier evidence of this exact analysis-tool call, if its data is unchanged."""
        return self.reusable.get(call_key(call))


def choose_followed(board: Board, follow_up: bool | str) -> Investigation:
    """The investigation a follow-up follows: the one named, else the board's newest
    finished one.

    Raises:
        InvalidRecordError: No finished investigation on the board, or the named one is
            unknown or not finished (the message names the fix).
    """
    investigations = board.list_investigations()
    finished = [i for i in investigations if i.state.value == "finished"]
    if isinstance(follow_up, str):
        named = next((i for i in investigations if i.id == follow_up), None)
        if named is None:
            known = ", ".join(i.id for i in finished) or "none"
            raise InvalidRecordError(f"no investigation {follow_up!r} on {board.path} to "
                                     f"follow up; its finished investigations: {known}")
        if named.state.value != "finished":
            raise InvalidRecordError(f"investigation {named.id} is {named.state.value}, not "
                                     "finished; finish it first (--resume), or follow up a "
                                     "finished one")
        return named
    if not finished:
        raise InvalidRecordError(f"nothing to follow up on {board.path}: it holds no finished "
                                 "investigation; run the first question without --follow-up")
    return finished[-1]


def rested_on(board: Board, investigation_id: str) -> list[Evidence]:
    """The evidence an investigation rests on: its own and what it reused."""
    return board.list_evidence(investigation_id=investigation_id, include_reused=True)


def record_fingerprints(board: Board, source: SQLSource, investigation_id: str) -> None:
    """Fingerprint every table the investigation's evidence read, as the data is now."""
    tables: set[str] = set()
    for evidence in rested_on(board, investigation_id):
        tables |= _tables_of(evidence, source) or set()
    board.record_data_fingerprints(investigation_id, fingerprint_tables(source, tables),
                                   actor=ACTOR)


def prepare_follow_up(board: Board, source: SQLSource, earlier: Investigation,
                      source_kind: dict[str, Any]) -> FollowUp:
    """What a follow-up of ``earlier`` may reuse, on ``source`` (described by
    ``source_kind``: :meth:`SourceInfo.to_dict`). Runs one fingerprint query per table the
    earlier evidence read, and nothing else."""
    digest = earlier_digest(board, earlier)
    if not _same_source(earlier.settings.get("source") or {}, source_kind):
        return FollowUp(earlier, digest, why_not_reused=f"{earlier.id} ran on another source")
    then = board.data_fingerprints(earlier.id)
    if not then:
        return FollowUp(earlier, digest,
                        why_not_reused=f"{earlier.id} has no data fingerprints")
    now = fingerprint_tables(source, then)
    changed = tuple(t for t in sorted(then) if now.get(t) != then[t])
    reusable: dict[str, Evidence] = {}
    for evidence in rested_on(board, earlier.id):
        tables = _tables_of(evidence, source)
        if not tables or not tables <= then.keys() or tables & set(changed):
            continue
        call = board.tool_call_of(evidence.id)
        reusable.setdefault(call_key(call) if call else normalize_sql(evidence.sql), evidence)
    return FollowUp(earlier, digest, reusable, changed)


def _same_source(then: dict[str, Any], now: dict[str, Any]) -> bool:
    """The same kind of source, and the same URL when both are known (a connection
    passed in has none: its tables' fingerprints decide)."""
    if not then:
        return True
    unknown = ("", "connection", None)
    return then.get("kind") == now.get("kind") and (
        then.get("url") in unknown or now.get("url") in unknown
        or then.get("url") == now.get("url"))


def stored_result(board: Board, evidence: Evidence) -> QueryResult:
    """The earlier evidence's stored result, as ``run_sql`` returned it."""
    return QueryResult(evidence.sql, board.evidence_frame(evidence.id), evidence.row_count,
                       evidence.truncated, 0.0)


def stored_analysis(board: Board, evidence: Evidence, call: ToolCall) -> AnalysisResult:
    """The earlier evidence's stored result, as the analysis tool ``call`` returned it
    (its summary is the evidence's description without the recording agent's words,
    its database names and values escaped again: a board written before summaries were
    escaped stores them raw)."""
    frame = board.evidence_frame(evidence.id)
    summary = escaped_summary(tool_summary(evidence.description), evidence.sql, frame)
    return AnalysisResult(evidence.sql, frame, evidence.row_count, evidence.truncated, 0.0,
                          tool=spec_for(call.tool).tool, summary=summary)


def earlier_digest(board: Board, earlier: Investigation) -> str:
    """The follow-up's view of the earlier investigation: its question, each verdict
    (status, confidence, the evidence it cites and its rationale), its evidence (one
    line each: id, rows, description, readings) and its dismissed dimensions."""
    lines = [f"{FOLLOW_UP_HEADER} {earlier.id}: {' '.join(earlier.question.split())}",
             "Its conclusions (hypothesis, verdict, confidence, cited evidence):"]
    for hyp in board.list_hypotheses(investigation_id=earlier.id):
        verdict = board.latest_verdict(hyp.id)
        if verdict is None:
            if hyp.status.value == "abandoned":
                lines.append(f"  {hyp.id} abandoned: {' '.join(hyp.statement.split())}")
            continue
        cites = ", ".join(verdict.evidence_ids) or "none"
        lines.append(f"  {hyp.id} {verdict.status.value} ({verdict.confidence:.2f}; cites "
                     f"{cites}): {' '.join(hyp.statement.split())}")
        lines.append(f"    why: {cut_at_word(' '.join(verdict.rationale.split()), 200)}")
    evidence = [e for e in rested_on(board, earlier.id) if not e.redundant]
    lines.append("Its evidence (cite or link_evidence these ids; an identical query on "
                 "unchanged data returns the stored result without running again):")
    spent = 0
    for position, item in enumerate(evidence):
        line = _evidence_line(board, item)
        spent += estimate_tokens(line)
        if spent > EARLIER_DIGEST_TOKENS:
            lines.append("  (no room for the details of: "
                         + ", ".join(e.id for e in evidence[position:]) + ")")
            break
        lines.append(line)
    dismissed = board.list_dimension_dismissals(investigation_id=earlier.id)
    if dismissed:
        lines.append("Dimensions it dismissed: " + "; ".join(
            f"{d.dimension} ({cut_at_word(d.reason, 80)})" for d in dismissed))
    return "\n".join(lines)


def _evidence_line(board: Board, item: Evidence) -> str:
    """One earlier evidence: id, rows, description, readings and key numbers."""
    readings = "; ".join(cut_at_word(" ".join(link.rationale.split()), 100)
                         for link in board.list_links(evidence_id=item.id) if link.rationale)
    description = cut_at_word(" ".join(item.description.split()), 120)
    return (f"  {item.id} [{item.row_count} rows] {description}"
            + (f" | read as: {readings}" if readings else "") + _key_numbers(board, item))


def _key_numbers(board: Board, item: Evidence) -> str:
    """A one-row result's cells (``col=value``), the compact form of its key numbers."""
    if item.row_count != 1:
        return ""
    frame = plain_frame(board.evidence_frame(item.id))
    if frame.empty or len(frame.columns) > 8:
        return ""
    cells = ", ".join(f"{c}={_cell(frame.iloc[0][c])}" for c in frame.columns)
    return f" | {cut_at_word(cells, 160)}"


def _cell(value: Any) -> str:
    """A cell as the digest shows it: whole numbers without a decimal point."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _tables_of(evidence: Evidence, source: SQLSource) -> set[str] | None:
    """The tables an evidence's result rests on (its stored SQL: a query's, or the SQL
    an analysis tool generated)."""
    found = tables_read(evidence.sql, source.dialect)
    return set(found) if found else None
