"""Replay reproduces a board; every variant runs; each role gets the right context."""

from __future__ import annotations

import asyncio
import collections
import random

import duckdb
import pytest
from board_fingerprint import fingerprint

from d2_notebook import investigate
from d2_notebook.board import Board
from d2_notebook.datasets import hospital
from d2_notebook.detective.policies.hospital import HospitalWalkthrough
from d2_notebook.errors import ReplayDivergenceError
from d2_notebook.llm import ModelRequest, ModelResponse

QUESTION = hospital.QUESTION


@pytest.fixture
def con() -> duckdb.DuckDBPyConnection:
    return hospital.create()


class Jittery(HospitalWalkthrough):
    """The walkthrough with random delays, so parallel agents finish in a random order."""

    def __init__(self, seed: int) -> None:
        super().__init__()
        self.random = random.Random(seed)

    async def __call__(self, request: ModelRequest) -> ModelResponse:  # type: ignore[override]
        await asyncio.sleep(self.random.random() * 0.02)
        return super().__call__(request)


async def test_replay_reproduces_the_board(con, tmp_path):
    recorded = tmp_path / "recorded.d2board"
    original = await investigate(con, QUESTION, board=recorded, model=Jittery(1).model())
    replayed = await investigate(con, None, board=tmp_path / "replayed.d2board",
                                 replay=recorded)
    assert replayed.state == "finished"
    assert fingerprint(replayed.board) == fingerprint(original.board)
    assert replayed.report == original.report


async def test_replay_against_changed_data_reports_the_divergence(tmp_path):
    recorded = tmp_path / "recorded.d2board"
    await investigate(hospital.create(seed=7), QUESTION, board=recorded,
                      model=HospitalWalkthrough().model())
    # Another seed: other sample values in the schema summary, so the first call differs.
    expected = r"agent 'hypothesizer', call #1: system differ"
    with pytest.raises(ReplayDivergenceError, match=expected):
        await investigate(hospital.create(seed=8), None, replay=recorded,
                          board=tmp_path / "replayed.d2board")
    with Board.open(tmp_path / "replayed.d2board") as board:
        assert board.get_investigation("I1").state.value == "failed"


def roles_called(board: Board) -> collections.Counter[str]:
    return collections.Counter(c.role for c in board.list_model_calls())


@pytest.mark.parametrize(
    ("variant", "roles"),
    [
        ("full", {"hypothesizer", "orchestrator", "collector", "judge", "reporter"}),
        ("no_reporter", {"hypothesizer", "orchestrator", "collector", "judge"}),
        ("no_judge", {"hypothesizer", "orchestrator", "collector", "reporter"}),
        ("merged_planner", {"planner", "collector", "judge", "reporter"}),
        ("single_agent_board", {"detective"}),
        ("react_sql", {"react"}),
    ],
)
async def test_each_variant_runs_the_roles_it_should(con, variant, roles):
    result = await investigate(con, QUESTION, model=HospitalWalkthrough().model(),
                               variant=variant)
    assert result.state == "finished"
    assert set(roles_called(result.board)) == roles
    assert "Pulmorex" in " ".join(result.answer["answers"])
    assert result.answer["candidates_considered"]
    board = result.board
    if variant == "react_sql":
        assert board.list_hypotheses() == [] and board.list_evidence() == []
        assert len(result.queries) == 5 and result.report.startswith("Most effective")
    if variant == "no_judge":
        assert all(h.parent_id is None for h in board.list_hypotheses()), "no refinement"
        authors = {v.author for v in board.list_verdicts()}
        assert all(a.startswith("collector-") for a in authors)
    if variant == "no_reporter":
        assert not any(e.redundant for e in board.list_evidence())
        assert "## Hypotheses" in result.report
    if variant == "single_agent_board":
        assert {v.author for v in board.list_verdicts()} == {"detective"}
        assert len(board.list_links()) == 3


async def test_roles_get_their_own_context_and_tools(con):
    result = await investigate(con, QUESTION, model=HospitalWalkthrough().model())
    calls = result.board.list_model_calls()
    tools = {c.role: {t["name"] for t in c.request["tools"]} for c in calls}
    assert "run_sql" in tools["hypothesizer"] and "run_sql" in tools["collector"]
    for role in ("orchestrator", "judge", "reporter"):
        assert not tools[role] & {"run_sql", "describe_table"}, f"{role} must not query"
    assert "give_verdict" not in tools["collector"], "collectors never judge"
    assert tools["judge"] == {"give_verdict", "request_more_evidence", "refine",
                              "link_evidence", "read_evidence"}  # reads and links, never queries
    for call in calls:
        system = call.request["system"]
        assert QUESTION in system, "the objective is stated verbatim"
        assert "untrusted" in system and "patients (table, 5000 rows)" in system
    # One system prompt per role: a stable, cacheable prefix shared by all its agents.
    systems = collections.defaultdict(set)
    for call in calls:
        systems[call.role].add(call.request["system"])
    assert all(len(s) == 1 for s in systems.values())
    # A collector's digest shows its own hypothesis, not the other collectors' work.
    first = next(c for c in calls if c.agent == "collector-H4").request["messages"][0]["text"]
    assert "H4 | investigating" in first and "H1 |" not in first and "H3 |" not in first


@pytest.mark.parametrize("variant", ["full", "react_sql"])
async def test_a_board_of_the_round_based_loop_loads_and_replays_only_its_react_agent(
        con, tmp_path, variant):
    import json
    import sqlite3

    recorded = tmp_path / "old.d2board"
    await investigate(con, QUESTION, board=recorded, model=HospitalWalkthrough().model(),
                      variant=variant)
    with sqlite3.connect(recorded) as db:  # as the round-based loop stored its settings
        (stored,) = db.execute("SELECT settings FROM investigations").fetchone()
        old = {k: v for k, v in json.loads(stored).items() if k not in ("max_depth",
                                                                         "role_models")}
        db.execute("UPDATE investigations SET settings = ?",
                   [json.dumps({**old, "max_rounds": 4})])
        db.execute("UPDATE events SET payload = json_set(payload, '$.settings', json(?)) "
                   "WHERE kind = 'investigation.started'", [json.dumps({**old, "max_rounds": 4})])
    with Board.open(recorded) as board:  # it loads, its settings migrate
        from d2_notebook.detective import InvestigationSettings

        settings = InvestigationSettings.from_dict(board.list_investigations()[-1].settings)
        assert settings.max_depth == 4
    if variant == "react_sql":
        replayed = await investigate(con, None, board=tmp_path / "new.d2board",
                                     replay=recorded)
        assert replayed.state == "finished"
        return
    with pytest.raises(ReplayDivergenceError, match="recorded by the round-based loop"):
        await investigate(con, None, board=tmp_path / "new.d2board", replay=recorded)
    assert not (tmp_path / "new.d2board").exists()
