"""Whole values in one cell: a LIST or ARRAY (a NumPy array from DuckDB, a list from
PostgreSQL or Spark), a STRUCT or MAP (a dict), a BLOB (bytes). Their text, the same
wherever a cell is shown, stored or compared, and whether their maps' keys vary.

A leaf module: the board (storing results) and ``data/`` (summarising them) both read it.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

__all__ = ["NESTED_CELLS", "is_nested", "nested_text", "varying_key_places"]

NESTED_CELLS = (list, tuple, dict, set, frozenset, np.ndarray, bytes, bytearray, memoryview)
"""Cells a query returns whole values in: a LIST or ARRAY (a NumPy array from DuckDB, a
list from PostgreSQL or Spark), a STRUCT or MAP (a dict), a BLOB (bytes)."""


def is_nested(value: object) -> bool:
    """Whether a cell holds a list, struct, map, array or blob."""
    return isinstance(value, NESTED_CELLS)


def nested_text(value: object) -> str:
    """A list, struct, map or blob cell as its text: ``[1, 2]``, ``{'channel': 'web'}``
    (a NumPy array as the list it holds, a blob's bytes as written)."""
    return str(_plain(value))


def _plain(value: object) -> object:
    if isinstance(value, bytes | bytearray | memoryview):
        return _Verbatim(str(bytes(value))[2:-1])
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, np.ndarray | list | tuple | set | frozenset):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


class _Verbatim(str):
    """A blob's text, shown without quotes inside a list or struct."""

    def __repr__(self) -> str:
        return str(self)


def varying_key_places(values: Iterable[object]) -> set[tuple[object, ...]]:
    """Where in these values the dicts have different keys from one to another (``()``:
    the cells themselves; ``("s",)``: a struct's field ``s``; ``("[]",)``: a list's
    items; ``("{}",)``: a map's values): a MAP, whose rows name their own keys. Stored
    as a struct, every row would read back with every other row's keys, as None."""
    values = list(values)
    maps: set[tuple[object, ...]] = set()
    while True:  # a place found to be a map gathers its values under one place, "{}"
        found: dict[tuple[object, ...], set[tuple[object, ...]]] = {}
        for value in values:
            _key_sets(value, (), found, maps)
        varying = {place for place, keys in found.items() if len(keys) > 1}
        if varying <= maps:
            return varying
        maps |= varying


def _key_sets(value: object, place: tuple[object, ...],
              found: dict[tuple[object, ...], set[tuple[object, ...]]],
              maps: set[tuple[object, ...]]) -> None:
    if isinstance(value, dict):
        found.setdefault(place, set()).add(tuple(value))
        for key, inner in value.items():
            _key_sets(inner, (*place, "{}" if place in maps else key), found, maps)
    elif isinstance(value, np.ndarray | list | tuple):
        for inner in value:
            _key_sets(inner, (*place, "[]"), found, maps)
