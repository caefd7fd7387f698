"""Benchmarks of the team engine (part of ``python -m benchmark.perf``).

- ``parallel``: 8 hypotheses plus 12 refinements (the judges of the four older-patients
  claims refine each into three comorbidity subgroups), a model sleeping 200 ms per
  call, 1 vs 4 collectors: whole-run and collection-phase speed-up.
- ``refinement``: from a parent's refining verdict to its children's first collector
  call, in model latencies.
- ``calls``: model calls per role of the offline policies on the same boards, before
  (the round-based loop, commit eea426d) and now.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
from collections import Counter
from typing import Any

from benchmark.perf_policies import ClaimsPolicy, timed_run, verdict
from d2_notebook import investigate
from d2_notebook.datasets import hospital, sql_city
from d2_notebook.detective.policies.hospital import HospitalWalkthrough
from d2_notebook.detective.policies.sql_city import POLICIES
from d2_notebook.llm.offline import FunctionModel

Figures = dict[str, float]

_TEAM = ("collector", "judge")


def _parallel_run(collectors: int, delay: float) -> tuple[Any, float, ClaimsPolicy]:
    policy = ClaimsPolicy(2, delay, refine=True)
    result, wall, _ = asyncio.run(timed_run(policy, collectors=collectors))
    return result, wall, policy


def bench_parallel(quick: bool) -> Figures:
    """Whole-run and collection-phase speed-up of 4 collectors over 1."""
    delay = 0.02 if quick else 0.2
    print(f"[parallel] 8 hypotheses + 12 refinements, model sleeps {delay * 1000:.0f} ms per "
          "call; each collector 3 calls, each judge 1")
    runs: dict[int, tuple[float, float, int, int]] = {}
    for collectors in (1, 4):
        result, wall, policy = _parallel_run(collectors, delay)
        collection = policy.phase_seconds(_TEAM)
        calls = len(policy.spans)
        by_role = Counter(role for role, _, _ in policy.spans)
        outside = calls - by_role["collector"] - by_role["judge"]
        runs[collectors] = (wall, collection, calls, outside)
        print(f"  {collectors} collector(s): whole run {wall:.2f} s, collection phase "
              f"{collection:.2f} s, {calls} calls ({dict(sorted(by_role.items()))}), "
              f"{len(result.board.list_hypotheses())} hypotheses; state {result.state}")
    whole = runs[1][0] / runs[4][0]
    phase = runs[1][1] / runs[4][1]
    _, _, calls, outside = runs[1]
    sequential = outside - 1  # the triage call overlaps the first branches
    bound = calls / (sequential + (calls - outside) / 4)
    print(f"  speed-up with 4: whole run {whole:.2f}x, collection phase {phase:.2f}x "
          f"(bound {bound:.2f}x: {sequential} sequential calls, hypothesizer, end "
          "decision, reporter)")
    verdict("parallel", f"{whole:.2f}x whole run, {phase:.2f}x collection",
            ">= 3.5x whole run and >= 3.8x collection", whole >= 3.5 and phase >= 3.8)
    return {"speedup_whole": whole, "speedup_collection": phase, "bound": bound}


def bench_refinement(quick: bool) -> Figures:
    """Delay from a refining verdict to each child's first collector call."""
    delay = 0.02 if quick else 0.2
    print(f"[refinement] the parallel run with 4 collectors, {delay * 1000:.0f} ms model; "
          "delay from the parent's refining verdict to the child's first collector call")
    result, _, policy = _parallel_run(4, delay)
    first_call = {}
    for agent, start, _ in policy.agent_spans:
        first_call.setdefault(agent, start)
    verdict_at = {agent.removeprefix("judge-"): end for agent, _, end in policy.agent_spans
                  if agent.startswith("judge-")}
    first, every = [], []
    for parent in sorted({h.parent_id for h in result.board.list_hypotheses() if h.parent_id}):
        children = [h.id for h in result.board.list_hypotheses() if h.parent_id == parent]
        waits = sorted(first_call[f"collector-{c}"] - verdict_at[parent] for c in children)
        first.append(waits[0])
        every += waits
        print(f"  {parent} -> {', '.join(children)}: children start after "
              + ", ".join(f"{w / delay:.2f}" for w in waits) + " model latencies")
    worst_first = max(first) / delay
    print(f"  first child: median {statistics.median(first) / delay:.2f}, worst "
          f"{worst_first:.2f} latencies; all children: median "
          f"{statistics.median(every) / delay:.2f} (the others wait for a free collector)")
    verdict("refinement", f"a refined child starts {worst_first:.2f} model latencies after "
            "its parent's verdict (worst parent)", "<= 1 latency", worst_first <= 1.0)
    return {"first_child_latencies": worst_first,
            "median_child_latencies": statistics.median(every) / delay}


