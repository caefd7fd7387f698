"""The reviewed function table covers every function of the installed DuckDB, and the
guard applies it."""

from __future__ import annotations

import duckdb
import pytest

from d2_notebook.data import check_sql
from d2_notebook.data.function_policy import (
    FunctionUse,
    Refusal,
    allowed_names,
    classify,
    refused_names,
)
from d2_notebook.data.sql_guard import analyze_sql
from d2_notebook.errors import UnsafeSQLError

_USE_OF_TYPE = {
    "scalar": FunctionUse.EXPRESSION, "aggregate": FunctionUse.EXPRESSION,
    "window": FunctionUse.EXPRESSION, "macro": FunctionUse.EXPRESSION,
    "table": FunctionUse.TABLE, "table_macro": FunctionUse.TABLE,
    "pragma": FunctionUse.PRAGMA,
}


def _installed_functions() -> list[tuple[str, str, str | None]]:
    con = duckdb.connect()
    return con.execute("SELECT DISTINCT lower(function_name), function_type, macro_definition "
                       "FROM duckdb_functions() ORDER BY ALL").fetchall()


def test_every_installed_function_is_classified() -> None:
    """Fails on a DuckDB upgrade that adds a function until it is reviewed here."""
    unclassified = []
    for name, function_type, _ in _installed_functions():
        assert function_type in _USE_OF_TYPE, f"new function type {function_type!r}"
        if classify(name, _USE_OF_TYPE[function_type]) is Refusal.UNCLASSIFIED:
            unclassified.append(f"{name} ({function_type})")
    assert unclassified == [], (
        f"{len(unclassified)} function(s) of DuckDB {duckdb.__version__} are not in "
        f"d2_notebook/data/function_policy.py; review and classify: {unclassified}")


def test_the_table_names_only_functions_that_exist() -> None:
    """No stale entries: every listed name is a function of the installed DuckDB."""
    installed: dict[FunctionUse, set[str]] = {use: set() for use in FunctionUse}
    for name, function_type, _ in _installed_functions():
        installed[_USE_OF_TYPE[function_type]].add(name)
    binder_only = {"unnest", "unlist", "grouping", "grouping_id", "try"}
    for use in FunctionUse:
        listed = set(allowed_names(use)) | set(refused_names(use))
        extra = listed - installed[use] - (binder_only if use is FunctionUse.EXPRESSION
                                           else set())
        assert extra == set(), f"{use.value}: {sorted(extra)}"


def test_allowed_macros_call_only_allowed_functions() -> None:
    for name, function_type, definition in _installed_functions():
        if definition is None or classify(name, _USE_OF_TYPE[function_type]) is not None:
            continue
        body = definition if function_type == "table_macro" else f"SELECT {definition}"
        if name == "assert_true" and "message" in definition:
            continue  # passes its message to error(); agent SQL must give it a literal
        try:
            analyze_sql(body)  # raises UnsafeSQLError if the macro wraps a refused function
        except UnsafeSQLError as exc:  # generate_subscripts: a range as long as its input
            if "must be integer constants" not in str(exc):
                raise


def test_unknown_names_are_refused_as_unclassified() -> None:
    assert classify("my_udf", FunctionUse.EXPRESSION) is Refusal.UNCLASSIFIED
    assert classify("postgres_scan", FunctionUse.TABLE) is Refusal.UNCLASSIFIED
    with pytest.raises(UnsafeSQLError, match="not in d2's reviewed function table"):
        check_sql("SELECT my_udf(1)")


@pytest.mark.parametrize(("sql", "reason"), [
    ("SELECT json_serialize_plan('SELECT 1')", Refusal.RUNS_SQL_TEXT),
    ("SELECT current_setting('threads')", Refusal.READS_SETTINGS),
    ("SELECT * FROM duckdb_logs()", Refusal.READS_LOGS),
    ("SELECT * FROM read_csv('x')", Refusal.READS_FILES),
    ("SELECT nextval('s')", Refusal.CHANGES_STATE),
    ("SELECT sleep_ms(10)", Refusal.SLEEPS),
    ("SELECT make_type('INET')", Refusal.LOADS_EXTENSIONS),
    ("SELECT * FROM duckdb_extensions()", Refusal.REVEALS_ENVIRONMENT),
    ("SELECT * FROM pandas_scan(0)", Refusal.SCANS_MEMORY),
    ("SELECT __internal_compress_integral_utinyint(1, 0)", Refusal.INTERNAL),
    ("PRAGMA enable_profiling", Refusal.CHANGES_STATE),
])
def test_refusal_messages_carry_the_reason(sql: str, reason: Refusal) -> None:
    with pytest.raises(UnsafeSQLError) as info:
        check_sql(sql)
    assert reason.value in str(info.value)


@pytest.mark.parametrize("sql", [
    "SELECT upper('a') COLLATE de", "SELECT 'a' COLLATE icu_collate_de",
    "SELECT list_aggr([1, 2], 'sum')", "SELECT list_sum([1, 2])",
    "SELECT * FROM pragma_table_info('t')", "SELECT * FROM duckdb_tables()",
    "SELECT unnest([1])", "PRAGMA table_info('t')", "PRAGMA version",
])
def test_everyday_functions_are_allowed(sql: str) -> None:
    assert check_sql(sql)
