"""SQL dialects the data layer speaks, named as sqlglot names them.

A :class:`Dialect` is what a source's SQL is written in: the guard parses a statement in
its source's dialect, :func:`~d2_notebook.data.transpile` rewrites DuckDB SQL into it,
and the prompts tell the agents which one to write.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["Dialect"]


class Dialect(StrEnum):
    """A SQL dialect (the value is sqlglot's name for it)."""

    DUCKDB = "duckdb"
    POSTGRES = "postgres"
    SPARK = "spark"
    MYSQL = "mysql"
    TRINO = "trino"
    SNOWFLAKE = "snowflake"
    BIGQUERY = "bigquery"
    REDSHIFT = "redshift"
    DATABRICKS = "databricks"
    TSQL = "tsql"
    ORACLE = "oracle"
    SQLITE = "sqlite"

    @property
    def title(self) -> str:
        """How the dialect is named for people and prompts (``PostgreSQL``, ``Spark SQL``)."""
        return _TITLES.get(self, self.value.capitalize())

    @classmethod
    def from_sqlalchemy(cls, name: str) -> Dialect:
        """The dialect of a SQLAlchemy backend name (``postgresql``, ``mssql`` ...).

        Raises:
            ValueError: sqlglot has no dialect for this backend (the message lists the
                supported ones).
        """
        value = _SQLALCHEMY_NAMES.get(name, name)
        try:
            return cls(value)
        except ValueError:
            known = ", ".join(sorted(_SQLALCHEMY_NAMES) + [d.value for d in _SQL_ONLY])
            raise ValueError(
                f"no SQL guard for SQLAlchemy backend {name!r}; supported backends: {known}"
            ) from None


_TITLES = {
    Dialect.DUCKDB: "DuckDB", Dialect.POSTGRES: "PostgreSQL", Dialect.SPARK: "Spark SQL",
    Dialect.MYSQL: "MySQL", Dialect.BIGQUERY: "BigQuery", Dialect.TSQL: "SQL Server (T-SQL)",
    Dialect.SQLITE: "SQLite",
}  # fmt: skip
_SQLALCHEMY_NAMES = {
    "postgresql": "postgres", "mysql": "mysql", "mariadb": "mysql", "trino": "trino",
    "snowflake": "snowflake", "bigquery": "bigquery", "redshift": "redshift",
    "databricks": "databricks", "mssql": "tsql", "oracle": "oracle", "sqlite": "sqlite",
    "duckdb": "duckdb",
}  # fmt: skip
_SQL_ONLY = (Dialect.SPARK,)
