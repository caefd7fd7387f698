"""The hospital demo as a scored development case: the paper's running example written
as an InsightBench task.

Issue 20 lists the hospital demo among the development cases to measure a real model on;
until now it had planted truths (:data:`d2_notebook.datasets.hospital.PLANTED_TRUTHS`)
but no scorer. This module writes its five tables as CSVs beside ``hospital-1.json``
(listed under the project's ``tables`` key, see :mod:`benchmark.insightbench.tasks`),
with one ground-truth insight per planted truth, so ``python -m benchmark insightbench``
runs and scores it like the InsightBench tasks (its LLM judge grades the report against
each insight).

Each insight's figures are those of the truth's canonical query run on the written CSVs,
and :func:`self_check` refuses a case whose rows do not bear the planted story out
(which a different seed or size could break): nothing is scored against a broken case.
The dataset description names the tables and columns only, never the drugs' roles.

``python -m benchmark hospital-case --out DIR [--seed N] [--patients N]`` writes the task.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import duckdb

from benchmark.insightbench.tasks import print_written_task
from d2_notebook.datasets import hospital

TASK_ID = "hospital-1"
ROLE = "Clinical data analyst"
DESCRIPTION = (
    "Admissions of COVID-19 patients to a hospital group, one admission and one treatment "
    "per patient. `patients` (patient_id, age, sex); `comorbidities` (patient_id, condition: "
    "zero or more rows per patient); `admissions` (admission_id, patient_id, admitted_on, "
    "severity mild/moderate/severe/critical, severity_score 1-4, ward); `treatments` "
    "(treatment_id, admission_id, drug, dose_mg, started_on, days); `outcomes` "
    "(admission_id, died, ventilated, recovered, days_to_discharge; admissions still in "
    "hospital have no outcome yet). Older means 65 or older.")


@dataclass(frozen=True)
class DeathRate:
    """Deaths among a group of admissions with an outcome."""

    admissions: int
    deaths: int

    @property
    def rate(self) -> float:
        """Deaths per admission (0 for an empty group)."""
        return self.deaths / self.admissions if self.admissions else 0.0

    def __str__(self) -> str:
        return f"{self.rate:.1%} ({self.deaths} of {self.admissions})"


_NOBODY = DeathRate(0, 0)
"""A group with no older patients (a case too small for the story; self_check names it)."""


@dataclass(frozen=True)
class PlantedFacts:
    """The planted truths' figures, measured on the written CSVs (patients 65 or older).

    Attributes:
        virexa, care: Virexa and standard care, all older patients.
        virexa_asthma, care_asthma: the same, patients with asthma.
        virexa_diabetes, care_diabetes: the same, patients with diabetes.
        raw: every drug's crude death rate, lowest first.
        corvalin_mild_share: the share of Corvalin's admissions that were mild.
        pulmorex_by_severity, care_by_severity: per severity score (1-4).
        by_drug: every drug's death rate per severity score.
        solvanir_low, solvanir_high: Solvanir below and at or above 500 mg.
    """

    virexa: DeathRate
    care: DeathRate
    virexa_asthma: DeathRate
    care_asthma: DeathRate
    virexa_diabetes: DeathRate
    care_diabetes: DeathRate
    raw: dict[str, DeathRate]
    corvalin_mild_share: float
    corvalin_by_severity: dict[int, DeathRate]
    pulmorex_by_severity: dict[int, DeathRate]
    care_by_severity: dict[int, DeathRate]
    solvanir_low: DeathRate
    solvanir_high: DeathRate
    by_drug: dict[str, dict[int, DeathRate]]


def write_task(out: str | os.PathLike[str], seed: int = 7, patients: int = 5000) -> Path:
    """Write ``hospital-1.json`` and its five CSVs into ``out``; returns the JSON's path.

    Raises:
        RuntimeError: the generated rows do not hold the planted story
            (:func:`self_check`), naming what fails and the fix.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    files = {table: f"{TASK_ID}-{table}.csv" for table in hospital.TABLES}
    con = hospital.create(seed=seed, patients=patients)
    try:
        for table, name in files.items():
            con.execute(f"COPY (SELECT * FROM {table} ORDER BY ALL) TO "
                        f"'{(out / name).as_posix()}' (HEADER, DELIMITER ',')")
    finally:
        con.close()
    facts = planted_facts(out, files)
    broken = self_check(facts)
    if broken:
        raise RuntimeError(f"the hospital case of seed {seed} with {patients} patients does "
                           f"not hold: {'; '.join(broken)}; try another seed or more patients")
    task = {"dataset_csv_path": files["admissions"], "tables": files,
            "metadata": {"goal": hospital.QUESTION, "role": ROLE,
                         "dataset_description": DESCRIPTION,
                         "header": "Which COVID-19 treatment works for older patients",
                         "category": "Health", "seed": seed, "patients": patients},
            "insight_list": _insights(facts), "summary": ""}
    path = out / f"{TASK_ID}.json"
    path.write_text(json.dumps(task, indent=1), encoding="utf-8")
    return path


