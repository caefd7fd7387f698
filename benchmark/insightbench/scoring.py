"""Score one InsightBench report: proxy and judge per insight, and the claim check.

:func:`score_report` gives a :class:`TaskScore`: for each ground-truth insight the
offline proxy (always) and the LLM judge's grade (when a judge is given); the report's
contradictions of the ground truth (judge); and the claim-check rate — the share of
numbers in the report not found in the evidence it cites — from
``d2_notebook.detective.claim_check``.
"""

from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass
from typing import Any

from benchmark.insightbench.judge import InsightJudge, Judgement, judge_recall, report_hash
from benchmark.insightbench.proxy import ProxyInsightScore, proxy_recall, score_insight
from benchmark.insightbench.tasks import InsightTask
from d2_notebook.board import Board
from d2_notebook.detective.claim_check import check_board_report


@dataclass(frozen=True)
class ClaimCheckRate:
    """How many of the report's numbers the cited evidence holds.

    Attributes:
        numbers_checked: numbers in the report that were checked.
        unverified: those not found in the evidence the report cites.
    """

    numbers_checked: int
    unverified: int

    @property
    def unverified_rate(self) -> float | None:
        """Share of checked numbers not verified (None when no number was checked)."""
        return self.unverified / self.numbers_checked if self.numbers_checked else None


@dataclass(frozen=True)
class InsightScore:
    """One ground-truth insight: the proxy's reading and the judge's grade (or None)."""

    proxy: ProxyInsightScore
    judgement: Judgement | None


@dataclass(frozen=True)
class TaskScore:
    """A report's scores on one task.

    Attributes:
        task_id: the task.
        report_sha256: hash of the scored report (the judge cache's key).
        insights: per ground-truth insight, in the task's order.
        judge_model: the judge's name, None when not judged.
        claim_check: the claim-check counts, None when unavailable.
    """

    task_id: str
    report_sha256: str
    insights: tuple[InsightScore, ...]
    judge_model: str | None
    claim_check: ClaimCheckRate | None

    @property
    def proxy_recall(self) -> float:
        """Mean ROUGE-1 recall over the insights."""
        return proxy_recall([s.proxy for s in self.insights])

    @property
    def numbers_rate(self) -> float | None:
        """Share of the insights' key values the report states (None: no values)."""
        total = sum(s.proxy.values_total for s in self.insights)
        return sum(s.proxy.values_found for s in self.insights) / total if total else None

    @property
    def judgements(self) -> list[Judgement]:
        """The judge's grades (empty when not judged)."""
        return [s.judgement for s in self.insights if s.judgement is not None]

    @property
    def judge_recall(self) -> float | None:
        """Mean judge score over the scored insights (None: not judged / none scored)."""
        return judge_recall(self.judgements)

    @property
    def unscored(self) -> int:
        """Insights the judge never graded well-formed."""
        return sum(j.score is None for j in self.judgements)

    @property
    def fully_judged(self) -> bool:
        """Judged, with every insight scored."""
        return self.judge_model is not None and len(self.judgements) == len(self.insights) \
            and self.unscored == 0

    @property
    def contradictions(self) -> int:
        """Report claims the judge found contradicting a ground-truth insight."""
        return sum(len(j.contradictions) for j in self.judgements)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form stored in result records (summary figures and per insight)."""
        check = self.claim_check
        return {
            "proxy_recall": round(self.proxy_recall, 4),
            "numbers_rate": self.numbers_rate,
            "judge_model": self.judge_model,
            "judge_recall": self.judge_recall,
            "judge_unscored": self.unscored,
            "fully_judged": self.fully_judged,
            "contradictions": self.contradictions,
            "judge_usage": {  # new calls only: a cached judgement costs nothing
                "calls": sum(j.attempts for j in self.judgements),
                "cached": sum(j.cached for j in self.judgements),
                "input_tokens": sum(j.input_tokens for j in self.judgements),
                "output_tokens": sum(j.output_tokens for j in self.judgements),
                "cost_usd": round(sum(j.cost_usd for j in self.judgements), 6)},
            "claim_check": None if check is None else {
                "numbers_checked": check.numbers_checked, "unverified": check.unverified,
                "unverified_rate": check.unverified_rate},
            "report_sha256": self.report_sha256,
            "insights": [{"proxy": asdict(s.proxy),
                          "judge": None if s.judgement is None else asdict(s.judgement)}
                         for s in self.insights],
        }


def claim_check_rate(board: Board, investigation_id: str) -> ClaimCheckRate:
    """The claim check of the board's report (numbers checked, numbers not found in the
    evidence they cite), from :func:`d2_notebook.detective.claim_check.check_board_report`."""
    check = check_board_report(board, investigation_id)
    return ClaimCheckRate(check.numbers_checked, len(check.unverified))


async def score_report(task: InsightTask, report: str, *, judge: InsightJudge | None = None,
                       claim_check: ClaimCheckRate | None = None) -> TaskScore:
    """Score ``report`` against every ground-truth insight of ``task``.

    Judge calls for the insights run concurrently (the model layer bounds them).

    Raises:
        ModelError: the judge model failed (not a malformed answer: those are recorded
            unscored).
    """
    proxies = [score_insight(i, report) for i in task.insights]
    judgements: list[Judgement | None] = [None] * len(proxies)
    if judge is not None:
        judgements = list(await asyncio.gather(*(judge.judge(i, report)
                                                 for i in task.insights)))
    return TaskScore(task.task_id, report_hash(report),
                     tuple(InsightScore(p, j) for p, j in zip(proxies, judgements, strict=True)),
                     None if judge is None else judge.name, claim_check)
