"""A guarded statement that must be refused: shared by the PostgreSQL guard tests."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from d2_notebook.data.sources.sqlalchemy_source import SQLAlchemySource
from d2_notebook.errors import UnsafeSQLError


def refused(source: SQLAlchemySource, sql: str, fragments: Iterable[str],
            secrets: Iterable[str]) -> str:
    """Run ``sql`` through the guard: it must be refused with a message that starts
    "SQL refused: ", names every fragment and holds none of ``secrets``; returns it."""
    with pytest.raises(UnsafeSQLError) as caught:
        source.run(sql)
    message = str(caught.value)
    assert message.startswith("SQL refused: "), message
    for fragment in fragments:
        assert fragment in message, message
    assert [s for s in secrets if s in message] == [], message
    return message
