"""Reading and checking the inputs of the analysis tools (source, metric, where, ...).

Each piece a model hands over is parsed with DuckDB's parser and must be exactly what it
claims to be: ``source`` a FROM clause, ``metric`` one mean ``avg(<per-row expression>)``,
``where`` one boolean expression. The composed statement then passes the SQL guard
(a write smuggled into any piece is refused with :class:`~d2_notebook.errors.UnsafeSQLError`)
and is bound by DuckDB once with ``LIMIT 0``, so that an unknown column is reported with
the input it came from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from d2_notebook.data.dimensions import Catalog
from d2_notebook.data.parse_tree import iter_nodes, outer_nodes, select_node
from d2_notebook.data.sql_guard import check_sql
from d2_notebook.errors import QueryFailedError

if TYPE_CHECKING:
    from d2_notebook.data.guarded_sql import GuardedSQL

__all__ = ["Source", "join_columns", "literal", "metric_columns", "metric_value",
           "optional_where", "parse_source", "require_binds", "tables_read"]

_MEANS = frozenset({"avg", "mean"})
_METRIC_FIX = (
    "write the metric as one mean over rows, avg(<per-row expression>): a rate as "
    "avg(CASE WHEN <predicate> THEN 1 ELSE 0 END), a mean as avg(<numeric column>), a "
    "per-entity flag as avg(CASE WHEN EXISTS (SELECT 1 FROM <table> x WHERE x.<key> = "
    "<alias>.<key> AND <predicate>) THEN 1 ELSE 0 END) or with <alias>.<key> IN (SELECT ...)"
)
_ROW_TESTS = frozenset({"EXISTS", "NOT_EXISTS", "ANY"})
"""Subqueries a metric may hold: per-row yes/no tests (EXISTS, IN), never a value."""


@dataclass(frozen=True)
class Source:
    """The FROM clause of an analysis and the catalog tables it names.

    Attributes:
        sql: The FROM clause as given (without the ``FROM`` keyword).
        aliases: ``(alias, table name)`` for each catalog table in it, in order; a table
            without an alias is its own alias.
    """

    sql: str
    aliases: tuple[tuple[str, str], ...]

    def alias_of(self, table: str) -> str | None:
        """The first alias of catalog table ``table`` in the source, if it is there."""
        return next((alias for alias, name in self.aliases if name == table), None)

    def table_of(self, alias: str) -> str | None:
        """The catalog table behind ``alias`` (case-insensitive), if any."""
        wanted = alias.lower()
        return next((name for a, name in self.aliases if a.lower() == wanted), None)


def parse_source(source: str, catalog: Catalog) -> Source:
    """Parse a table name or FROM clause (joins and aliases allowed).

    Raises:
        ValueError: Empty, not a FROM clause, or it names no table of the database.
        UnsafeSQLError / QueryFailedError: It does not pass the guard or does not parse.
    """
    text = _required(source, "source", "a table name or a FROM clause, e.g. 'orders o JOIN "
                     "customers c USING (customer_id)'")
    if text.lower().startswith("from "):
        text = text[5:].strip()
    check_sql(f"SELECT 1 FROM {text}")
    node = select_node(f"SELECT 1 FROM {text}")
    if node.get("type") != "SELECT_NODE" or _has_more_than_from(node):
        raise ValueError(
            f"source must be only a FROM clause (tables, joins, aliases), got {source!r}; put "
            "filters in 'where' and leave out SELECT, GROUP BY, ORDER BY and LIMIT"
        )
    aliases: list[tuple[str, str]] = []
    for ref in _base_tables(node["from_table"]):
        info = catalog.table(ref["table_name"])
        if info is not None:
            aliases.append((ref.get("alias") or ref["table_name"], info.name))
    if not aliases:
        names = ", ".join(t.name for t in catalog.tables) or "(none)"
        raise ValueError(f"source {source!r} names no table of the database; tables: {names}")
    return Source(text, tuple(aliases))


def metric_value(metric: str) -> str:
    """The per-row expression inside ``avg(...)``: the value the tools sum and square.

    Raises:
        ValueError: Not exactly one ``avg``/``mean`` of a per-row expression (the message
            says how to write a rate or a mean).
    """
    text = _required(metric, "metric", _METRIC_FIX)
    prefix = "SELECT "
    check_sql(prefix + text)
    node = select_node(prefix + text)
    select_list = node.get("select_list") or []
    top = select_list[0] if len(select_list) == 1 else {}
    if (
        node.get("type") != "SELECT_NODE" or _has_more_than_from(node) or node.get("from_table",
        {}).get("type") not in (None, "EMPTY", "EMPTY_FROM") or top.get("class") != "FUNCTION"
        or str(top.get("function_name", "")).lower() not in _MEANS
        or len(top.get("arguments") or []) != 1 or top.get("distinct") or top.get("filter")
    ):
        raise ValueError(f"metric {metric!r} is not one mean over rows; {_METRIC_FIX}")
    argument = top["arguments"][0]
    argument = argument.get("expression", argument)
    for inner in outer_nodes(argument):
        if inner.get("class") == "SUBQUERY" and inner.get("subquery_type") not in _ROW_TESTS:
            raise ValueError(f"metric {metric!r} takes a value from a subquery; only EXISTS "
                             f"and IN (SELECT ...) tests may be used inside the mean; "
                             f"{_METRIC_FIX}")
        if inner.get("class") == "WINDOW" or (
            inner.get("class") == "FUNCTION"
            and str(inner.get("function_name", "")).lower() in _MEANS | {"sum", "count", "min",
                                                                        "max", "count_star"}
        ):
            raise ValueError(
                f"metric {metric!r} nests an aggregate or window inside the mean; "
                f"{_METRIC_FIX}"
            )
    # Operators and casts report the operator's position, so cut the call's own span.
    start = int(top["query_location"]) - len(prefix)
    span = text[start: start + int(top["query_location_length"])]
    if "(" not in span or ")" not in span:
        raise ValueError(f"metric {metric!r} could not be read; {_METRIC_FIX}")
    return span[span.index("(") + 1: span.rindex(")")].strip()


def metric_columns(value_sql: str, source: Source) -> set[tuple[str, str]]:
    """``(table, lower-cased column)`` pairs the per-row metric value (or any expression
    over the source) reads; an unqualified column counts for every source table."""
    return _columns_in(select_node(f"SELECT {value_sql}"), source)


def join_columns(source: Source) -> set[tuple[str, str]]:
    """``(table, lower-cased column)`` pairs the source's join conditions read (``ON``,
    ``USING``): a column a LEFT JOIN's condition reads (an event time inside a window)
    decides which rows match, so it is part of the definition of a metric over them."""
    found: set[tuple[str, str]] = set()
    for join in _joins(source):
        if join.get("condition"):
            found |= _columns_in(join["condition"], source)
        found |= _using_columns(join, source)
    return found


def key_columns(source: Source) -> set[tuple[str, str]]:
    """The :func:`join_columns` that only match keys: ``USING`` columns and both sides of
    an ``ON`` equality between two columns (``a.id = b.a_id``, alone or in an ``AND``).
    A column a join reads any other way (``e.ts < u.signup + 30``) decides which rows
    match and is not among them."""
    found: set[tuple[str, str]] = set()
    for join in _joins(source):
        found |= _using_columns(join, source)
        terms = [join.get("condition") or {}]
        while terms:
            term = terms.pop()
            if term.get("type") == "CONJUNCTION_AND":
                terms += term.get("children") or []
            elif (term.get("type") == "COMPARE_EQUAL"
                  and term["left"].get("class") == term["right"].get("class") == "COLUMN_REF"):
                found |= _columns_in(term, source)
    return found


def _joins(source: Source) -> list[dict]:
    """The JOIN nodes of the source's FROM clause (parsed by DuckDB), outermost first."""
    joins = []
    pending = [select_node(f"SELECT 1 FROM {source.sql}").get("from_table") or {}]
    while pending:
        ref = pending.pop()
        if ref.get("type") == "JOIN":
            joins.append(ref)
            pending += [ref["left"], ref["right"]]
    return joins