def planted_facts(folder: Path, files: dict[str, str]) -> PlantedFacts:
    """The planted truths' figures, measured with DuckDB on the CSVs in ``folder``."""
    con = duckdb.connect()
    try:
        for table, name in files.items():
            con.execute(f"CREATE TABLE {table} AS SELECT * FROM read_csv(?, header = true)",
                        [str(folder / name)])
        older = ("FROM admissions a JOIN patients p USING (patient_id) JOIN treatments t "
                 "USING (admission_id) JOIN outcomes o USING (admission_id) WHERE p.age >= 65")

        def rates(key: str, where: str = "TRUE") -> dict[object, DeathRate]:
            rows = con.execute(f"SELECT {key}, count(*), sum(o.died::INTEGER) {older} "
                               f"AND {where} GROUP BY ALL").fetchall()
            return {k: DeathRate(int(n), int(d)) for k, n, d in rows}

        def with_condition(condition: str) -> str:
            return (f"p.patient_id IN (SELECT patient_id FROM comorbidities WHERE "
                    f"condition = '{condition}')")

        def per_severity(drug: str) -> dict[int, DeathRate]:
            found = rates("a.severity_score", f"t.drug = '{drug}'")
            return {s: found.get(s, _NOBODY) for s in range(1, len(hospital.SEVERITIES) + 1)}

        raw = dict(sorted(rates("t.drug").items(), key=lambda kv: kv[1].rate))
        asthma = rates("t.drug", with_condition("asthma"))
        diabetes = rates("t.drug", with_condition("diabetes"))
        solvanir = rates("t.dose_mg >= 500", "t.drug = 'Solvanir' AND t.dose_mg IS NOT NULL")
        corvalin = rates("a.severity", "t.drug = 'Corvalin'")
        corvalin_total = sum(r.admissions for r in corvalin.values())
        mild_share = corvalin.get("mild", _NOBODY).admissions / max(corvalin_total, 1)
        return PlantedFacts(
            virexa=raw.get("Virexa", _NOBODY), care=raw.get("Standard care", _NOBODY),
            virexa_asthma=asthma.get("Virexa", _NOBODY),
            care_asthma=asthma.get("Standard care", _NOBODY),
            virexa_diabetes=diabetes.get("Virexa", _NOBODY),
            care_diabetes=diabetes.get("Standard care", _NOBODY),
            raw={str(k): v for k, v in raw.items()}, corvalin_mild_share=mild_share,
            corvalin_by_severity=per_severity("Corvalin"),
            pulmorex_by_severity=per_severity("Pulmorex"),
            care_by_severity=per_severity("Standard care"),
            solvanir_low=solvanir.get(False, _NOBODY), solvanir_high=solvanir.get(True, _NOBODY),
            by_drug={str(drug): per_severity(str(drug)) for drug in raw})
    finally:
        con.close()


def self_check(facts: PlantedFacts) -> list[str]:
    """What in ``facts`` contradicts the planted story (empty: the case holds)."""
    care = facts.care_by_severity
    compared = [facts.virexa, facts.care, facts.virexa_asthma, facts.care_asthma,
                facts.virexa_diabetes, facts.care_diabetes, facts.solvanir_low,
                facts.solvanir_high, *care.values(), *facts.pulmorex_by_severity.values(),
                *facts.corvalin_by_severity.values()]
    checks = {
        "every compared group has older patients": all(r.admissions for r in compared),
        "Virexa is within 5 points of standard care overall":
            abs(facts.virexa.rate - facts.care.rate) < 0.05,
        "Virexa at least halves the death rate with asthma":
            facts.virexa_asthma.rate <= 0.5 * facts.care_asthma.rate,
        "Virexa raises the death rate with diabetes":
            facts.virexa_diabetes.rate > facts.care_diabetes.rate,
        "Corvalin has the lowest crude death rate": next(iter(facts.raw), "") == "Corvalin",
        "most Corvalin patients are mild": facts.corvalin_mild_share > 0.6,
        "Corvalin is no better than standard care in the mild and moderate strata":
            all(facts.corvalin_by_severity[s].rate >= care[s].rate - 0.02 for s in (1, 2)),
        "Pulmorex is lower than standard care in every severity":
            all(facts.pulmorex_by_severity[s].rate < care[s].rate for s in care),
        "Pulmorex roughly halves it (at most 0.65 of standard care) in every severity":
            all(facts.pulmorex_by_severity[s].rate <= 0.65 * care[s].rate for s in care),
        "Pulmorex has the lowest death rate of every drug in every severity":
            all(facts.pulmorex_by_severity[s].rate
                == min(r[s].rate for r in facts.by_drug.values() if r[s].admissions)
                for s in care),
        "Solvanir's high doses at least halve its death rate":
            facts.solvanir_high.rate <= 0.5 * facts.solvanir_low.rate,
        "Solvanir's low doses are within 5 points of standard care":
            abs(facts.solvanir_low.rate - facts.care.rate) < 0.05,
    }
    return [name for name, ok in checks.items() if not ok]


