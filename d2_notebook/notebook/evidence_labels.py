"""What an evidence node says first: what sets it apart from its siblings, and its key
number.

Two evidence nodes beside the same hypothesis often share a description ("Virexa vs
standard care within one comorbidity") and differ only in a filter value of their SQL
(``'asthma'`` vs ``'diabetes'``). :func:`distinguishing_filters` finds those values: the
literal comparisons (``column = 'x'``, ``column IN (...)``, ``column >= 65`` ...) anywhere
in one query — ``WHERE``, ``FILTER (WHERE ...)``, ``CASE`` — that its siblings do not all
share. :func:`key_number` is the leading number of a one-row stored result (a difference,
an effect, a rate). Both are pure functions of text and a frame, cached by their inputs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache

import pandas as pd
import sqlglot
from sqlglot import expressions as exp

from d2_notebook.data.plain_cells import plain_frame

MAX_VALUES = 3
"""At most this many distinguishing values go into a label."""
KEY_COLUMN_HINTS = ("difference", "diff", "delta", "effect", "lift", "ratio", "change",
                    "rate", "share", "pct", "percent", "mean", "avg", "average", "median")
"""Column names, in priority order, that hold a one-row result's key number."""

_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Like, exp.ILike)


@lru_cache(maxsize=4096)
def sql_filters(sql: str) -> tuple[str, ...]:
    """The literal comparisons of ``sql`` as short texts, in query order, without
    repeats: ``asthma`` for ``comorbidity = 'asthma'`` (a text equality names its value
    only), ``year = 2020`` for a number, ``age ≥ 65`` for a range, ``drug in (A, B)``
    for a list. Unparsable SQL has none."""
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError, ValueError):
        return ()
    found: list[str] = []
    for node in tree.walk(bfs=False):
        text = _filter_text(node)
        if text is not None and text not in found:
            found.append(text)
    return tuple(found)


def _filter_text(node: exp.Expression) -> str | None:
    if isinstance(node, exp.In):
        values = node.expressions
        if isinstance(node.this, exp.Column) and values and all(
                isinstance(v, exp.Literal) for v in values):
            return f"{node.this.name} in ({', '.join(v.name for v in values)})"
        return None
    if not isinstance(node, _COMPARISONS):
        return None
    column, literal = node.this, node.expression
    if isinstance(column, exp.Literal) and isinstance(literal, exp.Column):
        column, literal = literal, column
    if not isinstance(column, exp.Column) or not isinstance(literal, exp.Literal):
        return None
    if isinstance(node, exp.EQ) and literal.is_string:
        return literal.name  # 'asthma' reads on its own; "age = 65" needs its column
    operator = {exp.EQ: "=", exp.NEQ: "≠", exp.GT: ">", exp.GTE: "≥", exp.LT: "<", exp.LTE: "≤",
                exp.Like: "like", exp.ILike: "like"}[type(node)]
    return f"{column.name} {operator} {literal.name}"


def distinguishing_filters(sql: str, siblings: Sequence[str]) -> list[str]:
    """The filters of ``sql`` (:func:`sql_filters`) that not every sibling query has;
    empty without siblings, or when nothing differs."""
    if not siblings:
        return []
    shared = set.intersection(*(set(sql_filters(other)) for other in siblings))
    return [text for text in sql_filters(sql) if text not in shared][:MAX_VALUES]


def sibling_groups(homes: Mapping[str, str],
                   descriptions: Mapping[str, str]) -> dict[str, list[str]]:
    """For each evidence id (the keys of ``descriptions``), the ids of its siblings: the
    other evidence with the same description when there is any (the queries a reader
    would confuse), else the other evidence drawn beside the same hypothesis
    (``homes``)."""
    by_home: dict[str, list[str]] = {}
    by_description: dict[str, list[str]] = {}
    for evidence_id, description in descriptions.items():
        by_home.setdefault(homes.get(evidence_id, ""), []).append(evidence_id)
        by_description.setdefault(_normal(description), []).append(evidence_id)
    groups: dict[str, list[str]] = {}
    for evidence_id, description in descriptions.items():
        same = [o for o in by_description[_normal(description)] if o != evidence_id]
        groups[evidence_id] = same or [o for o in by_home[homes.get(evidence_id, "")]
                                       if o != evidence_id]
    return groups


def key_number(frame: pd.DataFrame) -> float | None:
    """The leading number of a one-row result: the first column whose name has a
    :data:`KEY_COLUMN_HINTS` word (in their priority order), else its last numeric
    column; None for results of another length or without a finite number."""
    if len(frame) != 1:
        return None
    frame = plain_frame(frame)
    row = frame.iloc[0]
    numeric = [str(c) for c in frame.columns if _is_number(row[c])]
    if not numeric:
        return None
    for hint in KEY_COLUMN_HINTS:
        for column in numeric:
            if hint in re.split(r"[^a-z]+", column.lower()):
                return float(row[column])
    return float(row[numeric[-1]])


def format_number(value: float) -> str:
    """A key number as a label shows it: a true minus sign, three decimals under 1,
    thousands separators above."""
    sign = "−" if value < 0 else ""
    size = abs(value)
    if size == int(size) and size >= 1:
        text = f"{int(size):,}"
    elif size < 1:
        text = f"{size:.3f}".rstrip("0").rstrip(".") or "0"
    elif size < 100:
        text = f"{size:.2f}".rstrip("0").rstrip(".")
    else:
        text = f"{size:,.0f}"
    return sign + text


def _is_number(value: object) -> bool:
    if isinstance(value, bool) or value is None:
        return False
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    return math.isfinite(number)


def _normal(text: str) -> str:
    return " ".join(text.lower().split())
