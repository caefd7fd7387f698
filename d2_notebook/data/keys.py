"""Keys and the join graph: declared DuckDB constraints first, else inferred from the data.

A join edge says that each row of a *child* table points at most one row of a *parent*
table (``child.columns`` → ``parent.columns``, the parent side unique). Edges come from the
database's ``FOREIGN KEY`` constraints, and from the user's own :class:`Relationship`
declarations. Between two tables not both part of a declared edge, an edge is inferred
when a column of the same name and kind exists in both, its values are unique in the
parent, every non-null value of the child is among them, and either the child's values
repeat (many child rows per parent row) or the column's name points at the parent table
(``customer_id`` in ``customers`` and ``customer_notes``). A column unique in both tables
whose name points at neither (two ``id`` primary keys) is a key of each, not a
reference: containment of one table's ids in another's is a coincidence of numbering.
The usual naming of a reference to an ``id`` key is inferred the same way: a column
named after another table (``customer_id`` at ``customers``, ``license_id`` at
``drivers_license``; :mod:`d2_notebook.data.key_names` says which) refers to that
table's ``id`` when the kinds match, the ``id`` values are unique and every non-null
value of the column is among them.
A user vetoes a wrong inferred edge, or declares a missing one, with ``relationships``.

The analysis tools follow these edges to reach attribute tables; the schema summary every
role reads lists them, so that models join along keys instead of guessing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

import pandas as pd

from d2_notebook.data.key_names import named_references, table_forms
from d2_notebook.data.schema import TableInfo, quote_ident

__all__ = ["JoinEdge", "JoinGraph", "KeyOrigin", "Relationship", "join_graph",
           "parse_relationships"]

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
    USER = "declared by the user"


_ARROWS = {"->": False, "-/>": True}


@dataclass(frozen=True)
class Relationship:
    """A join edge the user declares (``orders.customer_id -> customers.id``) or vetoes
    (``orders.id -/> customers.id``: never join these columns, whatever the data suggests).

    Attributes:
        child: Referencing table name (bare or as written in SQL; case-insensitive).
        child_columns: Its columns.
        parent: Referenced table.
        parent_columns: The referenced columns, in the order of ``child_columns``.
        veto: True to forbid the edge instead of declaring it.
    """

    child: str
    child_columns: tuple[str, ...]
    parent: str
    parent_columns: tuple[str, ...]
    veto: bool = False

    @classmethod
    def parse(cls, text: str) -> Relationship:
        """Read ``child.col -> parent.col`` (declare) or ``child.col -/> parent.col`` (veto,
        also written ``!child.col -> parent.col``); several columns as
        ``t.(a, b) -> p.(x, y)``.

        Raises:
            ValueError: Not in that form (the message shows it).
        """
        spelled = ("write 'child_table.column -> parent_table.column' to declare a join, "
                   "'child_table.column -/> parent_table.column' (or '!child_table.column "
                   "-> parent_table.column') to forbid one")
        if not isinstance(text, str):
            raise ValueError(f"a relationship must be a string: {spelled}; got {text!r}")
        match = re.fullmatch(r"\s*(!?)\s*(.+?)\s*(-/>|->)\s*(.+?)\s*", text)
        if match is None:
            raise ValueError(f"relationship {text!r} is not understood: {spelled}")
        child, child_columns = _side(match.group(2), text, spelled)
        parent, parent_columns = _side(match.group(4), text, spelled)
        if len(child_columns) != len(parent_columns):
            raise ValueError(f"relationship {text!r} pairs {len(child_columns)} column(s) with "
                             f"{len(parent_columns)}: {spelled}")
        veto = bool(match.group(1)) or _ARROWS[match.group(3)]
        return cls(child, child_columns, parent, parent_columns, veto)

    def describe(self) -> str:
        """The relationship in the form :meth:`parse` reads."""
        def side(table: str, columns: tuple[str, ...]) -> str:
            return f"{table}.{columns[0]}" if len(columns) == 1 else \
                f"{table}.({', '.join(columns)})"
        arrow = "-/>" if self.veto else "->"
        return (f"{side(self.child, self.child_columns)} {arrow} "
                f"{side(self.parent, self.parent_columns)}")

    def matches(self, edge: JoinEdge, tables: dict[str, TableInfo]) -> bool:
        """Whether ``edge`` joins the same columns (either direction, case-insensitive)."""
        def same(table: str, columns: tuple[str, ...], other: str,
                 other_columns: tuple[str, ...]) -> bool:
            return (_names(table, tables) & _names(other, tables) != set()
                    and [c.lower() for c in columns] == [c.lower() for c in other_columns])
        forward = (same(self.child, self.child_columns, edge.child, edge.child_columns)
                   and same(self.parent, self.parent_columns, edge.parent,
                            edge.parent_columns))
        backward = (same(self.child, self.child_columns, edge.parent, edge.parent_columns)
                    and same(self.parent, self.parent_columns, edge.child, edge.child_columns))
        return forward or backward


def parse_relationships(items: object) -> tuple[Relationship, ...]:
    """Relationships from a list of strings or :class:`Relationship` objects (None: none).

    Raises:
        ValueError: An item is not understood (the message shows the form).
    """
    if items is None:
        return ()
    if isinstance(items, str | Relationship):
        items = [items]
    if not isinstance(items, list | tuple):
        raise ValueError("relationships must be a list of strings such as "
                         "'orders.customer_id -> customers.id'")
    return tuple(i if isinstance(i, Relationship) else Relationship.parse(i) for i in items)


def _side(text: str, whole: str, spelled: str) -> tuple[str, tuple[str, ...]]:
    group = re.fullmatch(r"(.+)\.\(([^()]+)\)", text)
    if group:
        table, columns = group.group(1), [c.strip() for c in group.group(2).split(",")]
    else:
        table, _, column = text.rpartition(".")
        columns = [column]
    if not table.strip() or not all(columns):
        raise ValueError(f"relationship {whole!r} is not understood: {spelled}")
    return table.strip().strip('"'), tuple(c.strip().strip('"') for c in columns)


def _names(table: str, tables: dict[str, TableInfo]) -> set[str]:
    """Lower-cased names a table may be written by (SQL name and bare name)."""
    info = tables.get(table.lower())
    return {table.lower()} | ({info.name.lower(), info.table.lower()} if info else set())


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
        if any(e.origin is KeyOrigin.INFERRED for e in self.edges):
            lines.append("  (inferred = read from shared column names and contained values, "
                         "not declared; a wrong one is vetoed with relationships=)")
        return "\n".join(lines)


def join_graph(query: Query, tables: list[TableInfo],
               relationships: tuple[Relationship, ...] = (),
               constraints: Sequence[Sequence[Any]] | None = None) -> JoinGraph:
    """Declared edges, plus edges inferred between tables that declare none between them.

    Args:
        query: Runs SQL we generate (catalog names quoted) and returns the rows.
        tables: Described tables (with columns and row counts); views take part in
            inference only.
        relationships: The user's declarations (added as edges, the parent side taken as
            unique) and vetoes (no edge joins those columns, declared or inferred).
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
            "FROM system.main.duckdb_constraints() WHERE constraint_type IN "
            "('PRIMARY KEY', 'UNIQUE', 'FOREIGN KEY') ORDER BY ALL"
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
    named = {}
    for table in tables:
        named.setdefault(table.name.lower(), table)
        named.setdefault(table.table.lower(), table)
    for wanted in relationships:
        if wanted.veto:
            continue
        child, parent = named.get(wanted.child.lower()), named.get(wanted.parent.lower())
        if child is None or parent is None:
            missing = wanted.child if child is None else wanted.parent
            raise ValueError(f"relationship {wanted.describe()!r} names no table {missing!r}; "
                             f"tables: {', '.join(t.name for t in tables) or '(none)'}")
        unique.add((parent.name, wanted.parent_columns))
        edges.append(JoinEdge(child.name, wanted.child_columns, parent.name,
                              wanted.parent_columns, KeyOrigin.USER,
                              graph.is_unique(child.name, wanted.child_columns)))
    declaring = {e.child for e in edges} | {e.parent for e in edges}
    taken = {(e.child, c.lower()) for e in edges for c in e.child_columns}
    inferred, inferred_unique = _infer(query, tables, declaring, taken)
    edges.extend(inferred)
    vetoes = [r for r in relationships if r.veto]
    edges = [e for e in edges if not any(v.matches(e, named) for v in vetoes)]
    edges.sort(key=lambda e: (e.child, e.parent, e.child_columns))
    return JoinGraph(tuple(edges), tuple(sorted(unique | inferred_unique)))


