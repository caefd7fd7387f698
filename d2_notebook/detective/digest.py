"""The board digest: the one compact, structured view of the board every agent reads.

Agents never see each other's transcripts; they see this digest (PROMPTS.md: ids,
statements, statuses, one line per evidence with its stance and row count). It is a
pure function of the board (and the coverage map, when given), deterministic for a
given board state. With a coverage map it says which candidate dimensions each
hypothesis's evidence controlled or split by and which no evidence touched. Hypothesis
statements are shown whole (``add_hypothesis`` keeps them to one sentence); other
texts are shortened at a word boundary, never inside a word.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping

from d2_notebook.board import Board, Evidence, Hypothesis, Link, ToolCall
from d2_notebook.board.render import discount_line
from d2_notebook.detective.coverage_view import BoardCoverage
from d2_notebook.detective.evidence_view import cut_at_word, tool_summary
from d2_notebook.detective.query_shape import limit_clause

_MAX_TEXT = 240


OTHER_EVIDENCE_SHOWN = 25
"""The most evidence of other hypotheses (or exploration) a focused digest lists (the
newest)."""


def board_digest(
    board: Board,
    *,
    investigation_id: str | None = None,
    focus: str | None = None,
    include_redundant: bool = False,
    coverage: BoardCoverage | None = None,
    other_evidence: bool = False,
) -> str:
    """Render the board for a prompt.

    Args:
        board: the board to describe.
        investigation_id: only hypotheses and evidence of this investigation.
        focus: a hypothesis id; when set, only that hypothesis (its rationale whole), its
            parent and children, and their evidence are shown (a collector's or judge's
            focused context).
        include_redundant: also list evidence the reporter marked redundant.
        coverage: the coverage map (:func:`~d2_notebook.detective.coverage_view.
            board_coverage`); when given, each hypothesis lists the candidate
            dimensions its evidence controlled or split by, and (unless ``focus`` is
            set) the digest ends with the dimensions no evidence touched and those
            dismissed.
        other_evidence: with ``focus``, also list the evidence the digest does not show
            (analysis results and queries, the :data:`OTHER_EVIDENCE_SHOWN` nearest the
            focused hypotheses, see :func:`_nearest`), one line each, for a reader that
            can ``link_evidence`` one instead of running its query again.
    """
    hypotheses = board.list_hypotheses(investigation_id=investigation_id)
    evidence = {
        e.id: e
        for e in board.list_evidence(investigation_id=investigation_id, include_reused=True)
        if include_redundant or not e.redundant
    }
    links = board.list_links()
    calls = board.tool_calls()
    if focus is not None:
        keep = _focus_family(hypotheses, focus)
        hypotheses = [h for h in hypotheses if h.id in keep]
    lines = ["HYPOTHESES (id | status | confidence | statement):"]
    if not hypotheses:
        lines.append("  (none yet)")
    for hyp in hypotheses:
        lines.extend(_hypothesis_lines(board, hyp, links, evidence, calls,
                                       whole_rationale=hyp.id == focus))
        covered = coverage.hypothesis_line(hyp.id) if coverage is not None else None
        if covered is not None:
            lines.append(f"    {covered}")
    if focus is not None and other_evidence:
        lines.extend(_other_evidence(board, hypotheses, links, evidence, calls))
    linked = {link.evidence_id for link in links}
    loose = [e for e in evidence.values() if e.id not in linked]
    if loose and focus is None:
        lines.append("EVIDENCE NOT LINKED TO A HYPOTHESIS:")
        lines.extend(f"  {_evidence_text(e, calls.get(e.id))}" for e in loose)
    if coverage is not None and focus is None:  # a focused digest stays about its focus
        lines.extend(coverage.board_lines())
    return "\n".join(lines)


def _focus_family(hypotheses: list[Hypothesis], focus: str) -> set[str]:
    """The ids a digest focused on ``focus`` shows: it, its parent and its children."""
    family = {focus, *(h.id for h in hypotheses if h.parent_id == focus)}
    focused = next((h for h in hypotheses if h.id == focus), None)
    if focused is not None and focused.parent_id:
        family.add(focused.parent_id)
    return family


def _newest(lines: list[str], limit: int) -> list[str]:
    """The last ``limit`` of ``lines`` (the newest), and a line counting those left out."""
    older = len(lines) - limit
    return [*lines[-limit:], *([f"  ({older} older ones not listed)"] if older > 0 else [])]


def _hypothesis_lines(
    board: Board, hyp: Hypothesis, links: list[Link], evidence: dict[str, Evidence],
    calls: Mapping[str, ToolCall], *, whole_rationale: bool = False,
) -> list[str]:
    """A hypothesis's lines: its statement, rationale (whole for the hypothesis a digest
    is focused on: its collector and judge read it to the end), links and verdict."""
    confidence = "-" if hyp.confidence is None else f"{hyp.confidence:.2f}"
    parent = f" (refines {hyp.parent_id})" if hyp.parent_id else ""
    statement = " ".join(hyp.statement.split())
    lines = [f"{hyp.id} | {hyp.status.value} | {confidence} | {statement}{parent}"]
    if hyp.rationale:
        rationale = " ".join(hyp.rationale.split()) if whole_rationale else _short(hyp.rationale)
        lines.append(f"    rationale: {rationale}")
    if hyp.motivated_by:
        lines.append(f"    motivated by (exploration, not a test): {', '.join(hyp.motivated_by)}")
    for link in links:
        if link.hypothesis_id != hyp.id or link.evidence_id not in evidence:
            continue
        reading = f" — {_short(link.rationale, 160)}" if link.rationale else ""
        item = evidence[link.evidence_id]
        lines.append(f"    {link.stance.value}: {_evidence_text(item, calls.get(item.id))}"
                     f"{reading}")
    verdict = board.latest_verdict(hyp.id)
    if verdict is not None:
        cited = ", ".join(verdict.evidence_ids) or "none"
        lines.append(f"    verdict ({verdict.status.value}, cites {cited}): "
                     f"{_short(verdict.rationale)}")
        lines.extend(f"      {_short(discount_line(d), 200)}" for d in verdict.discounted)
        if verdict.contribution is not None:
            lines.append(f"    size: {verdict.headline}")
    elif hyp.status_reason:
        lines.append(f"    note: {_short(hyp.status_reason)}")
    return lines


def _other_evidence(board: Board, shown: list[Hypothesis], links: list[Link],
                    evidence: dict[str, Evidence],
                    calls: Mapping[str, ToolCall]) -> list[str]:
    """A focused digest's list of the evidence on the board that it does not show
    (recorded for other hypotheses, or exploration) and that was written before the
    family's latest write (:func:`_written_before_focus`), one line each, so a collector
    or judge links one that tests its hypothesis instead of running the same query or
    analysis again (real-model collectors of four hypotheses each ran the same adjusted
    query, and three the same gym check-ins, which the list of analyses alone hid)."""
    ids = {h.id for h in shown}
    seen = {link.evidence_id for link in links if link.hypothesis_id in ids}
    seen.update(e for h in shown for e in h.motivated_by)
    written = _written_before_focus(board, ids)
    others: list[tuple[str, str]] = []  # (line, full description) in board order
    for item in evidence.values():
        if item.id in seen or item.id not in written:
            continue
        call = calls.get(item.id)
        text = (item.description if call is None or item.description.startswith(call.tool)
                else f"{call.tool}: {item.description}")
        others.append((f"  {_evidence_text(item, call)}", text))
    if not others:
        return []
    about = " ".join(f"{h.statement} {h.rationale or ''}" for h in shown)
    return ["OTHER EVIDENCE ON THE BOARD (other hypotheses' and exploration, those nearest "
            "yours first; read_evidence shows its rows; link_evidence one that tests yours "
            "instead of running its query again):",
            *_nearest(others, about, OTHER_EVIDENCE_SHOWN)]


_WORD = re.compile(r"[a-z][a-z0-9_]{2,}")


def _nearest(others: list[tuple[str, str]], about: str, limit: int) -> list[str]:
    """The lines of the ``limit`` descriptions nearest ``about`` (the focused hypotheses'
    words; a word rare among the descriptions counts more), ties to the newest, in board
    order, and a line counting those left out. On a board of 60 results the newest 25
    left out the asthma-and-diabetes comparison a collector then ran again."""
    words = [set(_WORD.findall(text.lower())) for _, text in others]
    wanted = set(_WORD.findall(about.lower()))
    frequency = Counter(w for found in words for w in found)
    scores = [sum(1 / frequency[w] for w in found & wanted) for found in words]
    kept = sorted(sorted(range(len(others)), key=lambda i: (-scores[i], -i))[:limit])
    left = len(others) - len(kept)
    return [*(others[i][0] for i in kept),
            *([f"  ({left} more not listed: older or further from yours)"] if left > 0 else [])]


_FOCUS_EVENTS = ("hypothesis.added", "hypothesis.status", "link.added", "collector.submitted",
                 "verdict.added")


def _written_before_focus(board: Board, family: set[str]) -> set[str]:
    """The evidence written before the focused family's latest write (its branch's).

    A focused prompt must not depend on what parallel branches write meanwhile: a replay
    runs the same writes in the same order, but builds a prompt at another moment between
    them. Evidence written before the branch's own latest write is the same set in every
    run (a replay diverged on an evidence list read a moment later)."""
    events = board.events(kinds=("evidence.added", *_FOCUS_EVENTS))
    cut = max((e.seq for e in events if e.kind != "evidence.added"
               and (e.payload.get("id") in family or e.payload.get("hypothesis_id") in family)),
              default=0)
    return {str(e.payload.get("id")) for e in events
            if e.kind == "evidence.added" and e.seq < cut}


def readable_evidence(board: Board, investigation_id: str, focus: str) -> set[str]:
    """The evidence a focused prompt may show or list: its family's own (linked to, or
    motivating, ``focus``, its parent or children) and the rest written before the
    family's latest write (:func:`_written_before_focus`), the same set in a replay."""
    hypotheses = board.list_hypotheses(investigation_id=investigation_id)
    family = _focus_family(hypotheses, focus)
    own = {link.evidence_id for h in family for link in board.list_links(hypothesis_id=h)}
    own.update(e for h in hypotheses if h.id in family for e in h.motivated_by)
    return own | _written_before_focus(board, family)


