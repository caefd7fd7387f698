"""Budget stops under jitter replay to the same board, and a replay that diverges
fails loudly instead of finishing through a fallback."""

from __future__ import annotations

import asyncio
import json
import random
import sqlite3

import duckdb
import pytest
from board_fingerprint import fingerprint
from test_detective_scheduler import Claims

from d2_notebook import investigate
from d2_notebook.board import Board, ModelCallStatus
from d2_notebook.errors import ReplayDivergenceError
from d2_notebook.llm import ModelRequest, ModelResponse

QUESTION = "Which ward does best?"
PRICED = "claude-sonnet-4-6"  # the offline policy's estimated usage is priced as this model's
RUNS = 40
CAPS = {"max_calls": 14, "max_tokens": 60_000, "max_usd": 0.60}  # each stops mid-collection


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("CREATE TABLE patients AS SELECT range AS id, range % 3 AS ward, "
                "range % 2 AS treated FROM range(40)")
    return con


class JitteryClaims(Claims):
    """Six claims, one refined, with a random delay of up to 3 ms on every call, so
    four parallel collectors finish in another order in every run."""

    def __init__(self, seed: int) -> None:
        super().__init__(refine=("Claim 2 holds",))
        self.random = random.Random(seed)

    async def respond(self, request: ModelRequest) -> ModelResponse:
        await asyncio.sleep(self.random.random() * 0.003)
        return self(request)


@pytest.mark.parametrize("cap", sorted(CAPS))
async def test_budget_stopped_runs_replay_to_the_same_board(con, cap):
    refusal_points = set()
    for seed in range(RUNS):
        original = await investigate(con, QUESTION, collectors=4,
                                     model=JitteryClaims(seed).model(model_id=PRICED),
                                     **{cap: CAPS[cap]})
        assert original.state == "finished" and original.stop_reason, f"seed {seed}"
        assert cap in original.stop_reason
        replayed = await investigate(con, None, replay=original.board)
        assert replayed.state == "finished", f"seed {seed}"
        assert replayed.stop_reason == original.stop_reason, f"seed {seed}"
        assert fingerprint(replayed.board) == fingerprint(original.board), f"seed {seed}"
        calls = original.board.list_model_calls(refused=True)
        refusal_points.add(tuple(c.agent for c in calls
                                 if c.status is ModelCallStatus.REFUSED))
        original.board.close()
        replayed.board.close()
    assert len(refusal_points) > 1, "the jitter should move where the budget stops"


def test_the_stop_message_names_the_cap_only():
    from d2_notebook.errors import BudgetExceededError
    from d2_notebook.llm import Budget, Usage

    for budget, used in ((Budget(max_tokens=100), 107), (Budget(max_tokens=100), 151)):
        usage = Usage(input_tokens=used)
        with pytest.raises(BudgetExceededError) as caught:
            budget.check(usage)
        assert str(used) not in str(caught.value) and "max_tokens=100" in str(caught.value)


async def test_a_replay_that_diverges_at_the_reporter_fails_loudly(con, tmp_path):
    recorded = tmp_path / "recorded.d2board"
    original = await investigate(con, QUESTION, board=recorded, model=Claims().model())
    original.board.close()
    with sqlite3.connect(recorded) as db:  # the recorded reporter was asked something else
        (call_id, request), = db.execute(
            "SELECT id, request FROM model_calls WHERE role = 'reporter'").fetchall()
        changed = {**json.loads(request), "system": "another prompt"}
        db.execute("UPDATE model_calls SET request = ? WHERE id = ?",
                   [json.dumps(changed), call_id])
    with pytest.raises(ReplayDivergenceError, match="agent 'reporter', call #1: system"):
        await investigate(con, None, board=tmp_path / "replayed.d2board", replay=recorded)
    with Board.open(tmp_path / "replayed.d2board") as board:
        investigation = board.get_investigation("I1")
        assert investigation.state.value == "failed"
        assert "ReplayDivergenceError" in (investigation.error or "")
