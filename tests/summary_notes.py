"""Reading the column profile notes out of a schema summary (DuckDB, PostgreSQL, Spark)."""

from __future__ import annotations

import re

# schema.profile_note's notes: those that apply, in this order, joined by ", "
_NULL = r"(?:\d+% null(?:: exactly where [^()]*?)?|all null)"
_ZERO = r"(?:0 in \d+% of rows|all 0)"
_BELOW = r"(?:below 0 in \d+% of rows|all below 0)"
_ONE = r"(?:one value in every row|one value where not null)"
_ORDER = r"(?:earlier than \S+ in \d+ of the \d+ rows with both set)"
_FIRST = (rf"(?:{_NULL}(?:, {_ZERO})?(?:, {_BELOW})?(?:, {_ONE})?"
          rf"|{_ZERO}(?:, {_BELOW})?|{_BELOW}|{_ONE})")
_NOTE = re.compile(rf'  ("[^"]+"|\S+) .*? (\((?:{_FIRST}(?:, {_ORDER})*'
                   rf'|{_ORDER}(?:, {_ORDER})*)\))')


def profile_notes(summary: str) -> dict[str, str]:
    """Each column's profile note (``(26% null)``) by its name as written, where it has
    one."""
    notes = {}
    for line in summary.splitlines():
        found = _NOTE.fullmatch(line)
        if found:
            notes[found.group(1)] = found.group(2)
    return notes
