"""compare_within on data with known answers: a confounder with a reversal, an interaction,
a mediator recorded with the outcome."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest
from analysis_data import one_category_claims, planted

from d2_notebook.data import GuardedSQL
from d2_notebook.data.analysis import AnalysisResult, FlagKind, compare_within
from d2_notebook.data.analysis.text import figure

SOURCE = "orders o JOIN customers c USING (customer_id)"
RATE = "avg(CASE WHEN o.returned THEN 1 ELSE 0 END)"


@pytest.fixture(scope="module")
def sql() -> GuardedSQL:
    return GuardedSQL(planted())


def _kinds(result: AnalysisResult) -> dict[str, set[FlagKind]]:
    found: dict[str, set[FlagKind]] = {}
    for flag in result.flags:
        found.setdefault(flag.dimension, set()).add(flag.kind)
    return found


def test_confounder_with_a_reversal_is_called_simpsons_paradox(sql: GuardedSQL) -> None:
    result = compare_within(sql, source=SOURCE, metric=RATE, exposure="o.promo",
                            value="coupon")
    overall = result.frame.iloc[0]
    assert overall["dimension"] == "(overall)" and overall["ci_high"] < 0  # looks protective
    assert _kinds(result) == {"customers.tier": {FlagKind.SIMPSONS_PARADOX}}
    tier = result.frame[result.frame["dimension"] == "customers.tier"]
    assert (tier["effect"] > 0).all()  # ...but raises returns in every tier
    assert tier["standardised_effect"].iloc[0] > 0
    assert "SIMPSON'S PARADOX by customers.tier" in result.summary.splitlines()[2]
    assert "standardised over customers.tier" in result.summary


def test_interaction_is_heterogeneity_with_the_strata_and_effects(sql: GuardedSQL) -> None:
    result = compare_within(sql, source=SOURCE, metric="avg(o.amount)", exposure="o.promo",
                            value="coupon", reference="none")
    assert FlagKind.HETEROGENEITY in _kinds(result)["customers.region"]
    region = result.frame[result.frame["dimension"] == "customers.region"].set_index("stratum")
    assert region.loc["east", "effect"] == pytest.approx(10, abs=1.5)
    assert abs(region.loc["west", "effect"]) < 1.5
    text = next(f.text for f in result.flags if f.dimension == "customers.region")
    assert text.startswith("HETEROGENEITY") and "east:" in text and "west:" in text
    assert region["interaction_q"].iloc[0] < 1e-6


def test_no_flag_for_an_exposure_with_no_effect(sql: GuardedSQL) -> None:
    result = compare_within(sql, source=SOURCE, metric=RATE, exposure="o.channel",
                            value="web", reference="store")
    assert result.flags == ()
    # the exposure is written once: "o.channel = web vs store", not "... vs o.channel = store"
    assert f"compare_within: {RATE} for o.channel = web vs store: " in result.summary
    assert "No confounding among the 14 dimensions tested for it" in result.summary
    assert "No heterogeneity beyond chance among the 14 dimensions tested" in result.summary
    assert "Tested: confounding 14 of 14 dimensions, heterogeneity 14 of 14" in result.summary
    assert "has tags.tag = veteran" in result.summary  # 1:N flags are checked too


def test_exposure_columns_are_not_dimensions(sql: GuardedSQL) -> None:
    result = compare_within(sql, source=SOURCE, metric=RATE, exposure="o.promo",
                            value="coupon")
    assert "orders.promo" not in set(result.frame["dimension"])


def test_values_that_do_not_occur_are_named(sql: GuardedSQL) -> None:
    with pytest.raises(ValueError, match=r"values of o\.promo: coupon, none"):
        compare_within(sql, source=SOURCE, metric=RATE, exposure="o.promo", value="voucher")
    with pytest.raises(ValueError, match="reference must differ"):
        compare_within(sql, source=SOURCE, metric=RATE, exposure="o.promo", value="coupon",
                       reference="coupon")


def test_strata_too_thin_to_test_are_named_with_the_setting_that_tests_them(
        sql: GuardedSQL) -> None:
    strict = compare_within(sql, source=SOURCE, metric=RATE, exposure="o.promo",
                            value="coupon", dimensions=["customers.tier"], min_support=10**6)
    # confounding is judged by standardising over every stratum with both arms, whatever
    # min_support; the heterogeneity test needs min_support rows per arm
    assert {f.kind for f in strict.flags} == {FlagKind.SIMPSONS_PARADOX}
    assert "Tested: confounding 1 of 1 dimensions, heterogeneity 0 of 1" in strict.summary
    assert ("Heterogeneity not tested for customers.tier: it needs two strata with at least "
            "1000000 rows in each arm (a smaller min_support") in strict.summary
    tested = compare_within(sql, source=SOURCE, metric=RATE, exposure="o.promo",
                            value="coupon", dimensions=["customers.tier"])
    assert "Dimensions checked: customers.tier." in tested.summary
    assert "heterogeneity 1 of 1" in tested.summary and "not tested" not in tested.summary
    assert "minimum support 10 rows for the dimensions named" in tested.summary


def test_a_dimension_the_exposure_sits_in_is_told_by_where_the_arms_meet() -> None:
    """A real-model collector read "Too few rows per arm to test: category (largest arm
    84)" while the exposed user filed every claim in one category: the line now says the
    arms share one value, and where each arm lies alone."""
    con = one_category_claims()
    result = compare_within(GuardedSQL(con), source="claims", metric="avg(claims.amount)",
                            exposure="claims.user_id", value="u1",
                            dimensions=["claims.category"])
    assert "Too few rows per arm" not in result.summary
    line = next(x for x in result.summary.splitlines() if "claims.category (" in x)
    assert line.startswith("Not tested (fewer than two of their values hold rows of both "
                           "arms")
    assert ("claims.category (both arms only in travel (84 exposed, 106 reference); "
            "reference only: assets, meals)") in line


def _tiny_crossover() -> GuardedSQL:
    """Six rows per arm in each of two groups, the exposure helping in one and harming in
    the other: a reversal no test on so few rows should call heterogeneity."""
    con = duckdb.connect()
    con.execute("""
        CREATE TABLE t AS
        SELECT i, CASE WHEN i < 12 THEN 'a' ELSE 'b' END AS g, i % 2 AS x,
               CASE WHEN (i < 12) = (i % 2 = 1) THEN 5 ELSE 0 END + (i % 3) * 0.1 AS y
        FROM range(24) r(i)""")
    return GuardedSQL(con)


def test_heterogeneity_is_not_flagged_on_a_handful_of_rows_per_arm(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    module = importlib.import_module("d2_notebook.data.analysis.compare_within")

    def check() -> AnalysisResult:
        return compare_within(_tiny_crossover(), source="t", metric="avg(t.y)", exposure="t.x",
                              value=1, dimensions=["t.g"], min_support=2)

    small = check()
    assert FlagKind.HETEROGENEITY not in {f.kind for f in small.flags}
    assert "Dimensions checked: t.g." in small.summary  # standardised: min_support holds
    assert ("Heterogeneity not tested for t.g: it needs two strata with at least "
            f"{module.HETEROGENEITY_MIN_ARM} rows in each arm.") in small.summary
    strata = small.frame[small.frame["dimension"] == "t.g"]
    assert strata["interaction_q"].isna().all()  # no test, so no q-value (not q = 1)
    monkeypatch.setattr(module, "HETEROGENEITY_MIN_ARM", 2)  # the floor is what holds it
    assert FlagKind.HETEROGENEITY in {f.kind for f in check().flags}


def test_the_summary_gives_the_effect_with_each_dimension_held_fixed() -> None:
    """A real-model collector wanted the severity-adjusted effect, which neither a flag
    nor the first 20 rows held: the summary lists each dimension's standardised effect
    (as its rows hold it) after those its flags already give."""
    from d2_notebook.datasets import hospital

    sql = GuardedSQL(hospital.create(patients=3000))
    source = ("admissions a JOIN patients p ON a.patient_id = p.patient_id "
              "JOIN treatments t ON t.admission_id = a.admission_id "
              "JOIN outcomes o ON o.admission_id = a.admission_id")
    result = compare_within(sql, source=source, metric="avg(o.died::INTEGER)",
                            exposure="t.drug", value="Virexa", reference="Standard care",
                            where="p.age >= 65")
    lines = result.summary.splitlines()
    held = next(line for line in lines if line.startswith("Effect with one dimension held"))
    moved = next(line for line in lines if line.startswith("The effect moves when these"))
    frame = result.frame
    tested = frame[frame["standardised_effect"].notna()
                   & frame["confounding_q"].notna()].drop_duplicates("dimension")
    assert len(tested) > 10
    for row in tested.itertuples():  # every dimension's adjusted effect, said once
        said = f"{row.dimension} {figure(row.standardised_effect)}"
        in_moved = f"{row.dimension}: standardising moves" in moved
        assert (said in held) != in_moved, row.dimension
        assert not in_moved or f"to {figure(row.standardised_effect)}" in moved
    assert "admissions.severity: standardising moves" in moved


def _clinic() -> duckdb.DuckDBPyConnection:
    """A drug given more to older and COPD patients (both raise the death risk), whose only
    benefit is fewer complications; a complication, recorded in ``outcomes`` with the
    death, raises the death risk. Age and COPD are confounders, the complication a step
    between the drug and the death (a mediator)."""
    rng = np.random.default_rng(7)
    n = 4000
    old, copd, asthma = (rng.random(n) < share for share in (0.5, 0.3, 0.3))
    new = rng.random(n) < 0.25 + 0.3 * old + 0.2 * copd
    complication = rng.random(n) < np.where(new, 0.1, 0.5)
    died = rng.random(n) < 0.03 + 0.1 * old + 0.1 * copd + 0.2 * complication
    ids = np.arange(1, n + 1)
    con = duckdb.connect()
    con.execute("CREATE TABLE patients (patient_id INTEGER PRIMARY KEY, age_group VARCHAR)")
    con.execute("CREATE TABLE conditions (patient_id INTEGER REFERENCES patients "
                "(patient_id), condition VARCHAR)")
    con.execute("CREATE TABLE treatments (treatment_id INTEGER PRIMARY KEY, patient_id "
                "INTEGER REFERENCES patients (patient_id), drug VARCHAR)")
    con.execute("CREATE TABLE outcomes (treatment_id INTEGER PRIMARY KEY REFERENCES "
                "treatments (treatment_id), complication BOOLEAN, died BOOLEAN)")
    frames = {
        "patients": pd.DataFrame({"patient_id": ids, "age_group": np.where(old, "old",
                                                                           "young")}),
        "conditions": pd.concat([pd.DataFrame({"patient_id": ids[has], "condition": name})
                                 for name, has in (("copd", copd), ("asthma", asthma))]),
        "treatments": pd.DataFrame({"treatment_id": ids, "patient_id": ids,
                                    "drug": np.where(new, "new", "usual")}),
        "outcomes": pd.DataFrame({"treatment_id": ids, "complication": complication,
                                  "died": died}),
    }
    for name, frame in frames.items():
        con.register("_frame", frame)
        con.execute(f"INSERT INTO {name} SELECT * FROM _frame")
        con.unregister("_frame")
    return con


CLINIC_DEATHS = "avg(CASE WHEN o.died THEN 1 ELSE 0 END)"
RECORDED_WITH_OUTCOME = "is recorded with the outcome"


def test_a_dimension_recorded_with_the_outcome_is_cautioned_as_a_possible_mediator() -> None:
    """Holding the complication fixed takes out the drug's real benefit (here it even
    reverses it): its flag keeps its kind, but says the complication is recorded with the
    outcome, not with the drug, and may be a step between them. The confounders recorded
    before the drug (a patient's age, a 1:N condition) carry no such caution."""
    result = compare_within(GuardedSQL(_clinic()),
                            source="treatments t JOIN outcomes o USING (treatment_id)",
                            metric=CLINIC_DEATHS, exposure="t.drug", value="new",
                            dimensions=["patients.age_group", "has conditions.condition",
                                        "outcomes.complication"])
    texts = {flag.dimension: flag.text for flag in result.flags}
    assert _kinds(result) == {"outcomes.complication": {FlagKind.SIMPSONS_PARADOX},
                              "patients.age_group": {FlagKind.CONFOUNDING},
                              "has conditions.condition = copd": {FlagKind.CONFOUNDING}}
    assert ("Caution: outcomes.complication is recorded with the outcome (in outcomes, which "
            "the metric reads), not with the exposure, so it may be a consequence of the "
            "exposure (a step between exposure and outcome) rather than a cause; holding it "
            "fixed then removes part of the real effect") in texts["outcomes.complication"]
    assert RECORDED_WITH_OUTCOME not in texts["patients.age_group"]
    assert RECORDED_WITH_OUTCOME not in texts["has conditions.condition = copd"]
    assert ("Recorded with the outcome, not with the exposure (possibly steps between "
            "exposure and outcome, not confounders; see their cautions): "
            "outcomes.complication.") in result.summary.splitlines()


def test_a_single_table_source_marks_no_dimension_as_recorded_with_the_outcome() -> None:
    """In one table (a CSV) nothing tells when a column was recorded: the same mediator
    is flagged as before, without the caution."""
    con = _clinic()
    con.execute("CREATE TABLE flat AS SELECT t.drug, o.complication, o.died, p.age_group "
                "FROM treatments t JOIN outcomes o USING (treatment_id) "
                "JOIN patients p USING (patient_id)")
    result = compare_within(GuardedSQL(con), source="flat",
                            metric="avg(CASE WHEN died THEN 1 ELSE 0 END)", exposure="drug",
                            value="new", dimensions=["complication", "age_group"])
    assert _kinds(result) == {"flat.complication": {FlagKind.SIMPSONS_PARADOX},
                              "flat.age_group": {FlagKind.CONFOUNDING}}
    assert "recorded with the outcome" not in result.summary.lower()


def test_a_confounder_in_the_fact_table_the_metric_reads_gets_no_mediator_caution() -> None:
    """Review finding: a length of stay kept in admissions made every admissions column
    "recorded with the outcome", the admission type too, though it is recorded before the
    drug. Only a 1:1 satellite table the metric reads (an outcomes table) is."""
    con = duckdb.connect()
    con.execute("""
        CREATE TABLE admissions AS
        SELECT i AS admission_id, CASE WHEN i % 3 = 0 THEN 'emergency' ELSE 'planned' END
               AS admission_type,
               (CASE WHEN i % 3 = 0 THEN 9 ELSE 3 END) + (hash(i) % 5)::INTEGER AS los_days
        FROM range(3000) r(i)""")
    con.execute("""
        CREATE TABLE prescriptions AS
        SELECT i AS rx_id, i AS admission_id,
               CASE WHEN CASE WHEN i % 3 = 0 THEN hash(i, 'd') % 4 > 0
                              ELSE hash(i, 'd') % 4 = 0 END THEN 'A' ELSE 'B' END AS drug
        FROM range(3000) r(i)""")
    result = compare_within(GuardedSQL(con), source="prescriptions rx JOIN admissions a "
                            "USING (admission_id)", metric="avg(a.los_days)",
                            exposure="rx.drug", value="A", dimensions=["a.admission_type"])
    assert {f.kind for f in result.flags} & {FlagKind.CONFOUNDING, FlagKind.SIMPSONS_PARADOX}
    assert "recorded with the outcome" not in result.summary.lower()


def test_a_dimension_only_the_exposure_reads_is_named_with_the_exposure(sql: GuardedSQL) -> None:
    """The exposure reads ordered_on, so its year is not split by; the summary names the
    exposure, not "the metric's definition" (a real-model collector read that for a year
    its exposure, hour(opened_at) = 15, read), and says how to hold it fixed."""
    result = compare_within(sql, source=SOURCE, metric=RATE,
                            exposure="month(o.ordered_on) = 12", value="true",
                            dimensions=["year(orders.ordered_on)", "o.returned"])
    assert ("Not split by year(orders.ordered_on): the exposure reads its column, and no "
            "tool splits by its own inputs' columns; to hold it fixed, run the tool once per "
            "value with a where filter.") in result.summary
    # the metric's own column stays part of its definition
    assert "Not split by orders.returned: part of the metric's definition (the metric or the " \
        "source's join condition reads it)" in result.summary


def test_a_window_function_exposure_is_refused_with_the_subquery_that_does_it() -> None:
    """A judge's hint asked for exposure = ntile(5) OVER (PARTITION BY department ...);
    the collector got DuckDB's "WHERE clause cannot contain window functions!", about
    SQL it never wrote. The refusal names the fix, and the fix works."""
    con = duckdb.connect()
    con.execute("""
        CREATE TABLE expenses AS
        SELECT ['HR', 'IT', 'Sales'][1 + i % 3] AS department, (i * 37) % 1000 AS amount,
               (i % 5 = 0) AS declined
        FROM range(600) r(i)""")
    with pytest.raises(ValueError, match=r"cannot hold a window function .*write the row's "
                                         r"condition with a correlated subquery"):
        compare_within(GuardedSQL(con), source="expenses",
                       metric="avg(CASE WHEN declined THEN 1 ELSE 0 END)",
                       exposure="ntile(5) OVER (PARTITION BY department ORDER BY amount)",
                       value=5)
    # a window inside a subquery of the exposure is valid SQL, and runs
    compare_within(GuardedSQL(con), source="expenses e",
                   metric="avg(CASE WHEN declined THEN 1 ELSE 0 END)",
                   exposure="e.amount IN (SELECT amount FROM (SELECT amount, ntile(5) OVER "
                            "(ORDER BY amount) AS q FROM expenses) WHERE q = 5)", value=True)
    # 'over (' in a literal is no window: the data, not the check, refuses this one
    with pytest.raises(ValueError, match="values of"):
        compare_within(GuardedSQL(con), source="expenses e",
                       metric="avg(CASE WHEN declined THEN 1 ELSE 0 END)",
                       exposure="e.department = 'carry over (late)'", value=True)
    fixed = compare_within(
        GuardedSQL(con), source="expenses e", metric="avg(CASE WHEN declined THEN 1 ELSE 0 END)",
        exposure="e.amount >= (SELECT quantile_cont(x.amount, 0.8) FROM expenses x "
                 "WHERE x.department = e.department)", value=True)
    assert 100 <= fixed.frame.iloc[0]["n_exposed"] <= 140
