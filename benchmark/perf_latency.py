"""``latency`` (part of ``python -m benchmark.perf``): recorded boards replayed under a
model latency model, to compare variants' wall time without a model.

The latency model: each call takes :data:`TIME_TO_FIRST_TOKEN_S` plus its output tokens
at :data:`OUTPUT_TOKENS_PER_S` (a Sonnet-class model served from the public API; a
call whose output tokens were not recorded is counted by its response's size). Tools
and SQL take no time.

The recorded order gives the dependencies: an agent's calls run one after another, and
the first call of a turn (its request holds one message) waits for the call that started
it: the one whose recorded end came last before the turn's recorded start (the
hypothesizer call that added a collector's hypothesis, the collector call a judge
follows, the last judge before the reporter). Calls with no such wait run at once, so
parallel collectors overlap as they did. The simulated wall time is the end of the last
call; the sequential depth is the most calls on one chain of waits.

Boards: the real boards in ``shared/real-boards`` (the team and ``react_sql`` on four
SQL City cases, a real model) and boards recorded here with the offline policies
(the hospital walkthrough as ``full``, ``single_agent_board`` and ``react_sql``).

Where the time goes, for any board (a benchmark run's, say)::

    python -m benchmark.perf_latency BOARD [BOARD ...]

prints each board's simulated wall time and depth, its critical path call by call (the
chain of waits that ends last) and the path's seconds by role.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from benchmark.perf_policies import verdict
from d2_notebook import investigate
from d2_notebook.board import Board, ModelCall
from d2_notebook.board.records import ModelCallStatus
from d2_notebook.datasets import hospital
from d2_notebook.detective.policies.hospital import HospitalWalkthrough
from d2_notebook.llm import estimate_tokens

Figures = dict[str, float]

TIME_TO_FIRST_TOKEN_S = 1.0
"""Seconds from sending a request to its first output token."""
OUTPUT_TOKENS_PER_S = 50.0
"""Output tokens generated per second after the first."""
RECORDED_VARIANTS = ("full", "single_agent_board", "react_sql")
"""The variants recorded with the offline policies."""
WALL_TIME_TARGET = 1.5
"""Issue 20: a ``full`` investigation's wall time at most this times ``react_sql``'s."""


@dataclass(frozen=True)
class LatencyModel:
    """Per call: a fixed time to the first token plus output tokens at a fixed rate."""

    time_to_first_token_s: float = TIME_TO_FIRST_TOKEN_S
    output_tokens_per_s: float = OUTPUT_TOKENS_PER_S

    def seconds(self, output_tokens: int) -> float:
        """How long a call producing ``output_tokens`` takes."""
        return self.time_to_first_token_s + output_tokens / self.output_tokens_per_s


@dataclass(frozen=True)
class PathStep:
    """One call on a simulated run's critical path."""

    agent: str
    role: str
    output_tokens: int
    seconds: float
    end_s: float


@dataclass(frozen=True)
class SimulatedRun:
    """One board's investigation under the latency model.

    Attributes:
        depth: the most calls on one chain of waits.
        path: the chain of waits that ends last (the critical path), first call first.
    """

    board: str
    variant: str
    calls: int
    depth: int
    wall_s: float
    path: tuple[PathStep, ...] = ()

    def seconds_by_role(self) -> dict[str, float]:
        """The critical path's seconds per role, largest first."""
        by_role: Counter[str] = Counter()
        for step in self.path:
            by_role[step.role] += step.seconds
        return dict(by_role.most_common())


def simulate(board: Board, label: str, model: LatencyModel) -> SimulatedRun:
    """The last investigation of ``board`` replayed under ``model`` (see the module)."""
    investigation = board.list_investigations()[-1]
    calls = [c for c in board.list_model_calls()
             if c.investigation_id == investigation.id
             and c.status is not ModelCallStatus.REFUSED]
    spans = sorted(((_start(c), _end(c), c) for c in calls), key=lambda s: (s[0], s[2].id))
    ends: dict[int, float] = {}
    depths: dict[int, int] = {}
    waited_for: dict[int, int | None] = {}  # the wait that ended last, on the path
    last_of_agent: dict[str, int] = {}
    for start, _, call in spans:
        waits = []
        if call.agent in last_of_agent:
            waits.append(last_of_agent[call.agent])
        if len(call.request.get("messages", [])) <= 1:
            trigger = max(((end, c.id) for _, end, c in spans
                           if end <= start and c.id in ends), default=None)
            if trigger is not None:
                waits.append(trigger[1])
        waited_for[call.id] = max(waits, key=lambda w: ends[w], default=None)
        ready = max((ends[w] for w in waits), default=0.0)
        ends[call.id] = ready + model.seconds(_output_tokens(call))
        depths[call.id] = max((depths[w] for w in waits), default=0) + 1
        last_of_agent[call.agent] = call.id
    variant = str(investigation.settings.get("variant", "full"))
    by_id = {call.id: call for call in calls}
    path: list[PathStep] = []
    step = max(ends, key=lambda c: (ends[c], -c), default=None)
    while step is not None:
        call = by_id[step]
        path.append(PathStep(call.agent, call.role, _output_tokens(call),
                             model.seconds(_output_tokens(call)), ends[step]))
        step = waited_for[step]
    return SimulatedRun(label, variant, len(calls), max(depths.values(), default=0),
                        max(ends.values(), default=0.0), tuple(reversed(path)))


