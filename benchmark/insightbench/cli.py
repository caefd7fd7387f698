"""``python -m benchmark insightbench-load`` (and the other InsightBench commands)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

from benchmark.adapter import parse_variants
from benchmark.insightbench.board_scoring import score_boards
from benchmark.insightbench.judge import InsightJudge
from benchmark.insightbench.plot import plot_recall_vs_cost
from benchmark.insightbench.policies import POLICIES
from benchmark.insightbench.runner import (
    DEFAULT_VARIANTS,
    InsightRunConfig,
    make_judge,
    run_insightbench,
    score_run,
)
from benchmark.insightbench.tables import table, variant_means
from benchmark.insightbench.tasks import find_tasks, load_into_duckdb, table_row_counts
from d2_notebook.detective import VARIANTS
from d2_notebook.detective.preset import PRESETS
from d2_notebook.errors import ModelConfigError


def add_load_args(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``insightbench-load``."""
    parser.add_argument("--tasks", required=True, type=Path,
                        help="folder of InsightBench task JSONs and their CSVs")
    parser.add_argument("--out", required=True, type=Path,
                        help="where to write <task>.duckdb files")
    parser.add_argument("--only", default="all",
                        help="all | N (first N scorable tasks) | comma-separated task ids "
                             "(default all)")


def run_load(args: argparse.Namespace) -> int:
    """Write one DuckDB file per task and print its tables and question."""
    try:
        tasks = find_tasks(args.tasks, args.only)
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for task in tasks:
        try:
            path = load_into_duckdb(task, args.out)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        counts = ", ".join(f"{name} ({rows} rows)"
                           for name, rows in table_row_counts(path).items())
        note = "" if task.scorable else "  (no ground-truth insight texts: not scored)"
        print(f"{task.task_id}: {path}{note}\n  tables: {counts}\n"
              f"  question: {task.question}\n")
    print(f"{len(tasks)} tasks loaded into {args.out}")
    return 0


def _add_judge_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--judge-model",
                        help="LLM judge model, e.g. anthropic:claude-sonnet-4-6 or "
                             "openai:<id> (default: offline proxy scores only)")
    parser.add_argument("--judge-concurrency", type=int,
                        help="judge calls at once, over all reports (default: --jobs, "
                             "or 4 for insightbench-score)")
    parser.add_argument("--timeout", type=float,
                        help="seconds per model request, team and judge (default: the "
                             "provider's, 300); raise it for slow local servers")


