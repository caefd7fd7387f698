"""Shared fixtures. Tests are hermetic: no real model request can leave this process."""

from __future__ import annotations

from pathlib import Path

import pytest

import d2_notebook.llm
from d2_notebook.board import Board


@pytest.fixture(autouse=True)
def _no_real_model_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any real model request in a test fails loudly instead of reaching an API."""
    monkeypatch.setenv("D2_BLOCK_MODEL_REQUESTS", "1")
    monkeypatch.setattr(d2_notebook.llm, "ALLOW_MODEL_REQUESTS", False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


@pytest.fixture
def board_path(tmp_path: Path) -> Path:
    """Where a test's board file lives."""
    return tmp_path / "test.d2board"


@pytest.fixture
def board(board_path: Path) -> Board:
    """A fresh board in a real SQLite file."""
    opened = Board.open(board_path)
    yield opened
    opened.close()


# --- real servers for the source tests (tests/test_source_*.py) ---------------------


def _require(tool: str, install: str, skip_variable: str) -> None:
    """Fail (not skip) when a server the suite needs is missing, unless the user opted out."""
    import os

    if os.environ.get(skip_variable) == "1":
        pytest.skip(f"{skip_variable}=1: {tool} tests left out")
    pytest.fail(f"{tool} is not installed: {install} (.ci/run does), or set "
                f"{skip_variable}=1 to leave these tests out", pytrace=False)


@pytest.fixture(scope="session")
def postgres_cluster():
    """A throwaway PostgreSQL cluster (Unix socket, unprivileged user) for the session."""
    from benchmark.local_servers import PostgresCluster, postgres_bin_dir

    if postgres_bin_dir() is None:
        _require("PostgreSQL", "apt-get install postgresql", "D2_SKIP_POSTGRES")
    cluster = PostgresCluster().start()
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def hospital_pg_url(postgres_cluster) -> str:
    """URL of the hospital demo database, as the read-only role ``analyst``."""
    return postgres_cluster.load_hospital()
