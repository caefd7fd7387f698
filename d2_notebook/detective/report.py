"""Reports built from the board alone, without a model.

Used by the ``no_reporter`` variant, and whenever the reporter cannot run (its
budget is spent). The same structure as the reporter's: the answer first, then each
hypothesis with its verdict and evidence ids, then what was not examined. A written
report (the reporter's, the single agent's) gets the last two from the board as well
(:func:`board_sections`): a model copying them would only spend output on them. Board text is
kept on its own line (a line break in a statement cannot start a heading or a list);
displays make the whole report inert (:mod:`d2_notebook.safe_markdown`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from d2_notebook.board import (
    Board,
    ContributionRole,
    DimensionDismissal,
    Hypothesis,
    HypothesisStatus,
    Verdict,
)
from d2_notebook.board.render import discount_line

_LINE_BREAKS = re.compile(r"\s*[\r\n\u2028\u2029\x0b\x0c]+\s*")
_TABLE_OF = re.compile(r"([A-Za-z_]\w*)\.[A-Za-z_\"]")
UNTOUCHED_REASON = "no evidence touched it (collection stopped first)"
"""The reason given for a candidate dimension left untouched by a run that stopped."""


def _inline(text: str) -> str:
    """Board text on one line."""
    return _LINE_BREAKS.sub(" ", text).strip()


def fallback_report(board: Board, investigation_id: str, *, note: str = "") -> str:
    """A Markdown report of the investigation's hypotheses, verdicts and evidence."""
    question = board.get_investigation(investigation_id).question
    hypotheses = board.list_hypotheses(investigation_id=investigation_id)
    ranked = ranked_factors(board, hypotheses)
    lines = [f"# {_inline(question)}", "", "## Answer", ""]
    if not any(h.status is HypothesisStatus.SUPPORTED for h, _ in ranked):
        lines.append("No hypothesis was supported by the evidence.")
    for hyp, verdict in ranked:
        cited = ", ".join(verdict.evidence_ids) if verdict else ""
        confidence = f"confidence {hyp.confidence:.2f}" if hyp.confidence is not None else ""
        size = ""
        if verdict is not None and verdict.contribution is not None:
            plain = (hyp.status is HypothesisStatus.SUPPORTED
                     and verdict.status_label == verdict.status.value)
            # a contradicted claim, or one that the factor adds nothing, says so first
            size = verdict.contribution.describe() if plain else verdict.headline
            size = f"{_inline(size)}; "
        about = f" ({size}{confidence})" if size or confidence else ""
        lines.append(f"- **{hyp.id}** {_inline(hyp.statement)}{about} [{cited}]")
    lines += ["", "## Hypotheses", ""]
    for hyp in hypotheses:
        lines.append(f"### {hyp.id} — {hyp.status.value}: {_inline(hyp.statement)}")
        verdict = board.latest_verdict(hyp.id)
        if verdict is not None:
            lines.append(f"Verdict ({verdict.confidence:.2f}): {_inline(verdict.rationale)}")
            for discount in verdict.discounted:
                lines.append(f"- {_inline(discount_line(discount))}")
        elif hyp.status_reason:
            lines.append(f"Note: {_inline(hyp.status_reason)}")
        for link in board.list_links(hypothesis_id=hyp.id):
            evidence = board.get_evidence(link.evidence_id)
            if evidence.redundant:
                continue
            reading = f" — {_inline(link.rationale)}" if link.rationale else ""
            lines.append(f"- {link.stance.value}: {evidence.id} {_inline(evidence.description)}"
                         f" ({evidence.row_count} rows){reading}")
        lines.append("")
    if note:
        lines += ["## Not examined", "", note, ""]
    return "\n".join(lines).rstrip() + "\n"


