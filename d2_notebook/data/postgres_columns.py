"""Columns of readable system relations that show literals written in DDL.

A literal written in DDL can be a credential (``ALTER TABLE t ALTER COLUMN token SET
DEFAULT 'sk-live-…'``, a domain's ``DEFAULT``, a ``CHECK (x <> 'secret')``, a view's
``WHERE key = 'secret'``, an index predicate). The guard refuses the functions that show
them (``pg_get_expr``, ``pg_get_viewdef`` ...); :data:`REFUSED_COLUMNS` lists the columns
of the relations on :data:`~d2_notebook.data.postgres_catalog.SYSTEM_RELATIONS` that hold
them as text or as an expression tree (``pg_node_tree`` prints a constant's bytes).
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["REFUSED_COLUMNS"]

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
