"""Columns of readable system relations that show literals written in DDL.

A literal written in DDL can be a credential (``ALTER TABLE t ALTER COLUMN token SET
DEFAULT 'sk-live-…'``, a domain's ``DEFAULT``, a ``CHECK (x <> 'secret')``, a view's
``WHERE key = 'secret'``, an index predicate). The guard refuses the functions that show
them (``pg_get_expr``, ``pg_get_viewdef`` ...); :data:`REFUSED_COLUMNS` lists the columns
of the relations on :data:`~d2_notebook.data.postgres_catalog.SYSTEM_RELATIONS` that hold
them as text or as an expression tree (``pg_node_tree`` prints a constant's bytes).

:func:`column_refusal` decides, on the statement the guard will send, whether it may reach
one of them. It is conservative rather than clever: whatever could reach a refused column
is refused, even where PostgreSQL would have resolved the name elsewhere:

- a name spelled like a refused column of a relation the statement reads, anywhere
  (any qualifier, any case, a ``USING`` list, a field selection ``(c).column_default``);
- ``*`` in a ``SELECT`` whose ``FROM`` reads such a relation itself (not through a
  subquery, whose own list is checked), and ``c.*`` where ``c`` names one;
- a whole-row reference: the relation's name or alias — or the alias of a parenthesized
  join around it — used as anything but the qualifier of one of its readable columns
  (``to_jsonb(c)``, ``row_to_json(c)``, ``c::text``, ``c``);
- ``c.x`` where the relation has no column ``x``: PostgreSQL reads it as the call
  ``x(c)`` over the whole row (``c.to_jsonb``);
- a column list after its alias (it renames the columns by position);
- any ``NATURAL`` join (it compares every column of the same name, unnamed).

Views and SQL functions of the database are checked through their definitions, which
the catalog check passes here too, so one that re-exposes a refused column is refused.
Every relation listed has rules that are sound in this sense, so none is refused whole.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp

from d2_notebook.data.dialects import Dialect
from d2_notebook.data.sqlglot_guard import relation_parts

__all__ = ["REFUSED_COLUMNS", "PartlyRefused", "column_refusal", "compared_name"]

REFUSED_COLUMNS: Mapping[str, Mapping[str, str]] = {
    "information_schema.check_constraints": {
        "check_clause": "the CHECK expression, with the literals it compares to",
    },
    "information_schema.columns": {
        "column_default": "the column's DEFAULT expression, with its literals",
        "generation_expression": "a generated column's expression, with its literals",
    },
    "information_schema.domains": {
        "domain_default": "the domain's DEFAULT expression, with its literals",
    },
    "information_schema.element_types": {
        "domain_default": "a DEFAULT expression (NULL on PostgreSQL 15; refused like "
                          "information_schema.domains.domain_default)",
    },
    "information_schema.views": {
        "view_definition": "the view's query, with the literals it filters on",
    },
    "pg_catalog.pg_aggregate": {
        "agginitval": "the aggregate's INITCOND, a literal written in CREATE AGGREGATE",
        "aggminitval": "the aggregate's MINITCOND, a literal written in CREATE AGGREGATE",
    },
    "pg_catalog.pg_attribute": {
        "attmissingval": "the DEFAULT of ALTER TABLE ... ADD COLUMN, kept for older rows",
        "attfdwoptions": "a foreign table column's OPTIONS, literals written in DDL",
    },
    "pg_catalog.pg_class": {
        "relpartbound": "a partition's bound as an expression tree, with the literals of "
                        "FOR VALUES",
    },
    "pg_catalog.pg_constraint": {
        "conbin": "a CHECK constraint as an expression tree, with its literals",
    },
    "pg_catalog.pg_index": {
        "indexprs": "an index's expressions as an expression tree, with their literals",
        "indpred": "a partial index's WHERE as an expression tree, with its literals",
    },
    "pg_catalog.pg_indexes": {
        "indexdef": "the CREATE INDEX statement, with the literals of its expressions and "
                    "WHERE",
    },
    "pg_catalog.pg_matviews": {
        "definition": "the materialized view's query, with the literals it filters on",
    },
    "pg_catalog.pg_partitioned_table": {
        "partexprs": "the partition key's expressions as an expression tree, with their "
                     "literals",
    },
    "pg_catalog.pg_type": {
        "typdefault": "a domain's DEFAULT as written",
        "typdefaultbin": "a domain's DEFAULT as an expression tree, with its literals",
    },
    "pg_catalog.pg_views": {
        "definition": "the view's query, with the literals it filters on",
    },
}
"""Relation -> refused column -> what it shows (one line). Every other column of these
relations is readable; every relation listed is on ``SYSTEM_RELATIONS``."""


@dataclass(frozen=True)
class PartlyRefused:
    """A relation of :data:`REFUSED_COLUMNS` that a statement reads.

    Attributes:
        relation: Its qualified name (``pg_catalog.pg_type``), a key of the table.
        columns: Every column it has on this server, lower-cased.
    """

    relation: str
    columns: frozenset[str]

    @classmethod
    def read(cls, connection: Any, relation: str) -> PartlyRefused:
        """``relation`` with its columns as the server has them (system columns such as
        ``ctid`` too: they are columns, not attribute notation), through ``connection``
        (SQLAlchemy, in the statement's transaction)."""
        rows = connection.exec_driver_sql(_COLUMNS_SQL, {"name": relation}).fetchall()
        return cls(relation, frozenset(str(name).lower() for (name,) in rows))

    @property
    def refused(self) -> Mapping[str, str]:
        """Its refused columns, each with what it shows."""
        return REFUSED_COLUMNS[self.relation]

    def unreadable(self) -> str:
        """``R.a (what it shows) is not readable``, for every refused column."""
        listed = " and ".join(f"{self.relation}.{column} ({why})"
                              for column, why in sorted(self.refused.items()))
        return f"{listed} {'is' if len(self.refused) == 1 else 'are'} not readable"

    def fix(self) -> str:
        """What to write instead."""
        return f"name the columns you need: read the other columns of {self.relation}"


Refusal = tuple[str, str]
"""Why a statement is refused, and the fix."""
_Found = list[tuple[exp.Table, PartlyRefused]]
"""The statement's tables that are such relations, with what they resolved to."""
_LITERALS = "a literal written in DDL can be a credential"
_COLUMNS_SQL = (
    "SELECT a.attname::pg_catalog.text FROM pg_catalog.pg_attribute a "
    "WHERE a.attrelid OPERATOR(pg_catalog.=) pg_catalog.to_regclass(%(name)s) "
    "AND NOT a.attisdropped"
)
_NAME_BYTES = 63
"""PostgreSQL keeps the first 63 bytes of an identifier (NAMEDATALEN - 1)."""


def compared_name(written: str) -> str:
    """A name as PostgreSQL compares it — clipped to :data:`_NAME_BYTES`, so two long
    aliases that differ only past them are one — then lower-cased (quoted or not:
    conservative)."""
    return str(written).encode()[:_NAME_BYTES].decode("utf-8", "ignore").lower()


def column_refusal(sql: str, reads: Mapping[tuple[str, ...], PartlyRefused]
                   ) -> Refusal | None:
    """Why ``sql`` may reach a refused column (the rules in the module docstring), with
    the fix; None when it reads only readable columns.

    Args:
        sql: A statement the guard regenerated in PostgreSQL's dialect.
        reads: The relations it reads that have refused columns, by their name as written
            (:func:`~d2_notebook.data.sqlglot_guard.relation_parts`), as the catalog
            resolved them (search path, quoting and all).
    """
    tree = sqlglot.parse_one(sql, read=Dialect.POSTGRES.value)
    found = [(table, reads[relation_parts(table, Dialect.POSTGRES)])
             for table in tree.find_all(exp.Table)
             if not isinstance(table.this, exp.Func)
             and relation_parts(table, Dialect.POSTGRES) in reads]
    if not found:
        return None
    rows = _row_names(found)
    return (_alias_list(found) or _natural(tree, found) or _named(tree, found)
            or _stars(tree, found, rows) or _whole_rows(tree, rows))


def _aliases(table: exp.Table) -> list[exp.TableAlias]:
    """The aliases whose rows hold ``table``'s columns: its own, and those of the
    parenthesized joins around it (``(R AS c CROSS JOIN t) AS j``), up to its SELECT."""
    aliases = [table.args["alias"]] if table.args.get("alias") else []
    child, node = table, table.parent
    while node is not None and not isinstance(node, exp.Select | exp.SetOperation):
        if isinstance(node, exp.Subquery) and child.arg_key == "this" \
                and node.args.get("alias"):  # not a subquery's own alias, reached by joins
            aliases.append(node.args["alias"])
        child, node = node, node.parent
    return aliases


def _row_names(found: _Found) -> dict[str, list[PartlyRefused]]:
    """The names that stand for a whole row holding refused columns: each relation's name
    and every alias of :func:`_aliases`."""
    rows: dict[str, list[PartlyRefused]] = {}
    for table, read in found:
        names = [table.name, *(alias.name for alias in _aliases(table))]
        for name in {compared_name(name) for name in names}:
            rows.setdefault(name, []).append(read)
    return rows


def _alias_list(found: _Found) -> Refusal | None:
    for table, read in found:
        alias = next((a for a in _aliases(table) if a.columns), None)
        if alias is not None:
            return (f"the column list after alias {alias.name} renames the columns of "
                    f"{read.relation} by position, and {read.unreadable()} under any name: "
                    f"{_LITERALS}",
                    "drop the list and rename columns in the SELECT list (column AS name)")
    return None


def _natural(tree: exp.Expression, found: _Found) -> Refusal | None:
    if any(join.method == "NATURAL" for join in tree.find_all(exp.Join)):
        read = found[0][1]
        return (f"a NATURAL join compares every column of the same name, unnamed, and "
                f"{read.unreadable()}: {_LITERALS}", "join with ON or USING and name the "
                f"columns (read the other columns of {read.relation})")
    return None


def _named(tree: exp.Expression, found: _Found) -> Refusal | None:
    refused = {column: read for _, read in found for column in read.refused}
    for node in tree.find_all(exp.Identifier, exp.Var):
        name = compared_name(node.name)
        if name in refused and not isinstance(node.parent, exp.Table):
            read = refused[name]
            return (f"column {read.relation}.{name} is not readable: it is "
                    f"{read.refused[name]}, and {_LITERALS}", read.fix())
    return None


def _stars(tree: exp.Expression, found: _Found, rows: Mapping[str, list[PartlyRefused]]
           ) -> Refusal | None:
    for star in tree.find_all(exp.Star):
        parent = star.parent
        if isinstance(parent, exp.Count | exp.Dot):  # count(*); (expr).* checks expr
            continue
        if isinstance(parent, exp.Column):
            qualifier = compared_name(parent.table)
            written, reads = f"{qualifier}.*", rows.get(qualifier, [])
        else:
            select = star.find_ancestor(exp.Select)
            written = "`*`"
            reads = [read for table, read in found
                     if select is None or _reads_directly(select, table)]
        if reads:
            return (f"{written} reads every column of {reads[0].relation}, and "
                    f"{reads[0].unreadable()}: {_LITERALS}", reads[0].fix())
    return None


def _reads_directly(select: exp.Select, table: exp.Table) -> bool:
    """Whether ``table`` is in the FROM of ``select`` itself, parenthesized joins
    included, not in a subquery (whose ``*`` and columns are checked on their own)."""
    for part in (select.args.get("from_"), *select.args.get("joins", [])):
        if part is not None and any(node is table for node in _outside_queries(part)):
            return True
    return False


def _outside_queries(node: exp.Expression) -> Iterator[exp.Expression]:
    yield node
    for child in node.iter_expressions():
        if not isinstance(child, exp.Select | exp.SetOperation):
            yield from _outside_queries(child)


def _whole_rows(tree: exp.Expression, rows: Mapping[str, list[PartlyRefused]]
                ) -> Refusal | None:
    for node in tree.find_all(exp.Identifier, exp.Var):
        name = compared_name(node.name)
        parent = node.parent
        if name not in rows or isinstance(parent, exp.Table | exp.TableAlias) \
                or (isinstance(parent, exp.Alias) and node.arg_key == "alias"):
            continue  # a relation's name, an alias being defined
        if isinstance(parent, exp.Column) and node.arg_key == "table" \
                and not isinstance(parent.this, exp.Star):
            field = compared_name(parent.name)
            lacking = [read for read in rows[name] if field not in read.columns]
            if not lacking:
                continue  # name.column (a refused column was refused by _named)
            read = lacking[0]
            return (f"{read.relation} has no column {field}: PostgreSQL reads "
                    f"{name}.{field} as {field}({name}), a call over its whole row, and "
                    f"{read.unreadable()}: {_LITERALS}", read.fix())
        read = rows[name][0]
        return (f"{name} is the whole row of {read.relation} (to_jsonb({name}), "
                f"{name}::text ... read every column), and {read.unreadable()}: "
                f"{_LITERALS}", f"{read.fix()} ({name}.column)")
    return None
