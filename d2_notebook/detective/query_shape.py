"""What a query's text says about its result: the order of its rows and the LIMIT that
may have cut it.

A result of 15 rows from ``... ORDER BY n DESC LIMIT 15`` is the top 15, not everything
that matched: a real-model hypothesis ("the users in single-user locations are all
his") was drawn from such a list, shown as "15 rows, all shown", and was false past
its 15th row. Readers are told when a result's row count reaches its query's LIMIT.
"""

from __future__ import annotations

import pandas as pd
import sqlglot
from sqlglot import exp


def _parsed(sql: str) -> exp.Expression | None:
    try:
        return sqlglot.parse_one(sql, read="duckdb")
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError, ValueError):
        return None


def result_order(sql: str, frame: pd.DataFrame) -> str | None:
    """What ``sql``'s outermost ORDER BY orders by, as written ("n DESC, name"; a column
    number is named by ``frame``'s column), or None when it has none or does not parse."""
    tree = _parsed(sql)
    order = tree.args.get("order") if tree is not None else None
    if order is None:
        return None
    keys = []
    for key in order.expressions:
        text = key.sql(dialect="duckdb")
        number = key.this if isinstance(key, exp.Ordered) else key
        if isinstance(number, exp.Literal) and number.is_int \
                and 1 <= int(number.this) <= len(frame.columns):
            text = text.replace(number.sql(), str(frame.columns[int(number.this) - 1]), 1)
        keys.append(text)
    return ", ".join(keys) or None


def outer_limit(sql: str) -> int | None:
    """The row limit of ``sql``'s outermost statement (``LIMIT 15``, ``FETCH FIRST 15
    ROWS ONLY``, of a parenthesised query too), or None when it has none that is a plain
    number, when the statement always gives one row (an aggregate without GROUP BY:
    ``SELECT count(*) ... LIMIT 1`` cuts nothing), or when it does not parse."""
    tree = _parsed(sql)
    while isinstance(tree, exp.Subquery):  # (SELECT ... LIMIT 5)
        tree = tree.this
    limit = tree.args.get("limit") if tree is not None else None
    if limit is None or _one_row(tree):
        return None
    options = limit.args.get("limit_options")
    if options is not None and options.args.get("percent"):
        return None  # LIMIT 10 PERCENT: a share, not a row count
    count = limit.args.get("count" if isinstance(limit, exp.Fetch) else "expression")
    if count is None and isinstance(limit, exp.Fetch):
        return 1  # FETCH FIRST ROW ONLY
    if isinstance(count, exp.Literal) and count.is_int:
        return int(count.this)
    return None


def _one_row(tree: exp.Expression) -> bool:
    """A SELECT of aggregates only, without GROUP BY: it gives one row whatever its
    LIMIT."""
    if not isinstance(tree, exp.Select) or tree.args.get("group"):
        return False
    return bool(tree.expressions) and all(
        column.find(exp.AggFunc) is not None and column.find(exp.Window) is None
        for column in tree.expressions)


def limit_note(sql: str, row_count: int | None) -> str | None:
    """"it reaches its query's LIMIT 15: more rows may match" when ``row_count`` rows are
    all ``sql``'s LIMIT lets through, else None: a result shorter than its LIMIT is
    whole, and a row count not known (a capped result whose count failed) says
    nothing."""
    limit = outer_limit(sql)
    if limit is None or row_count is None or row_count < limit:
        return None
    return f"it reaches its query's LIMIT {limit}: more rows may match"


def limit_clause(sql: str, row_count: int | None) -> str:
    """:func:`limit_note` as a clause to put after a row count (", it reaches ..."), or
    "" when there is no note."""
    note = limit_note(sql, row_count)
    return f", {note}" if note else ""
