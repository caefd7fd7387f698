"""Offline InsightBench policies: scripted "agents" that state known insights.

They drive the real team (every variant) through the real tools with real SQL on the
task's database, so the runner, the scorers and the tables are tested end to end
without a language model. The insights they state are the task's ground truth, so the
expected recall is known: :class:`InsightPolicy` with ``share=1`` states every insight
(``oracle``), with ``share=0.5`` the first half (``half``).
"""

from __future__ import annotations

import math
import re
from typing import Any

from benchmark.insightbench.tasks import InsightTask
from d2_notebook.detective.policies.team_policy import Action, TeamPolicy, Turn


class InsightPolicy(TeamPolicy):
    """States the first ``share`` of the task's ground-truth insights as findings."""

    label = "InsightBench scripted policy (offline, no language model)"

    def __init__(self, task: InsightTask, share: float = 1.0) -> None:
        """Choose the insights to state."""
        super().__init__()
        count = math.ceil(share * len(task.insights)) if task.insights else 0
        self.stated = [i.text for i in task.insights[:count]]
        self.sql = f'SELECT COUNT(*) AS rows_in_table FROM "{task.tables[0].name}"'

    def _add(self, query_ids: list[str]) -> list[Action]:
        return [("add_hypothesis", {"statement": text, "rationale": "seen in the data",
                                    "query_ids": query_ids}) for text in self.stated]

    @staticmethod
    def _record(query_id: str) -> dict[str, Any]:
        return {"query_id": query_id, "description": "row count of the main table",
                "stance": "supports", "reading": "the data supports it"}

    @staticmethod
    def _verdict(evidence_ids: list[str]) -> dict[str, Any]:
        return {"status": "supported", "confidence": 0.9, "evidence_ids": evidence_ids,
                "rationale": f"{', '.join(evidence_ids) or 'no evidence'} decide it",
                "no_check_reason": "a scripted gold policy: it states the task's insights"}

    def hypothesizer(self, turn: Turn) -> list[Action] | str:
        """Look at the table, then add one hypothesis per stated insight."""
        if turn.step == 0:
            return [("run_sql", {"sql": self.sql, "purpose": "size of the data"})]
        return [*self._add(turn.query_ids()[:1]), ("done", {"summary": "insights added"})]

    def collector(self, turn: Turn) -> list[Action] | str:
        """Run one real query, record it as supporting evidence, submit (or judge)."""
        judges_itself = "you also give the verdict" in turn.first_message
        if turn.step == 0:
            return [("run_sql", {"sql": self.sql})]
        if turn.step == 1:
            action: Action = ("record_evidence", self._record(turn.query_ids()[0]))
            if judges_itself:
                return [action]
            return [action, ("submit_for_judgement", {"summary": "evidence recorded"})]
        if judges_itself:
            return [("give_verdict", self._verdict(turn.found(r"recorded (E\d+)")))]
        return "done"

    def judge(self, turn: Turn) -> list[Action] | str:
        """Supported, citing the linked evidence."""
        return [("give_verdict", self._verdict([e for _, e in turn.linked_evidence()]))]

    def planner(self, turn: Turn) -> list[Action] | str:
        """merged_planner: add the hypotheses, dispatch them, then finish."""
        if not turn.hypotheses():
            if turn.step == 0:
                return self._add([])
            return [("dispatch", {"hypothesis_ids": turn.found(r"added (H\d+)")})]
        return TeamPolicy.orchestrator(self, turn)

    def detective(self, turn: Turn) -> list[Action] | str:
        """single_agent_board: add, query, record, judge and report."""
        if turn.step == 0:
            return self._add([])
        hyp_ids = turn.found(r"added (H\d+)")
        if turn.step == 1:
            return [("run_sql", {"sql": self.sql})]
        if turn.step == 2:
            query = turn.query_ids()[0]
            return [("record_evidence", {"hypothesis_id": h, **self._record(query)})
                    for h in hyp_ids]
        if turn.step == 3:
            recorded = re.findall(r"recorded (E\d+) \(\w+ (H\d+)\)",
                                  "\n".join(r.content for r in turn.results if not r.is_error))
            return [("give_verdict", {"hypothesis_id": h, **self._verdict(
                [e for e, hh in recorded if hh == h])}) for h in hyp_ids]
        return [("write_report", {"markdown": self._report()})]

    def react(self, turn: Turn) -> list[Action] | str:
        """react_sql: one query, then the insights as the answer."""
        if turn.step == 0:
            return [("run_sql", {"sql": self.sql})]
        return [("final_answer", {"answer_markdown": self._report(), "answers": self.stated,
                                  "candidates_considered": self.stated, "evidence": []})]

    def _report(self) -> str:
        return "## Findings\n\n" + "\n".join(f"- {text}." for text in self.stated)


POLICIES = {"oracle": 1.0, "half": 0.5}
"""Offline policies by ``--policy`` name: the share of the ground-truth insights stated."""


def policy_for(name: str, task: InsightTask) -> InsightPolicy:
    """The named offline policy for one task.

    Raises:
        ValueError: an unknown policy name (the message lists the known ones).
    """
    if name not in POLICIES:
        raise ValueError(f"unknown policy {name!r}; use one of: {', '.join(POLICIES)}")
    return InsightPolicy(task, POLICIES[name])