OTHER_HYPOTHESES_SHOWN = 25
"""The most other hypotheses a judge that may refine is shown (the newest)."""


def other_hypotheses(board: Board, investigation_id: str, focus: str) -> str:
    """For a judge that may refine ``focus``: the investigation's hypotheses its focused
    digest does not show (not ``focus``, its parent or its children), one line each
    (the newest :data:`OTHER_HYPOTHESES_SHOWN`), so a refined child does not restate
    one already on the board (a judge that saw only its own hypothesis refined it into
    a child that repeated a supported sibling). Empty when there are none."""
    hypotheses = board.list_hypotheses(investigation_id=investigation_id)
    shown = _focus_family(hypotheses, focus)
    others = [f"  {h.id} | {h.status.value} | {_short(' '.join(h.statement.split()), 160)}"
              for h in hypotheses if h.id not in shown]
    if not others:
        return ""
    return "\n".join(["OTHER HYPOTHESES ON THE BOARD (a refined child must not restate one "
                      "of these):", *_newest(others, OTHER_HYPOTHESES_SHOWN)])


def _evidence_text(item: Evidence, call: ToolCall | None) -> str:
    """One evidence as a digest line: id, rows (and whether they reach the query's
    LIMIT) and description; for an analysis tool's evidence, its tool, its summary's
    first line and the call's filter and named dimensions, which tell apart calls whose
    first lines are the same (a judge read three compare_within evidences of one
    exposure, held fixed over different dimensions, under one title)."""
    rows = f"{item.row_count} row{'s' if item.row_count != 1 else ''}"
    if call is None:
        return (f"{item.id} ({rows}{limit_clause(item.sql, item.row_count)}) "
                f"{_short(item.description, 160)}")
    first = tool_summary(item.description).split("\n", 1)[0]
    if not first.startswith(call.tool):
        first = f"{call.tool}: {first}"
    named = [f"{key} {_short(_listed(call.args[key]), 120)}"
             for key in ("where", "dimensions") if call.args.get(key)]
    return (f"{item.id} ({rows}) {_short(first, 160)}"
            + (f" [{'; '.join(named)}]" if named else ""))


def _listed(value: object) -> str:
    return ", ".join(map(str, value)) if isinstance(value, list | tuple) else str(value)


def _short(text: str, limit: int = _MAX_TEXT) -> str:
    return cut_at_word(text, limit)
