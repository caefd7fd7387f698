"""A report a colleague can open: one self-contained HTML file of an investigation.

:func:`report_document` writes the answer (the reporter's report), the claim check's
result, the charts of the evidence the report cites, the audit graph as a static picture,
and every hypothesis with its verdict and evidence (SQL, stored table, chart) — then the
exploration nothing was linked to. It needs no kernel, no script and no network: charts
and the graph are inline SVG, and a Content-Security-Policy forbids loading anything, so
the file opens offline in any browser and opening it sends no request. Every text from
the board or the data is escaped.
"""

from __future__ import annotations

import re
from html import escape
from pathlib import Path

from d2_notebook.board import Board
from d2_notebook.board.records import Evidence, Investigation, VerdictCheck
from d2_notebook.board.render import discount_line
from d2_notebook.charts import chart_for_evidence, chart_svg
from d2_notebook.detective.claim_check import check_board_report
from d2_notebook.notebook.details import frame_html, sql_html
from d2_notebook.notebook.static import board_svg, header_html
from d2_notebook.safe_markdown import markdown_html

__all__ = ["TABLE_ROWS", "cited_charts_html", "report_document", "write_report"]

TABLE_ROWS = 50
"""Rows of each evidence table the report shows (the board keeps the stored rest)."""
_CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
        "font-src data:; form-action 'none'; base-uri 'none'")
_EVIDENCE_ID = re.compile(r"\bE\d+\b")
_STYLE = """
body { font-family: system-ui, sans-serif; max-width: 980px; margin: 2em auto;
       padding: 0 1em; color: #212121; line-height: 1.45; }
h1 { font-size: 1.5em; } h2 { border-bottom: 1px solid #cfd8dc; padding-bottom: .2em; }
.evidence { border: 1px solid #cfd8dc; border-radius: 6px; padding: .6em 1em;
            margin: .8em 0; }
.table { overflow-x: auto; } .graph { overflow: auto; border: 1px solid #eceff1; }
table.d2-frame { border-collapse: collapse; font-size: 12px; }
table.d2-frame td, table.d2-frame th { border: 1px solid #eceff1; padding: 2px 6px; }
pre { white-space: pre-wrap; word-break: normal; overflow-wrap: anywhere; }
.check { background: #f5f5f5; padding: .4em .8em; border-radius: 4px; }
"""


def report_document(board: Board, investigation_id: str | None = None) -> str:
    """The whole HTML document of an investigation (default: the board's latest).

    Raises:
        BoardError: ``investigation_id`` is not on the board.
    """
    investigations = board.list_investigations()
    chosen = (board.get_investigation(investigation_id) if investigation_id
              else investigations[-1] if investigations else None)
    question = chosen.question if chosen else "(no investigation)"
    shown = None if chosen is None else chosen.id
    body = [f"<h1>{escape(question)}</h1>", header_html(board, shown)]
    if chosen is not None:
        body.extend(_recheck_note(board, chosen))
        body.extend(_report_section(board, chosen))
    body.append("<h2>The board</h2>")
    body.append(f"<div class='graph'>{board_svg(board, investigation_id=shown)}</div>")
    body.extend(_hypotheses_section(board, chosen))
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<meta http-equiv='Content-Security-Policy' content=\"{_CSP}\">"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{escape(question)}</title><style>{_STYLE}</style></head>"
            f"<body>{''.join(body)}</body></html>")


def write_report(board: Board, path: str | Path, investigation_id: str | None = None) -> Path:
    """Write :func:`report_document` to ``path`` (UTF-8) and return the path."""
    target = Path(path)
    target.write_text(report_document(board, investigation_id), encoding="utf-8")
    return target


def _recheck_note(board: Board, investigation: Investigation) -> list[str]:
    """A warning under the header when a re-check found stale verdicts, or the date the
    verdicts were last confirmed."""
    checks = board.latest_verdict_checks(investigation.id)
    if not checks:
        return []
    when = max(c.created_at for c in checks.values())[:10]
    stale = sorted(h for h, c in checks.items() if c.check is VerdictCheck.STALE)
    if stale:
        return [f"<p class='check' style='background:#fff3e0'><b>Stale since {escape(when)}:"
                f"</b> the evidence behind {escape(', '.join(stale))} changed or fails on the "
                "data as it is now; those verdicts need judging again.</p>"]
    return [f"<p class='check'>Every verdict was confirmed on {escape(when)} "
            "(its evidence re-run on the data as it was then).</p>"]


