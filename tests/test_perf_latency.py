"""The latency benchmark's replay: a recorded board's calls re-timed under the latency
model, with the waits the recording shows (an agent's calls in order, a turn after the
call that started it)."""

from __future__ import annotations

import pytest

from benchmark.perf_latency import LatencyModel, main, simulate
from d2_notebook import investigate
from d2_notebook.board import Board
from d2_notebook.datasets import hospital
from d2_notebook.detective.policies.hospital import HospitalWalkthrough

MODEL = LatencyModel(time_to_first_token_s=2.0, output_tokens_per_s=100.0)


async def test_a_single_agent_is_one_chain_of_its_calls() -> None:
    result = await investigate(hospital.create(), hospital.QUESTION,
                               model=HospitalWalkthrough().model(),
                               variant="single_agent_board")
    calls = result.board.list_model_calls()
    run = simulate(result.board, "hospital", MODEL)
    assert run.variant == "single_agent_board" and run.calls == len(calls) == run.depth
    assert all(c.output_tokens > 0 for c in calls)  # the offline model counts them
    assert run.wall_s == pytest.approx(sum(MODEL.seconds(c.output_tokens) for c in calls))


async def test_parallel_collectors_overlap_and_the_chain_is_shorter_than_the_calls() -> None:
    result = await investigate(hospital.create(), hospital.QUESTION,
                               model=HospitalWalkthrough().model(), collectors=4)
    run = simulate(result.board, "hospital", MODEL)
    calls = result.board.list_model_calls()
    assert run.variant == "full" and run.calls == len(calls)
    assert run.depth < run.calls  # collectors overlapped
    assert MODEL.time_to_first_token_s * run.depth <= run.wall_s
    serial = await investigate(hospital.create(), hospital.QUESTION,
                               model=HospitalWalkthrough().model(), collectors=1)
    one = simulate(serial.board, "hospital", MODEL)
    assert one.calls == run.calls and one.wall_s > run.wall_s and one.depth > run.depth


def test_the_latency_model_states_its_numbers() -> None:
    assert LatencyModel().seconds(0) == 1.0 and LatencyModel().seconds(100) == 3.0


async def test_the_critical_path_is_the_chain_that_ends_last(tmp_path, capsys) -> None:
    board_path = tmp_path / "hospital.d2board"
    result = await investigate(hospital.create(), hospital.QUESTION, board=board_path,
                               model=HospitalWalkthrough().model(), collectors=4)
    run = simulate(result.board, "hospital", MODEL)
    # a chain of waits with no gaps: its calls' seconds add up to the wall time
    assert run.path[-1].end_s == pytest.approx(run.wall_s)
    assert sum(s.seconds for s in run.path) == pytest.approx(run.wall_s)
    assert run.path[0].role == "hypothesizer"
    assert run.path[-1].role == "reporter" and len(run.path) <= run.depth
    by_role = run.seconds_by_role()
    assert sum(by_role.values()) == pytest.approx(run.wall_s)
    assert list(by_role.values()) == sorted(by_role.values(), reverse=True)
    result.board.close()
    main([str(board_path)])
    printed = capsys.readouterr().out
    assert f"hospital (full): {run.calls} calls, depth {run.depth}" in printed
    assert "critical path by role: " in printed and "reporter" in printed
    with pytest.raises(SystemExit):
        main([str(tmp_path / "missing.d2board")])
    assert "no such board" in capsys.readouterr().err
    Board.open(tmp_path / "empty.d2board").close()
    with pytest.raises(SystemExit, match="no investigation on this board"):
        main([str(tmp_path / "empty.d2board")])
