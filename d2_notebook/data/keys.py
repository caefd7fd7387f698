"""Keys and the join graph: declared DuckDB constraints first, else inferred from the data.

A join edge says that each row of a *child* table points at most one row of a *parent*
table (``child.columns`` → ``parent.columns``, the parent side unique). Edges come from the
database's ``FOREIGN KEY`` constraints; between two tables not both part of a declared
edge, an edge is inferred when a column of the same name and kind exists in both, its
values are unique in one (the parent) and every non-null value of the other (the child)
is among them.

The analysis tools follow these edges to reach attribute tables; the schema summary every
role reads lists them, so that models join along keys instead of guessing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

import pandas as pd

from d2_notebook.data.schema import TableInfo, quote_ident

__all__ = ["JoinEdge", "JoinGraph", "KeyOrigin", "join_graph"]

Query = Callable[[str], pd.DataFrame]

_KEY_FAMILIES = {
    "TINYINT": "int", "SMALLINT": "int", "INTEGER": "int", "BIGINT": "int", "HUGEINT": "int",
    "UTINYINT": "int", "USMALLINT": "int", "UINTEGER": "int", "UBIGINT": "int",
    "VARCHAR": "text", "UUID": "uuid", "DATE": "date",
}  # fmt: skip


class KeyOrigin(Enum):
    """Where a join edge comes from."""

    DECLARED = "declared"
    INFERRED = "inferred"


@dataclass(frozen=True)
class JoinEdge:
    """``child.child_columns`` references the unique ``parent.parent_columns``.

    Attributes:
        child: The referencing table, as written in SQL (``TableInfo.name``).
        child_columns: Its key columns, in the order of ``parent_columns``.
        parent: The referenced table.
        parent_columns: Unique columns of the parent.
        origin: Declared constraint or inferred from the values.
        one_to_one: The child columns are unique too (at most one child row per parent).
    """

    child: str
    child_columns: tuple[str, ...]
    parent: str
    parent_columns: tuple[str, ...]
    origin: KeyOrigin
    one_to_one: bool = False

    def describe(self) -> str:
        """One line, e.g. ``admissions.patient_id -> patients.patient_id (N:1, declared)``."""
        child = ", ".join(f"{self.child}.{quote_ident(c)}" for c in self.child_columns)
        parent = ", ".join(f"{self.parent}.{quote_ident(c)}" for c in self.parent_columns)
        cardinality = "1:1" if self.one_to_one else "N:1"
        return f"{child} -> {parent} ({cardinality}, {self.origin.value})"


@dataclass(frozen=True)
class JoinGraph:
    """The join edges of a database and the unique column sets of its tables.

    Attributes:
        edges: Every edge, ordered by child then parent.
        unique: Table name -> its unique column sets (primary keys, unique constraints
            and inferred single-column keys).
    """

    edges: tuple[JoinEdge, ...]
    unique: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def key_columns(self, table: str) -> frozenset[str]:
        """Lower-cased columns of ``table`` that serve as keys (unique or in an edge)."""
        names = {c.lower() for t, cols in self.unique if t == table for c in cols}
        for edge in self.edges:
            if edge.child == table:
                names.update(c.lower() for c in edge.child_columns)
            if edge.parent == table:
                names.update(c.lower() for c in edge.parent_columns)
        return frozenset(names)

    def is_unique(self, table: str, columns: tuple[str, ...]) -> bool:
        """Whether ``columns`` (in any order) contain a unique column set of ``table``."""
        wanted = {c.lower() for c in columns}
        return any(t == table and {c.lower() for c in cols} <= wanted for t, cols in self.unique)

    def describe(self) -> str:
        """The edges as text lines for the schema summary (empty when there are none)."""
        if not self.edges:
            return ""
        lines = ["Join keys (child -> parent; N:1 = many child rows per parent row):"]
        lines.extend(f"  {edge.describe()}" for edge in self.edges)
        return "\n".join(lines)


def join_graph(query: Query, tables: list[TableInfo],
               constraints: Sequence[Sequence[Any]] | None = None) -> JoinGraph:
    """Declared edges, plus edges inferred between tables that declare none between them.

    Args:
        query: Runs SQL we generate (catalog names quoted) and returns the rows.
        tables: Described tables (with columns and row counts); views take part in
            inference only.
        constraints: The declared keys as ``duckdb_constraints()`` rows (database,
            schema, table, type, columns, referenced table, referenced columns), read
            through the source's own catalog; None reads them with ``query`` (DuckDB).

    Returns:
        The graph; inference costs one profiling query per table with shared columns and
        one containment query per candidate pair.
    """
    by_coordinates = {(t.database, t.schema, t.table.lower()): t for t in tables}
    unique: set[tuple[str, tuple[str, ...]]] = set()
    declared: list[tuple[str, tuple[str, ...], str, tuple[str, ...]]] = []
    if constraints is None:
        constraints = list(query(
            "SELECT database_name, schema_name, table_name, constraint_type, "
            "constraint_column_names, referenced_table, referenced_column_names "
            "FROM duckdb_constraints() WHERE constraint_type IN ('PRIMARY KEY', 'UNIQUE', "
            "'FOREIGN KEY') ORDER BY ALL"
        ).itertuples(index=False))
    for row in constraints:
        table = by_coordinates.get((row[0], row[1], str(row[2]).lower()))
        if table is None:
            continue
        columns = tuple(str(c) for c in row[4])
        if row[3] != "FOREIGN KEY":
            unique.add((table.name, columns))
            continue
        parent = by_coordinates.get((row[0], row[1], str(row[5]).lower()))
        if parent is not None:
            declared.append((table.name, columns, parent.name, tuple(str(c) for c in row[6])))
    graph = JoinGraph((), tuple(sorted(unique)))
    edges = [
        JoinEdge(child, cols, parent, pcols, KeyOrigin.DECLARED, graph.is_unique(child, cols))
        for child, cols, parent, pcols in declared
    ]
    declaring = {e.child for e in edges} | {e.parent for e in edges}
    inferred, inferred_unique = _infer(query, tables, declaring)
    edges.extend(inferred)
    edges.sort(key=lambda e: (e.child, e.parent, e.child_columns))
    return JoinGraph(tuple(edges), tuple(sorted(unique | inferred_unique)))


def _infer(
    query: Query, tables: list[TableInfo], declaring: set[str]
) -> tuple[list[JoinEdge], set[tuple[str, tuple[str, ...]]]]:
    """Edges over shared same-kind columns, for pairs where a table declares no edge."""
    kinds = {
        t.name: {c.name.lower(): (c.name, _KEY_FAMILIES.get(c.type.upper())) for c in t.columns}
        for t in tables
    }
    pairs: list[tuple[TableInfo, TableInfo, str]] = []
    for i, left in enumerate(tables):
        for right in tables[i + 1:]:
            if left.name in declaring and right.name in declaring:
                continue  # both declare their keys: trust the declarations
            for name, (_, family) in kinds[left.name].items():
                other = kinds[right.name].get(name)
                if family is not None and other is not None and other[1] == family:
                    pairs.append((left, right, name))
    shared: dict[str, set[str]] = {}
    for left, right, name in pairs:
        shared.setdefault(left.name, set()).add(name)
        shared.setdefault(right.name, set()).add(name)
    by_name = {t.name: t for t in tables}
    is_unique = {
        (table, name): flag
        for table, names in shared.items()
        for name, flag in _uniqueness(query, by_name[table], sorted(names), kinds).items()
    }
    edges: list[JoinEdge] = []
    unique: set[tuple[str, tuple[str, ...]]] = set()
    for left, right, name in pairs:
        for child, parent in ((left, right), (right, left)):
            child_col, parent_col = kinds[child.name][name][0], kinds[parent.name][name][0]
            if not is_unique[parent.name, name]:
                continue
            if not _contained(query, child, child_col, parent, parent_col):
                continue
            edges.append(JoinEdge(child.name, (child_col,), parent.name, (parent_col,),
                                  KeyOrigin.INFERRED, is_unique[child.name, name]))
            unique.add((parent.name, (parent_col,)))
            break  # a 1:1 pair gets one edge, from the first table to the second
    return edges, unique


def _uniqueness(
    query: Query, table: TableInfo, names: list[str], kinds: dict[str, dict]
) -> dict[str, bool]:
    """Per column: non-null values present and all distinct."""
    columns = [quote_ident(kinds[table.name][n][0]) for n in names]
    parts = ", ".join(f"count({c}), count(DISTINCT {c})" for c in columns)
    row = query(f"SELECT {parts} FROM {table.ref}").iloc[0].tolist()
    return {n: bool(row[2 * i] > 0 and row[2 * i] == row[2 * i + 1]) for i, n in enumerate(names)}


def _contained(
    query: Query, child: TableInfo, child_col: str, parent: TableInfo, parent_col: str
) -> bool:
    """Every non-null value of ``child.child_col`` also occurs in ``parent.parent_col``."""
    column, target = quote_ident(child_col), quote_ident(parent_col)
    missing = query(
        f"SELECT count(*) FROM (SELECT {column} FROM {child.ref} WHERE {column} IS NOT NULL "
        f"EXCEPT SELECT {target} FROM {parent.ref})"
    ).iat[0, 0]
    return int(missing) == 0
