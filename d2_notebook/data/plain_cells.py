"""Cells that hold whole values (a LIST, ARRAY, STRUCT, MAP or BLOB) and repeated column
names, made plain for the code that counts, matches and searches a result's cells.

DuckDB returns a LIST as a NumPy array, a STRUCT or MAP as a dict and a BLOB as bytes;
PostgreSQL and Spark return lists. None of them can be counted as distinct values or
compared as text as they are, and a result read back from a PostgreSQL or Spark source
may name two columns alike (``SELECT a.id, b.id``), where ``frame[name]`` is a frame.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from d2_notebook.nested_values import is_nested, nested_text

__all__ = ["plain_frame"]


def plain_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` as the summaries read it: every column name once (a repeat gets ``_1``,
    ``_2``, as DuckDB names them) and each list, struct, map or blob cell as its text
    (:func:`nested_text`), so that every column can be counted, matched and searched.

    Returns ``frame`` itself when it has neither; otherwise a copy (the rows, their order
    and the other cells unchanged).
    """
    nested = [position for position, dtype in enumerate(frame.dtypes) if dtype is np.dtype(object)
              and frame.iloc[:, position].map(is_nested).any()]
    if frame.columns.is_unique and not nested:
        return frame
    plain = frame.copy()
    for position in nested:
        plain.isetitem(position, frame.iloc[:, position].map(
            lambda v: nested_text(v) if is_nested(v) else v))
    plain.columns = _unique_names([str(c) for c in frame.columns])
    return plain


def _unique_names(names: list[str]) -> list[str]:
    """``names`` with each repeat renamed ``name_1``, ``name_2``, ... (skipping a name
    another column has)."""
    taken = set(names)
    seen: set[str] = set()
    unique = []
    for name in names:
        new, suffix = name, 0
        while new in seen or (suffix and new in taken):
            suffix += 1
            new = f"{name}_{suffix}"
        seen.add(new)
        unique.append(new)
    return unique
