"""Reading the column profile notes out of a schema summary (DuckDB, PostgreSQL, Spark)."""

from __future__ import annotations

import re

_NOTE = re.compile(r'  ("[^"]+"|\S+) .*? (\((?:\d+% null|all null|0 in \d+% of rows|all 0)'
                   r'(?:, (?:0 in \d+% of rows|all 0))?\))')


def profile_notes(summary: str) -> dict[str, str]:
    """Each column's profile note (``(26% null)``) by its name as written, where it has
    one."""
    notes = {}
    for line in summary.splitlines():
        found = _NOTE.fullmatch(line)
        if found:
            notes[found.group(1)] = found.group(2)
    return notes
