"""``python -m benchmark reprice``: a recorded team run priced again with other models for
some roles, on a real board recorded with a real model; bad input names the fix."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from shared_dir import shared_dir

from benchmark.__main__ import main
from benchmark.reprice import reprice
from d2_notebook.board import Board
from d2_notebook.llm import TokenUsage
from d2_notebook.llm.pricing import cost_of

HAIKU = "anthropic:claude-haiku-4-5"
SONNET = "anthropic:claude-sonnet-4-6"


@pytest.fixture
def real_board(tmp_path: Path) -> Path:
    copy = tmp_path / "full.d2board"
    shutil.copy(shared_dir("real-boards", "sqlcity-s0-012--full.d2board"), copy)
    return copy


def _priced(board: Board, role: str, model: str) -> float:
    """Each of ``role``'s calls priced at ``model`` from its recorded tokens, summed."""
    return sum(cost_of(model, TokenUsage(c.input_tokens or 0, c.output_tokens or 0,
                                         c.cache_read_tokens or 0, c.cache_write_tokens or 0)).usd
               for c in board.list_model_calls() if c.role == role)


def test_only_the_mapped_roles_change_price(real_board: Path) -> None:
    with Board.open(real_board, read_only=True) as board:
        prices = {p.role: p for p in reprice(board, {"judge": HAIKU})}
        judge = prices["judge"]
        assert judge.model == HAIKU and judge.calls == 9
        assert judge.usd == pytest.approx(_priced(board, "judge", HAIKU))
        assert judge.usd < judge.recorded_usd
        for role in ("hypothesizer", "collector", "orchestrator", "reporter"):
            assert prices[role].usd == pytest.approx(prices[role].recorded_usd)
            assert prices[role].model == prices[role].recorded_model
        recorded = sum(p.recorded_usd for p in prices.values())
        assert recorded == pytest.approx(sum(
            c.cost_usd for c in board.list_model_calls()), rel=1e-6)


def test_the_economy_preset_prices_its_roles_at_the_smaller_model(
        real_board: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = real_board.read_bytes()
    assert main(["reprice", str(real_board), "--preset", "economy", "--model", SONNET]) == 0
    out = capsys.readouterr().out
    lines = {line.split()[0]: line for line in out.splitlines()}
    for role in ("collector", "judge", "orchestrator"):
        assert lines[role].endswith(HAIKU)
    for role in ("hypothesizer", "reporter"):
        assert lines[role].endswith(SONNET)
    assert "× the recorded cost)" in lines["total"]
    assert real_board.read_bytes() == before  # read only


def test_the_default_preset_prices_every_role_at_the_model(
        real_board: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--preset default prices every role at --model (it used to leave every recorded
    model in place, so an economy run "at the default's prices" came out at 1.00×)."""
    assert main(["reprice", str(real_board), "--preset", "default", "--model", HAIKU]) == 0
    out = capsys.readouterr().out
    lines = {line.split()[0]: line for line in out.splitlines()}
    roles = ("hypothesizer", "orchestrator", "collector", "judge", "reporter")
    for role in roles:
        assert lines[role].endswith(HAIKU)
    with Board.open(real_board, read_only=True) as board:
        everything = sum(_priced(board, role, HAIKU) for role in roles)
    assert f"${everything:.3f}" in lines["total"]


@pytest.mark.parametrize(("argv", "message"), [
    (["--role-model", "judge"], "write ROLE=MODEL"),
    (["--role-model", "judge=nobody:model"], "no price is known for 'nobody:model'"),
    (["--preset", "economy"], "--preset needs --model"),
    (["--preset", "economy", "--model", "offline:x"], "knows no smaller model"),
])
def test_bad_input_names_the_fix(real_board: Path, capsys: pytest.CaptureFixture[str],
                                 argv: list[str], message: str) -> None:
    assert main(["reprice", str(real_board), *argv]) == 2
    assert message in capsys.readouterr().out


def test_a_missing_board_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reprice", str(tmp_path / "none.d2board")]) == 2
    assert "no board at" in capsys.readouterr().out
    assert not (tmp_path / "none.d2board").exists()
