"""Guarded, read-only SQL over the user's data, and schema exploration.

Everything the rest of d2_notebook learns about the user's data comes through a
:class:`SQLSource` made by :func:`open_source`: DuckDB (:class:`GuardedSQL`, whose
static checker is :func:`check_sql`), a SQLAlchemy engine (PostgreSQL ...) or a Spark
session. :func:`transpile` rewrites DuckDB SQL for the other dialects.
"""

from d2_notebook.data.dialects import Dialect
from d2_notebook.data.guarded_sql import GuardedSQL
from d2_notebook.data.keys import Relationship
from d2_notebook.data.relationship_file import RelationshipsFileError, read_relationships_file
from d2_notebook.data.results import QueryResult
from d2_notebook.data.schema import ColumnInfo, TableInfo
from d2_notebook.data.sources import (
    ForeignKey,
    SourceInfo,
    SourceKind,
    SQLSource,
    is_source_input,
    open_source,
)
from d2_notebook.data.sql_guard import check_sql
from d2_notebook.data.transpile import transpile

__all__ = ["ColumnInfo", "Dialect", "ForeignKey", "GuardedSQL", "QueryResult", "Relationship",
           "RelationshipsFileError", "SQLSource", "SourceInfo", "SourceKind", "TableInfo",
           "check_sql", "is_source_input", "open_source", "read_relationships_file",
           "transpile"]
