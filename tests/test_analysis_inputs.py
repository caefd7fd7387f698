"""Bad inputs to the analysis tools get a clear error naming the fix; the tool specs."""

from __future__ import annotations

import json

import duckdb
import pytest
from analysis_data import planted

from d2_notebook.data import GuardedSQL
from d2_notebook.data.analysis import (
    TOOL_SPECS,
    AnalysisTool,
    compare_within,
    segment_scan,
    spec_for,
    trend,
)
from d2_notebook.detective.variant import Role, Shape, Variant
from d2_notebook.errors import InvalidRecordError, QueryFailedError, UnsafeSQLError

SOURCE = "orders o JOIN customers c USING (customer_id)"


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    return planted()


@pytest.fixture(scope="module")
def sql(con: duckdb.DuckDBPyConnection) -> GuardedSQL:
    return GuardedSQL(con)


@pytest.mark.parametrize("metric", ["sum(o.amount)", "o.amount", "avg(o.amount) * 2",
                                    "count(*)", "avg(DISTINCT o.amount)", "avg(sum(o.amount))",
                                    "avg(o.amount) FILTER (WHERE o.promo = 'none')", ""])
def test_a_metric_that_is_not_one_mean_is_refused(sql: GuardedSQL, metric: str) -> None:
    with pytest.raises(ValueError, match=r"avg\(<per-row expression>\)"):
        segment_scan(sql, source=SOURCE, metric=metric)


def test_unknown_columns_name_the_input_they_came_from(sql: GuardedSQL) -> None:
    with pytest.raises(QueryFailedError, match=r"(?s)the metric does not bind.*o = orders"):
        segment_scan(sql, source=SOURCE, metric="avg(o.nope)")
    with pytest.raises(QueryFailedError, match="the where does not bind"):
        segment_scan(sql, source=SOURCE, metric="avg(o.amount)", where="c.nope > 1")
    with pytest.raises(QueryFailedError, match=r"the dimension 'c\.shoe_size' does not bind"):
        segment_scan(sql, source=SOURCE, metric="avg(o.amount)", dimensions=["c.shoe_size"])
    with pytest.raises(QueryFailedError, match="the exposure does not bind"):
        compare_within(sql, source=SOURCE, metric="avg(o.amount)", exposure="o.nope", value=1)
    with pytest.raises(QueryFailedError, match="the time does not bind"):
        trend(sql, source=SOURCE, metric="avg(o.amount)", time="o.shipped_on")


@pytest.mark.parametrize("where", [
    "1 = 1; DELETE FROM orders",
    "o.order_id IN (SELECT order_id FROM read_csv('/etc/passwd'))",
    "1 = 1) UNION ALL (SELECT 1",
])
def test_writes_and_file_reads_smuggled_into_where_are_refused(
    con: duckdb.DuckDBPyConnection, sql: GuardedSQL, where: str
) -> None:
    with pytest.raises((UnsafeSQLError, ValueError, QueryFailedError)) as caught:
        segment_scan(sql, source=SOURCE, metric="avg(o.amount)", where=where)
    if "DELETE" in where or "read_csv" in where:
        assert caught.type is UnsafeSQLError
    assert con.execute("SELECT count(*) FROM orders").fetchone()[0] == 24000


def test_bad_sources_and_settings(sql: GuardedSQL) -> None:
    with pytest.raises(UnsafeSQLError):
        segment_scan(sql, source="orders; DROP TABLE orders", metric="avg(amount)")
    with pytest.raises(ValueError, match="names no table of the database; tables: customers"):
        segment_scan(sql, source="(SELECT 1 AS x) s", metric="avg(x)")
    with pytest.raises(ValueError, match="only a FROM clause"):
        segment_scan(sql, source="orders LIMIT 5", metric="avg(amount)")
    with pytest.raises(ValueError, match="min_support must be"):
        segment_scan(sql, source="orders", metric="avg(amount)", min_support=0)
    with pytest.raises(ValueError, match="alpha must be between 0 and 1"):
        segment_scan(sql, source="orders", metric="avg(amount)", alpha=5)
    with pytest.raises(ValueError, match="dimensions must be a list"):
        segment_scan(sql, source="orders", metric="avg(amount)", dimensions="channel")
    with pytest.raises(ValueError, match="exposure is required"):
        compare_within(sql, source="orders", metric="avg(amount)", exposure=" ", value="x")
    with pytest.raises(ValueError, match="must be a string, a number or a boolean"):
        compare_within(sql, source="orders", metric="avg(amount)", exposure="promo",
                       value=["coupon"])


