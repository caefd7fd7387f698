"""Command line: ``python -m benchmark <command>``.

Commands are registered in :data:`COMMANDS` (name -> (help, add_arguments, run)), so a
``run`` command can be added without touching the existing ones.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from benchmark import hospital_case, reprice, retail_case
from benchmark.insightbench.cli import (
    add_load_args,
    add_score_args,
    run_insightbench_command,
    run_load,
    run_score_command,
)
from benchmark.insightbench.cli import add_run_args as add_insightbench_args
from benchmark.rescore import rescore_boards
from benchmark.runner import RunConfig, ensure_cases, run_benchmark
from benchmark.tables import render
from d2_notebook.datasets.sql_city import (
    generate_case,
    load_gold,
    self_check,
    standard_tiers,
    write_case,
)
from d2_notebook.detective import VARIANTS
from d2_notebook.detective.policies.sql_city import POLICIES
from d2_notebook.detective.preset import PRESETS
from d2_notebook.errors import ModelConfigError


def _one_case(args: tuple[str, int, int, str]) -> dict:
    """Generate, write and self-check one case (runs in a worker process)."""
    out, seed, index, tier = args
    start = time.perf_counter()
    paths = write_case(generate_case(seed, index, tier), out)
    gold = load_gold(paths["gold"])
    return {"case": gold.case_id, "tier": tier, "suspects": len(gold.suspects),
            "murderers": len(gold.murderers), "problems": self_check(paths["db"], gold),
            "seconds": time.perf_counter() - start}


def add_generate_args(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``generate``."""
    parser.add_argument("--out", required=True, type=Path, help="output directory")
    parser.add_argument("--seed", type=int, default=0, help="set seed (default 0)")
    parser.add_argument("--cases", type=int, default=50, help="number of cases (default 50)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="worker processes (default: all cores)")


def run_generate(args: argparse.Namespace) -> int:
    """Write one ``.duckdb`` and one gold ``.json`` per case; 1 if any self-check fails."""
    start = time.perf_counter()
    work = [(str(args.out), args.seed, i, t) for i, t in enumerate(standard_tiers(args.cases))]
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            results = list(pool.map(_one_case, work))
    else:
        results = [_one_case(w) for w in work]
    print(f"{'case':<18} {'tier':<10} {'suspects':>8} {'murderers':>9}  ok")
    for r in results:
        ok = "yes" if not r["problems"] else "NO: " + "; ".join(r["problems"])[:200]
        print(f"{r['case']:<18} {r['tier']:<10} {r['suspects']:>8} {r['murderers']:>9}  {ok}")
    failed = sum(bool(r["problems"]) for r in results)
    print(f"{len(results)} cases in {time.perf_counter() - start:.1f} s "
          f"({args.jobs} jobs), {failed} failed self-check; written to {args.out}")
    return 1 if failed else 0


def add_run_args(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``run``."""
    parser.add_argument("--cases-dir", type=Path, default=Path(".benchmark-cache/cases"),
                        help="case directory; the standard set is generated there if it "
                             "holds no cases (default .benchmark-cache/cases)")
    parser.add_argument("--variants", default=",".join(VARIANTS),
                        help=f"comma-separated variants (default: all: {','.join(VARIANTS)})")
    parser.add_argument("--model", help="model name, e.g. anthropic:claude-sonnet-4-6 "
                                        "(ANTHROPIC_BASE_URL is honoured)")
    parser.add_argument("--policy", choices=sorted(POLICIES),
                        help="offline policy instead of a model (reads the gold; for tests)")
    parser.add_argument("--cases", default="all",
                        help="all | N (first N) | comma-separated case ids (default all)")
    parser.add_argument("--jobs", type=int, default=4, help="investigations at once (default 4)")
    parser.add_argument("--out", type=Path, default=Path("benchmark-results"),
                        help="results directory (default benchmark-results)")
    parser.add_argument("--max-usd", type=float, help="dollar budget per investigation")
    parser.add_argument("--seed", type=int, default=0, help="seed when generating cases")
    parser.add_argument("--preset", choices=PRESETS,
                        help="role → model preset of the team (economy: collectors, judges "
                             "and the orchestrator on the provider's smaller model)")
    parser.add_argument("--timeout", type=float,
                        help="seconds a model call may take (a slow or local model server)")


def run_run(args: argparse.Namespace) -> int:
    """Run cases x variants (resumable), then print Table 1 and Table 2."""
    if args.model is None and args.policy is None:
        print("error: no model: pass --model <name> (e.g. anthropic:claude-sonnet-4-6), "
              "or --policy oracle|greedy to run offline", file=sys.stderr)
        return 2
    if args.model is not None and args.policy is not None:
        print("error: pass either --model or --policy, not both", file=sys.stderr)
        return 2
    ensure_cases(args.cases_dir, seed=args.seed)
    if args.preset is not None and args.model is None:
        print(f"error: --preset {args.preset} needs a --model: an offline policy has no "
              "smaller model", file=sys.stderr)
        return 2
    options = {} if args.max_usd is None else {"max_usd": args.max_usd}
    config = RunConfig(cases_dir=args.cases_dir, out=args.out,
                       variants=[v.strip() for v in args.variants.split(",") if v.strip()],
                       cases=args.cases, model=args.model, policy=args.policy,
                       jobs=args.jobs, options=options, preset=args.preset,
                       timeout=args.timeout)
    start = time.perf_counter()
    try:
        summary = asyncio.run(run_benchmark(config, progress=print))
    except (ValueError, ModelConfigError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"\n{summary.ran} investigations run, {summary.skipped} already done, "
          f"{summary.failed} failed, in {time.perf_counter() - start:.1f} s; "
          f"results in {args.out}\n")
    print(render(summary.records))
    return 1 if summary.failed else 0


def add_rescore_args(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``rescore``."""
    parser.add_argument("--boards", required=True, type=Path,
                        help="folder of recorded <case>--<variant>.d2board files")
    parser.add_argument("--cases-dir", type=Path, default=Path(".benchmark-cache/cases"),
                        help="case directory; missing cases are generated there "
                             "(default .benchmark-cache/cases)")


def run_rescore(args: argparse.Namespace) -> int:
    """Score recorded boards with the current metrics and print Table 1 and Table 2."""
    try:
        records = asyncio.run(rescore_boards(args.boards, args.cases_dir, progress=print))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print()
    print(render(records))
    return 0


COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None],
                          Callable[[argparse.Namespace], int]]] = {
    "generate": ("generate the SQL City cases and self-check them",
                 add_generate_args, run_generate),
    "run": ("run the Data Detective (variants) on the cases and print the tables",
            add_run_args, run_run),
    "rescore": ("score recorded SQL City boards with the current metrics (offline)",
                add_rescore_args, run_rescore),
    "insightbench-load": ("load InsightBench tasks into DuckDB files and print their questions",
                          add_load_args, run_load),
    "insightbench": ("run InsightBench tasks x variants, score the insights, print the table",
                     add_insightbench_args, run_insightbench_command),
    "insightbench-score": ("score finished boards of InsightBench tasks (no investigation)",
                           add_score_args, run_score_command),
    "retail-case": ("write the multi-table retail case (planted causes, a flat discount) "
                    "as an InsightBench task", retail_case.add_args, retail_case.run),
    "hospital-case": ("write the hospital demo (the paper's running example, six planted "
                      "truths) as an InsightBench task", hospital_case.add_args,
                      hospital_case.run),
    "reprice": ("price a recorded investigation's calls again with other models for some "
                "roles (a preset's what-if)", reprice.add_args, reprice.run),
}


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run the chosen command; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m benchmark")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (help_text, add_args, _) in COMMANDS.items():
        add_args(sub.add_parser(name, help=help_text))
    args = parser.parse_args(argv)
    return COMMANDS[args.command][2](args)


if __name__ == "__main__":
    sys.exit(main())