def _insights(f: PlantedFacts) -> list[dict[str, object]]:
    def item(text: str, question: str, values: dict[str, object]) -> dict[str, object]:
        return {"insight": text, "question": question, "insight_value": values}

    def pct(rate: DeathRate) -> float:
        return round(rate.rate, 3)

    pulmorex = ", ".join(f"{hospital.SEVERITIES[s - 1]} {r.rate:.1%} vs "
                         f"{f.care_by_severity[s].rate:.1%}"
                         for s, r in f.pulmorex_by_severity.items())
    corvalin = ", ".join(f"{hospital.SEVERITIES[s - 1]} {r.rate:.1%} vs "
                         f"{f.care_by_severity[s].rate:.1%}"
                         for s, r in f.corvalin_by_severity.items() if s <= 2)
    return [
        item(f"Overall, Virexa barely differs from standard care for older patients: "
             f"{f.virexa} died against {f.care}.",
             "Does Virexa help older patients?",
             {"Virexa": pct(f.virexa), "Standard care": pct(f.care)}),
        item(f"For older patients with asthma, Virexa cuts the death rate sharply: "
             f"{f.virexa_asthma} against {f.care_asthma} on standard care.",
             "Does Virexa help older patients with asthma?",
             {"Virexa": pct(f.virexa_asthma), "Standard care": pct(f.care_asthma)}),
        item(f"For older patients with diabetes, Virexa does not help and their death rate is "
             f"higher: {f.virexa_diabetes} against {f.care_diabetes} on standard care.",
             "Does Virexa help older patients with diabetes?",
             {"Virexa": pct(f.virexa_diabetes), "Standard care": pct(f.care_diabetes)}),
        item(f"Corvalin's crude death rate is the lowest, {f.raw['Corvalin']}, only because "
             f"{f.corvalin_mild_share:.0%} of its patients are mild cases; within a severity "
             f"it is no better than standard care ({corvalin}).",
             "Is the drug with the lowest death rate the most effective?",
             {"Corvalin crude": pct(f.raw["Corvalin"]),
              "mild share": round(f.corvalin_mild_share, 2)}),
        item(f"Pulmorex roughly halves the death rate against standard care in every "
             f"severity ({pulmorex}): the most effective treatment for older patients.",
             "Which treatment lowers mortality at every severity?",
             {hospital.SEVERITIES[s - 1]: pct(r) for s, r in f.pulmorex_by_severity.items()}),
        item(f"Solvanir works only at high doses: at 500 mg or more {f.solvanir_high} died, "
             f"below 500 mg {f.solvanir_low}.",
             "Does the dose of Solvanir matter?",
             {">= 500 mg": pct(f.solvanir_high), "< 500 mg": pct(f.solvanir_low)}),
    ]


def add_args(parser: argparse.ArgumentParser) -> None:
    """Arguments of ``python -m benchmark hospital-case``."""
    parser.add_argument("--out", required=True, type=Path,
                        help="folder for hospital-1.json and its CSVs")
    parser.add_argument("--seed", type=int, default=7, help="random seed (default 7)")
    parser.add_argument("--patients", type=int, default=5000,
                        help="number of patients (default 5000, the demo's)")


def run(args: argparse.Namespace) -> int:
    """Write the task and print its planted insights (exit code 1, and why, if the case
    does not hold)."""
    try:
        path = write_task(args.out, args.seed, args.patients)
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print_written_task(path, args.out)
    return 0