def _report_section(board: Board, investigation: Investigation) -> list[str]:
    if not investigation.report:
        return [f"<p><i>No report yet (the investigation is "
                f"{escape(investigation.state.value)}).</i></p>"]
    check = check_board_report(board, investigation.id)
    verdict = (f"{check.numbers_checked} numbers checked against the evidence they cite; "
               + ("all found." if not check.unverified else
                  f"{len(check.unverified)} not found: "
                  + "; ".join(f"{escape(c.number)} in “{escape(c.sentence)}”"
                              for c in check.unverified)))
    parts = ["<h2>Report</h2>", markdown_html(investigation.report),
             f"<p class='check'><b>Claim check:</b> {verdict}</p>"]
    cited = cited_charts_html(board, investigation.report)
    if cited:
        parts.extend(["<h2>Charts of the cited evidence</h2>", cited])
    return parts


def cited_charts_html(board: Board, text: str) -> str:
    """The charts (inline SVG) of the evidence ``text`` cites, in the order it first
    cites them; empty when none of them has a chart."""
    known = {e.id for e in board.list_evidence()}
    cited = [eid for eid in dict.fromkeys(_EVIDENCE_ID.findall(text)) if eid in known]
    return "".join(f"<figure>{svg}</figure>" for svg in map(
        lambda eid: _chart(board, eid), cited) if svg)


def _hypotheses_section(board: Board, investigation: Investigation | None) -> list[str]:
    scope = investigation.id if investigation is not None else None
    parts = ["<h2>Hypotheses and their evidence</h2>"]
    linked: set[str] = set()
    for hypothesis in board.list_hypotheses(investigation_id=scope):
        verdict = board.latest_verdict(hypothesis.id)
        parts.append(f"<h3>{escape(hypothesis.id)}: {escape(hypothesis.statement)}</h3>"
                     f"<p><b>{escape(hypothesis.status.value)}</b>")
        if verdict is not None:
            parts.append(f" ({verdict.confidence:.0%}) — {escape(verdict.rationale)}")
        elif hypothesis.status_reason:
            parts.append(f" — {escape(hypothesis.status_reason)}")
        parts.append("</p>")
        if verdict is not None and verdict.discounted:
            parts.append("<ul class='discounted'>" + "".join(
                f"<li>{escape(discount_line(d))}</li>" for d in verdict.discounted) + "</ul>")
        for link in board.list_links(hypothesis_id=hypothesis.id):
            linked.add(link.evidence_id)
            stance = f"{link.stance.value}: {link.rationale}" if link.rationale \
                else link.stance.value
            parts.append(_evidence_block(board, board.get_evidence(link.evidence_id), stance))
    exploration = [e for e in board.list_evidence(investigation_id=scope)
                   if e.id not in linked]
    if exploration:
        parts.append("<h2>Exploration</h2>")
        parts.extend(_evidence_block(board, e, None) for e in exploration)
    return parts


def _evidence_block(board: Board, evidence: Evidence, stance: str | None) -> str:
    rows = f"{evidence.row_count:,} row{'s' if evidence.row_count != 1 else ''}"
    if evidence.truncated:
        rows += f", {evidence.stored_rows:,} stored"
    frame = board.evidence_frame(evidence.id)
    shown = (f"<p><i>first {TABLE_ROWS} of {len(frame):,} stored rows</i></p>"
             if len(frame) > TABLE_ROWS else "")
    chart = _chart(board, evidence.id)
    return ("<div class='evidence'>"
            f"<p><b>{escape(evidence.id)}</b> {escape(evidence.description)} "
            f"<small>({escape(rows)})</small>"
            + (f"<br><i>{escape(stance)}</i>" if stance else "") + "</p>"
            + (f"<figure>{chart}</figure>" if chart else "")
            + f"<details><summary>SQL</summary>{sql_html(evidence.sql)}</details>"
            + f"<div class='table'>{frame_html(frame.head(TABLE_ROWS))}</div>{shown}</div>")


def _chart(board: Board, evidence_id: str) -> str:
    chart = chart_for_evidence(board, evidence_id)
    return chart_svg(chart) if chart is not None else ""
