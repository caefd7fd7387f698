"""The InsightBench loader: every development task loads with sensible table names."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from benchmark.insightbench.tasks import (
    find_tasks,
    load_into_duckdb,
    load_task,
    main_table_name,
    table_row_counts,
)
from tests.shared_dir import REPO, shared_dir


def _csv_rows(path: Path) -> int:
    with path.open(newline="", encoding="utf-8") as handle:
        return sum(1 for _ in csv.reader(handle)) - 1


def test_every_dev_task_loads_with_row_counts_matching_its_csvs(tmp_path: Path) -> None:
    tasks = find_tasks(shared_dir("insightbench-dev"))
    assert len(tasks) == 27
    for task in tasks:
        counts = table_row_counts(load_into_duckdb(task, tmp_path))
        assert counts == {t.name: _csv_rows(t.csv) for t in task.tables}, task.task_id
        assert all(i.text.strip() for i in task.insights)
        assert task.scorable == (task.task_id != "flag-36"), task.task_id  # ships empty
        assert task.goal.strip()[:40] in task.question


def test_tables_take_the_servicenow_names_the_description_gives(tmp_path: Path) -> None:
    by_id = {t.task_id: t for t in find_tasks(shared_dir("insightbench-dev"))}
    names = {tid: [t.name for t in task.tables] for tid, task in by_id.items()}
    assert names["flag-1"] == ["incident"]
    assert names["flag-16"] == ["alm_hardware"]
    assert names["flag-21"] == ["fm_expense_line", "sys_user"]
    assert names["flag-28"] == ["sn_gf_goal", "sys_user"]
    assert names["flag-27"] == ["sys_user"]
    con = duckdb.connect(str(load_into_duckdb(by_id["flag-21"], tmp_path)), read_only=True)
    declined = con.execute("SELECT count(*) FROM fm_expense_line e JOIN sys_user u "
                           "ON e.user = u.name WHERE e.state = 'Declined'").fetchone()[0]
    con.close()
    assert declined > 0
    assert "HR Data Analyst" in by_id["flag-21"].question
    assert "`fm_expense_line`, `sys_user`" in by_id["flag-21"].question


def test_insight_values_are_kept_for_the_numbers_check() -> None:
    task = load_task(shared_dir("insightbench-dev", "flag-1.json"))
    first = task.insights[0]
    assert first.text == "hardware incidents is significantly higher than others"
    assert first.values == ("Hardware", "335")


def test_an_unknown_description_falls_back_to_the_csv_stem() -> None:
    assert main_table_name("Some rows of sales.", "flag-99.csv",
                           has_user_table=False) == "flag_99"
    assert main_table_name("simulating ServiceNow `sys_user` table", "x.csv",
                           has_user_table=False) == "sys_user"


def test_a_missing_csv_names_the_file_and_the_fix(tmp_path: Path) -> None:
    task = {"dataset_csv_path": "data/notebooks/csvs/flag-5.csv",
            "metadata": {"goal": "Find things", "role": "Analyst"},
            "insight_list": [{"insight": "x is high", "insight_value": {"y": 1}}]}
    (tmp_path / "flag-5.json").write_text(json.dumps(task))
    with pytest.raises(FileNotFoundError, match=r"flag-5\.csv is not in"):
        load_task(tmp_path / "flag-5.json")


def test_a_json_that_is_not_a_task_is_refused_clearly(tmp_path: Path) -> None:
    (tmp_path / "other.json").write_text('{"hello": 1}')
    with pytest.raises(ValueError, match="not an InsightBench task"):
        find_tasks(tmp_path)
    with pytest.raises(ValueError, match="no InsightBench task JSONs"):
        find_tasks(tmp_path / "empty")


def test_unknown_task_ids_are_named() -> None:
    with pytest.raises(ValueError, match="unknown task ids: flag-999"):
        find_tasks(shared_dir("insightbench-dev"), "flag-1,flag-999")


def test_the_load_command_writes_databases_and_prints_questions(tmp_path: Path) -> None:
    tasks = shared_dir("insightbench-dev")
    done = subprocess.run([sys.executable, "-m", "benchmark", "insightbench-load", "--tasks",
                           str(tasks), "--out", str(tmp_path), "--only", "flag-1,flag-21"],
                          cwd=REPO, capture_output=True, text=True, check=True)
    assert "question: Find the discrepancy" in done.stdout
    assert "fm_expense_line (500 rows), sys_user (54 rows)" in done.stdout
    assert sorted(p.name for p in tmp_path.glob("*.duckdb")) == ["flag-1.duckdb",
                                                                   "flag-21.duckdb"]


def _task_folder(tmp_path: Path) -> Path:
    """flag-0 (no insight texts) before flag-1 (scorable), both on flag-1's CSVs."""
    dev = shared_dir("insightbench-dev")
    folder = tmp_path / "tasks"
    folder.mkdir()
    for name in ("flag-1.json", "flag-1.csv", "flag-1-sysuser.csv"):
        if (dev / name).is_file():
            shutil.copy(dev / name, folder / name)
    raw = json.loads((dev / "flag-1.json").read_text())
    raw["insight_list"] = [{"insight": "", "insight_value": {}}]
    (folder / "flag-0.json").write_text(json.dumps(raw))
    return folder


