"""What a click on the graph shows: HTML panels for one hypothesis or one evidence.

Everything comes from the board: the evidence table is the stored result
(:meth:`Board.evidence_frame`), never a new query.
"""

from __future__ import annotations

import re
from collections import Counter
from html import escape

import pandas as pd

from d2_notebook.board import Board
from d2_notebook.board.follow_ups import reuse_text
from d2_notebook.board.records import VerdictCheck
from d2_notebook.board.render import discount_line
from d2_notebook.notebook.checks import check_sentence

MAX_FRAME_ROWS = 500
"""Rows of an evidence result rendered in the panel (pandas elides the middle beyond)."""
SYNCED_ROWS = 20
"""Rows of an evidence result the widget holds in the browser (:func:`synced_details`),
the same number a board snapshot carries."""


def node_details_html(board: Board, node_id: str) -> str:
    """The panel for ``"H<n>"`` or ``"E<n>"``; a short note for anything else."""
    if node_id.startswith("H"):
        return hypothesis_html(board, node_id)
    if node_id.startswith("E"):
        return evidence_html(board, node_id)
    return f"<p>Nothing to show for {escape(node_id)}.</p>"


def hypothesis_html(board: Board, hypothesis_id: str) -> str:
    """Statement, status, verdict with confidence and rationale, and linked evidence."""
    hyp = board.get_hypothesis(hypothesis_id)
    verdict = board.latest_verdict(hyp.id)
    parts = [f"<h4>{escape(hyp.id)}: {escape(hyp.statement)}</h4>",
             f"<p><b>Status:</b> {escape(hyp.status.value)}"]
    if hyp.confidence is not None:
        parts.append(f" &middot; <b>confidence</b> {hyp.confidence:.0%}")
    parts.append(f" &middot; proposed by {escape(hyp.author)} in round {hyp.round}")
    if hyp.parent_id:
        parts.append(f" &middot; refines {escape(hyp.parent_id)}")
    parts.append("</p>")
    if hyp.rationale:
        parts.append(f"<p><b>Why proposed:</b> {escape(hyp.rationale)}</p>")
    if verdict is not None:
        cited = ", ".join(verdict.evidence_ids) or "no evidence"
        parts.append(f"<p><b>Verdict ({escape(verdict.author)}):</b> "
                     f"{escape(verdict.headline)}, confidence {verdict.confidence:.0%}"
                     f" &mdash; {escape(verdict.rationale)} <i>[{escape(cited)}]</i></p>")
        if verdict.discounted:
            parts.append("<ul>" + "".join(f"<li>{escape(discount_line(d))}</li>"
                                          for d in verdict.discounted) + "</ul>")
    elif hyp.status_reason:
        parts.append(f"<p><b>Reason:</b> {escape(hyp.status_reason)}</p>")
    checks = (board.latest_verdict_checks(hyp.investigation_id)
              if hyp.investigation_id else {})
    check = checks.get(hyp.id)
    if check is not None:
        stale = check.check is VerdictCheck.STALE
        parts.append(f"<p class='d2-check' style='color:{'#e65100' if stale else '#2e7d32'}'>"
                     f"<b>Re-check:</b> {escape(check_sentence(check))}</p>")
    links = board.list_links(hypothesis_id=hyp.id)
    if links:
        parts.append("<p><b>Evidence:</b></p><ul>")
        for link in links:
            item = board.get_evidence(link.evidence_id)
            flag = " <i>(redundant)</i>" if item.redundant else ""
            parts.append(f"<li><b>{escape(item.id)}</b> {escape(link.stance.value)}: "
                         f"{escape(item.description)}{flag}"
                         f"{' &mdash; ' + escape(link.rationale) if link.rationale else ''}"
                         "</li>")
        parts.append("</ul>")
    else:
        parts.append("<p>No evidence linked yet.</p>")
    return "".join(parts)


def synced_details(board: Board, cache: dict[tuple[str, str, int], str] | None = None
                   ) -> dict[str, str]:
    """Every node's panel, for the widget to hold in the browser so a click shows it
    while the kernel is busy: hypotheses as :func:`hypothesis_html`, evidence as
    :func:`evidence_html` with its first :data:`SYNCED_ROWS` rows and no chart (the
    panel says how to see the rest).

    Args:
        board: the board to read.
        cache: evidence panels already made, by (id, last update, number of links);
            pass the same dict on every call so a stored result is read only once.
    """
    cache = {} if cache is None else cache
    links = Counter(link.evidence_id for link in board.list_links())
    panels = {hyp.id: hypothesis_html(board, hyp.id) for hyp in board.list_hypotheses()}
    for item in board.list_evidence():
        key = (item.id, item.updated_at, links[item.id])
        if key not in cache:
            cache[key] = evidence_html(board, item.id, max_rows=SYNCED_ROWS, chart=False)
        panels[item.id] = cache[key]
    return panels