CALLS_BEFORE: dict[str, dict[str, int]] = {
    "hospital walkthrough (full)": {"hypothesizer": 4, "orchestrator": 4, "collector": 20,
                                    "judge": 10, "reporter": 2},
    "hospital walkthrough (merged_planner)": {"planner": 5, "collector": 22, "judge": 11,
                                              "reporter": 2},
    "hospital walkthrough (no_judge)": {"hypothesizer": 4, "orchestrator": 3,
                                        "collector": 15, "reporter": 2},
    "8 claims x 2 queries": {"hypothesizer": 1, "orchestrator": 2, "collector": 24,
                             "judge": 8, "reporter": 1},
    "sql city 012 oracle": {"hypothesizer": 2, "orchestrator": 2, "collector": 8,
                            "judge": 4, "reporter": 2},
    "sql city 012 greedy": {"hypothesizer": 2, "orchestrator": 2, "collector": 2,
                            "judge": 1, "reporter": 1},
}
"""Calls per role of the same policies on the round-based loop (commit eea426d)."""


async def _calls_now() -> dict[str, Counter[str]]:
    con = hospital.create()
    found: dict[str, Counter[str]] = {}

    def count(result: Any) -> Counter[str]:
        return Counter(c.role for c in result.board.list_model_calls())

    for variant in ("full", "merged_planner", "no_judge"):
        found[f"hospital walkthrough ({variant})"] = count(await investigate(
            con, hospital.QUESTION, model=HospitalWalkthrough().model(), variant=variant))
    claims = ClaimsPolicy(2)
    found["8 claims x 2 queries"] = count(await investigate(
        con, hospital.QUESTION, model=FunctionModel(claims.respond)))
    case = sql_city.generate_case(0, 12, "medium")  # sqlcity-s0-012 of the standard set
    with tempfile.TemporaryDirectory(prefix="d2-calls-") as scratch:
        database = sql_city.write_case(case, scratch)["db"]
        for name, policy in POLICIES.items():
            found[f"sql city 012 {name}"] = count(await investigate(
                database, case.gold.description, model=policy(case.gold).model()))
    return found


def bench_calls(quick: bool) -> Figures:
    """Model calls per role, before and after, for the offline policies."""
    print("[calls] model calls per role of the offline policies: before (round-based loop) "
          "-> now")
    now = asyncio.run(_calls_now())
    more, total = 0, 0
    for label, counts in now.items():
        before = CALLS_BEFORE.get(label)
        if before is None:  # a policy added since: nothing to compare with
            print(f"  {label:<38} (new policy) " + ", ".join(
                f"{r} {n}" for r, n in counts.items()) + f"; total {sum(counts.values())}")
            total += sum(counts.values())
            continue
        roles = list(dict.fromkeys([*before, *counts]))
        cells = [f"{r} {before.get(r, 0)}->{counts.get(r, 0)}" for r in roles]
        print(f"  {label:<38} " + ", ".join(cells)
              + f"; total {sum(before.values())}->{sum(counts.values())}")
        more += sum(max(0, counts.get(r, 0) - before.get(r, 0)) for r in roles)
        total += sum(counts.values())
    verdict("calls", f"{more} more calls for any role than before", "no more calls than "
            "before", more == 0)
    return {"calls_more": float(more), "calls_now": float(total)}
