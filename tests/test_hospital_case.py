"""The hospital demo as a scored case (issue 20): it is written as an InsightBench task
whose five tables load under their own names, each insight carries the figures of its
planted truth measured on the written rows, and a case too small for the story is
refused with the fix."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from benchmark import hospital_case
from benchmark.insightbench.tasks import load_into_duckdb, load_task, table_row_counts
from d2_notebook.datasets import hospital
from tests.shared_dir import REPO


@pytest.fixture(scope="module")
def task_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("hospital")
    hospital_case.write_task(folder)
    return folder


def _facts(folder: Path) -> hospital_case.PlantedFacts:
    files = {t: f"{hospital_case.TASK_ID}-{t}.csv" for t in hospital.TABLES}
    return hospital_case.planted_facts(folder, files)


def test_the_case_loads_as_a_task_with_every_table_under_its_own_name(
        task_dir: Path, tmp_path: Path) -> None:
    task = load_task(task_dir / "hospital-1.json")
    assert [t.name for t in task.tables] == list(hospital.TABLES)
    counts = table_row_counts(load_into_duckdb(task, tmp_path))
    assert counts["patients"] == counts["admissions"] == counts["treatments"] == 5000
    assert 4900 < counts["outcomes"] < 5000  # ~1% still in hospital
    assert len(task.insights) == len(hospital.PLANTED_TRUTHS)
    assert task.question.startswith(hospital.QUESTION)
    for role in hospital.DRUGS.values():  # the description never gives a drug's role away
        assert role not in task.description


def test_the_insights_carry_the_figures_of_the_canonical_queries(task_dir: Path) -> None:
    facts = _facts(task_dir)
    assert hospital_case.self_check(facts) == []
    con = hospital.create()  # the demo database itself, not the CSVs
    try:
        canonical = {t.id: con.execute(t.sql).fetchall() for t in hospital.PLANTED_TRUTHS}
    finally:
        con.close()
    asthma = {drug: (n, d) for drug, n, d, _ in canonical["H3"]}
    assert asthma["Virexa"] == (facts.virexa_asthma.admissions, facts.virexa_asthma.deaths)
    dose = {high: (n, d) for high, n, d, _ in canonical["D1"]}
    assert dose[True] == (facts.solvanir_high.admissions, facts.solvanir_high.deaths)
    insights = [i["insight"] for i in
                json.loads((task_dir / "hospital-1.json").read_text())["insight_list"]]
    assert f"{facts.virexa_asthma.rate:.1%} ({facts.virexa_asthma.deaths} of " in insights[1]
    assert f"{facts.corvalin_mild_share:.0%} of its patients are mild" in insights[3]
    assert all(f"{r.rate:.1%}" in insights[4] for r in facts.pulmorex_by_severity.values())


def test_the_same_seed_writes_the_same_case(task_dir: Path, tmp_path: Path) -> None:
    hospital_case.write_task(tmp_path)
    for name in ("hospital-1.json", "hospital-1-treatments.csv", "hospital-1-outcomes.csv"):
        assert (tmp_path / name).read_bytes() == (task_dir / name).read_bytes(), name


def test_a_broken_story_is_named(task_dir: Path) -> None:
    facts = _facts(task_dir)
    broken = dataclasses.replace(facts, solvanir_high=facts.solvanir_low,
                                 virexa_diabetes=hospital_case.DeathRate(0, 0))
    assert hospital_case.self_check(broken) == [
        "every compared group has older patients",
        "Virexa raises the death rate with diabetes",
        "Solvanir's high doses at least halve its death rate"]


def test_a_case_too_small_for_the_story_is_refused_with_the_fix(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="try another seed or more patients") as refused:
        hospital_case.write_task(tmp_path, patients=100)
    assert "every compared group has older patients" in str(refused.value)
    assert not (tmp_path / "hospital-1.json").exists()


def test_the_command_writes_the_task_and_prints_its_insights(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "benchmark", "hospital-case", "--out",
                           str(tmp_path)], cwd=REPO, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 7  # six insights and where it was written
    assert "Pulmorex roughly halves the death rate" in done.stdout
    refused = subprocess.run([sys.executable, "-m", "benchmark", "hospital-case", "--out",
                              str(tmp_path / "small"), "--patients", "100"], cwd=REPO,
                             capture_output=True, text=True, timeout=300)
    assert refused.returncode == 1
    assert refused.stderr.startswith("error: the hospital case of seed 7 with 100 patients")
    assert "Traceback" not in refused.stderr
