"""The hint a syntax error at a DuckDB keyword gets.

``SELECT count(*) month`` fails with 'syntax error at or near "month"': a bare alias may
not be a keyword, even an unreserved one (``year``, ``day``, ``hour``), though
``AS month`` works. The parser's message does not say so, and real-model agents spent a
turn renaming a column they never saw as a keyword.
"""

from __future__ import annotations

import re
from functools import cache

from d2_notebook.data.parse_tree import parser_cursor

__all__ = ["keyword_hint"]

_NEAR = re.compile(r'syntax error at or near "([^"]+)"')


@cache
def _keywords() -> frozenset[str]:
    """The installed DuckDB's unreserved keywords (``duckdb_keywords()``), lower case: an
    error at a reserved one (``FROM``) or at an operator word (``IS``, ``LIKE``) is
    mostly about what comes before it."""
    rows = parser_cursor().execute("SELECT keyword_name FROM duckdb_keywords() "
                                   "WHERE keyword_category = 'unreserved'").fetchall()
    return frozenset(str(name).lower() for (name,) in rows)


def keyword_hint(message: str) -> str | None:
    """The hint for a parser error at a keyword (``month``): write ``AS`` before it
    where it names a column, or quote it; None when the error is at no keyword."""
    near = _NEAR.search(message)
    if near is None or near.group(1).lower() not in _keywords():
        return None
    word = near.group(1)
    return (f'"{word}" is a DuckDB keyword: put AS before it where it names a column '
            f'(count(*) AS {word}), or quote it ("{word}"), or choose another name')
