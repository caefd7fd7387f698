"""Whether an evidence shows the rows its claim rests on, or only a total of them.

"Every claim links to the query behind it" holds only when the evidence's result shows
the fact: a claim about particular entities (who matches, what value one has, which
record is missing) is checked against those entities' own rows. A single row of
aggregates (a count of the matches, their names packed into one cell by ``string_agg``)
says how many, not which, and leaves nothing to check the claim against. Recording such
a result as deciding evidence is allowed — a total is the right evidence for a claim
about how many or how often — but the tool's answer then asks for the rows as well
(:func:`aggregate_row_note`).
"""

from __future__ import annotations

from functools import cache

from d2_notebook.data.parse_tree import iter_nodes, parser_cursor, select_node
from d2_notebook.errors import QueryFailedError

COLLECTING = frozenset({"string_agg", "group_concat", "listagg", "list", "array_agg"})
"""Aggregates that pack the entities themselves into one cell (their names, their ids)."""
COUNTING = frozenset({"count"})
"""Aggregates that count entities: a count alone says how many match, not which."""

DECISIVE = frozenset({"supports", "contradicts"})
"""The stances that decide something; only their evidence is asked for its rows."""


@cache
def aggregate_functions() -> frozenset[str]:
    """DuckDB's aggregate function names (its own catalog, lower case)."""
    rows = parser_cursor().execute(
        "SELECT DISTINCT lower(function_name) FROM duckdb_functions() "
        "WHERE function_type = 'aggregate'").fetchall()
    return frozenset(str(name) for (name,) in rows)


def aggregates_only(sql: str) -> list[str]:
    """The aggregate functions of a SELECT whose every output column is an aggregate
    (or a constant), with no GROUP BY: a query that can only return one row of totals.

    Scalar subqueries count by their own aggregates (``SELECT (SELECT count(*) ...)``).
    Returns the functions in order of first use, or ``[]`` when any output column is not
    an aggregate, the query groups, it is a set operation (UNION ...), or it does not
    parse.
    """
    try:
        node = select_node(sql)
    except QueryFailedError:
        return []
    if node.get("type") != "SELECT_NODE" or node.get("group_expressions") \
            or node.get("group_sets"):
        return []
    known = aggregate_functions()
    used: list[str] = []
    for item in node.get("select_list", []):
        if item.get("class") == "CONSTANT":
            continue
        found = [_shown(str(n["function_name"])) for n in iter_nodes(item)
                 if n.get("class") == "FUNCTION"
                 and str(n.get("function_name", "")).lower() in known]
        if not found:
            return []
        used.extend(f for f in found if f not in used)
    return used


def aggregate_row_note(evidence_id: str, sql: str, row_count: int, stance: str) -> str | None:
    """What to tell the agent that records ``evidence_id`` as deciding evidence when its
    result is one row of aggregates that stand in for entities (their names packed into
    one cell, :data:`COLLECTING`, or counts only); None otherwise (another stance,
    several rows, a column that is not an aggregate, or figures such as a mean or a
    what-if's two rates: a real collector was asked for "the entities' rows" of a share
    comparison).

    The note is advice in the tool's answer, not a refusal: a total decides a claim
    about how many; a claim about particular entities needs their rows.
    """
    if stance.casefold() not in DECISIVE or row_count != 1:
        return None
    functions = aggregates_only(sql)
    if not functions or not (set(functions) & COLLECTING or set(functions) <= COUNTING):
        return None  # a mean, a sum, a what-if: figures, not a stand-in for entities
    return (f"note: {evidence_id} is one row of totals ({', '.join(functions)}): it shows how "
            "many, not which rows. If your reading rests on particular entities (which "
            "ones match, the value one has, a record one lacks), run a query that returns "
            "each of those entities' own row with the columns that show the fact (a LEFT "
            "JOIN keeps a missing record visible as NULL) and record that too: a claim is "
            "checked against the rows behind it.")


def _shown(function_name: str) -> str:
    """A function's name as the agent wrote it (DuckDB parses ``count(*)`` as
    ``count_star``)."""
    name = function_name.lower()
    return "count" if name == "count_star" else name