def _end(call: ModelCall) -> float:
    return datetime.fromisoformat(call.created_at).timestamp()


def _start(call: ModelCall) -> float:
    return _end(call) - call.latency_s


def _output_tokens(call: ModelCall) -> int:
    if call.output_tokens:
        return call.output_tokens
    return estimate_tokens(json.dumps(call.response or {}))


def _real_boards(work: Path) -> list[Path]:
    shared = Path(os.environ.get("D2_SHARED_DIR", Path(__file__).resolve().parents[1].parent
                                 / "shared")) / "real-boards"
    copies = []
    for stored in sorted(shared.glob("*.d2board")):
        copy = work / stored.name
        shutil.copy(stored, copy)  # opening migrates; the shared copy stays as is
        copies.append(copy)
    return copies


def _recorded_boards(work: Path) -> list[Path]:
    paths = []
    for variant in RECORDED_VARIANTS:
        path = work / f"hospital--{variant}.d2board"
        result = asyncio.run(investigate(hospital.create(), hospital.QUESTION, board=path,
                                         model=HospitalWalkthrough().model(),
                                         variant=variant))
        result.board.close()
        paths.append(path)
    return paths


def bench_latency(quick: bool) -> Figures:
    """Simulated wall time, sequential depth and calls of every recorded board."""
    model = LatencyModel()
    print(f"[latency] per call: {model.time_to_first_token_s:.1f} s to the first token + "
          f"output tokens at {model.output_tokens_per_s:.0f} tokens/s; tools and SQL take "
          "no time; waits as recorded (an agent's calls in order, a turn after the call "
          "that started it)")
    print(f"  {'board':<30} {'variant':<20} {'calls':>5} {'depth':>5} {'simulated s':>12}")
    runs: list[SimulatedRun] = []
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        for path in _real_boards(work) + _recorded_boards(work):
            with Board.open(path) as board:
                label = path.stem.split("--")[0]
                runs.append(simulate(board, label, model))
    for run in runs:
        print(f"  {run.board:<30} {run.variant:<20} {run.calls:>5} {run.depth:>5} "
              f"{run.wall_s:>12.1f}")
    ratios = _ratios(runs)
    for case, ratio in ratios.items():
        print(f"  {case}: full / react_sql simulated wall time {ratio:.2f}x")
    worst = max(ratios.values(), default=0.0)
    verdict("latency", f"worst full / react_sql simulated wall time {worst:.2f}x",
            f"<= {WALL_TIME_TARGET}x", worst <= WALL_TIME_TARGET)
    return {"latency_worst_ratio": worst,
            **{f"{r.board} {r.variant} wall_s": r.wall_s for r in runs}}


def _ratios(runs: list[SimulatedRun]) -> dict[str, float]:
    """``full`` over ``react_sql`` simulated wall time, per board that has both."""
    by_case = {(r.board, r.variant): r.wall_s for r in runs}
    return {case: wall / by_case[(case, "react_sql")]
            for (case, variant), wall in by_case.items()
            if variant == "full" and by_case.get((case, "react_sql"))}


def print_paths(paths: list[Path], model: LatencyModel | None = None) -> list[SimulatedRun]:
    """Print each board's simulated run and its critical path (see the module)."""
    model = model or LatencyModel()
    runs = []
    for stored in paths:
        # read-only: an older board is migrated in memory, and a board still being
        # written is read through its write-ahead log (a copy of the file alone is not)
        with Board.open(stored, read_only=True) as board:
            if not board.list_investigations():
                raise SystemExit(f"{stored}: no investigation on this board")
            run = simulate(board, stored.stem, model)
        runs.append(run)
        print(f"{run.board} ({run.variant}): {run.calls} calls, depth {run.depth}, "
              f"simulated {run.wall_s:.1f} s")
        for step in run.path:
            print(f"  {step.agent:<24} {step.output_tokens:>6} output tokens "
                  f"{step.seconds:>6.1f} s  ends at {step.end_s:>6.1f} s")
        roles = ", ".join(f"{role} {seconds:.0f} s" for role, seconds
                          in run.seconds_by_role().items())
        print(f"  critical path by role: {roles}")
    return runs


def main(argv: list[str] | None = None) -> None:
    """``python -m benchmark.perf_latency BOARD [BOARD ...]``."""
    parser = argparse.ArgumentParser(prog="python -m benchmark.perf_latency",
                                     description="Simulated wall time and critical path "
                                     "of recorded boards under the latency model.")
    parser.add_argument("boards", nargs="+", type=Path, help="d2board files")
    args = parser.parse_args(argv)
    missing = [str(p) for p in args.boards if not p.is_file()]
    if missing:
        parser.error(f"no such board: {', '.join(missing)}")
    print_paths(args.boards)


if __name__ == "__main__":
    main()