def evidence_html(board: Board, evidence_id: str, *, max_rows: int = MAX_FRAME_ROWS,
                  chart: bool = True) -> str:
    """Description, formatted SQL, each stance with its rationale, the chart (unless
    ``chart`` is False) and the first ``max_rows`` rows of the stored result, with a note
    saying how to see the rest when there are more."""
    item = board.get_evidence(evidence_id)
    rows = f"{item.row_count} row{'s' if item.row_count != 1 else ''}"
    if item.truncated:
        rows += f" ({item.stored_rows} stored on the board)"
    parts = [f"<h4>{escape(item.id)}: {escape(item.description)}</h4>",
             f"<p>{escape(rows)} &middot; by {escape(item.author)} ({escape(item.author_role)})"
             f" in round {item.round}"]
    if item.duration_s is not None:
        parts.append(f" &middot; {item.duration_s:.2f} s")
    parts.append("</p>")
    if item.redundant:
        parts.append(f"<p><i>Marked redundant: {escape(item.redundant_reason or '')}</i></p>")
    reused_by = [r.investigation_id for r in board.list_reuses() if r.evidence_id == item.id]
    if reused_by:
        note = reuse_text(item.investigation_id, reused_by)
        parts.append(f"<p><i>{escape(note[0].upper() + note[1:])}</i></p>")
    parts.append(sql_html(item.sql))
    links = board.list_links(evidence_id=item.id)
    if links:
        parts.append("<ul>")
        for link in links:
            parts.append(f"<li><b>{escape(link.stance.value)}</b> "
                         f"{escape(link.hypothesis_id)}"
                         f"{': ' + escape(link.rationale) if link.rationale else ''}</li>")
        parts.append("</ul>")
    if chart:
        parts.append(chart_html(board, item.id))
    if max_rows >= MAX_FRAME_ROWS:
        parts.append(frame_html(board.evidence_frame(item.id)))
    else:
        parts.append(frame_html(board.evidence_frame(item.id).head(max_rows)))
        if item.stored_rows > max_rows:
            parts.append(f"<p><i>First {max_rows} of {item.stored_rows} stored rows. All of "
                         f"them: <code>board.evidence_frame('{escape(item.id)}')</code>, or "
                         "click the node again once the cell has finished.</i></p>")
    return "".join(parts)


def chart_html(board: Board, evidence_id: str) -> str:
    """The evidence's chart as inline SVG (drawn from its stored rows), or nothing where
    no chart helps."""
    from d2_notebook.charts import chart_for_evidence, chart_svg

    chart = chart_for_evidence(board, evidence_id)
    if chart is None:
        return ""
    return f"<div class='d2-chart' style='overflow-x:auto'>{chart_svg(chart)}</div>"


def frame_html(frame: pd.DataFrame) -> str:
    """A stored result as an HTML table in a box that scrolls sideways, so wide results
    keep every column."""
    table = frame.to_html(max_rows=MAX_FRAME_ROWS, border=0, classes="d2-frame")
    # One line: a line break outside <pre> would become <br> in ipycytoscape's panel.
    table = re.sub(r">\s+<", "><", table).replace("\n", " ")
    return f"<div class='d2-frame-scroll' style='overflow-x:auto;max-width:100%'>{table}</div>"


def pretty_sql(sql: str) -> str:
    """``sql`` laid out one clause a line by sqlglot's pretty printer (DuckDB dialect,
    the dialect the collectors write); the text as written when it does not parse."""
    import sqlglot

    try:
        return ";\n".join(tree.sql(dialect="duckdb", pretty=True)
                           for tree in sqlglot.parse(sql, read="duckdb") if tree is not None)
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError, ValueError):
        return sql


def sql_html(sql: str) -> str:
    """SQL formatted (:func:`pretty_sql`) and highlighted with inline styles (pygments,
    or plain ``<pre>`` without it), scrolling sideways rather than wrapping mid-word."""
    text = pretty_sql(sql)
    try:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import SqlLexer
    except ImportError:
        return f"<pre class='d2-sql' style='overflow-x:auto'>{escape(text)}</pre>"
    return highlight(text, SqlLexer(), HtmlFormatter(
        noclasses=True, nobackground=True, cssstyles="overflow-x:auto",
        prestyles="white-space:pre;overflow-x:auto"))
