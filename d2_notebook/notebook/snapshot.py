"""A compact, capped JSON snapshot of a board: what the JupyterLab renderer draws.

Every board display carries it under :data:`~d2_notebook.notebook.style.MIME_TYPE`
(``application/vnd.d2.board+json``), so a saved notebook reopened without a kernel, or
a board file opened in JupyterLab, still shows the interactive graph: the graph
elements exactly as the widget draws them (labels, colours, positions from
:mod:`~d2_notebook.notebook.layout`), each hypothesis with its verdict and each
evidence with its SQL and the first rows of its stored result.

Layout of the document (``version`` 1)::

    {"version": 1, "question": str, "state": str, "summary": str, "report": str | null,
     "investigation": str | null, "other_investigations": [{"id", "question", "state"}],
     "report_html": str | null, "scripted": bool,
     "caps": {"rows_per_evidence": int, "cell_chars": int, "total_cells": int},
     "graph": {"nodes": [{"id", "kind", "label", "classes", "position": {"x", "y"},
                          "data": {...}}], "edges": [{"id", "source", "target", "kind",
                          "classes", "data": {...}}]},
     "hypotheses": {"H1": {"statement", "status", "confidence", "rationale", "author",
                           "round", "parent_id", "status_reason", "verdict": {"status",
                           "confidence", "rationale", "evidence_ids", "author",
                           "discounted": [{"evidence_id", "reason", "explanation"}]} | null,
                           "check": {"state": "stale" | "confirmed", "on", "run_id",
                                     "evidence_ids", "text"} | null,
                           "links": [{"evidence_id", "stance", "rationale"}]}},
     "evidence": {"E1": {"description", "sql", "sql_pretty", "row_count", "stored_rows",
                         "truncated",
                         "author", "author_role", "round", "redundant", "redundant_reason",
                         "columns": [str], "rows": [[cell]], "rows_shown": int,
                         "chart": {Vega-Lite spec} | null,
                         "links": [{"hypothesis_id", "stance", "rationale"}]}}}

A board holding several investigations (a follow-up, an ``--append`` re-run) is
snapshotted one investigation at a time
(:func:`~d2_notebook.board.scopes.investigation_scope`): ``question`` then starts with
the investigation's id, and ``summary`` ends with the line naming the others and how to
show each, so the renderer shows both without knowing of them.

``report_html`` is the report rendered by :func:`~d2_notebook.safe_markdown.markdown_html`
(no HTML of its own, images as text, links only to http, https or mailto); the
extension still copies only text, the tags of a report and such links out of it, so a
hand-made snapshot cannot load or run anything either.

Caps keep a notebook small: at most ``rows_per_evidence`` rows per evidence, cells cut
to ``cell_chars`` characters, and ``total_cells`` cells in the whole snapshot (evidence
past that budget shows its SQL and counts, no rows). The chart of an evidence
(:mod:`d2_notebook.charts`, drawn from all its stored rows) comes with it while its data
holds at most ``chart_rows`` rows and the ``total_cells`` budget lasts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pandas as pd

from d2_notebook.board import Board, Evidence, Hypothesis, Link
from d2_notebook.board.follow_ups import reuse_text
from d2_notebook.board.records import RecheckedVerdict
from d2_notebook.board.scopes import investigation_scope
from d2_notebook.charts import chart_for_evidence
from d2_notebook.nested_values import is_nested, nested_text
from d2_notebook.notebook import style
from d2_notebook.notebook.checks import check_sentence
from d2_notebook.notebook.details import pretty_sql
from d2_notebook.notebook.graph import (
    GraphModel,
    elements_from_records,
    scope_checks,
    stored_key_numbers,
)
from d2_notebook.notebook.static import also_line, header_title, summarize, summary_line
from d2_notebook.safe_markdown import markdown_html, safe_markdown

SNAPSHOT_VERSION: int = style.LOOK["snapshot_version"]


@dataclass(frozen=True)
class SnapshotCaps:
    """How much of each stored result a snapshot carries."""

    rows_per_evidence: int = 20
    cell_chars: int = 200
    total_cells: int = 20_000
    chart_rows: int = 200

    def __post_init__(self) -> None:
        if min(self.rows_per_evidence, self.cell_chars, self.total_cells,
               self.chart_rows) < 0:
            raise ValueError(f"snapshot caps must be >= 0, got {self}")


def board_snapshot(board: Board, caps: SnapshotCaps | None = None,
                   investigation_id: str | None = None) -> dict[str, Any]:
    """The snapshot of one investigation of ``board`` (None: the newest; see the module
    docstring), ready for ``json.dumps``.

    Reads records and stored results only; never runs a query on user data.

    Raises:
        NotFoundError: ``investigation_id`` is not on the board.
    """
    caps = caps or SnapshotCaps()
    scope = investigation_scope(board, investigation_id)
    hypotheses, evidence, links, reuses = (scope.hypotheses, scope.evidence, scope.links,
                                           scope.reuses)
    summary = summarize(board, scope.investigation_id)
    report = None if scope.investigation is None else scope.investigation.report
    budget = [caps.total_cells]
    checks = scope_checks(board, scope)
    also = also_line(summary)
    return {
        "version": SNAPSHOT_VERSION,
        "question": header_title(summary),
        "state": summary.state,
        "summary": summary_line(summary) + (f" — {also}" if also else ""),
        "investigation": scope.investigation_id,
        "other_investigations": [{"id": o.id, "question": o.question, "state": o.state}
                                 for o in summary.others],
        "report": report,
        "report_html": None if report is None else markdown_html(safe_markdown(report)),
        "caps": {"rows_per_evidence": caps.rows_per_evidence, "cell_chars": caps.cell_chars,
                 "total_cells": caps.total_cells},
        "scripted": summary.scripted,
        "graph": graph_json(elements_from_records(hypotheses, evidence, links,
                                                  key_numbers=stored_key_numbers(board,
                                                                                 evidence),
                                                  reuses=reuses, checks=checks)),
        "hypotheses": {hyp.id: _hypothesis_json(board, hyp, links, checks.get(hyp.id))
                       for hyp in hypotheses},
        "evidence": {item.id: _evidence_json(board, item, links, caps, budget,
                                             [r.investigation_id for r in reuses
                                              if r.evidence_id == item.id])
                     for item in evidence},
    }


def graph_json(model: GraphModel) -> dict[str, list[dict[str, Any]]]:
    """The graph's nodes and edges as plain JSON (positions as ``{"x", "y"}``)."""
    nodes = [{"id": n.id, "kind": n.kind, "label": n.label, "classes": n.classes,
              "position": {"x": n.position[0], "y": n.position[1]}, "data": n.data}
             for n in model.nodes.values()]
    edges = [{"id": e.id, "source": e.source, "target": e.target, "kind": e.kind,
              "classes": e.classes, "data": e.data} for e in model.edges.values()]
    return {"nodes": nodes, "edges": edges}


