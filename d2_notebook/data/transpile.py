"""``transpile``: SQL written in DuckDB's dialect, rewritten for another source.

Code that generates SQL (the analysis tools, the scripted policies) writes it once in
DuckDB's dialect; :func:`transpile` rewrites it with sqlglot for PostgreSQL, Spark or
any dialect sqlglot knows. Beyond sqlglot's own translation it expands DuckDB's
``GROUP BY ALL`` and ``ORDER BY ALL``, which other dialects lack or read differently,
into column positions, unqualifies DuckDB's own functions (``system.main.count(x)`` ->
``count(x)``, ``count_star()`` -> ``count(*)``), and rewrites what sqlglot leaves in
DuckDB's vocabulary:

- PostgreSQL: ``approx_count_distinct`` -> ``count(DISTINCT ...)``, ``approx_quantile(x,
  [q...])`` -> ``percentile_disc(ARRAY[q...]) WITHIN GROUP (ORDER BY x)`` (exact), and the date
  parts (``year``, ``quarter``, ``month``, ``isodow``, ``hour``) -> integer ``EXTRACT``;
- Spark: a 1-based index into a list literal -> ``element_at`` (Spark's ``[]`` is
  0-based), and ``AS NOT MATERIALIZED`` CTEs -> plain CTEs.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from d2_notebook.data.dialects import Dialect
from d2_notebook.errors import QueryFailedError

__all__ = ["transpile"]


def transpile(duckdb_sql: str, dialect: Dialect | str) -> str:
    """Rewrite one DuckDB statement in ``dialect``.

    Args:
        duckdb_sql: One statement in DuckDB's dialect.
        dialect: The target (a :class:`Dialect` or its sqlglot name).

    Returns:
        The statement in the target dialect; unchanged text for DuckDB itself.

    Raises:
        QueryFailedError: The text is not one statement DuckDB's grammar accepts.
        ValueError: ``dialect`` is not a known dialect.
    """
    target = Dialect(dialect)
    if target is Dialect.DUCKDB:
        return duckdb_sql
    try:
        trees = [t for t in sqlglot.parse(duckdb_sql, read="duckdb") if t is not None]
    except (ParseError, TokenError) as exc:
        raise QueryFailedError(f"cannot transpile: {exc}\nHint: pass one DuckDB statement.") \
            from exc
    if len(trees) != 1:
        raise QueryFailedError(f"cannot transpile {len(trees)} statements; pass one")
    tree = trees[0].transform(_unqualify_duckdb_functions).transform(_expand_all)
    if target is Dialect.POSTGRES:  # date parts first: the aggregates' rewrite keeps them
        tree = tree.transform(_postgres_date_parts).transform(_for_postgres)
    elif target in (Dialect.SPARK, Dialect.DATABRICKS):
        tree = tree.transform(_for_spark)
    return tree.sql(dialect=target.value)


def _unqualify_duckdb_functions(node: exp.Expression) -> exp.Expression:
    """``system.main.f(...)`` (DuckDB's own ``f``, written so that no database macro can
    shadow it) as the plain call other dialects know; ``count_star()`` as ``count(*)``."""
    if not (isinstance(node, exp.Dot) and isinstance(node.this, exp.Dot)
            and node.this.this.name.lower() == "system"
            and node.this.expression.name.lower() == "main"
            and isinstance(node.expression, exp.Func)):
        return node
    call = node.expression
    if not isinstance(call, exp.Anonymous):
        return call
    if call.name.lower() == "count_star" and not call.expressions:
        return exp.Count(this=exp.Star())
    return sqlglot.parse_one(call.sql(dialect="duckdb"), read="duckdb")


_EXTRACTED = {exp.Year: "YEAR", exp.Quarter: "QUARTER", exp.Month: "MONTH",
              exp.DayOfWeekIso: "ISODOW", exp.Hour: "HOUR"}


def _for_postgres(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.ApproxDistinct):
        return exp.Count(this=exp.Distinct(expressions=[node.this]))
    if isinstance(node, exp.ApproxQuantile):
        quantiles = node.args.get("quantile")
        if isinstance(quantiles, exp.Array):
            quantiles = exp.cast(quantiles, "DOUBLE PRECISION[]", dialect="postgres")
        ordered = exp.Order(expressions=[exp.Ordered(this=node.this)])
        return exp.WithinGroup(this=exp.Anonymous(this="percentile_disc",
                                                  expressions=[quantiles]),
                               expression=ordered)
    return node


def _postgres_date_parts(node: exp.Expression) -> exp.Expression:
    for kind, part in _EXTRACTED.items():
        if isinstance(node, kind):
            extracted = exp.Extract(this=exp.var(part), expression=node.this)
            return exp.cast(extracted, "INTEGER")
    return node


def _for_spark(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.Bracket) and isinstance(node.this, exp.Array) \
            and len(node.expressions) == 1:
        return exp.Anonymous(this="element_at", expressions=[node.this, node.expressions[0]])
    if isinstance(node, exp.CTE) and node.args.get("materialized") is not None:
        node.set("materialized", None)
    return node


def _expand_all(node: exp.Expression) -> exp.Expression:
    """``GROUP BY ALL`` -> the positions of the non-aggregate outputs;
    ``ORDER BY ALL`` -> every output position, in order."""
    if not isinstance(node, exp.Select):
        return node
    outputs = node.expressions
    group = node.args.get("group")
    if group is not None and group.args.get("all"):
        keys = [exp.Literal.number(i) for i, e in enumerate(outputs, 1)
                if not _aggregates(e)]
        node.set("group", exp.Group(expressions=keys) if keys else None)
    order = node.args.get("order")
    if order is not None and len(order.expressions) == 1:
        only = order.expressions[0]
        if isinstance(only.this, exp.Var) and only.this.name.upper() == "ALL":
            node.set("order", exp.Order(expressions=[
                exp.Ordered(this=exp.Literal.number(i), desc=only.args.get("desc"),
                            nulls_first=only.args.get("nulls_first"))
                for i in range(1, len(outputs) + 1)]))
    return node


def _aggregates(expression: exp.Expression) -> bool:
    return any(isinstance(n, exp.AggFunc) and not n.find_ancestor(exp.Window)
               for n in expression.walk())
