"""How SQL-generating code reads any source: DuckDB SQL in, the source's dialect out.

The analysis tools (and the dimension profiling and key inference under them) write their
SQL once, in DuckDB's dialect, and read the catalog as DuckDB describes it. A
:class:`DialectSQL` wraps the source they are handed (a ``GuardedSQL``, a DuckDB source,
a SQLAlchemy or Spark source) and gives them exactly that:

- :meth:`DialectSQL.run` transpiles each statement into the source's dialect
  (:func:`~d2_notebook.data.transpile`) and runs it through the source's own guard, caps
  and time limit: generated SQL gets no more trust than an agent's;
- :meth:`DialectSQL.tables` lists every table and view with its columns (types named as
  DuckDB names them) and row count, read through the source's own catalog API
  (``duckdb_columns()`` on DuckDB, the SQLAlchemy inspector or Spark's catalog elsewhere);
- :meth:`DialectSQL.key_constraints` gives the declared primary, unique and foreign keys
  in the shape of ``duckdb_constraints()``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from d2_notebook.data.dialects import Dialect
from d2_notebook.data.results import QueryResult
from d2_notebook.data.schema import ColumnInfo, TableInfo
from d2_notebook.data.transpile import transpile

__all__ = ["DialectSQL", "KeyConstraint", "dialect_sql", "duckdb_type"]

_COLUMNS_SQL = (
    "SELECT database_name, schema_name, table_name, column_name, data_type, is_nullable "
    "FROM system.main.duckdb_columns() WHERE NOT internal ORDER BY database_name, schema_name, "
    "table_name, column_index"
)
_CONSTRAINTS_SQL = (
    "SELECT database_name, schema_name, table_name, constraint_type, "
    "constraint_column_names, referenced_table, referenced_column_names "
    "FROM system.main.duckdb_constraints() WHERE constraint_type IN ('PRIMARY KEY', 'UNIQUE', "
    "'FOREIGN KEY') ORDER BY ALL"
)
_TEXT = {exp.DataType.Type.TEXT, exp.DataType.Type.VARCHAR, exp.DataType.Type.CHAR,
         exp.DataType.Type.NCHAR, exp.DataType.Type.NVARCHAR, exp.DataType.Type.BPCHAR,
         exp.DataType.Type.NAME}
_NAMED = {
    exp.DataType.Type.INT: "INTEGER", exp.DataType.Type.BIGINT: "BIGINT",
    exp.DataType.Type.SMALLINT: "SMALLINT", exp.DataType.Type.TINYINT: "TINYINT",
    exp.DataType.Type.DOUBLE: "DOUBLE", exp.DataType.Type.FLOAT: "FLOAT",
    exp.DataType.Type.BOOLEAN: "BOOLEAN", exp.DataType.Type.DATE: "DATE",
    exp.DataType.Type.TIMESTAMP: "TIMESTAMP", exp.DataType.Type.DATETIME: "TIMESTAMP",
    exp.DataType.Type.TIMESTAMPTZ: "TIMESTAMP WITH TIME ZONE",
    exp.DataType.Type.TIMESTAMPNTZ: "TIMESTAMP", exp.DataType.Type.UUID: "UUID",
}  # fmt: skip


@dataclass(frozen=True)
class KeyConstraint:
    """A declared key of a source's table, as ``duckdb_constraints()`` reports one.

    Attributes:
        database, schema, table: The constrained table's catalog coordinates.
        kind: ``PRIMARY KEY``, ``UNIQUE`` or ``FOREIGN KEY``.
        columns: The constrained columns, in key order.
        ref_table: The referenced table's name (foreign keys; "" otherwise).
        ref_columns: The referenced columns (foreign keys).
    """

    database: str
    schema: str
    table: str
    kind: str
    columns: tuple[str, ...]
    ref_table: str = ""
    ref_columns: tuple[str, ...] = ()

    def as_row(self) -> tuple[Any, ...]:
        """The ``duckdb_constraints()`` row shape key inference reads."""
        return (self.database, self.schema, self.table, self.kind, list(self.columns),
                self.ref_table, list(self.ref_columns))


def duckdb_type(type_text: str, dialect: Dialect) -> str:
    """A column type of ``dialect`` named as DuckDB names it (``text`` -> ``VARCHAR``,
    ``NUMERIC(6, 1)`` -> ``DECIMAL(6,1)``, Spark's ``STRING`` -> ``VARCHAR``); a type
    with no DuckDB counterpart keeps its own name, upper-cased."""
    try:
        built = exp.DataType.build(type_text, dialect=dialect.value)
    except (ParseError, TokenError, ValueError):
        return type_text.upper()
    if built.this in _TEXT:
        return "VARCHAR"
    if built.this is exp.DataType.Type.DECIMAL:
        sizes = [p.sql() for p in built.expressions]
        return f"DECIMAL({','.join(sizes)})" if sizes else "DECIMAL(18,3)"
    return _NAMED.get(built.this, type_text.upper())


class DialectSQL:
    """DuckDB SQL over any source (see the module docstring).

    Args:
        source: A ``GuardedSQL`` or any :class:`~d2_notebook.data.SQLSource`.
    """

    def __init__(self, source: Any) -> None:
        self.source = source
        self.dialect: Dialect = getattr(source, "dialect", Dialect.DUCKDB)

    @property
    def max_rows(self) -> int:
        """The source's default row cap."""
        return int(self.source.max_rows)

    @property
    def timeout_s(self) -> float:
        """The source's default time limit."""
        return float(self.source.timeout_s)

    @property
    def relationships(self) -> tuple[Any, ...]:
        """The join edges the user declared or vetoed on the source (none if it has
        none), so the catalog read through this wrapper keeps them."""
        return tuple(getattr(self.source, "relationships", ()))

    def run(self, sql: str, *, timeout_s: float | None = None,
            max_rows: int | None = None) -> QueryResult:
        """Run one DuckDB statement on the source, transpiled into its dialect.

        Raises:
            UnsafeSQLError, QueryFailedError, QueryTimeoutError: As the source's ``run``.
        """
        return self.source.run(transpile(sql, self.dialect), timeout_s=timeout_s,
                               max_rows=max_rows)

    def list_tables(self) -> list[TableInfo]:
        """The source's tables and views with row counts (its own ``list_tables``)."""
        return list(self.source.list_tables())

    def tables(self) -> list[TableInfo]:
        """Every table and view with its columns (DuckDB type names) and row count; views
        the guard refuses (``unreadable``) are left out on sources other than DuckDB."""
        if self.dialect is Dialect.DUCKDB:
            return self._duckdb_tables()
        out = []
        for info in self.source.list_tables():
            if info.unreadable:  # a view the guard refuses: never profiled or read
                continue
            columns = tuple(ColumnInfo(c.name, duckdb_type(c.type, self.dialect), c.nullable)
                            for c in info.columns)
            out.append(replace(info, columns=columns))
        return out

    def key_constraints(self) -> list[KeyConstraint]:
        """Declared primary, unique and foreign keys (none where the catalog has none)."""
        if self.dialect is Dialect.DUCKDB:
            frame = self.source.run(_CONSTRAINTS_SQL, max_rows=1_000_000).frame
            return [KeyConstraint(str(r[0]), str(r[1]), str(r[2]), str(r[3]),
                                  tuple(str(c) for c in r[4]), str(r[5] or ""),
                                  tuple(str(c) for c in (r[6] if r[6] is not None else [])))
                    for r in frame.itertuples(index=False, name=None)]
        read = getattr(self.source, "key_constraints", None)
        return list(read()) if callable(read) else []

    def _duckdb_tables(self) -> list[TableInfo]:
        frame = self.source.run(_COLUMNS_SQL, max_rows=1_000_000).frame
        columns: dict[tuple[str, str, str], list[ColumnInfo]] = {}
        for row in frame.itertuples(index=False):
            columns.setdefault((row[0], row[1], row[2]), []).append(
                ColumnInfo(str(row[3]), str(row[4]), bool(row[5])))
        return [replace(info, columns=tuple(columns.get((info.database, info.schema,
                                                         info.table), ())))
                for info in self.source.list_tables()]


def dialect_sql(source: Any) -> DialectSQL:
    """``source`` wrapped as a :class:`DialectSQL` (itself if it already is one)."""
    return source if isinstance(source, DialectSQL) else DialectSQL(source)
