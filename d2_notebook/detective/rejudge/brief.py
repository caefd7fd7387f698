"""The texts of a re-judge: the judge's first message (the old and the new evidence side
by side) and the report's "What changed since <date>" section.

The judge's message lists every evidence the stale verdict cites in one line a reader
(or an offline policy) can parse::

    EVIDENCE E1 changed -> re-run E7 | stance: supports | rows 300 -> 320; total[north] 1.2k -> 120
      reading then: <the evidence's description when it was recorded>
      reading now: <the re-run's description>

followed by the stored rows of the old and the re-run evidence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from d2_notebook.board import (
    Board,
    Evidence,
    Hypothesis,
    Recheck,
    RecheckRun,
    Rejudge,
    RejudgeOutcome,
    Verdict,
)

__all__ = ["day", "evidence_lines", "rejudge_message", "what_changed"]


def day(stamp: str) -> str:
    """The date part of a board time stamp (``2026-12-01``)."""
    return stamp[:10]


def evidence_lines(board: Board, hypothesis_id: str, cited: Sequence[str],
                   rechecks: Mapping[str, Recheck], reruns: Mapping[str, Evidence]) -> str:
    """One ``EVIDENCE`` line per cited evidence (see the module docstring)."""
    stances = {link.evidence_id: link.stance.value
               for link in board.list_links(hypothesis_id=hypothesis_id)}
    lines = []
    for evidence_id in cited:
        found = rechecks.get(evidence_id)
        outcome = found.outcome.value if found is not None else "not re-checked"
        rerun = reruns.get(evidence_id)
        head = f"EVIDENCE {evidence_id} {outcome}"
        if rerun is not None:
            head += f" -> re-run {rerun.id}"
        head += f" | stance: {stances.get(evidence_id, 'cited')}"
        if found is not None and found.detail:
            head += f" | {found.detail}"
        lines.append(head)
        lines.append(f"  reading then: {_first_line(board.get_evidence(evidence_id).description)}")
        if rerun is not None:
            lines.append(f"  reading now: {_first_line(rerun.description)}")
    return "\n".join(lines)


def rejudge_message(hypothesis: Hypothesis, previous: Verdict, run: RecheckRun,
                    lines: str, *, refining: str, digest: str, evidence: str) -> str:
    """The re-judging judge's first message.

    It names no date: the board's own times differ between a recorded re-judge and its
    replay on another day, and a replay must be asked what the recording was asked
    (``previous`` and ``run`` are passed for what they are, not when they were).
    """
    return (
        f"RE-JUDGE {hypothesis.id}: {hypothesis.statement}\n"
        f"The data changed after your verdict. Re-check "
        f"{run.id} ran the evidence it rests on again; what "
        "changed or failed is below, the old rows beside the new ones (a re-run is new "
        "evidence, linked to the hypothesis with the stance of the evidence it repeats).\n"
        f"YOUR EARLIER VERDICT: {previous.status.value} (confidence {previous.confidence:g})"
        f" citing {', '.join(previous.evidence_ids) or 'nothing'}: {previous.rationale}\n"
        f"Refining it is {refining}.\n\n"
        f"{lines}\n\n"
        f"THE BOARD NOW:\n{digest}\n\n"
        f"THE EVIDENCE, OLD AND RE-RUN (large results summarised):\n{evidence}")


def what_changed(board: Board, rejudges: Sequence[Rejudge], confirmed: Sequence[str],
                 since: str, run: RecheckRun) -> str:
    """The "What changed since <date>" section: the verdicts the judge revised or
    refined (before -> after, and why), those it confirmed on the new data, those the
    re-check confirmed (their evidence came back the same), and any left stale."""
    title = f"## What changed since {day(since)}"
    intro = (f"The data was re-checked on {day(run.created_at)} ({run.id}): every evidence "
             "query ran again on the data as it is now.")
    changed, kept, open_ = [], [], []
    for item in rejudges:
        hypothesis = board.get_hypothesis(item.hypothesis_id)
        before = _verdict(board, item.previous_verdict_id)
        after = _verdict(board, item.verdict_id)
        label = f"**{hypothesis.id}** {hypothesis.statement}"
        reruns = f" [{', '.join(item.rerun_evidence_ids)}]" if item.rerun_evidence_ids else ""
        if item.outcome is RejudgeOutcome.UNDECIDED or after is None:
            open_.append(f"- {label}: still stale, the judge reached no decision.")
        elif item.outcome is RejudgeOutcome.CONFIRMED:
            kept.append(f"- {label}: still {after.status.value} on the new data{reruns}.")
        else:
            was = f"{before.status.value} ({before.confidence:g})" if before else "no verdict"
            line = (f"- {label}: {was} -> {after.status.value} ({after.confidence:g}): "
                    f"{after.rationale}{reruns}")
            if item.children:
                line += f" Refined into {', '.join(item.children)}."
            changed.append(line)
    parts = [title, "", intro, ""]
    parts += ["Verdicts revised:", "", *changed, ""] if changed else [
        "No verdict changed.", ""]
    if kept:
        parts += ["Confirmed by the judge on the new data:", "", *kept, ""]
    if confirmed:
        parts += [f"Confirmed by the re-check (their evidence came back the same): "
                  f"{', '.join(confirmed)}.", ""]
    if open_:
        parts += ["Still stale:", "", *open_, ""]
    return "\n".join(parts).rstrip() + "\n"


def _verdict(board: Board, verdict_id: int | None) -> Verdict | None:
    if verdict_id is None:
        return None
    return next((v for v in board.list_verdicts() if v.id == verdict_id), None)


def _first_line(text: str) -> str:
    return text.strip().split("\n", 1)[0]
