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