def _infer(
    query: Query, tables: list[TableInfo], declaring: set[str],
    taken: set[tuple[str, str]],
) -> tuple[list[JoinEdge], set[tuple[str, tuple[str, ...]]]]:
    """Edges over shared same-kind columns, for pairs where a table declares no edge,
    and over columns named after a table (:mod:`d2_notebook.data.key_names`) that no
    declared edge (``taken``: its child table and lower-cased column) already uses."""
    tables = [t for t in tables if not t.unreadable]  # never read what the guard refuses
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
    references = named_references(tables, kinds, declaring, taken)
    shared: dict[str, set[str]] = {}
    for left, right, name in pairs:
        shared.setdefault(left.name, set()).add(name)
        shared.setdefault(right.name, set()).add(name)
    for child, name, parent in references:
        shared.setdefault(child.name, set()).add(name)
        shared.setdefault(parent.name, set()).add("id")
    by_name = {t.name: t for t in tables}
    is_unique = {
        (table, name): flag
        for table, names in shared.items()
        for name, flag in _uniqueness(query, by_name[table], sorted(names), kinds).items()
    }
    edges: list[JoinEdge] = []
    unique: set[tuple[str, tuple[str, ...]]] = set()
    for left, right, name in pairs:
        if is_unique[left.name, name] and is_unique[right.name, name]:
            unique.add((left.name, (kinds[left.name][name][0],)))
            unique.add((right.name, (kinds[right.name][name][0],)))
        for child, parent in ((left, right), (right, left)):
            child_col, parent_col = kinds[child.name][name][0], kinds[parent.name][name][0]
            if not is_unique[parent.name, name]:
                continue
            if is_unique[child.name, name] and not _points_at(name, parent):
                continue  # unique in both: a key of each, a reference only by its name
            if not _contained(query, child, child_col, parent, parent_col):
                continue
            edges.append(JoinEdge(child.name, (child_col,), parent.name, (parent_col,),
                                  KeyOrigin.INFERRED, is_unique[child.name, name]))
            unique.add((parent.name, (parent_col,)))
            break  # a 1:1 pair gets one edge, from the first table to the second
    for child, name, parent in references:
        child_col, parent_col = kinds[child.name][name][0], kinds[parent.name]["id"][0]
        if is_unique[parent.name, "id"] and _contained(query, child, child_col, parent,
                                                       parent_col):
            edges.append(JoinEdge(child.name, (child_col,), parent.name, (parent_col,),
                                  KeyOrigin.INFERRED, is_unique[child.name, name]))
            unique.add((parent.name, (parent_col,)))
    return edges, unique


