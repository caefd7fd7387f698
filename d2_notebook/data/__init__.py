"""Guarded, read-only SQL over the user's DuckDB data, and schema exploration.

Everything the rest of d2_notebook learns about the user's data comes through
:class:`GuardedSQL`; :func:`check_sql` is the static checker it applies to every statement.
"""

from d2_notebook.data.guarded_sql import GuardedSQL
from d2_notebook.data.results import QueryResult
from d2_notebook.data.schema import ColumnInfo, TableInfo
from d2_notebook.data.sql_guard import check_sql

__all__ = ["ColumnInfo", "GuardedSQL", "QueryResult", "TableInfo", "check_sql"]