def board_sections(board: Board, investigation_id: str, report: str, *,
                   note: str = "", not_refined: Iterable[str] = ()) -> str:
    """The sections a written report takes from the board, for appending after it:
    "## Hypotheses" (one line each: verdict, confidence, size, the evidence it cites; the
    factors first, in :func:`ranked_factors`'s order, then the rest in board
    order)
    and "## Not examined" (``note``), each only if ``report`` has no such section yet,
    then "## Not refined" with every line of ``not_refined`` the report does not hold.
    Empty when there is nothing to add."""
    parts = []
    if not has_section(report, "Hypotheses"):
        hypotheses = board.list_hypotheses(investigation_id=investigation_id)
        ranked = ranked_factors(board, hypotheses)
        first = {h.id for h, _ in ranked}
        ordered = [h for h, _ in ranked] + [h for h in hypotheses if h.id not in first]
        lines = [hypothesis_line(board, h) for h in ordered]
        if any(v is not None and v.contribution is not None for _, v in ranked):
            lines.insert(0, RANKING_NOTE + "\n")
        if lines:
            parts.append("## Hypotheses\n\n" + "\n".join(lines))
    if note and not has_section(report, "Not examined"):
        parts.append(f"## Not examined\n\n{note}")
    missing = [line for line in not_refined if line not in report]
    if missing:  # the report lists every refinement the team did not make
        parts.append("## Not refined\n\n" + "\n".join(f"- {line}" for line in missing))
    return "\n\n".join(parts)


def hypothesis_line(board: Board, hyp: Hypothesis) -> str:
    """One Markdown line: ``- **H3** supported (0.85; major contributor …): statement
    [E21, E23]`` — the latest verdict's status (``contradicted as the main cause`` for a
    main-cause claim on a minor contributor, ``as the only cause`` for a sole-cause claim
    on one factor among others, ``supported, no effect as claimed`` for a supported
    claim that a factor does not matter), confidence, size and cited evidence."""
    verdict = board.latest_verdict(hyp.id)
    about = []
    if verdict is not None:
        about.append(f"confidence {verdict.confidence:.2f}")
        if verdict.contribution is not None:
            about.append(_inline(verdict.contribution.describe()))
    elif hyp.status_reason:
        about.append(_inline(hyp.status_reason))
    detail = f" ({'; '.join(about)})" if about else ""
    cited = f" [{', '.join(verdict.evidence_ids)}]" if verdict and verdict.evidence_ids else ""
    status = (verdict.status_label if verdict is not None and verdict.status is hyp.status
              else hyp.status.value)
    return f"- **{hyp.id}** {status}{detail}: {_inline(hyp.statement)}{cited}"


def ranked_factors(board: Board,
                   hypotheses: list[Hypothesis]) -> list[tuple[Hypothesis, Verdict | None]]:
    """The hypotheses the answer lists, with their verdicts, ranked by size where sizes
    compare.

    Listed: every supported hypothesis, and every contradicted one whose verdict still
    sizes a real contributor (a hypothesis that the factor is the main cause, contradicted
    because it is a minor contributor; or one that it does not matter, contradicted by
    its size): the claim is wrong, the factor's size stands. Order: those whose verdict
    sizes a contributor first, supported and contradicted alike — major before minor;
    within a role, those with a share of the change first, largest share first (shares
    of one change compare), then those sized by an effect alone in board order (effects
    on different measures do not compare, so they are not ranked against each other) —
    then the unsized supported ones in board order, and last those supported with no
    contributor (a claim that a factor does not matter is no cause to rank among the
    causes). Within a role, a factor that works against the change (a negative share)
    comes after those that drive it, however large: a reader looks first for what made
    the change. A listed contradicted hypothesis is told apart by its status (its
    verdict's ``headline`` says "contradicted as the main cause: minor contributor ...")."""
    latest = [(h, board.latest_verdict(h.id)) for h in hypotheses
              if h.status in (HypothesisStatus.SUPPORTED, HypothesisStatus.CONTRADICTED)]

    def role(verdict: Verdict | None) -> ContributionRole | None:
        return verdict.contribution.role if verdict and verdict.contribution else None

    def order(pair: tuple[Hypothesis, Verdict | None]) -> tuple[bool, bool, bool, float]:
        contribution = pair[1].contribution  # type: ignore[union-attr]
        share = contribution.share
        return (contribution.role is not ContributionRole.MAJOR, share is None,
                contribution.works_against_change, -abs(share) if share is not None else 0.0)

    sized = sorted(((h, v) for h, v in latest if v is not None and v.contribution is not None
                    and v.contribution.is_real and (h.status is HypothesisStatus.SUPPORTED
                                                    or v.status is HypothesisStatus.CONTRADICTED)),
                   key=order)
    supported = [(h, v) for h, v in latest if h.status is HypothesisStatus.SUPPORTED]
    return (sized + [(h, v) for h, v in supported if role(v) is None]
            + [(h, v) for h, v in supported if role(v) is ContributionRole.NONE])


