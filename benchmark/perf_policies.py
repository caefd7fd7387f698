"""Offline policies and instruments for the performance benchmarks (``benchmark.perf``).

- :class:`ClaimsPolicy`: an 8-hypothesis team on the hospital data. The hypothesizer adds
  8 claims in one call (each is examined as it is added), the orchestrator triages them
  and later finishes, each collector runs ``queries_per_collector`` queries (one per
  model call) then records them all and submits, each judge gives its verdict in one
  call (with ``refine=True`` the judges of four claims about older patients refine
  each into three comorbidity subgroups, examined like the others), the reporter writes
  the report.
- :class:`ReactPolicy`: the ``react_sql`` agent issuing the same queries one per step.
- :class:`TimedSQL`: a :class:`GuardedSQL` that adds up the time spent in SQL.
- :func:`prompt_chars`: size of a recorded request (system + messages + tools JSON).

Every query runs through the guarded SQL against the generated database; every stance is
read from the query result.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from functools import cache
from typing import Any

import duckdb

from d2_notebook import investigate
from d2_notebook.data import GuardedSQL, QueryResult
from d2_notebook.datasets import hospital
from d2_notebook.detective.analysis_tools import ANALYSIS_TOOL_NAMES
from d2_notebook.detective.policies.hospital import (
    HospitalWalkthrough,
    comparison_sql,
    last_numbers,
)
from d2_notebook.detective.policies.team_policy import Action, TeamPolicy, Turn
from d2_notebook.llm import ModelRequest, ModelResponse
from d2_notebook.llm.offline import FunctionModel

DRUGS = [d for d in hospital.DRUGS if d != "Standard care"]
CLAIMS: list[tuple[str, bool]] = [(d, True) for d in DRUGS] + [
    (d, False) for d in ("Virexa", "Corvalin", "Pulmorex")]
"""The 8 claims: (drug, about older patients?)."""


def claim_statement(drug: str, older: bool) -> str:
    """The hypothesis text of one claim."""
    group = "older" if older else "younger"
    return f"{drug} lowers mortality for {group} COVID-19 patients"


def claim_queries(drug: str, older: bool) -> list[str]:
    """Eight distinct comparisons of ``drug`` with standard care (overall, per severity,
    within each of six comorbidities), for older (65+) or younger patients."""
    queries = [comparison_sql(drug), comparison_sql(drug, by_severity=True)]
    queries += [comparison_sql(drug, condition) for condition in hospital.CONDITIONS]
    if older:
        return queries
    return [q.replace("p.age >= 65", "p.age < 65") for q in queries]


SUBGROUPS = hospital.CONDITIONS[:3]
"""The comorbidities a refined older-patients claim splits into."""

REFINED = [claim for claim in CLAIMS if claim[1]][:4]
"""The claims a judge refines (with ``refine=True``): four about older patients, so
with their 12 children 20 hypotheses are examined."""


def subgroup_statement(drug: str, condition: str) -> str:
    """The hypothesis text of a refined claim."""
    return f"{claim_statement(drug, True)} with {condition}"


def _claim_of(statement: str) -> tuple[str, bool, str | None]:
    for drug, older in CLAIMS:
        if claim_statement(drug, older) == statement:
            return drug, older, None
        for condition in SUBGROUPS if older else ():
            if subgroup_statement(drug, condition) == statement:
                return drug, older, condition
    raise ValueError(f"not a claim of this policy: {statement!r}")


def _claim_queries(drug: str, older: bool, condition: str | None) -> list[str]:
    if condition is None:
        return claim_queries(drug, older)
    return [comparison_sql(drug, condition), comparison_sql(drug, condition, by_severity=True)]


@cache
def hospital_db() -> duckdb.DuckDBPyConnection:
    """The hospital database (5,000 patients, seed 7), built once per process."""
    return hospital.create()


def verdict(name: str, figure: str, target: str, met: bool) -> None:
    """Print a benchmark's headline figure against its target."""
    print(f"  => {name}: {figure}; target {target}: {'MET' if met else 'NOT MET'}")


async def timed_run(policy: TimedPolicy, **options: Any) -> tuple[Any, float, TimedSQL]:
    """Investigate the hospital question with ``policy``; return result, wall, SQL."""
    sql = TimedSQL(hospital_db())
    started = time.perf_counter()
    result = await investigate(sql, hospital.QUESTION, model=FunctionModel(policy.respond),
                               **options)
    return result, time.perf_counter() - started, sql


class TimedPolicy(TeamPolicy):
    """A team policy that times itself; with ``delay_s`` each call first sleeps (the
    simulated model latency, ``asyncio.sleep``)."""

    def __init__(self, delay_s: float = 0.0) -> None:
        """Set the simulated model latency."""
        super().__init__()
        self.delay_s = delay_s
        self.seconds = 0.0
        self.calls = 0
        self.spans: list[tuple[str, float, float]] = []
        self.agent_spans: list[tuple[str, float, float]] = []

    async def respond(self, request: ModelRequest) -> ModelResponse:
        """The FunctionModel's (async) function: sleep ``delay_s``, then answer; the
        call's (role, start, end) is kept in ``spans``."""
        start = time.perf_counter()
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        try:
            return self.timed(request)
        finally:
            end = time.perf_counter()
            self.spans.append((request.role, start, end))
            self.agent_spans.append((request.agent, start, end))

    def phase_seconds(self, roles: tuple[str, ...]) -> float:
        """Wall time from the first call of any of ``roles`` to the end of the last."""
        spans = [(s, e) for role, s, e in self.spans if role in roles]
        return max(e for _, e in spans) - min(s for s, _ in spans) if spans else 0.0

    def timed(self, request: ModelRequest) -> ModelResponse:
        """Answer, adding the time spent in the policy to ``seconds``."""
        start = time.perf_counter()
        try:
            return self(request)
        finally:
            self.seconds += time.perf_counter() - start
            self.calls += 1


