"""Command line: ``python -m benchmark <command>``.

Commands are registered in :data:`COMMANDS` (name -> (help, add_arguments, run)), so a
``run`` command can be added without touching the existing ones.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from d2_notebook.datasets.sql_city import (
    generate_case,
    load_gold,
    self_check,
    standard_tiers,
    write_case,
)


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


COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None],
                          Callable[[argparse.Namespace], int]]] = {
    "generate": ("generate the SQL City cases and self-check them",
                 add_generate_args, run_generate),
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
