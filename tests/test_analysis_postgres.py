"""The analysis tools on a real PostgreSQL server (tests/conftest.py), the hospital data.

They read the catalog through the source (columns, counts, declared keys), their SQL is
transpiled and runs through the PostgreSQL guard, and they give DuckDB's answers: the
comorbidity subgroup, the confounded drug, the same trend. A hostile input is refused by
the guard and its error carries no value it could have computed.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from d2_notebook.data import GuardedSQL, open_source
from d2_notebook.data.analysis import FlagKind, compare_within, decompose, segment_scan, trend
from d2_notebook.data.catalog_access import duckdb_type
from d2_notebook.data.dialects import Dialect
from d2_notebook.data.dimensions import read_catalog
from d2_notebook.datasets import hospital
from d2_notebook.errors import UnsafeSQLError

SOURCE = ("admissions a JOIN patients p USING (patient_id) JOIN treatments t "
          "USING (admission_id) JOIN outcomes o USING (admission_id)")
DEATHS = "avg(CASE WHEN o.died THEN 1 ELSE 0 END)"
OLDER = "p.age >= 65"


@pytest.fixture(scope="module")
def pg(hospital_pg_url):
    opened = open_source(hospital_pg_url, timeout_s=60)
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def duck() -> GuardedSQL:
    return GuardedSQL(hospital.create())


def same_rows(on_duckdb: pd.DataFrame, on_pg: pd.DataFrame, *, skip: str = "") -> None:
    """Equal frames (floats to 1e-9, q-values to 5 %), leaving out rows of dimension
    ``skip`` (quantile bins: DuckDB's quantiles are approximate, PostgreSQL's exact)."""
    def kept(frame: pd.DataFrame) -> pd.DataFrame:
        if skip and "dimension" in frame.columns:
            frame = frame[~frame["dimension"].astype(str).str.startswith(skip)]
        return frame.reset_index(drop=True)

    left, right = kept(on_duckdb), kept(on_pg)
    assert left.columns.tolist() == right.columns.tolist() and len(left) == len(right) > 0
    for column in left.columns:
        if left[column].dtype.kind in "fi" and right[column].dtype.kind in "fi":
            # q-values are adjusted over every test, the left-out bins' included
            loose = column == "q_value" or column.endswith("_q")
            assert np.allclose(left[column].astype(float), right[column].astype(float),
                               rtol=0.05 if loose else 1e-9, atol=1e-6 if loose else 1e-12,
                               equal_nan=True), column
        else:
            assert left[column].astype(str).tolist() == right[column].astype(str).tolist(), \
                column


def test_the_catalog_is_read_through_the_source(pg, duck):
    on_pg, on_duckdb = read_catalog(pg), read_catalog(duck)
    assert [t.name for t in on_pg.tables] == [t.name for t in on_duckdb.tables]
    assert [t.row_count for t in on_pg.tables] == [t.row_count for t in on_duckdb.tables]
    for pg_table, duck_table in zip(on_pg.tables, on_duckdb.tables, strict=True):
        assert [(c.name, c.type) for c in pg_table.columns] == \
            [(c.name, c.type) for c in duck_table.columns]
    assert on_pg.graph.describe() == on_duckdb.graph.describe()


def test_segment_scan_surfaces_the_comorbidity_subgroup(pg, duck):
    where = f"{OLDER} AND t.drug = 'Virexa'"
    result = segment_scan(pg, source=SOURCE, metric=DEATHS, where=where)
    asthma = result.frame[(result.frame["dimension"] == "has comorbidities.condition")
                          & (result.frame["value"] == "asthma")].iloc[0]
    assert asthma["flagged"] and asthma["difference"] < -0.1
    assert "has comorbidities.condition = asthma" in result.summary
    same_rows(segment_scan(duck, source=SOURCE, metric=DEATHS, where=where).frame,
              result.frame, skip="treatments.dose_mg")


def test_compare_within_calls_the_confounded_drug_confounded(pg, duck):
    arguments = {"source": SOURCE, "metric": DEATHS, "exposure": "t.drug",
                 "value": "Corvalin", "reference": "Standard care", "where": OLDER}
    result = compare_within(pg, **arguments)
    assert result.frame.iloc[0]["ci_high"] < 0  # crude: looks protective
    confounders = {f.dimension for f in result.flags if f.kind is FlagKind.CONFOUNDING}
    assert "admissions.severity" in confounders
    same_rows(compare_within(duck, **arguments).frame, result.frame,
              skip="treatments.dose_mg")


def test_compare_within_finds_the_subgroup_as_heterogeneity(pg):
    result = compare_within(pg, source=SOURCE, metric=DEATHS, exposure="t.drug",
                            value="Virexa", reference="Standard care", where=OLDER)
    heterogeneity = {f.dimension for f in result.flags if f.kind is FlagKind.HETEROGENEITY}
    assert "has comorbidities.condition = asthma" in heterogeneity


@pytest.mark.parametrize("grain", [None, "quarter", "week"])
def test_trend_matches_duckdb(pg, duck, grain):
    arguments = {"source": SOURCE, "metric": DEATHS, "time": "a.admitted_on", "grain": grain}
    result = trend(pg, **arguments)
    expected = trend(duck, **arguments)
    same_rows(expected.frame, result.frame)
    assert result.summary == expected.summary


def test_decompose_matches_duckdb(pg, duck):
    arguments = {"source": SOURCE, "metric": DEATHS, "period": "year(a.admitted_on)",
                 "dimensions": ["a.ward", "a.severity", "p.sex", "t.drug",
                                "has comorbidities.condition", "month_of_year(t.started_on)"]}
    result = decompose(pg, **arguments)
    expected = decompose(duck, **arguments)
    same_rows(expected.frame, result.frame)
    assert result.summary == expected.summary
    assert result.frame.iloc[0]["dimension"] == "(overall)"


@pytest.mark.parametrize(("tool", "arguments"), [
    (decompose, {"period": "(SELECT setting FROM pg_settings LIMIT 1)"}),
    (compare_within, {"exposure": "(SELECT setting FROM pg_settings LIMIT 1)",
                      "value": "x", "reference": "y"}),
    (compare_within, {"exposure": "current_setting('data_directory')", "value": "x",
                      "reference": "y"}),
    (segment_scan, {"where": "p.age > length(pg_read_file('postgresql.conf'))"}),
    (segment_scan, {"dimensions": ["(SELECT rolpassword FROM pg_authid LIMIT 1)"]}),
    (trend, {"time": "a.admitted_on + (SELECT count(*) FROM ts_stat('SELECT 1'))::int"}),
])
def test_hostile_inputs_are_refused_without_echoing_values(pg, postgres_cluster, tool,
                                                           arguments):
    call = {"source": SOURCE, "metric": DEATHS, **arguments}
    if tool is trend:
        call.setdefault("time", "a.admitted_on")
    with pytest.raises(UnsafeSQLError, match=r"^SQL refused: ") as caught:
        tool(pg, **call)
    message = str(caught.value)
    assert str(postgres_cluster.data_dir) not in message and "SCRAM" not in message


@pytest.mark.parametrize(("declared", "duckdb_name"), [
    ("TEXT", "VARCHAR"), ("VARCHAR(20)", "VARCHAR"), ("NUMERIC(6, 1)", "DECIMAL(6,1)"),
    ("DOUBLE PRECISION", "DOUBLE"), ("INTEGER", "INTEGER"), ("BIGINT", "BIGINT"),
    ("TIMESTAMP WITHOUT TIME ZONE", "TIMESTAMP"), ("DATE", "DATE"), ("BOOLEAN", "BOOLEAN"),
])
def test_column_types_are_named_as_duckdb_names_them(declared, duckdb_name):
    assert duckdb_type(declared, Dialect.POSTGRES) == duckdb_name
    assert duckdb_type("STRING", Dialect.SPARK) == "VARCHAR"
