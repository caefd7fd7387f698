"""``python -m benchmark insightbench-load`` (and the other InsightBench commands)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchmark.insightbench.tasks import find_tasks, load_into_duckdb, table_row_counts


def add_load_args(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``insightbench-load``."""
    parser.add_argument("--tasks", required=True, type=Path,
                        help="folder of InsightBench task JSONs and their CSVs")
    parser.add_argument("--out", required=True, type=Path,
                        help="where to write <task>.duckdb files")
    parser.add_argument("--only", default="all",
                        help="all | N (first N) | comma-separated task ids (default all)")


def run_load(args: argparse.Namespace) -> int:
    """Write one DuckDB file per task and print its tables and question."""
    try:
        tasks = find_tasks(args.tasks, args.only)
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for task in tasks:
        path = load_into_duckdb(task, args.out)
        counts = ", ".join(f"{name} ({rows} rows)"
                           for name, rows in table_row_counts(path).items())
        note = "" if task.scorable else "  (no ground-truth insight texts: not scored)"
        print(f"{task.task_id}: {path}{note}\n  tables: {counts}\n"
              f"  question: {task.question}\n")
    print(f"{len(tasks)} tasks loaded into {args.out}")
    return 0