def _using_columns(join: dict, source: Source) -> set[tuple[str, str]]:
    """A join's ``USING`` columns, for every source table (the name is each one's)."""
    return {(table, str(column).lower()) for column in join.get("using_columns") or []
            for _, table in source.aliases}


def _columns_in(node: object, source: Source) -> set[tuple[str, str]]:
    """Source columns an expression reads; inside an EXISTS/IN subquery, only those
    qualified by a source alias (a bare name there is the subquery's own column)."""
    found: set[tuple[str, str]] = set()
    outer = {id(n) for n in outer_nodes(node)}
    for inner in iter_nodes(node):
        if inner.get("class") != "COLUMN_REF":
            continue
        names = [str(n) for n in inner.get("column_names") or []]
        if len(names) >= 2:
            table = source.table_of(names[-2])
            if table:
                found.add((table, names[-1].lower()))
        elif names and id(inner) in outer:
            found.update((table, names[0].lower()) for _, table in source.aliases)
    for inner in iter_nodes(node):
        if inner.get("class") == "SUBQUERY":
            found |= _subquery_columns(inner["subquery"])
    return found


def _subquery_columns(subquery: object) -> set[tuple[str, str]]:
    """``(table, column)`` pairs a subquery reads from its own tables (as written)."""
    tables = {str(ref.get("alias") or ref["table_name"]).lower(): str(ref["table_name"])
              for ref in iter_nodes(subquery) if ref.get("type") == "BASE_TABLE"}
    found: set[tuple[str, str]] = set()
    for inner in iter_nodes(subquery):
        names = [str(n) for n in inner.get("column_names") or []] \
            if inner.get("class") == "COLUMN_REF" else []
        if len(names) >= 2 and names[-2].lower() in tables:
            found.add((tables[names[-2].lower()], names[-1].lower()))
        elif len(names) == 1:
            found.update((table, names[0].lower()) for table in tables.values())
    return found


