"""Storing query results on the board so they read back *equal*.

A result is kept as one Arrow IPC stream (the encoding that preserves pandas dtypes:
nullable integers, ``str``, datetimes, timedeltas, lists, structs, maps) plus a column list
holding the real column names and dtypes. Columns are stored under positional names
(``c0``, ``c1``, ...) so duplicate or non-string names survive. Object columns keep
their missing-value marker; the rare Python objects Arrow cannot hold (``uuid.UUID``,
mixed types, a MAP inside a STRUCT or LIST) are stored as their text and flagged
``lossy``.
"""

from __future__ import annotations

import hashlib
import io

import pandas as pd
import pyarrow as pa

from d2_notebook.board.records import ColumnSpec
from d2_notebook.nested_values import is_nested, nested_text, varying_key_places


def encode_frame(frame: pd.DataFrame) -> tuple[bytes, tuple[ColumnSpec, ...]]:
    """Encode ``frame`` (its index is not kept) as Arrow IPC bytes and column specs."""
    specs: list[ColumnSpec] = []
    arrays: dict[str, pa.Array] = {}
    for position in range(frame.shape[1]):
        column = frame.iloc[:, position]
        name = str(frame.columns[position])
        na = _na_marker(column) if column.dtype == object else None
        try:
            array = _arrow_array(column)
            lossy = False
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
            array = pa.Array.from_pandas(column.map(_cell_text))
            lossy = True
        arrays[f"c{position}"] = array
        specs.append(ColumnSpec(name=name, dtype=str(column.dtype), na=na, lossy=lossy))
    table = pa.table(arrays) if arrays else pa.table({})
    if not arrays:
        table = pa.Table.from_batches([], schema=pa.schema([]))
    metadata = {b"rows": str(len(frame)).encode()}
    table = table.replace_schema_metadata(metadata)
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue(), tuple(specs)


def decode_frame(blob: bytes, columns: tuple[ColumnSpec, ...]) -> pd.DataFrame:
    """Rebuild the DataFrame stored by :func:`encode_frame`."""
    table = pa.ipc.open_stream(io.BytesIO(blob)).read_all()
    rows = int((table.schema.metadata or {}).get(b"rows", b"0"))
    series = []
    for position, spec in enumerate(columns):
        series.append(_decode_column(table.column(f"c{position}"), spec))
    frame = pd.concat(series, axis=1) if series else pd.DataFrame(index=range(rows))
    frame.columns = [spec.name for spec in columns]
    return frame


def result_hash(blob: bytes, row_count: int) -> str:
    """A short content hash of a stored result (equal results, equal hashes)."""
    digest = hashlib.sha256(blob)
    digest.update(str(row_count).encode())
    return digest.hexdigest()[:16]


def _decode_column(chunked: pa.ChunkedArray, spec: ColumnSpec) -> pd.Series:
    if spec.dtype == "object" or spec.lossy:
        values = chunked.to_pylist()
        if pa.types.is_map(chunked.type):  # (key, value) pairs back to the dicts stored
            values = [None if v is None else dict(v) for v in values]
        marker = pd.NA if spec.na == "NA" else (float("nan") if spec.na == "nan" else None)
        values = [marker if v is None else v for v in values]
        return pd.Series(values, dtype=object)
    series = chunked.to_pandas(types_mapper=_types_mapper(spec))
    if str(series.dtype) != spec.dtype:
        series = series.astype(spec.dtype)
    return series


def _types_mapper(spec: ColumnSpec):
    dtype = spec.dtype

    def mapper(arrow_type: pa.DataType) -> object | None:
        try:
            pandas_dtype = pd.api.types.pandas_dtype(dtype)
        except TypeError:
            return None
        return pandas_dtype if isinstance(pandas_dtype, pd.api.extensions.ExtensionDtype) else None

    return mapper


def _cell_text(value: object) -> str | None:
    """A cell Arrow cannot hold as it is, as text (a nested value as everywhere else:
    ``[1, 2]``, ``{'k': 1}``), None for a missing one."""
    if _is_missing(value):
        return None
    return nested_text(value) if is_nested(value) else str(value)


def _arrow_array(column: pd.Series) -> pa.Array:
    """``column`` as Arrow holds it; a column of dicts whose keys differ from row to row
    (a MAP, as DuckDB returns one) as an Arrow map, since as a struct each row would read
    back with every row's keys, as None.

    Raises:
        pa.ArrowInvalid: Arrow cannot hold it as it is (a map inside a struct or list:
            the caller keeps its text).
    """
    places = varying_key_places(column) if column.dtype == object else set()
    if not places:
        return pa.Array.from_pandas(column)
    if places == {()} and all(isinstance(v, dict) for v in column if not _is_missing(v)):
        return _map_array(column)
    raise pa.ArrowInvalid("a map inside a struct, a list or another map")


def _map_array(column: pd.Series) -> pa.Array:
    """An Arrow MAP array of the dicts of ``column`` (missing cells null)."""
    pairs = [None if _is_missing(v) else list(v.items()) for v in column]
    items = [pair for row in pairs if row for pair in row]
    key_type = pa.array([k for k, _ in items]).type if items else pa.string()
    value_type = pa.array([v for _, v in items]).type if items else pa.null()
    return pa.array(pairs, type=pa.map_(key_type, value_type))


def _na_marker(column: pd.Series) -> str | None:
    for value in column:
        if value is pd.NA:
            return "NA"
        if value is None:
            return "None"
        if isinstance(value, float) and value != value:
            return "nan"
    return None


def _is_missing(value: object) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and value != value)