def test_specs_match_the_python_keywords(sql: GuardedSQL) -> None:
    assert [s.name for s in TOOL_SPECS] == ["segment_scan", "compare_within", "trend",
                                           "decompose"]
    for spec in TOOL_SPECS:
        schema = spec.input_schema
        assert schema["type"] == "object" and not schema["additionalProperties"]
        assert set(schema["required"]) <= set(schema["properties"])
        code = spec.function.__code__
        keywords = set(code.co_varnames[code.co_argcount:code.co_argcount
                                        + code.co_kwonlyargcount])
        assert set(schema["properties"]) <= keywords, spec.name
        for name in schema["properties"]:
            assert schema["properties"][name].get("description"), (spec.name, name)
    assert spec_for("compare_within").tool is AnalysisTool.COMPARE_WITHIN
    description = spec_for("compare_within").description
    for words in ("CONFOUNDING", "SIMPSON'S PARADOX", "HETEROGENEITY", "reference must differ"):
        assert words in description
    assert "avg(<per-row expression>)" in str(spec_for("segment_scan").input_schema)
    with pytest.raises(KeyError, match="tools: segment_scan, compare_within, trend"):
        spec_for("nope")
    tool_input = {"source": "orders", "metric": "avg(amount)", "time": "ordered_on",
                  "grain": "month"}
    assert spec_for("trend").function(sql, **tool_input).tool is AnalysisTool.TREND


def test_candidate_dimensions_are_stated_once_in_segment_scan() -> None:
    """The ~900-character statements of which dimensions the tools split by, and of how
    to name one, are in segment_scan's description and dimensions input only;
    compare_within and decompose, offered with it (a variant that offers them without it
    is refused), point to them. A collector found the same paragraph three times in
    every request hard to read."""
    statement = "Candidate dimensions: low-cardinality columns (at most 30 values)"
    assert statement in spec_for("segment_scan").description
    for name in ("compare_within", "decompose"):
        description = spec_for(name).description
        assert statement not in description and "as in segment_scan" in description
        assert "1% of the metric's scale" in description
        dimensions = spec_for(name).input_schema["properties"]["dimensions"]["description"]
        assert "as segment_scan's dimensions input says" in dimensions
    assert "month(...) and quarter(...)" in str(spec_for("segment_scan").input_schema)
    total = sum(len(spec.description) + len(json.dumps(spec.input_schema))
                for spec in TOOL_SPECS)
    assert total < 16_500, total  # 19 K with the statements repeated
    with pytest.raises(InvalidRecordError, match="without segment_scan"):
        Variant("custom", Shape.TEAM, {Role.COLLECTOR: ("run_sql", "compare_within")})


def test_a_per_entity_flag_is_an_exists_or_in_test_inside_the_mean(sql: GuardedSQL) -> None:
    """"Customer tagged veteran" as a metric over customers, without a join that repeats
    rows: one generated pass, through the guard, and the same figures as plain SQL."""
    flag = ("avg(CASE WHEN EXISTS (SELECT 1 FROM tags t WHERE t.customer_id = c.customer_id "
            "AND t.tag = 'veteran') THEN 1 ELSE 0 END)")
    result = segment_scan(sql, source="customers c", metric=flag, dimensions=["c.region"])
    expected = sql.run("SELECT avg(CASE WHEN customer_id IN (SELECT customer_id FROM tags "
                       "WHERE tag = 'veteran') THEN 1 ELSE 0 END) AS r FROM customers"
                       ).frame["r"].iloc[0]
    assert result.summary.startswith("segment_scan of " + flag + " over 3000 rows (overall "
                                     f"{expected:.3f}")
    in_list = segment_scan(sql, source="customers c", metric="avg(CASE WHEN c.customer_id IN "
                           "(SELECT customer_id FROM tags WHERE tag = 'veteran') THEN 1 ELSE "
                           "0 END)", dimensions=["c.region", "c.tier"])
    assert set(in_list.frame["dimension"]) == {"customers.region", "customers.tier"}
    # the subquery's own columns define the metric: no circular "has tags.tag" segments
    default = segment_scan(sql, source="customers c", metric=flag)
    assert "has tags.tag" not in set(default.frame["dimension"]), default.summary
    assert "customers.tier" in set(default.frame["dimension"])
    with pytest.raises(ValueError, match="takes a value from a subquery; only EXISTS and IN"):
        segment_scan(sql, source="customers c", metric="avg((SELECT max(amount) FROM orders o "
                     "WHERE o.customer_id = c.customer_id))")
    with pytest.raises(UnsafeSQLError):
        segment_scan(sql, source="customers c", metric="avg(CASE WHEN EXISTS (SELECT 1 FROM "
                     "read_csv('/etc/passwd')) THEN 1 ELSE 0 END)")


def test_a_dimension_of_a_table_outside_the_source_gets_a_spelling_that_works(
        sql: GuardedSQL) -> None:
    with pytest.raises(QueryFailedError, match=r"Hint: customers is not in the source, but a "
                       r"key reaches it: name one of its dimensions as the tools write them: "
                       r"customers\.region"):
        segment_scan(sql, source="orders o", metric="avg(o.amount)",
                     dimensions=["customers.nickname"])
    con = duckdb.connect()
    con.execute("CREATE TABLE a AS SELECT i AS id, i % 3 AS g FROM range(100) r(i)")
    con.execute("CREATE TABLE b AS SELECT i AS id, i * 2.5 AS w FROM range(100) r(i)")
    with pytest.raises(QueryFailedError, match=r"no key joins b to the source's tables: join "
                       r"it in the source .*'a LEFT JOIN b x ON \.\.\.'.*relationships="):
        segment_scan(GuardedSQL(con), source="a", metric="avg(a.g)", dimensions=["b.w"])
