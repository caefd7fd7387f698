"""Size limits on one SQL statement, checked from its tokens before anything parses it.

Parsing and walking a statement costs time and memory that grow with its size (20,000
CTEs took 19 s to check, a 50 MB literal ran the checker out of memory), and the check
runs before the query's time limit starts. So every statement is measured first, with
DuckDB's tokenizer only (linear, no parse tree), and refused with the limit named when
it is too large. The limits sit far above what a hand- or model-written query needs.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

__all__ = ["LIMITS", "BoundExceeded", "StatementLimits", "measure"]


@dataclass(frozen=True)
class StatementLimits:
    """The largest statement the checker takes.

    Attributes:
        chars: Characters in the statement (literals included).
        depth: Nested parentheses or brackets (subqueries, calls, lists).
        list_items: Items of one parenthesized or bracketed list (an IN list, one VALUES
            row, a call's arguments, a list literal).
        ctes: Named subqueries (``name AS (...)``) in the whole statement.
        case_branches: ``WHEN`` branches in the whole statement.
    """

    chars: int = 100_000
    depth: int = 100
    list_items: int = 5_000
    ctes: int = 500
    case_branches: int = 1_000


LIMITS = StatementLimits()


@dataclass(frozen=True)
class BoundExceeded:
    """Which limit a statement passes, for a refusal that names it.

    Attributes:
        reason: What is too large, with the measured size and the limit.
        fix: How to write the query within the limit.
    """

    reason: str
    fix: str


def measure(sql: str, limits: StatementLimits = LIMITS) -> BoundExceeded | None:
    """``None`` when ``sql`` is within ``limits``, else the first limit it passes."""
    if len(sql) > limits.chars:
        return BoundExceeded(
            f"the statement is {len(sql):,} characters long and the limit is {limits.chars:,}",
            "shorten it: move long value lists into a table or split the work into queries")
    depth = deepest = ctes = whens = 0
    items = [0]  # commas seen at each open nesting level (index 0: top level)
    previous = ""
    tokens = duckdb.tokenize(sql)
    for i, (start, kind) in enumerate(tokens):
        end = tokens[i + 1][0] if i + 1 < len(tokens) else len(sql)
        word = sql[start:end].strip()
        if kind == duckdb.token_type.comment:
            continue
        if kind == duckdb.token_type.keyword:
            upper = word.upper()
            whens += upper == "WHEN"
            previous = upper
            continue
        if kind == duckdb.token_type.operator:
            for char in word:
                if char in "([":
                    ctes += previous in ("AS", "MATERIALIZED")
                    depth += 1
                    deepest = max(deepest, depth)
                    items.append(0)
                elif char in ")]" and depth > 0:
                    depth -= 1
                    items.pop()
                elif char == ",":
                    items[-1] += 1
                    if items[-1] >= limits.list_items:
                        return BoundExceeded(
                            f"a list in the statement has more than {limits.list_items:,} "
                            "items (IN list, VALUES row or call arguments)",
                            "put long value lists in a table and join it, or split the query")
                previous = char
            if deepest > limits.depth:
                return BoundExceeded(
                    f"the statement nests too deeply: more than {limits.depth} levels of "
                    "parentheses or brackets",
                    "split long chains of terms or nested subqueries into CTEs or several "
                    "queries")
            continue
        previous = word.upper()
    if ctes > limits.ctes:
        return BoundExceeded(f"the statement names {ctes:,} CTEs and the limit is "
                             f"{limits.ctes:,}", "split the work into several queries")
    if whens > limits.case_branches:
        return BoundExceeded(
            f"the statement has {whens:,} CASE branches and the limit is "
            f"{limits.case_branches:,}",
            "put the mapping in a table (or a VALUES CTE) and join it")
    return None