def _points_at(column: str, table: TableInfo) -> bool:
    """Whether a column's name names ``table``: ``customer_id`` or ``customerid`` for
    ``customers``/``customer``, ``category_id`` for ``categories``."""
    stem = re.sub(r"_?id$", "", column.lower())
    return bool(stem) and stem != column.lower() and stem in table_forms(table)


def _uniqueness(
    query: Query, table: TableInfo, names: list[str], kinds: dict[str, dict]
) -> dict[str, bool]:
    """Per column: non-null values present and all distinct."""
    columns = [quote_ident(kinds[table.name][n][0]) for n in names]
    parts = ", ".join(f"system.main.count({c}), system.main.count(DISTINCT {c})" for c in columns)
    row = query(f"SELECT {parts} FROM {table.ref}").iloc[0].tolist()
    return {n: bool(row[2 * i] > 0 and row[2 * i] == row[2 * i + 1]) for i, n in enumerate(names)}


def _contained(
    query: Query, child: TableInfo, child_col: str, parent: TableInfo, parent_col: str
) -> bool:
    """Every non-null value of ``child.child_col`` also occurs in ``parent.parent_col``."""
    column, target = quote_ident(child_col), quote_ident(parent_col)
    missing = query(
        f"SELECT system.main.count_star() FROM (SELECT {column} FROM {child.ref} "
        f"WHERE {column} IS NOT NULL "
        f"EXCEPT SELECT {target} FROM {parent.ref})"
    ).iat[0, 0]
    return int(missing) == 0