class ClaimsPolicy(TimedPolicy):
    """Eight hypotheses; collectors make ``queries_per_collector + 1`` calls each, judges
    one call each."""

    label = "benchmark: 8 claims"

    def __init__(self, queries_per_collector: int = 2, delay_s: float = 0.0, *,
                 refine: bool = False) -> None:
        """Choose the queries per collector, the simulated model latency, and whether
        the older-patients claims are refined."""
        super().__init__(delay_s)
        self.queries_per_collector = queries_per_collector
        self.refine = refine

    def hypothesizer(self, turn: Turn) -> list[Action] | str:
        """Add the eight claims at once."""
        return [("add_hypothesis", {"statement": claim_statement(d, o),
                                    "rationale": "a treatment given in the hospital"})
                for d, o in CLAIMS] + [("done", {"summary": "eight claims"})]

    def collector(self, turn: Turn) -> list[Action] | str:
        """One query per call; then record every result with its stance and submit."""
        drug, older, condition = _claim_of(HospitalWalkthrough._statement(turn))
        if turn.step < self.queries_per_collector:
            sql = _claim_queries(drug, older, condition)[turn.step]
            return [("run_sql", {"sql": sql, "purpose": f"{drug} vs standard care"})]
        actions: list[Action] = []
        for query_id, result in zip(turn.query_ids(), turn.results, strict=False):
            numbers = last_numbers(result.content)
            helps = bool(numbers) and sum(n < -0.03 for n in numbers) > len(numbers) / 2
            actions.append(("record_evidence", {
                "query_id": query_id, "description": f"{drug} vs standard care",
                "stance": "supports" if helps else "contradicts",
                "reading": f"differences {', '.join(f'{n:+.3f}' for n in numbers)}"}))
        return [*actions, ("submit_for_judgement", {"summary": "evidence recorded"})]

    def judge(self, turn: Turn) -> list[Action] | str:
        """Decide by the stances of the linked evidence; refine an older-patients claim
        (when ``refine``) into its comorbidity subgroups."""
        linked = turn.linked_evidence()
        verdict = HospitalWalkthrough._verdict([e for _, e in linked], [s for s, _ in linked])
        drug, older, condition = _claim_of(HospitalWalkthrough._statement(turn))
        if self.refine and (drug, older) in REFINED and condition is None:
            return [("refine", {**verdict, "children": [
                {"statement": subgroup_statement(drug, c), "rationale": "by comorbidity"}
                for c in SUBGROUPS]})]
        return [("give_verdict", verdict)]


class ReactPolicy(TimedPolicy):
    """The ``react_sql`` agent: ``queries`` queries, one per call, then a final answer."""

    label = "benchmark: react_sql"

    def __init__(self, queries: int = 40) -> None:
        """Issue ``queries`` queries (the claims' queries, collector by collector)."""
        super().__init__()
        self.queries = queries
        per_claim = -(-queries // len(CLAIMS))
        self.sql = [q for d, o in CLAIMS for q in claim_queries(d, o)[:per_claim]][:queries]

    def react(self, turn: Turn) -> list[Action] | str:
        """Query ``turn.step`` of the list, then answer."""
        if turn.step < self.queries:
            return [("run_sql", {"sql": self.sql[turn.step]})]
        return [("final_answer", {"answer_markdown": "Pulmorex", "answers": ["Pulmorex"],
                                  "candidates_considered": DRUGS})]


class TimedSQL(GuardedSQL):
    """GuardedSQL that adds the wall time of every ``run`` and ``schema_summary`` (guard
    check included) to ``seconds``; thread-safe."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """As :class:`GuardedSQL`."""
        super().__init__(*args, **kwargs)
        self.seconds = 0.0
        self.queries = 0
        self._timing_lock = threading.Lock()

    def _add(self, start: float) -> None:
        with self._timing_lock:
            self.seconds += time.perf_counter() - start
            self.queries += 1

    def run(self, sql: str, *, timeout_s: float | None = None,
            max_rows: int | None = None) -> QueryResult:
        """Run and time one statement."""
        start = time.perf_counter()
        try:
            return super().run(sql, timeout_s=timeout_s, max_rows=max_rows)
        finally:
            self._add(start)

    def schema_summary(self, n_samples: int = 3) -> str:
        """Build and time the schema summary."""
        start = time.perf_counter()
        try:
            return super().schema_summary(n_samples)
        finally:
            self._add(start)


def prompt_chars(request: dict[str, Any]) -> int:
    """Characters of a recorded request: system + messages JSON + tools JSON."""
    return (len(request.get("system", "")) + len(json.dumps(request.get("messages", [])))
            + len(json.dumps(request.get("tools", []))))


QUERY_TOOLS = frozenset({"run_sql", *ANALYSIS_TOOL_NAMES})
"""The tools whose calls run a query: ``run_sql`` and the analysis tools."""


def run_sql_count(response: dict[str, Any] | None) -> int:
    """How many queries (``run_sql`` or analysis tool calls) a recorded response made."""
    parts = (response or {}).get("parts", [])
    return sum(p.get("type") == "tool_call" and p.get("name") in QUERY_TOOLS for p in parts)


class TimedWalkthrough(HospitalWalkthrough, TimedPolicy):
    """The demo's scripted walk-through, timed like the other policies."""
