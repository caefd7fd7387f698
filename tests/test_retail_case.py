"""The multi-table retail case (issue 20's cascade case): it is written as an InsightBench
task whose tables load under their own names, its planted story holds in the rows, and a
bad ``tables`` key or a missing CSV gets an error that names the fix."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmark import retail_case
from benchmark.insightbench.tasks import load_into_duckdb, load_task, table_row_counts
from tests.shared_dir import REPO


@pytest.fixture(scope="module")
def task_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("retail")
    retail_case.write_task(folder)
    return folder


def test_the_case_loads_as_a_task_with_every_table_under_its_own_name(
        task_dir: Path, tmp_path: Path) -> None:
    task = load_task(task_dir / "retail-1.json")
    assert [t.name for t in task.tables] == ["orders", "products", "suppliers", "customers"]
    counts = table_row_counts(load_into_duckdb(task, tmp_path))
    assert counts == {"orders": 2 * retail_case.ORDERS_PER_QUARTER + retail_case.TEST_ORDERS,
                      "products": 160, "suppliers": 10, "customers": 5_001}
    assert len(task.insights) == 7
    assert "`orders`, `products`, `suppliers`, `customers`" in task.question


def test_the_planted_story_holds_in_the_written_rows(task_dir: Path) -> None:
    facts = retail_case.planted_facts(task_dir / "retail-1-orders.csv",
                                      task_dir / "retail-1-products.csv",
                                      task_dir / "retail-1-customers.csv")
    assert retail_case.self_check(facts) == []
    assert facts["aov_change"] < -0.08
    assert facts["home_q2_ratio_spread"] < 0.01  # the same 20 % at every price level
    insights = json.loads((task_dir / "retail-1.json").read_text())["insight_list"]
    assert f"${facts['aov_q1']:.2f}" in insights[0]["insight"]
    assert f"{facts['south_q2']:.0%}" in insights[2]["insight"]


def test_the_same_seed_writes_the_same_case(task_dir: Path, tmp_path: Path) -> None:
    retail_case.write_task(tmp_path)
    for name in ("retail-1.json", "retail-1-orders.csv", "retail-1-customers.csv"):
        assert (tmp_path / name).read_bytes() == (task_dir / name).read_bytes(), name


def test_a_broken_story_is_named() -> None:
    facts = {"aov_change": -0.14, "south_q1": 0.2, "south_q2": 0.38, "app_q1": 0.3,
             "app_q2": 0.45, "ret7_q1": 0.03, "ret7_q2": 0.24, "weekend_q1": 0.28,
             "weekend_q2": 0.35, "home_q2_ratio_spread": 0.0, "test_orders": 140.0}
    assert retail_case.self_check(facts) == ["the weekend share stayed within 2 points"]


def test_a_bad_tables_key_or_a_missing_csv_names_the_fix(task_dir: Path,
                                                         tmp_path: Path) -> None:
    task = json.loads((task_dir / "retail-1.json").read_text())
    bad = tmp_path / "retail-9.json"
    bad.write_text(json.dumps({**task, "tables": ["orders.csv"]}))
    with pytest.raises(ValueError, match=r'"tables" must map table names to CSV file names'):
        load_task(bad)
    bad.write_text(json.dumps({**task, "tables": {"orders": "gone.csv"}}))
    with pytest.raises(FileNotFoundError, match="put the task's CSVs beside its JSON"):
        load_task(bad)


def test_the_command_writes_the_task_and_prints_its_insights(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "benchmark", "retail-case", "--out",
                           str(tmp_path)], cwd=REPO, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 8  # seven insights and where it was written
    assert "flat 20% discount" in done.stdout
    assert (tmp_path / "retail-1.json").is_file()
