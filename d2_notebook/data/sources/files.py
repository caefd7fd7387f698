"""Data files as a source: CSV and Parquet files, one table per file, through DuckDB.

:func:`open_data_files` reads a file, or every CSV/Parquet file of a folder, with
DuckDB's own readers (``read_csv``'s type sniffing, ``read_parquet``) into tables of a new
in-memory database, and hands that database to a :class:`DuckDBSource` like any other:
the same guard, caps and time limits. The tables are loaded once, before the guard sees
anything, so agent SQL reads tables and never a file.

A table is named after its file: the stem in lower case, with every character other than
a letter, digit or underscore replaced by ``_`` (``Sales 2024.csv`` -> ``sales_2024``);
two files with the same name get ``_2``, ``_3``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from enum import Enum
from pathlib import Path

import duckdb

from d2_notebook.data.dialects import Dialect
from d2_notebook.data.keys import Relationship
from d2_notebook.data.sources.base import SourceInfo, SourceKind
from d2_notebook.data.sources.duckdb_source import DuckDBSource
from d2_notebook.errors import QueryFailedError

__all__ = ["DataFileKind", "DataFilesSource", "data_file_kind", "is_data_files",
           "open_data_files", "path_source_problem", "table_name_for"]

_DUCKDB_MAGIC = b"DUCK"
"""DuckDB database files carry these bytes at offset 8."""


class DataFileKind(Enum):
    """The data files DuckDB reads for us, by the reader that reads them."""

    CSV = "read_csv"
    PARQUET = "read_parquet"


_SUFFIXES = {".csv": DataFileKind.CSV, ".tsv": DataFileKind.CSV, ".txt": DataFileKind.CSV,
             ".csv.gz": DataFileKind.CSV, ".tsv.gz": DataFileKind.CSV,
             ".parquet": DataFileKind.PARQUET, ".pq": DataFileKind.PARQUET}


def data_file_kind(path: Path) -> DataFileKind | None:
    """The kind of a data file by its name (``.csv``, ``.tsv``, ``.csv.gz``, ``.parquet``,
    ``.pq``), or None."""
    name = path.name.lower()
    return next((kind for suffix, kind in _SUFFIXES.items() if name.endswith(suffix)), None)


def is_data_files(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a folder or a CSV/Parquet file (not a DuckDB database)."""
    target = Path(path)
    return target.is_dir() or (target.is_file() and data_file_kind(target) is not None
                               and not _is_duckdb_file(target))


def path_source_problem(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` cannot be investigated as a DuckDB file, a CSV/Parquet file or a folder
    of them (one line naming the fix), or None when it can. Reads at most 12 bytes."""
    target = Path(path).expanduser()
    if target.is_dir() or is_data_files(target) or _is_duckdb_file(target):
        return None
    if not target.exists():
        return (f"no file or folder at {str(path)!r}; pass a DuckDB file, a CSV or Parquet "
                "file, a folder of them, or a SQLAlchemy URL (postgresql+psycopg://...)")
    return (f"{str(path)!r} is not a DuckDB, CSV or Parquet file; pass a .duckdb file, a "
            ".csv/.parquet file or a folder of them")


def table_name_for(path: Path, taken: set[str]) -> str:
    """The table name of ``path`` (see the module docstring), not in ``taken``."""
    stem = path.name
    suffix = next((s for s in _SUFFIXES if stem.lower().endswith(s)), "")
    stem = stem[: len(stem) - len(suffix)] if suffix else path.stem
    base = re.sub(r"\W", "_", stem.lower(), flags=re.ASCII).strip("_") or "data"
    if base[0].isdigit():
        base = f"t_{base}"
    name, number = base, 1
    while name in taken:
        number += 1
        name = f"{base}_{number}"
    return name


def open_data_files(path: str | os.PathLike[str], *, timeout_s: float = 30.0,
                    max_rows: int = 10_000,
                    relationships: Sequence[str | Relationship] = ()) -> DuckDBSource:
    """A source over the CSV/Parquet file at ``path``, or over every such file of the
    folder at ``path`` (not its subfolders), one table per file.

    Raises:
        QueryFailedError: ``path`` is missing, is another kind of file, the folder holds
            no CSV or Parquet file, or DuckDB cannot read a file (the message names it).
    """
    target = Path(path)
    files = _data_files(target)
    con = duckdb.connect(":memory:")
    taken: set[str] = set()
    try:
        for file in files:
            name = table_name_for(file, taken)
            taken.add(name)
            reader = data_file_kind(file)
            assert reader is not None
            try:
                con.execute(f'CREATE TABLE "{name}" AS SELECT * FROM {reader.value}(?)',
                            [str(file)])
            except duckdb.Error as exc:
                raise QueryFailedError(
                    f"cannot read {str(file)!r} as {reader.name}: {exc}; check the file, "
                    "or remove it from the folder") from exc
    except BaseException:
        con.close()
        raise
    return DataFilesSource(con, str(target), timeout_s=timeout_s, max_rows=max_rows,
                           relationships=relationships)


class DataFilesSource(DuckDBSource):
    """A :class:`DuckDBSource` over an in-memory database loaded from data files; it owns
    that database and closes it with itself. Its ``info.url`` is the file or folder."""

    def __init__(self, con: duckdb.DuckDBPyConnection, origin: str, *, timeout_s: float,
                 max_rows: int, relationships: Sequence[str | Relationship] = ()) -> None:
        super().__init__(con, timeout_s=timeout_s, max_rows=max_rows,
                         relationships=relationships)
        self._files_con = con
        self._info = SourceInfo(SourceKind.DUCKDB, Dialect.DUCKDB, origin)

    def close(self) -> None:
        """Close the source and the in-memory database behind it."""
        super().close()
        self._files_con.close()


def _data_files(target: Path) -> list[Path]:
    if target.is_dir():
        files = sorted(p for p in target.iterdir()
                       if p.is_file() and data_file_kind(p) is not None)
        if not files:
            raise QueryFailedError(
                f"folder {str(target)!r} holds no CSV or Parquet file (.csv, .tsv, "
                ".csv.gz, .parquet, .pq); pass a folder of data files or a DuckDB file")
        return files
    if not target.is_file():
        raise QueryFailedError(f"no file or folder at {str(target)!r}; check the path")
    if data_file_kind(target) is None:
        raise QueryFailedError(
            f"{str(target)!r} is not a DuckDB, CSV or Parquet file; pass a .duckdb file, "
            "a .csv/.parquet file or a folder of them")
    return [target]


def _is_duckdb_file(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(12)[8:12] == _DUCKDB_MAGIC
    except OSError:
        return False