def tables_read(expression: str, source: Source, catalog: Catalog) -> frozenset[str] | None:
    """The catalog tables whose values an expression over the source reads: the source
    table of each column (by its alias; an unqualified column: the one source table that
    has it) and the tables a subquery reads (``EXISTS``, ``IN``; its correlated references
    to the source and an ``IN``'s left operand only match its rows to the row, as keys).

    None when a column cannot be placed (an alias of no catalog table, an unqualified column
    that no source table or several have, a subquery over anything but catalog tables) or
    when the expression reads no column (constants): nothing can be said of its tables."""
    tables: set[str] = set()
    pending: list[object] = [select_node(f"SELECT {expression}").get("select_list")]
    while pending:
        item = pending.pop()
        if isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, dict) and item.get("class") == "SUBQUERY":
            read = [catalog.table(str(ref.get("table_name"))) for ref in iter_nodes(
                item.get("subquery")) if ref.get("type") == "BASE_TABLE"]
            if not read or None in read:
                return None
            tables.update(info.name for info in read)
        elif isinstance(item, dict) and item.get("class") == "COLUMN_REF":
            table = _column_table([str(n) for n in item.get("column_names") or []], source,
                                  catalog)
            if table is None:
                return None
            tables.add(table)
        elif isinstance(item, dict):
            pending.extend(item.values())
    return frozenset(tables) or None


def _column_table(names: list[str], source: Source, catalog: Catalog) -> str | None:
    """The source table a column reference (its name parts) reads: the table behind its
    alias, or for a bare name the one source table that has such a column; None if there
    is no such table or there are several."""
    if len(names) >= 2:
        return source.table_of(names[-2])
    having = {table for _, table in source.aliases if names and (info := catalog.table(table))
              and names[-1].lower() in {c.name.lower() for c in info.columns}}
    return next(iter(having)) if len(having) == 1 else None


def require_binds(sql: GuardedSQL, source: Source, where: str | None,
                  pieces: dict[str, str], hints: dict[str, str] | None = None) -> None:
    """Bind every piece once (``LIMIT 0``); on failure name the input that does not bind.

    Args:
        pieces: Input name (``"metric"``, ``"dimension 'x'"``, ...) -> SQL expression.
        hints: Input name -> a better hint than the generic one (a spelling that works).

    Raises:
        QueryFailedError: DuckDB's message, which input it came from and how to fix it.
    """
    condition = f" WHERE ({where})" if where else ""
    select = ", ".join(f"({expr})" for expr in pieces.values()) or "1"
    try:
        sql.run(f"SELECT {select} FROM {source.sql}{condition} LIMIT 0", max_rows=0)
        return
    except QueryFailedError as exc:
        failure = exc
    aliases = ", ".join(f"{a} = {t}" for a, t in source.aliases)
    for name, expr in [("where", "1"), *pieces.items()]:
        test_condition = condition if name == "where" else ""
        try:
            sql.run(f"SELECT ({expr}) FROM {source.sql}{test_condition} LIMIT 0", max_rows=0)
        except QueryFailedError as exc:
            hint = (hints or {}).get(name) or (
                f"use columns of the source's tables (aliases: {aliases}); DESCRIBE <table> "
                "lists them.")
            raise QueryFailedError(
                f"the {name} does not bind to the source: {str(exc).splitlines()[0]}\n"
                f"Hint: {hint}"
            ) from exc
    raise failure


def literal(value: object) -> str:
    """A SQL literal for a JSON value (string, number, boolean).

    Raises:
        ValueError: Another type, or a number that is not finite.
    """
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return repr(value)
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    raise ValueError(f"value {value!r} must be a string, a number or a boolean")


def optional_where(where: str | None) -> str | None:
    """``where`` stripped, checked to be one boolean expression, or None when empty."""
    if where is None or not str(where).strip():
        return None
    text = str(where).strip()
    if text.lower().startswith("where "):
        text = text[6:].strip()
    check_sql(f"SELECT 1 WHERE {text}")  # a second statement after ';' is refused here
    node = select_node(f"SELECT 1 WHERE ({text})")
    if node.get("type") != "SELECT_NODE" or _has_more_than_from(node):
        raise ValueError(f"where must be one boolean expression, got {where!r}")
    return text


def _required(value: object, name: str, fix: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} is required: {fix}")
    return value.strip()


def _has_more_than_from(node: dict) -> bool:
    """Anything beyond SELECT list, FROM and WHERE: GROUP BY, HAVING, ORDER, LIMIT, CTEs."""
    return bool(
        node.get("group_expressions") or node.get("having") or node.get("modifiers")
        or node.get("qualify") or node.get("sample") or (node.get("cte_map") or {}).get("map")
    )


def _base_tables(ref: dict) -> list[dict]:
    if ref.get("type") == "BASE_TABLE":
        return [ref]
    if ref.get("type") == "JOIN":
        return _base_tables(ref["left"]) + _base_tables(ref["right"])
    return []