def test_only_n_means_the_first_n_scorable_tasks_for_loading_and_running(
        tmp_path: Path) -> None:
    folder = _task_folder(tmp_path)
    assert [t.task_id for t in find_tasks(folder, "1")] == ["flag-1"]
    assert [t.task_id for t in find_tasks(folder)] == ["flag-0", "flag-1"]
    done = subprocess.run([sys.executable, "-m", "benchmark", "insightbench-load", "--tasks",
                           str(folder), "--out", str(tmp_path / "dbs"), "--only", "1"],
                          cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert [p.name for p in (tmp_path / "dbs").glob("*.duckdb")] == ["flag-1.duckdb"]


def test_named_tasks_are_read_alone(tmp_path: Path) -> None:
    folder = _task_folder(tmp_path)
    (folder / "flag-2.json").write_text("{not json")  # never read when not named
    assert [t.task_id for t in find_tasks(folder, "flag-1")] == ["flag-1"]
    with pytest.raises(ValueError, match=r"flag-2\.json is not an InsightBench task"):
        find_tasks(folder, "flag-2")


@pytest.mark.parametrize(("change", "message"), [
    (lambda raw: raw.pop("dataset_csv_path"), r"no 'dataset_csv_path'.*needs metadata\.goal"),
    (lambda raw: raw.update(insight_list=["a string, not an object"]),
     r"insight_list holds something other than objects"),
    (lambda raw: raw.update(insight_list={"insight": "x"}),
     r"insight_list holds something other than objects"),
    (lambda raw: raw.update(dataset_csv_path=7), r"dataset_csv_path must be a CSV file name"),
])
def test_a_malformed_task_json_names_the_file_and_what_it_needs(
        tmp_path: Path, change, message: str) -> None:
    folder = _task_folder(tmp_path)
    raw = json.loads((folder / "flag-1.json").read_text())
    change(raw)
    (folder / "flag-1.json").write_text(json.dumps(raw))
    with pytest.raises(ValueError, match=message):
        load_task(folder / "flag-1.json")
    done = subprocess.run([sys.executable, "-m", "benchmark", "insightbench-load", "--tasks",
                           str(folder), "--out", str(tmp_path / "dbs"), "--only", "flag-1"],
                          cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "flag-1.json" in done.stderr


def test_a_csv_duckdb_cannot_read_is_one_clear_error(tmp_path: Path) -> None:
    folder = _task_folder(tmp_path)
    (folder / "flag-1.csv").write_bytes(b"a,b\n1,\xff\xfe\n")  # not UTF-8: DuckDB refuses it
    task = load_task(folder / "flag-1.json")
    with pytest.raises(ValueError, match=r"cannot load .*flag-1\.csv .*fix the CSV"):
        load_into_duckdb(task, tmp_path / "dbs")
    assert not list((tmp_path / "dbs").glob("*.tmp"))
    done = subprocess.run([sys.executable, "-m", "benchmark", "insightbench-load", "--tasks",
                           str(folder), "--out", str(tmp_path / "dbs"), "--only", "flag-1"],
                          cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "flag-1.csv" in done.stderr