def frame_rows(frame: pd.DataFrame, limit: int, cell_chars: int) -> list[list[Any]]:
    """The first ``limit`` rows as JSON values: numbers and booleans as such, missing
    values as null, dates in ISO 8601, anything else as (cut) text."""
    values = json.loads(frame.head(limit).to_json(
        orient="values", date_format="iso",
        default_handler=lambda v: nested_text(v) if is_nested(v) else str(v)))  # a blob
    return [[_cell(value, cell_chars) for value in row] for row in values]


def _hypothesis_json(board: Board, hyp: Hypothesis, links: list[Link],
                     check: RecheckedVerdict | None) -> dict[str, Any]:
    verdict = board.latest_verdict(hyp.id)
    return {
        "check": None if check is None else {
            "state": check.check.value, "on": check.created_at[:10], "run_id": check.run_id,
            "evidence_ids": list(check.evidence_ids), "text": check_sentence(check)},
        "statement": hyp.statement, "status": hyp.status.value, "confidence": hyp.confidence,
        "rationale": hyp.rationale, "author": hyp.author, "round": hyp.round,
        "parent_id": hyp.parent_id, "status_reason": hyp.status_reason,
        "verdict": None if verdict is None else {
            "status": verdict.status.value, "confidence": verdict.confidence,
            "rationale": verdict.rationale, "evidence_ids": list(verdict.evidence_ids),
            "author": verdict.author, "headline": verdict.headline,
            "discounted": [d.to_dict() for d in verdict.discounted],
            "contribution": None if verdict.contribution is None
            else verdict.contribution.to_dict()},
        "links": [{"evidence_id": lk.evidence_id, "stance": lk.stance.value,
                   "rationale": lk.rationale} for lk in links if lk.hypothesis_id == hyp.id],
    }


def _evidence_json(board: Board, item: Evidence, links: list[Link], caps: SnapshotCaps,
                   budget: list[int], reused_by: list[str]) -> dict[str, Any]:
    columns = [column.name for column in item.columns]
    width = max(len(columns), 1)
    limit = min(caps.rows_per_evidence, item.stored_rows, budget[0] // width)
    rows = frame_rows(board.evidence_frame(item.id), limit, caps.cell_chars) if limit else []
    budget[0] -= len(rows) * width
    chart = _chart_json(board, item, caps, budget)
    return {
        "description": item.description, "sql": item.sql, "sql_pretty": pretty_sql(item.sql),
        "row_count": item.row_count,
        "stored_rows": item.stored_rows, "truncated": item.truncated, "author": item.author,
        "author_role": item.author_role, "round": item.round, "redundant": item.redundant,
        "redundant_reason": item.redundant_reason, "columns": columns, "rows": rows,
        "rows_shown": len(rows), "chart": chart, "reused_by": reused_by,
        "reused_note": reuse_text(item.investigation_id, reused_by) if reused_by else None,
        "links": [{"hypothesis_id": lk.hypothesis_id, "stance": lk.stance.value,
                   "rationale": lk.rationale} for lk in links if lk.evidence_id == item.id],
    }


def _chart_json(board: Board, item: Evidence, caps: SnapshotCaps,
                budget: list[int]) -> dict[str, Any] | None:
    """The evidence's chart spec while it fits the caps (its data counts against the
    cell budget), else None."""
    if item.stored_rows == 0 or item.stored_rows > caps.chart_rows or budget[0] <= 0:
        return None
    chart = chart_for_evidence(board, item.id)
    if chart is None:
        return None
    cells = sum(len(row) for rows in chart.spec.get("datasets", {}).values() for row in rows)
    if cells > budget[0]:
        return None
    budget[0] -= cells
    return chart.spec


def _cell(value: Any, cell_chars: int) -> Any:
    if value is None or isinstance(value, bool | int | float):
        return value
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= cell_chars else text[: max(cell_chars - 1, 0)] + "…"