def add_run_args(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``insightbench``."""
    parser.add_argument("--tasks", required=True, type=Path,
                        help="folder of InsightBench task JSONs and their CSVs")
    parser.add_argument("--only", default="all",
                        help="all | N (first N scorable tasks) | comma-separated task ids")
    parser.add_argument("--variants", default=",".join(DEFAULT_VARIANTS),
                        help=f"comma-separated variants (default {','.join(DEFAULT_VARIANTS)};"
                             f" any of {','.join(VARIANTS)})")
    parser.add_argument("--model", help="team model, e.g. anthropic:claude-sonnet-4-6 "
                                        "(ANTHROPIC_BASE_URL / OPENAI_BASE_URL are honoured)")
    parser.add_argument("--policy", choices=sorted(POLICIES),
                        help="offline scripted policy instead of a model (states the "
                             "ground-truth insights: oracle all, half the first half)")
    _add_judge_args(parser)
    parser.add_argument("--jobs", type=int, default=4, help="investigations at once (default 4)")
    parser.add_argument("--out", type=Path, default=Path("insightbench-results"),
                        help="results folder (default insightbench-results)")
    parser.add_argument("--max-usd", type=float, help="dollar budget per investigation")
    parser.add_argument("--preset", choices=PRESETS,
                        help="role → model preset of the team (economy: collectors and "
                             "orchestrator on the --model provider's smaller model); "
                             "recorded with each result")
    parser.add_argument("--score-only", action="store_true",
                        help="investigate nothing: (re-)score the boards already in "
                             "<out>/boards (e.g. with a --judge-model)")


def add_score_args(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``insightbench-score``."""
    parser.add_argument("--tasks", required=True, type=Path,
                        help="folder of InsightBench task JSONs and their CSVs")
    parser.add_argument("--boards", required=True, type=Path,
                        help="folder of finished boards (*.d2board) to score")
    _add_judge_args(parser)
    parser.add_argument("--out", type=Path, default=Path("insightbench-results"),
                        help="results folder (default insightbench-results)")


def _finish(records: list[dict], out: Path) -> None:
    """Print the table; save it, all records (JSON) and the recall-vs-cost PNG."""
    text = table(records)
    print(text)
    out.mkdir(parents=True, exist_ok=True)
    (out / "table.txt").write_text(text + "\n", encoding="utf-8")
    (out / "results.json").write_text(json.dumps(
        {"variants": variant_means(records), "records": records}, indent=1, default=str)
        + "\n", encoding="utf-8")
    png = plot_recall_vs_cost(records, out / "recall_vs_cost.png")
    print(f"\ntable, results.json{' and ' + png.name if png else ''} in {out}")


def _judge(args: argparse.Namespace, out: Path) -> InsightJudge | None:
    concurrency = args.judge_concurrency
    if concurrency is None:
        concurrency = getattr(args, "jobs", None) or 4
    if concurrency < 1:
        raise ValueError(f"--judge-concurrency must be at least 1, not {concurrency}")
    return make_judge(args.judge_model, out, timeout=args.timeout, concurrency=concurrency)


def run_insightbench_command(args: argparse.Namespace) -> int:
    """Run (or re-score) tasks × variants, then print and save the table and plot."""
    if args.score_only:
        return _score_run(args)
    if (args.model is None) == (args.policy is None):
        print("error: pass exactly one of --model <name> (e.g. anthropic:claude-sonnet-4-6) "
              "and --policy oracle|half (offline)", file=sys.stderr)
        return 2
    try:
        variants = parse_variants(args.variants)
        judge = _judge(args, args.out)
        config = InsightRunConfig(
            tasks_dir=args.tasks, out=args.out, variants=variants, tasks=args.only,
            model=args.model, policy=args.policy, judge_model=args.judge_model,
            jobs=args.jobs, timeout=args.timeout, preset=args.preset,
            options={} if args.max_usd is None else {"max_usd": args.max_usd})
        start = time.perf_counter()
        summary = asyncio.run(run_insightbench(config, judge=judge, progress=print))
    except (ValueError, FileNotFoundError, ModelConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"\n{summary.ran} investigations run, {summary.rescored} re-scored, "
          f"{summary.skipped} already done, {summary.failed} failed, in "
          f"{time.perf_counter() - start:.1f} s; results in {args.out}\n")
    _finish(summary.records, args.out)
    return 1 if summary.failed else 0


def _score_run(args: argparse.Namespace) -> int:
    """``--score-only``: re-score the chosen tasks × variants of the run in ``--out``."""
    try:
        judge = _judge(args, args.out)
        config = InsightRunConfig(tasks_dir=args.tasks, out=args.out,
                                  variants=parse_variants(args.variants), tasks=args.only,
                                  judge_model=args.judge_model, timeout=args.timeout)
        records = asyncio.run(score_run(config, judge, progress=print))
    except (ValueError, FileNotFoundError, ModelConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print()
    _finish(records, args.out)
    return 0


def _score(tasks: Path, boards: Path, out: Path, args: argparse.Namespace) -> int:
    try:
        judge = _judge(args, out)
        records = asyncio.run(score_boards(boards, tasks, out, judge, progress=print))
    except (ValueError, FileNotFoundError, ModelConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print()
    _finish(records, out)
    return 0


def run_score_command(args: argparse.Namespace) -> int:
    """Score a folder of finished boards, then print and save the table and plot."""
    return _score(args.tasks, args.boards, args.out, args)
