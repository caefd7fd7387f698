"""Spark's guard (no Spark session needed): models, secrets and XML parsers are refused by
name and family, in any spelling or position, with the reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from d2_notebook.data.dialects import Dialect
from d2_notebook.data.sqlglot_guard import check_statement
from d2_notebook.errors import UnsafeSQLError

CORPUS = Path(__file__).parent / "sql_corpus" / "spark_hostile_services.sql"
HOSTILE = [tuple(part.strip() for part in line.split("|||", 1))
           for line in CORPUS.read_text().splitlines()
           if line.strip() and not line.startswith("-- ")]


def test_the_corpus_is_big_enough():
    assert len(HOSTILE) >= 15


@pytest.mark.parametrize(("fragment", "sql"), HOSTILE, ids=[s for _, s in HOSTILE])
@pytest.mark.parametrize("dialect", [Dialect.SPARK, Dialect.DATABRICKS])
def test_service_secret_and_xml_functions_are_refused(dialect, fragment, sql):
    with pytest.raises(UnsafeSQLError, match=r"^SQL refused: function \w+\(\) is not allowed"
                       ) as caught:
        check_statement(sql, dialect, timeout_s=5)
    assert fragment in str(caught.value)
    assert "/etc/passwd" not in str(caught.value)


@pytest.mark.parametrize("sql", [
    "SELECT sex, count(*) FROM patients GROUP BY sex",
    "SELECT aes_encrypt('a', 'k0123456789abcde'), to_xml(named_struct('a', 1))",
    "SELECT explode(array(1, 2)) AS v",
    "SELECT aim, airport FROM (SELECT 1 AS aim, 2 AS airport)",
])
def test_near_names_still_run(sql):
    assert check_statement(sql, Dialect.SPARK, timeout_s=5).sql