RANKING_NOTE = ("Factors first (supported, and real factors of claims contradicted as "
                "stated), major before minor, each role by its share of the change where one "
                "is given (factors working against the change after those driving it); sizes "
                "on different measures are listed in board order, not ranked against each "
                "other.")
"""The line that opens the board's "## Hypotheses" section when a verdict gives a size."""


def not_examined_table(dismissed: Iterable[DimensionDismissal],
                       untouched: Iterable[str] = ()) -> str:
    """The dimensions left unexamined as one compact Markdown table: one row per table
    and reason, the reason written once for all the dimensions it covers.

    Returns an empty string when nothing was left unexamined.
    """
    groups: dict[tuple[str, str], list[str]] = {}
    reasons = [(d.dimension, _inline(d.reason).rstrip(".")) for d in dismissed]
    reasons += [(name, UNTOUCHED_REASON) for name in untouched]
    for dimension, reason in reasons:
        groups.setdefault((reason, _table_of(dimension)), []).append(shown_name(dimension))
    if not groups:
        return ""
    lines = ["| why not examined | table | dimensions |", "|---|---|---|"]
    previous = None
    for (reason, table), names in groups.items():
        cell = reason.replace("|", "\\|") if reason != previous else "(same)"
        lines.append(f"| {cell} | {table or '—'} | {', '.join(names).replace('|', '/')} |")
        previous = reason
    return "\n".join(lines)


def has_section(report: str, title: str) -> bool:
    """Whether ``report`` has a ``## <title>`` heading (a line of its own, any words
    after the title: "## Hypotheses considered" counts, "### Hypotheses" does not)."""
    return _heading(report, title) is not None


def _heading(report: str, title: str) -> re.Match[str] | None:
    """The whole line of the first ``## <title>`` heading of ``report``, if any."""
    return re.search(rf"^##\s+{re.escape(title)}\b.*$", report, re.MULTILINE)


def with_missed_dismissals(report: str, dismissed: Iterable[DimensionDismissal]) -> str:
    """``report`` with the dismissals its own "## Not examined" section does not name
    added at the end of that section, as one table (:func:`not_examined_table`); the
    report unchanged when it has no such section (the board's section is appended then)
    or the section names every dismissed dimension, in full or as the table shows it."""
    heading = _heading(report, "Not examined")
    if heading is None:
        return report
    following = re.search(r"^##\s", report[heading.end():], re.MULTILINE)
    end = heading.end() + following.start() if following else len(report)
    section = report[heading.end():end]
    missed = [d for d in dismissed
              if not any(_names(section, name) for name in (d.dimension,
                                                          shown_name(d.dimension)))]
    if not missed:
        return report
    table = not_examined_table(missed)
    return f"{report[:end].rstrip()}\n\n{table}\n\n{report[end:].lstrip()}".rstrip() + "\n"


def _names(text: str, name: str) -> bool:
    """Whether ``text`` names ``name`` as a whole (not inside a longer name or word)."""
    return re.search(rf"(?<![\w.]){re.escape(name)}(?![\w(])", text) is not None


def shown_name(dimension: str) -> str:
    """A dimension's name without its table: ``month(orders.placed)`` -> ``month(placed)``."""
    table = _table_of(dimension)
    return dimension.replace(f"{table}.", "") if table else dimension


def _table_of(dimension: str) -> str:
    """The table a candidate dimension's name reads (``month(orders.placed)`` -> orders)."""
    found = _TABLE_OF.search(dimension)
    return found.group(1) if found else ""
