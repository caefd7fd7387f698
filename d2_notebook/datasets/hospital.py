"""A synthetic COVID-19 hospital database with planted truths (the paper's running example).

:func:`create` writes five DuckDB tables (``patients``, ``comorbidities``, ``admissions``,
``treatments``, ``outcomes``) whose death rates follow a simple, documented risk model. Four
effects are planted on purpose and listed in :data:`PLANTED_TRUTHS`, each with a canonical
SQL query that shows it. Everything is deterministic from the seed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import duckdb
import numpy as np
import pandas as pd

QUESTION = "Which treatment is most effective for older COVID-19 patients?"
FOLLOW_UP_QUESTION = "And for older patients with asthma, which treatment helps?"
"""The follow-up the offline walk-through asks on the board of :data:`QUESTION`."""

#: Fictional drug names and the role each plays (the paper's "Drug A" is Virexa).
DRUGS: dict[str, str] = {
    "Standard care": "no drug; the comparator for every truth",
    "Virexa": "the paper's 'Drug A': risk x0.15 with asthma, x1.3 with diabetes (not both)",
    "Corvalin": "no effect, but mostly given to mild cases (confounded by severity)",
    "Pulmorex": "clearly effective: halves the death risk in every severity stratum",
    "Solvanir": "dose effect: 200 mg does nothing, 800 mg cuts the death risk by 80%",
    "Hydrazol": "no effect at all (a distractor)",
}
_DRUG_NAMES = list(DRUGS)
_NOMINAL_DOSE = np.array([np.nan, 200.0, 400.0, 6.0, np.nan, 100.0])  # Solvanir drawn apart
SEVERITIES = ("mild", "moderate", "severe", "critical")
CONDITIONS = ("asthma", "diabetes", "hypertension", "copd", "obesity", "ckd")
_PREVALENCE_OLD = np.array([0.28, 0.32, 0.50, 0.18, 0.26, 0.14])  # age >= 65
_PREVALENCE_YOUNG = np.array([0.15, 0.15, 0.20, 0.05, 0.30, 0.04])
_SEVERITY_OLD = np.array([0.26, 0.34, 0.25, 0.15])
_SEVERITY_YOUNG = np.array([0.45, 0.33, 0.15, 0.07])
_BASE_RISK = np.array([0.07, 0.14, 0.28, 0.42])  # death risk by severity before modifiers
# Prescription probabilities per severity (rows) and drug (columns, order of DRUGS).
# Standard care and Virexa do not depend on severity; Corvalin goes to mild cases.
_PRESCRIBING = np.array([
    [0.201, 0.179, 0.50, 0.08, 0.025, 0.015],
    [0.297, 0.263, 0.08, 0.16, 0.13, 0.07],
    [0.262, 0.233, 0.015, 0.26, 0.15, 0.08],
    [0.254, 0.226, 0.01, 0.30, 0.14, 0.07],
])
_START = np.datetime64("2020-03-01")
_DAYS_OF_PANDEMIC = 670


@dataclass(frozen=True)
class PlantedTruth:
    """One effect planted in the data, with the query that demonstrates it.

    Attributes:
        id: Short identifier, e.g. ``"H3"`` (numbered like the paper's hypotheses).
        statement: The hypothesis in plain words.
        drug: The drug it is about.
        subgroup: The patients it is about, in words.
        expected: ``"supported"`` if the data bears the statement out, else ``"contradicted"``.
        sql: A canonical query whose result shows the (absent) effect.
    """

    id: str
    statement: str
    drug: str
    subgroup: str
    expected: Literal["supported", "contradicted"]
    sql: str


_FROM = """FROM admissions a JOIN patients p USING (patient_id)
JOIN treatments t USING (admission_id) JOIN outcomes o USING (admission_id)"""
_RATES = (
    "COUNT(*) AS admissions, SUM(o.died::INTEGER) AS deaths, "
    "ROUND(AVG(o.died::INTEGER), 3) AS death_rate"
)


def _versus_care(drug: str, condition: str | None = None) -> str:
    """Death rate of older patients on ``drug`` vs standard care, optionally with a condition."""
    where = f"p.age >= 65 AND t.drug IN ('{drug}', 'Standard care')"
    if condition:
        where += (
            "\n  AND p.patient_id IN"
            f" (SELECT patient_id FROM comorbidities WHERE condition = '{condition}')"
        )
    return f"SELECT t.drug, {_RATES}\n{_FROM}\nWHERE {where}\nGROUP BY t.drug ORDER BY t.drug"


PLANTED_TRUTHS: list[PlantedTruth] = [
    PlantedTruth(
        "H1", "Virexa helps older patients", "Virexa", "age >= 65", "contradicted",
        _versus_care("Virexa"),
    ),
    PlantedTruth(
        "H3", "Virexa helps older patients with asthma", "Virexa", "age >= 65 with asthma",
        "supported", _versus_care("Virexa", "asthma"),
    ),
    PlantedTruth(
        "H4", "Virexa helps older patients with diabetes", "Virexa", "age >= 65 with diabetes",
        "contradicted", _versus_care("Virexa", "diabetes"),
    ),
    PlantedTruth(
        "C1", "Corvalin (lowest raw death rate) lowers mortality for older patients",
        "Corvalin", "age >= 65, per severity", "contradicted",
        f"SELECT t.drug, a.severity_score, a.severity, {_RATES}\n{_FROM}\nWHERE p.age >= 65\n"
        "GROUP BY GROUPING SETS ((t.drug), (t.drug, a.severity_score, a.severity))\n"
        "ORDER BY a.severity_score NULLS FIRST, death_rate",
    ),
    PlantedTruth(
        "P1", "Pulmorex lowers mortality for older patients in every severity stratum",
        "Pulmorex", "age >= 65, per severity", "supported",
        f"SELECT a.severity_score, a.severity, t.drug, {_RATES}\n{_FROM}\n"
        "WHERE p.age >= 65 AND t.drug IN ('Pulmorex', 'Standard care')\n"
        "GROUP BY ALL ORDER BY ALL",
    ),
    PlantedTruth(
        "D1", "Higher Solvanir doses (>= 500 mg) lower mortality for older patients",
        "Solvanir", "age >= 65 on Solvanir with a recorded dose", "supported",
        f"SELECT t.dose_mg >= 500 AS high_dose, {_RATES}\n{_FROM}\n"
        "WHERE p.age >= 65 AND t.drug = 'Solvanir' AND t.dose_mg IS NOT NULL\n"
        "GROUP BY ALL ORDER BY ALL",
    ),
]

_SCHEMA = """
CREATE TABLE patients (
    patient_id INTEGER PRIMARY KEY, age INTEGER NOT NULL, sex VARCHAR);
CREATE TABLE comorbidities (
    patient_id INTEGER NOT NULL REFERENCES patients (patient_id), condition VARCHAR NOT NULL,
    PRIMARY KEY (patient_id, condition));
CREATE TABLE admissions (
    admission_id INTEGER PRIMARY KEY, patient_id INTEGER NOT NULL REFERENCES patients (patient_id),
    admitted_on DATE NOT NULL, severity VARCHAR NOT NULL, severity_score INTEGER NOT NULL,
    ward VARCHAR NOT NULL);
CREATE TABLE treatments (
    treatment_id INTEGER PRIMARY KEY,
    admission_id INTEGER NOT NULL REFERENCES admissions (admission_id),
    drug VARCHAR NOT NULL, dose_mg DECIMAL(6, 1), started_on DATE, days INTEGER);
CREATE TABLE outcomes (
    admission_id INTEGER PRIMARY KEY REFERENCES admissions (admission_id),
    died BOOLEAN NOT NULL, ventilated BOOLEAN NOT NULL, recovered BOOLEAN NOT NULL,
    days_to_discharge INTEGER);
"""
TABLES = ("patients", "comorbidities", "admissions", "treatments", "outcomes")


def _pick(rng: np.random.Generator, probabilities: np.ndarray) -> np.ndarray:
    """One categorical draw per row of ``probabilities`` (rows sum to 1); returns indices."""
    cumulative = probabilities.cumsum(axis=1)
    return (rng.random(len(probabilities))[:, None] > cumulative[:, :-1]).sum(axis=1)


def _nullable(values: np.ndarray, missing: np.ndarray, dtype: str) -> pd.Series:
    """``values`` as a nullable pandas Series with ``missing`` rows set to NA."""
    series = pd.Series(values).astype(dtype)
    series[missing] = pd.NA
    return series


def _systematic_draw(
    rng: np.random.Generator, risk: np.ndarray, groups: tuple[np.ndarray, ...]
) -> np.ndarray:
    """Who dies: each row dies with probability ``risk``, as independent draws would.

    Rows are shuffled within ``groups`` and deaths are drawn by systematic sampling along
    that order, so every group gets its expected number of deaths (give or take one). This
    keeps the planted effects from drowning in sampling noise at a few hundred patients.
    """
    order = np.lexsort((rng.random(len(risk)), *reversed(groups)))
    cumulative = np.cumsum(risk[order]) + rng.random()
    died = np.empty(len(risk), dtype=bool)
    died[order] = np.floor(cumulative) > np.floor(cumulative - risk[order])
    return died


def _generate(seed: int, n: int) -> dict[str, pd.DataFrame]:
    """Sample all five tables (one admission and one treatment row per patient)."""
    rng = np.random.default_rng(seed)
    ids = np.arange(1, n + 1)
    age = np.clip(rng.normal(68, 15, n).round(), 18, 99).astype(int)
    old = age >= 65
    sex = _nullable(rng.choice(np.array(["F", "M"]), n), rng.random(n) < 0.01, "string")

    prevalence = np.where(old[:, None], _PREVALENCE_OLD, _PREVALENCE_YOUNG)
    has = rng.random((n, len(CONDITIONS))) < prevalence
    asthma, diabetes = has[:, 0], has[:, 1]
    rows, cols = np.nonzero(has)
    comorbidities = pd.DataFrame({"patient_id": ids[rows], "condition": np.array(CONDITIONS)[cols]})

    severity = _pick(rng, np.where(old[:, None], _SEVERITY_OLD, _SEVERITY_YOUNG))
    drug = _pick(rng, _PRESCRIBING[severity])
    solvanir = drug == _DRUG_NAMES.index("Solvanir")
    nominal = _NOMINAL_DOSE[drug]
    nominal[solvanir] = rng.choice(np.array([200.0, 400.0, 600.0, 800.0]), solvanir.sum())
    dose = (nominal * rng.normal(1.0, 0.05, n)).round(1)  # NaN for standard care

    # The risk model: every planted truth lives in `effect`.
    effect = np.ones(n)
    virexa = drug == _DRUG_NAMES.index("Virexa")
    effect[virexa & asthma & ~diabetes] = 0.15
    effect[virexa & diabetes & ~asthma] = 1.3  # it raises blood glucose: no help for diabetics
    effect[drug == _DRUG_NAMES.index("Pulmorex")] = 0.5
    effect[solvanir] = np.clip(1.0 - 0.8 * (dose[solvanir] - 200.0) / 600.0, 0.2, 1.0)
    age_factor = np.select([age < 50, age < 65, age < 80], [0.5, 0.8, 1.2], 1.45)
    risk = _BASE_RISK[severity] * age_factor * 1.12 ** has.sum(axis=1) * effect
    groups = (old, severity, drug, asthma, diabetes, np.nan_to_num(nominal))
    died = _systematic_draw(rng, np.minimum(risk, 0.95), groups)

    ventilated = rng.random(n) < np.array([0.01, 0.05, 0.30, 0.75])[severity] + 0.2 * died
    transferred = ~died & (rng.random(n) < 0.02)
    stay = rng.gamma(2.0, np.array([2.5, 4.0, 7.0, 10.0])[severity]).round().astype(int) + 1
    admitted = _START + rng.integers(0, _DAYS_OF_PANDEMIC, n).astype("timedelta64[D]")
    order = rng.permutation(n)  # admission ids do not follow patient ids
    admissions = pd.DataFrame({
        "admission_id": ids, "patient_id": ids[order], "admitted_on": admitted,
        "severity": np.array(SEVERITIES)[severity[order]], "severity_score": severity[order] + 1,
        "ward": np.where((severity[order] == 3) | ((severity[order] == 2) & (rng.random(n) < 0.3)),
                         "icu", "ward"),
    })
    # Per-admission columns below are indexed by patient; reorder them to admission order.
    treatments = pd.DataFrame({
        "treatment_id": ids, "admission_id": ids, "drug": np.array(_DRUG_NAMES)[drug[order]],
        "dose_mg": _nullable(dose[order], np.isnan(dose[order]) | (rng.random(n) < 0.03),
                             "Float64"),
        "started_on": admitted + rng.integers(0, 3, n).astype("timedelta64[D]"),
        "days": _nullable(rng.integers(3, 11, n), rng.random(n) < 0.03, "Int64"),
    })
    outcomes = pd.DataFrame({
        "admission_id": ids, "died": died[order], "ventilated": ventilated[order],
        "recovered": ~died[order] & ~transferred[order],
        "days_to_discharge": _nullable(stay[order], died[order] | transferred[order], "Int64"),
    })
    outcomes = outcomes[rng.random(n) >= 0.01]  # ~1% still in hospital: no outcome yet
    patients = pd.DataFrame({"patient_id": ids, "age": age, "sex": sex})
    return {"patients": patients, "comorbidities": comorbidities, "admissions": admissions,
            "treatments": treatments, "outcomes": outcomes}


def create(
    con_or_path: duckdb.DuckDBPyConnection | str | Path | None = None,
    *,
    seed: int = 7,
    patients: int = 5000,
) -> duckdb.DuckDBPyConnection:
    """Write the hospital tables, replacing any earlier version of them.

    Args:
        con_or_path: An open connection, a database file path (an existing file is deleted
            first) or ``None`` for a fresh in-memory database.
        seed: Seed of the random generator; equal seeds give identical tables.
        patients: Number of patients (each has one admission and one treatment row).

    Returns:
        The connection holding the tables.
    """
    if isinstance(con_or_path, duckdb.DuckDBPyConnection):
        con = con_or_path
    elif con_or_path is None:
        con = duckdb.connect()
    else:
        path = Path(con_or_path)
        for stale in (path, path.with_name(path.name + ".wal")):
            stale.unlink(missing_ok=True)
        con = duckdb.connect(str(path))
    frames = _generate(seed, patients)
    for table in reversed(TABLES):  # children first, for the foreign keys
        con.execute(f"DROP TABLE IF EXISTS {table}")
    con.execute(_SCHEMA)
    for table in TABLES:
        con.register("_frame", frames[table])
        con.execute(f"INSERT INTO {table} SELECT * FROM _frame")
        con.unregister("_frame")
    return con


def describe() -> str:
    """A plain-text description of the schema, the drugs and the planted truths.

    Returns:
        Text for a README or a notebook cell.
    """
    drugs = "\n".join(f"  - {name}: {role}" for name, role in DRUGS.items())
    truths = "\n".join(
        f"  - {t.id} [{t.expected}] {t.statement} ({t.subgroup})" for t in PLANTED_TRUTHS
    )
    return f"""Synthetic COVID-19 hospital (one admission and one treatment row per patient).

Question: {QUESTION}

Tables:
  - patients(patient_id, age, sex): ages 18-99, ~58% are 65 or older; ~1% lack a sex.
  - comorbidities(patient_id, condition): zero or more rows per patient, conditions
    {", ".join(CONDITIONS)}; more common when older.
  - admissions(admission_id, patient_id, admitted_on, severity, severity_score, ward):
    severity {"/".join(SEVERITIES)} = score 1-4; ward is "icu" for critical and some
    severe cases, else "ward".
  - treatments(treatment_id, admission_id, drug, dose_mg, started_on, days): dose varies ~5%
    around the nominal dose, ~3% of doses and durations are missing.
  - outcomes(admission_id, died, ventilated, recovered, days_to_discharge): ~1% of
    admissions have no outcome yet; days_to_discharge is NULL for deaths and transfers.

Death risk = base risk of the severity x age factor x 1.12 per comorbidity x drug effect.
Drugs (fictional):
{drugs}

Planted truths (each has a canonical SQL query in PLANTED_TRUTHS):
{truths}
"""
