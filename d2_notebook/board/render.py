"""A board as a readable text tree, for ``d2 board show`` and plain-text reprs.

Pure functions of the board's records: no SQL against user data, no model calls. Every
line goes through :func:`~d2_notebook.terminal_text.terminal_safe`, so text on the board
cannot drive the terminal it is printed on.
"""

from __future__ import annotations

import textwrap

from d2_notebook.board.board import Board
from d2_notebook.board.follow_ups import reuse_text
from d2_notebook.board.records import (
    Discount,
    Evidence,
    Hypothesis,
    Investigation,
    Link,
    RecheckedVerdict,
    VerdictCheck,
)
from d2_notebook.board.scopes import investigation_scope
from d2_notebook.terminal_text import terminal_safe

_STATUS_MARK = {
    "proposed": "·",
    "investigating": "…",
    "supported": "✔",
    "contradicted": "✘",
    "inconclusive": "?",
    "abandoned": "–",
}


def render_tree(board: Board, *, width: int = 100, include_redundant: bool = True,
                investigation_id: str | None = None) -> str:
    """Investigations, then each hypothesis (refinements indented under their parent)
    with its verdict and linked evidence, then evidence linked to nothing.

    With ``investigation_id``, only that investigation
    (:func:`~d2_notebook.board.scopes.investigation_scope`: its hypotheses, the evidence
    linked to them, reused evidence included, and its own exploration), its counts, and
    a last line naming the board's other investigations.

    Raises:
        NotFoundError: ``investigation_id`` is not on the board.
    """
    lines: list[str] = []
    checks: dict[str, RecheckedVerdict] = {}
    if investigation_id is None:
        shown = board.list_investigations()
        reuses = board.list_reuses()
        hypotheses = board.list_hypotheses()
        evidence = {e.id: e for e in board.list_evidence()}
        links = board.list_links()
        others: tuple[Investigation, ...] = ()
    else:
        scope = investigation_scope(board, investigation_id, option="--investigation")
        shown = [] if scope.investigation is None else [scope.investigation]
        reuses, hypotheses, links = scope.reuses, scope.hypotheses, scope.links
        evidence = {e.id: e for e in scope.evidence}
        others = scope.others
    for inv in shown:
        lines.append(_one_line(f"Investigation {inv.id} [{inv.state.value}]: {inv.question}"))
        follows = board.follows(inv.id)
        if follows is not None:
            reused = [r.evidence_id for r in reuses if r.investigation_id == inv.id]
            lines.append(_one_line(
                f"  follow-up of {follows}: reused {', '.join(reused) or 'no evidence'} "
                "(not re-run)"))
        latest = board.latest_verdict_checks(inv.id)
        if latest:
            checks.update(latest)
            stale = sorted(h for h, c in latest.items() if c.check is VerdictCheck.STALE)
            when = max(c.created_at for c in latest.values())[:10]
            lines.append(_one_line(
                f"  re-checked on {when}: {len(stale)} stale verdict(s)"
                + (f" ({', '.join(stale)})" if stale else "")
                + f", {len(latest) - len(stale)} confirmed"))
        lines.extend(_rejudge_lines(board, inv.id))
    if investigation_id is None:
        counts = board.counts()
        calls = counts["model_calls"]
    else:
        calls = sum(spend.calls for inv in shown for spend in board.model_spend(inv.id))
    redundant = sum(1 for e in evidence.values() if e.redundant)
    lines.append(
        f"{len(hypotheses)} hypotheses, {len(evidence)} evidence "
        f"({redundant} redundant), {len(links)} links, {calls} model calls"
    )
    children: dict[str | None, list[Hypothesis]] = {}
    for hyp in hypotheses:
        children.setdefault(hyp.parent_id, []).append(hyp)

    def walk(hyp: Hypothesis, depth: int) -> None:
        indent = "    " * depth
        lines.append("")
        lines.append(_wrap(f"{indent}{_hypothesis_line(hyp)}", width, indent + "    "))
        if hyp.motivated_by:
            lines.append(_one_line(f"{indent}    motivated by: {', '.join(hyp.motivated_by)}"))
        verdict = board.latest_verdict(hyp.id)
        if verdict is not None:
            cited = ", ".join(verdict.evidence_ids) or "no evidence"
            text = f"{indent}    verdict: {verdict.rationale} [{cited}]"
            lines.append(_wrap(text, width, indent + "      "))
            for discount in verdict.discounted:
                lines.append(_wrap(f"{indent}      {discount_line(discount)}", width,
                                   indent + "        "))
            if verdict.contribution is not None:
                size = f"{indent}    size: {verdict.headline}"
                lines.append(_wrap(size, width, indent + "      "))
            if hyp.id in checks:
                lines.append(_one_line(f"{indent}    {_check_line(checks[hyp.id])}"))
        elif hyp.status_reason:
            text = f"{indent}    reason: {hyp.status_reason}"
            lines.append(_wrap(text, width, indent + "      "))
        own = [link for link in links if link.hypothesis_id == hyp.id]
        for position, link in enumerate(own):
            item = evidence[link.evidence_id]
            if item.redundant and not include_redundant:
                continue
            branch = "└─" if position == len(own) - 1 else "├─"
            reused_by = [r.investigation_id for r in reuses if r.evidence_id == item.id
                         and r.investigation_id == hyp.investigation_id]
            mark = f" [{reuse_text(item.investigation_id, reused_by)}]" if reused_by else ""
            lines.append(_wrap(f"{indent}    {branch} {_evidence_line(item, link)}{mark}",
                               width, indent + "       "))
        for child in children.get(hyp.id, []):
            walk(child, depth + 1)

    for root in children.get(None, []):
        walk(root, 0)
    linked = {link.evidence_id for link in links}
    loose = [e for e in evidence.values() if e.id not in linked]
    if loose:
        lines.append("")
        lines.append("Evidence not linked to a hypothesis:")
        for item in loose:
            if item.redundant and not include_redundant:
                continue
            lines.append(_wrap(f"    {_evidence_line(item, None)}", width, "       "))
    if others:
        lines.append("")
        lines.append(_wrap("Also on this board (show one with --investigation ID): "
                           + "; ".join(f"{inv.id} [{inv.state.value}]: {inv.question}"
                                       for inv in others), width, "    "))
    return "\n".join(lines)


