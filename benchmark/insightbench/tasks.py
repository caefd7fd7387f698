"""InsightBench tasks: read a task's JSON, load its CSVs into a DuckDB file, ask its goal.

A task is ``flag-N.json`` (goal, role, dataset description, ground-truth insights) with
its CSVs (``dataset_csv_path``, optionally ``user_dataset_csv_path``; or, for a
multi-table case of this project such as :mod:`benchmark.retail_case`, every table
under ``tables``) resolved *by file name* in the task folder (the JSON's paths point
into the original repository layout).

Table names follow the ServiceNow table the dataset description names (``incident``,
``fm_expense_line``, ``sn_gf_goal``, ``alm_hardware``, ``sys_user``); the user CSV is
always ``sys_user``. When the description names no known table, the main table is the
CSV's stem made an identifier (``flag_7``).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

USER_TABLE = "sys_user"
# ServiceNow tables the InsightBench descriptions name, with the phrases that name them.
KNOWN_TABLES: dict[str, tuple[str, ...]] = {
    "fm_expense_line": ("fm_expense_line",),
    "sn_gf_goal": ("sn_gf_goal",),
    "alm_hardware": ("alm_hardware",),
    "incident": ("incidents table", "incident table", "`incident`"),
    USER_TABLE: ("sys_user",),
}


@dataclass(frozen=True)
class TaskTable:
    """One table of a task: its DuckDB name and the CSV it is loaded from."""

    name: str
    csv: Path


@dataclass(frozen=True)
class GroundTruthInsight:
    """One planted insight: its text, the question it answers and its key values.

    ``values`` are the scalar values of the insight's ``insight_value`` (numbers and
    short strings such as ``"Hardware"``, ``335``), used by the offline numbers check.
    """

    text: str
    question: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class InsightTask:
    """An InsightBench task ready to load and score.

    Attributes:
        task_id: the JSON's stem, e.g. ``flag-21``.
        goal: the task's analysis goal.
        role: the analyst role the goal is posed for.
        header: the task's title.
        description: the dataset description.
        tables: the tables to load, main table first.
        insights: the ground-truth insights with a text (empty ones are dropped).
    """

    task_id: str
    goal: str
    role: str
    header: str
    description: str
    tables: tuple[TaskTable, ...]
    insights: tuple[GroundTruthInsight, ...]

    @property
    def scorable(self) -> bool:
        """Whether the task has ground-truth insights to score against.

        (One development task, ``flag-36``, ships with empty insight texts.)
        """
        return bool(self.insights)

    @property
    def question(self) -> str:
        """The investigative question: the goal, with the role and tables as context."""
        names = ", ".join(f"`{t.name}`" for t in self.tables)
        role = f" (Role: {self.role.strip()}.)" if self.role.strip() else ""
        goal = self.goal.strip()
        goal = goal if goal.endswith((".", "?", "!")) else goal + "."
        return f"{goal}{role} The data is in {names}."


def _identifier(text: str) -> str:
    name = re.sub(r"[^0-9a-zA-Z_]+", "_", text).strip("_").lower() or "data"
    return name if not name[0].isdigit() else f"t_{name}"


def main_table_name(description: str, csv_name: str, *, has_user_table: bool) -> str:
    """The main table's name: the first known ServiceNow table the description names.

    With a separate user table, ``sys_user`` is not a candidate for the main table.
    Fallback: the CSV's stem as an identifier.
    """
    text = description.casefold()
    best: tuple[int, str] | None = None
    for table, phrases in KNOWN_TABLES.items():
        if has_user_table and table == USER_TABLE:
            continue
        for phrase in phrases:
            at = text.find(phrase)
            if at >= 0 and (best is None or at < best[0]):
                best = (at, table)
    return best[1] if best else _identifier(Path(csv_name).stem)


def _scalars(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [s for v in value.values() for s in _scalars(v)]
    if isinstance(value, list):
        return [s for v in value for s in _scalars(v)]
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, int | float):
        return [f"{value:g}" if isinstance(value, float) else str(value)]
    text = str(value).strip()
    return [text] if text and len(text.split()) <= 3 else []


def _csv_in(folder: Path, original: str, task_id: str) -> Path:
    path = folder / Path(original).name
    if not path.is_file():
        raise FileNotFoundError(f"task {task_id}: its CSV {Path(original).name} is not in "
                                f"{folder}; put the task's CSVs beside its JSON")
    return path


def _named_tables(named: Any, path: Path) -> list[TaskTable]:
    """The tables of this project's ``tables`` key (``{"orders": "orders.csv", ...}``,
    main table first), which names every table of a multi-table case; [] without it.

    Raises:
        ValueError: ``tables`` is not an object of table names to CSV file names.
    """
    if named is None:
        return []
    if not isinstance(named, dict) or not named or not all(
            isinstance(n, str) and isinstance(c, str) and c.strip() for n, c in named.items()):
        raise ValueError(f'{path}: "tables" must map table names to CSV file names, e.g. '
                         '{"orders": "orders.csv"}')
    return [TaskTable(_identifier(name), _csv_in(path.parent, csv, path.stem))
            for name, csv in named.items()]


def load_task(path: str | os.PathLike[str]) -> InsightTask:
    """Read one task JSON; its CSVs are resolved by file name in the JSON's folder.

    A task of this project may name all its tables under ``tables`` (name → CSV, the
    main table first; ``dataset_csv_path`` is then only kept for InsightBench's tools).

    Raises:
        FileNotFoundError: the JSON or one of its CSVs is missing.
        ValueError: the JSON is not an InsightBench task (no goal, no
            ``dataset_csv_path``, an ``insight_list`` that is not a list of objects);
            the message names the file and what it needs.
    """
    path = Path(path)
    needs = ("needs metadata.goal, dataset_csv_path and insight_list, a list of "
             '{"insight": ...} objects')
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        meta = raw["metadata"]
        goal = str(meta["goal"])
        items = raw["insight_list"]
        csv_name = raw["dataset_csv_path"]
    except (KeyError, TypeError, ValueError) as exc:
        missing = f"no {exc}" if isinstance(exc, KeyError) else str(exc)
        raise ValueError(f"{path} is not an InsightBench task ({missing}); it {needs}") from exc
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise ValueError(f"{path} is not an InsightBench task (insight_list holds "
                         f"something other than objects); it {needs}")
    if not isinstance(csv_name, str) or not csv_name.strip():
        raise ValueError(f"{path}: dataset_csv_path must be a CSV file name; it {needs}")
    description = str(meta.get("dataset_description", ""))
    tables = _named_tables(raw.get("tables"), path)
    if not tables:
        main_csv = _csv_in(path.parent, csv_name, path.stem)
        user = raw.get("user_dataset_csv_path")
        tables = [TaskTable(main_table_name(description, main_csv.name,
                                            has_user_table=bool(user)), main_csv)]
        if user:
            tables.append(TaskTable(USER_TABLE, _csv_in(path.parent, str(user), path.stem)))
    insights = tuple(GroundTruthInsight(str(i["insight"]), str(i.get("question", "")),
                                        tuple(_scalars(i.get("insight_value", {}))))
                     for i in items if str(i.get("insight", "")).strip())
    return InsightTask(path.stem, goal, str(meta.get("role", "")), str(meta.get("header", "")),
                       description, tuple(tables), insights)


def _task_number(path: Path) -> tuple[int, str]:
    digits = re.findall(r"\d+", path.stem)
    return (int(digits[-1]) if digits else 0, path.stem)


def find_tasks(folder: str | os.PathLike[str], spec: str = "all") -> list[InsightTask]:
    """The tasks of ``folder`` (``*.json`` with a goal), in task-number order.

    Args:
        folder: a folder of task JSONs and their CSVs.
        spec: ``all`` (every task, unscorable ones included), ``N`` (the first N
            *scorable* tasks: the same N for loading and for running) or comma-separated
            task ids (``flag-1,flag-21``: only those JSONs are read).

    Raises:
        ValueError: no tasks in the folder, unknown task ids, or a bad task JSON.
    """
    folder = Path(folder)
    paths = sorted(folder.glob("*.json"), key=_task_number)
    if not paths:
        raise ValueError(f"no InsightBench task JSONs in {folder}")
    if spec == "all":
        return [load_task(p) for p in paths]
    if spec.isdigit():
        chosen: list[InsightTask] = []
        for path in paths:
            if len(chosen) >= int(spec):
                break
            task = load_task(path)
            if task.scorable:
                chosen.append(task)
        return chosen
    wanted = [s.strip() for s in spec.split(",") if s.strip()]
    by_id = {p.stem: p for p in paths}
    missing = [w for w in wanted if w not in by_id]
    if missing:
        raise ValueError(f"unknown task ids: {', '.join(missing)} (have {', '.join(by_id)})")
    return [load_task(by_id[w]) for w in wanted]


def load_into_duckdb(task: InsightTask, out: str | os.PathLike[str]) -> Path:
    """Write ``<out>/<task_id>.duckdb`` with one table per CSV; returns its path.

    The file is rebuilt from the CSVs each time (written beside, then renamed), so a
    half-written database never survives an interruption. Column types are DuckDB's
    CSV sniffer's.

    Raises:
        ValueError: DuckDB cannot read a CSV (the message names the file, DuckDB's
            first line and the fix).
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    target = out / f"{task.task_id}.duckdb"
    tmp = target.with_suffix(".duckdb.tmp")
    tmp.unlink(missing_ok=True)
    con = duckdb.connect(str(tmp))
    try:
        for table in task.tables:
            try:
                con.execute(f'CREATE TABLE "{table.name}" AS SELECT * FROM read_csv(?, '
                            "header = true, sample_size = -1)", [str(table.csv)])
            except duckdb.Error as exc:
                con.close()
                tmp.unlink(missing_ok=True)
                lines = str(exc).strip().splitlines() or [type(exc).__name__]
                raise ValueError(f"task {task.task_id}: cannot load {table.csv} ({lines[0]}); "
                                 "fix the CSV or put the task's original CSV there") from exc
    finally:
        con.close()
    os.replace(tmp, target)
    return target


def print_written_task(path: Path, tasks_dir: Path) -> None:
    """Print a task a case generator wrote: its insights, numbered, and how to run it."""
    task = json.loads(path.read_text(encoding="utf-8"))
    for number, item in enumerate(task["insight_list"], 1):
        print(f"{number}. {item['insight']}")
    print(f"written: {path} (run it with python -m benchmark insightbench --tasks "
          f"{tasks_dir} --only {path.stem})")


def table_row_counts(database: str | os.PathLike[str]) -> dict[str, int]:
    """Rows per table of a loaded task database (opened read-only)."""
    con = duckdb.connect(str(database), read_only=True)
    try:
        names = [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables "
                                           "ORDER BY table_name").fetchall()]
        return {n: con.execute(f'SELECT count(*) FROM "{n}"').fetchone()[0] for n in names}
    finally:
        con.close()
