"""Run cases × variants of the Data Detective and score them (``python -m benchmark run``).

Every case × variant writes ``<out>/results/<case_id>--<variant>.json`` as soon as it is
done, with its board at ``<out>/boards/<case_id>--<variant>.d2board``. A run that is
interrupted can be started again with the same arguments: finished results are kept
(``"complete": true``) and only the rest runs (a stale board is started afresh).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchmark.adapter import system_answer
from benchmark.results import (
    check_same_config,
    fresh_board_path,
    load_result,
    result_path,
    run_or_record_failure,
    usage_record,
    write_result,
)
from d2_notebook.board import Board
from d2_notebook.data import GuardedSQL
from d2_notebook.datasets.sql_city import Gold, generate_standard_set, load_gold
from d2_notebook.detective import VARIANTS, investigate, parse_variant
from d2_notebook.detective.policies.sql_city import POLICIES
from d2_notebook.detective.preset import preset_models
from d2_notebook.errors import InvalidRecordError
from d2_notebook.llm import Model, get_model
from d2_notebook.teaching.board_answer import PeopleIndex
from d2_notebook.teaching.scoring import CaseScore, score_case, score_dict


@dataclass
class RunConfig:
    """What to run. Exactly one of ``model`` and ``policy`` drives the team.

    Attributes:
        cases_dir: directory of ``<case>.json`` gold files and ``<case>.duckdb`` files.
        out: results directory.
        variants: variants to run per case (see ``d2_notebook.detective.VARIANTS``).
        cases: ``"all"``, a number (the first N cases) or comma-separated case ids.
        model: model name passed to ``investigate`` (e.g. ``anthropic:claude-...``).
        policy: offline policy name (``oracle`` or ``greedy``).
        jobs: investigations running at once.
        options: further ``investigate`` options (``max_usd=``, ``collectors=`` ...).
        preset: a role → model preset (:mod:`d2_notebook.detective.preset`) for a
            ``model`` run.
        timeout: seconds a model call may take (None: the provider's default).
    """

    cases_dir: Path
    out: Path
    variants: list[str] = field(default_factory=lambda: list(VARIANTS))
    cases: str = "all"
    model: str | None = None
    policy: str | None = None
    jobs: int = 4
    options: dict[str, Any] = field(default_factory=dict)
    preset: str | None = None
    timeout: float | None = None

    def team_options(self) -> dict[str, Any]:
        """``options`` with the preset's models by role (each with ``timeout``)."""
        if self.preset is None or self.model is None:
            return dict(self.options)
        return {**self.options, "models": {
            role: _named_model(name, self.timeout)
            for role, name in preset_models(self.preset, self.model).items()}}


def _named_model(name: str, timeout: float | None) -> Model:
    return get_model(name) if timeout is None else get_model(name, timeout=timeout)


@dataclass
class RunSummary:
    """Every result of the run (finished earlier or now) and what happened."""

    records: list[dict[str, Any]]
    ran: int
    skipped: int
    failed: int

    def scores(self) -> list[CaseScore]:
        """The scores of all complete records."""
        return [CaseScore(**r["scores"]) for r in self.records if r.get("complete")]


def ensure_cases(cases_dir: Path, *, seed: int = 0, n: int = 50) -> None:
    """Generate the standard set into ``cases_dir`` unless it already holds cases."""
    if not any(cases_dir.glob("*.json")):
        generate_standard_set(cases_dir, seed=seed, n=n)


def select_cases(cases_dir: Path, spec: str = "all") -> list[Path]:
    """Gold files of the chosen cases, sorted by case id.

    Raises:
        ValueError: unknown case ids, or no cases in ``cases_dir``.
    """
    golds = sorted(p for p in cases_dir.glob("*.json") if p.with_suffix(".duckdb").is_file())
    if not golds:
        raise ValueError(f"no cases (<id>.json + <id>.duckdb) in {cases_dir}")
    if spec == "all":
        return golds
    if spec.isdigit():
        return golds[: int(spec)]
    wanted = [s.strip() for s in spec.split(",") if s.strip()]
    by_id = {p.stem: p for p in golds}
    missing = [w for w in wanted if w not in by_id]
    if missing:
        raise ValueError(f"unknown case ids: {', '.join(missing)}")
    return [by_id[w] for w in wanted]


def _model_for(config: RunConfig, gold: Gold) -> Any:
    if config.policy is not None:
        return POLICIES[config.policy](gold).model(name=f"policy-{config.policy}")
    return config.model if config.timeout is None else _named_model(str(config.model),
                                                                    config.timeout)


async def run_one(config: RunConfig, gold_path: Path, variant: str,
                  people: PeopleIndex) -> dict[str, Any]:
    """Investigate one case with one variant, score it and write its result JSON."""
    gold = load_gold(gold_path)
    db_path = gold_path.with_suffix(".duckdb")
    board_file = fresh_board_path(config.out, gold.case_id, variant)
    start = time.perf_counter()
    board = Board.open(board_file)
    try:
        with GuardedSQL(db_path) as sql:
            result = await investigate(sql, gold.description, board=board,
                                       model=_model_for(config, gold), variant=variant,
                                       **config.team_options())
            seconds = time.perf_counter() - start
            answer = system_answer(result, people)
    finally:
        board.close()
    score = score_case(answer, gold, system=variant)
    usage = result.usage
    record = {
        "case_id": gold.case_id, "tier": gold.tier, "variant": variant,
        "model": config.model, "policy": config.policy, "preset": config.preset,
        "state": result.state,
        "stop_reason": result.stop_reason, "seconds": round(seconds, 3),
        "usage": {**usage_record(usage),
                  "by_role": {role: {"calls": t.calls, "tokens": t.total_tokens,
                                     "cost_usd": t.cost_usd}
                              for role, t in usage.by_role.items()}},
        "scores": score_dict(score),
        "accused": sorted(answer.accused),
        "considered": [asdict(c) for c in answer.suspects_considered],
        "board": str(board_file.relative_to(config.out)),
        "investigation_id": result.investigation_id,
        "complete": True,
    }
    write_result(result_path(config.out, gold.case_id, variant), record)
    return record


async def run_benchmark(config: RunConfig,
                        progress: Callable[[str], None] | None = None) -> RunSummary:
    """Run every chosen case × variant not finished yet, ``config.jobs`` at a time.

    Raises ``ModelConfigError`` at once when the model is not configured, and
    ``ValueError`` when ``config.out`` holds results of another model or policy. Any
    other failing investigation is reported through ``progress`` and writes an
    incomplete record (``"complete": false``, with the error), so a later run retries it.
    """
    try:
        for name in config.variants:
            parse_variant(name)
    except InvalidRecordError as exc:
        raise ValueError(str(exc)) from None
    say = progress or (lambda _: None)
    golds = select_cases(config.cases_dir, config.cases)
    records: list[dict[str, Any]] = []
    todo: list[tuple[Path, str]] = []
    for gold_path in golds:
        for variant in config.variants:
            done = load_result(result_path(config.out, gold_path.stem, variant))
            if done is not None:
                records.append(done)
            else:
                todo.append((gold_path, variant))
    check_same_config(records, config.model, config.policy, config.out)
    skipped = len(records)
    people: dict[Path, PeopleIndex] = {}
    limit = asyncio.Semaphore(max(1, config.jobs))
    failed = 0

    async def one(gold_path: Path, variant: str) -> None:
        nonlocal failed

        async def job() -> dict[str, Any]:
            if gold_path not in people:
                people[gold_path] = await asyncio.to_thread(
                    PeopleIndex.from_database, gold_path.with_suffix(".duckdb"))
            return await run_one(config, gold_path, variant, people[gold_path])

        record = await run_or_record_failure(
            limit, result_path(config.out, gold_path.stem, variant),
            {"case_id": gold_path.stem, "variant": variant}, job, say)
        if record is None:
            failed += 1
            return
        records.append(record)
        s = record["scores"]
        say(f"{record['case_id']} {variant}: correctness {s['correctness']:.2f} "
            f"completeness {s['completeness']:.2f} verifiability {s['verifiability']:.2f} "
            f"({record['seconds']:.1f} s, ${record['usage']['cost_usd']:.3f})")

    await asyncio.gather(*(one(g, v) for g, v in todo))
    order = {(g.stem, v): i for i, (g, v) in enumerate(
        (g, v) for g in golds for v in config.variants)}
    records.sort(key=lambda r: order.get((r["case_id"], r["variant"]), 0))
    return RunSummary(records, ran=len(todo) - failed, skipped=skipped, failed=failed)