def _rejudge_lines(board: Board, investigation_id: str) -> list[str]:
    """``re-judged on <date> after R1: revised H3; confirmed H6`` per re-judged re-check,
    a re-judge stopped since the latest report version (a fault, an interruption), then
    the report versions, when there is more than one."""
    lines = []
    for run in board.list_recheck_runs(investigation_id=investigation_id):
        done = board.list_rejudges(run.id)
        if not done:
            continue
        by_outcome: dict[str, list[str]] = {}
        for item in done:
            by_outcome.setdefault(item.outcome.value, []).append(item.hypothesis_id)
        parts = "; ".join(f"{o} {', '.join(h)}" for o, h in by_outcome.items())
        lines.append(_one_line(f"  re-judged on {done[-1].created_at[:10]} after {run.id}: "
                               f"{parts}"))
    versions = board.list_report_versions(investigation_id)
    last_version = versions[-1].created_at if versions else ""
    for event in board.events(kinds=["rejudge.failed"]):
        if event.investigation_id == investigation_id and event.time > last_version:
            lines.append(_one_line(
                f"  re-judge after {event.payload.get('run')} stopped on {event.time[:10]}: "
                f"{event.payload.get('error')}; re-check with --rejudge to finish it"))
    if len(versions) > 1:
        lines.append(_one_line("  report versions: " + ", ".join(
            f"v{v.version} {v.created_at[:10]}" for v in versions) + " (the newest is shown)"))
    return lines


def discount_line(discount: Discount) -> str:
    """``discounted E4 (missing record): <the judge's explanation>``."""
    reason = discount.reason.value.replace("_", " ")
    return f"discounted {discount.evidence_id} ({reason}): {discount.explanation}"


def _check_line(check: RecheckedVerdict) -> str:
    day = check.created_at[:10]
    if check.check is VerdictCheck.STALE:
        return (f"STALE since {day} ({check.run_id}): evidence it cites changed or fails on "
                "today's data; re-judge it")
    return f"confirmed on {day} ({check.run_id})"


def _hypothesis_line(hyp: Hypothesis) -> str:
    mark = _STATUS_MARK[hyp.status.value]
    confidence = "" if hyp.confidence is None else f" {hyp.confidence:.2f}"
    return f"{mark} {hyp.id} [{hyp.status.value}{confidence}] {hyp.statement}"


def _evidence_line(item: Evidence, link: Link | None) -> str:
    rows = f"{item.row_count} row{'s' if item.row_count != 1 else ''}"
    if item.truncated:
        rows += f", {item.stored_rows} stored"
    stance = f"{link.stance.value} " if link else ""
    flags = " (redundant)" if item.redundant else ""
    reading = f" — {link.rationale}" if link and link.rationale else ""
    return f"{item.id} {stance}{item.description} ({rows}){flags}{reading}"


def _one_line(text: str) -> str:
    return terminal_safe(text, keep_newlines=False)


def _wrap(text: str, width: int, subsequent_indent: str) -> str:
    return textwrap.fill(_one_line(text), width=width, subsequent_indent=subsequent_indent,
                         break_long_words=False, break_on_hyphens=False)
