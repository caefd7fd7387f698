"""Result records of a benchmark run on disk, shared by SQL City and InsightBench.

Layout of a run's ``<out>``: ``results/<item>--<variant>.json`` (one record per item ×
variant, written atomically: whole or absent) and ``boards/<item>--<variant>.d2board``.
A record is *complete* (``"complete": true``) when its run finished and was scored; an
incomplete one (a failure, with its ``error``) runs again on the next run. A run
resumes only the results of the same configuration (:func:`check_same_config`).
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

from d2_notebook.detective.preset import Preset
from d2_notebook.errors import ModelConfigError
from d2_notebook.llm.usage import UsageTotals

DEFAULT_PRESET = Preset.DEFAULT.value
"""The preset a record that names none was run with."""


def results_dir(out: Path) -> Path:
    """The folder of a run's result records."""
    return out / "results"


def result_path(out: Path, item_id: str, variant: str) -> Path:
    """Where the result record of one item (case or task) × variant lives."""
    return results_dir(out) / f"{item_id}--{variant}.json"


def board_path(out: Path, item_id: str, variant: str) -> Path:
    """Where the board of one item × variant lives."""
    return out / "boards" / f"{item_id}--{variant}.d2board"


def fresh_board_path(out: Path, item_id: str, variant: str) -> Path:
    """:func:`board_path`, its folder made and any stale board there (of an interrupted
    run) deleted, so the investigation starts on a fresh board."""
    path = board_path(out, item_id, variant)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    return path


def usage_record(usage: UsageTotals) -> dict[str, Any]:
    """A record's ``usage``: calls, the four token counts, cost and unpriced calls."""
    return {"calls": usage.calls, "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cache_read_tokens": usage.cache_read_tokens,
            "cache_write_tokens": usage.cache_write_tokens,
            "cost_usd": usage.cost_usd, "unpriced_calls": usage.unpriced_calls}


def load_result(path: Path) -> dict[str, Any] | None:
    """A complete result record, or None (missing, unreadable or incomplete)."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and record.get("complete") else None


def write_result(path: Path, record: dict[str, Any]) -> None:
    """Write a record atomically (a result file is either whole or absent)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=1, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def check_same_config(records: Iterable[dict[str, Any]], model: str | None,
                      policy: str | None, out: Path, preset: str | None = None) -> None:
    """Refuse to resume results recorded with another model, policy or preset.

    A record without a ``preset`` (older ones, and every run that named none) counts as
    the default preset.

    Raises:
        ValueError: a complete record of ``out`` was made by another model, policy or
            preset (the message names it and the fix: a fresh ``--out``).
    """
    ours = (model, policy, preset or DEFAULT_PRESET)
    for record in records:
        theirs = (record.get("model"), record.get("policy"),
                  record.get("preset") or DEFAULT_PRESET)
        if theirs != ours:
            name = record.get("case_id") or record.get("task_id")
            raise ValueError(
                f"{out} holds results of another configuration ({name} {record.get('variant')}"
                f": model {theirs[0]}, policy {theirs[1]}, preset {theirs[2]}; this run: model "
                f"{model}, policy {policy}, preset {ours[2]}); pass a fresh --out (or the same "
                "--model/--policy/--preset to resume)")


async def run_or_record_failure(limit: asyncio.Semaphore, path: Path, key: dict[str, Any],
                                job: Callable[[], Awaitable[dict[str, Any]]],
                                say: Callable[[str], None]) -> dict[str, Any] | None:
    """Run one item × variant under ``limit``; a failure becomes an incomplete record.

    Args:
        limit: the run's concurrency limit.
        path: the result record's path (written on failure; ``job`` writes success).
        key: the record's identifying fields (``case_id``/``task_id`` and ``variant``).
        job: runs, scores and writes the record; returns it.
        say: progress lines.

    Returns:
        The record, or None when the job failed (its incomplete record is written, so
        a later run retries it).

    Raises:
        ModelConfigError: no model can run: the whole run stops, not every item.
    """
    async with limit:
        try:
            return await job()
        except ModelConfigError:
            raise
        except Exception as exc:  # one failure must not stop the run
            error = f"{type(exc).__name__}: {exc}"
            write_result(path, {**key, "complete": False, "error": error})
            say(f"{' '.join(str(v) for v in key.values())}: FAILED {error}")
            return None
