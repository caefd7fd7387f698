"""What a board lacks against the gold graph, in the order a good investigator would work.

:func:`needs` lists them: the crime scene report, a witness not interviewed, a suspect
not on the board, a clue of a hypothesis no evidence checks, evidence not linked (or
linked the wrong way, or checking several clues at once), a hypothesis without a
verdict, a verdict the evidence does not bear out. Each :class:`Need` carries only the
kind of source and the board's *own* record ids — never a person, an id of the case's
data or a value of the gold rows — so a hint can be built from it safely.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from d2_notebook.teaching.assessment import Assessment
from d2_notebook.teaching.case_map import Source
from d2_notebook.teaching.graph_match import ESTABLISHED


class Gap(Enum):
    """The kind of thing a board lacks (in the order :func:`needs` reports them)."""

    REPORT = "report"
    WITNESS = "witness"
    SUSPECT = "suspect"
    WRONG_STANCE = "wrong stance"
    UNCHECKED_CLUE = "unchecked clue"
    UNLINKED_EVIDENCE = "unlinked evidence"
    BUNDLED_EVIDENCE = "bundled evidence"
    NO_VERDICT = "no verdict"
    WRONG_VERDICT = "wrong verdict"


_FACT_ORDER = (Gap.WRONG_STANCE, Gap.UNCHECKED_CLUE, Gap.UNLINKED_EVIDENCE,
               Gap.BUNDLED_EVIDENCE)


@dataclass(frozen=True)
class Need:
    """One thing the board lacks.

    Attributes:
        gap: what kind of thing.
        key: a stable name for it across calls (opaque: no person or data value), so
            repeated hints about the same need grow more specific.
        sources: the kinds of source that settle it.
        hypothesis: the board's own hypothesis id it concerns, if any.
        evidence: the board's own evidence id it concerns, if any.
    """

    gap: Gap
    key: str
    sources: tuple[Source, ...] = ()
    hypothesis: str | None = None
    evidence: str | None = None


def needs(found: Assessment) -> list[Need]:
    """Everything the board lacks, most pressing first (empty: nothing left to hint)."""
    return [*_context_needs(found), *_suspect_needs(found), *_fact_needs(found),
            *_verdict_needs(found)]


def _shown(found: Assessment, gold_id: str) -> bool:
    return any(cover.get(gold_id, 0.0) >= ESTABLISHED for cover in found.match.cover.values())


def _about(found: Assessment) -> dict[str, list[str]]:
    """Per gold hypothesis id, the board's hypotheses about it (board order)."""
    out: dict[str, list[str]] = {}
    for hyp in found.answer.hypotheses:
        target = found.match.about(hyp.id)
        if target is not None:
            out.setdefault(target, []).append(hyp.id)
    return out


def _context_needs(found: Assessment) -> list[Need]:
    """The report, then each witness whose account the board does not show yet."""
    nodes = found.nodes
    by_source: dict[tuple[Source, int | None], str] = {
        (n.source, n.witness): n.id for n in nodes.nodes.values()}
    about = _about(found)
    started = {g for target in about for g in nodes.groups_of.get(target, ())}
    interviewed = {n.witness for n in nodes.nodes.values()
                   if n.source is Source.INTERVIEW and _shown(found, n.id)}
    out: list[Need] = []
    report = by_source.get((Source.CRIME_REPORT, None))
    if report and not about and not interviewed and not _shown(found, report):
        out.append(Need(Gap.REPORT, "report", (Source.CRIME_REPORT,)))
    alibis = {n.group: n.id for n in nodes.nodes.values() if n.source is Source.WHEREABOUTS}
    for group, witnesses in sorted(nodes.witnesses.items()):
        for rank, witness in enumerate(witnesses):
            if witness in interviewed:
                continue
            if rank == 0 and group in started:
                continue  # the board works on this witness's clues: it has read them
            if rank > 0 and group in alibis and _shown(found, alibis[group]):
                continue
            search = next((source for (source, w) in by_source if w == witness
                           and source is not Source.INTERVIEW), Source.WITNESS_BY_ADDRESS)
            out.append(Need(Gap.WITNESS, f"witness-{witness}", (search, Source.INTERVIEW)))
    return out


def _suspect_needs(found: Assessment) -> list[Need]:
    """Each gold suspect no hypothesis on the board is about (gold order: by person id)."""
    about = _about(found)
    out = []
    for index, gold_hyp in enumerate(found.match.gold_hypotheses):
        if gold_hyp.id in about:
            continue
        groups = sorted(found.nodes.groups_of.get(gold_hyp.id, ()))
        sources = tuple(dict.fromkeys(s for g in groups
                                      for s in found.nodes.reliable_sources.get(g, ())))
        out.append(Need(Gap.SUSPECT, f"suspect-{index}", sources))
    return out


def _fact_needs(found: Assessment) -> list[Need]:
    """Each gold fact of a suspect on the board that no link earns, and why."""
    match = found.match
    about = _about(found)
    earned = match.earned()
    linked = {(e, h): stance for e, h, stance in [*match.scored, *match.unscored]}
    out = []
    for index, edge in enumerate(match.gold_edges):
        mine = about.get(edge.hypothesis)
        if not mine or earned.get(index, (None, 0.0))[1] >= ESTABLISHED:
            continue
        source = found.nodes.node(edge.evidence).source
        showing = [sid for sid, _ in match.established_by(edge.evidence)]
        links = [(sid, h, linked[(sid, h)]) for sid in showing for h in mine
                 if (sid, h) in linked]
        wrong = [(sid, h) for sid, h, stance in links
                 if stance != match.wanted_stance(sid, edge)]
        if not showing:
            gap, evidence, hypothesis = Gap.UNCHECKED_CLUE, None, mine[0]
        elif wrong:
            gap, (evidence, hypothesis) = Gap.WRONG_STANCE, wrong[0]
        elif not links:
            gap, evidence, hypothesis = Gap.UNLINKED_EVIDENCE, showing[0], mine[0]
        else:
            gap, evidence, hypothesis = Gap.BUNDLED_EVIDENCE, links[0][0], links[0][1]
        out.append(Need(gap, f"{gap.name.lower()}-{index}", (source,), hypothesis, evidence))
    return sorted(out, key=lambda need: _FACT_ORDER.index(need.gap))


def _verdict_needs(found: Assessment) -> list[Need]:
    """Hypotheses about suspects with evidence but no verdict; then wrong conclusions."""
    about = _about(found)
    linked = {h for _, h, _ in [*found.match.scored, *found.match.unscored]}
    out = [Need(Gap.NO_VERDICT, f"no-verdict-{h}", (), h)
           for hyps in about.values() for h in hyps
           if h in linked and not found.verdicts.get(h, False)]
    people = found.people
    accused = {people.resolve(a) for a in found.answer.accused}
    murderers = {str(m["id"]) for m in found.gold.murderers}
    if not out and accused != murderers:
        out.append(Need(Gap.WRONG_VERDICT, "verdicts", (Source.WHEREABOUTS,)))
    return sorted(out, key=lambda need: (need.gap != Gap.NO_VERDICT, _natural(need.key)))


def _natural(key: str) -> tuple[str, int]:
    head = key.rstrip("0123456789")
    tail = key[len(head):]
    return head, int(tail) if tail else 0
