"""The streaming scheduler: a queue of hypotheses, at most `collectors` branches at once,
refined children entering at once, the orchestrator consulted only for decisions."""

from __future__ import annotations

import asyncio
import time

import duckdb
import pytest
from test_detective_replay_variants import Jittery, fingerprint

from d2_notebook import investigate
from d2_notebook.board import Board, HypothesisStatus
from d2_notebook.datasets import hospital
from d2_notebook.detective.policies.team_policy import Action, TeamPolicy, Turn
from d2_notebook.llm import ModelRequest, ModelResponse
from d2_notebook.llm.offline import FunctionModel

QUESTION = hospital.QUESTION
CLAIMS = [f"Claim {n} holds" for n in range(1, 7)]


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    return hospital.create()


class Claims(TeamPolicy):
    """Six claims; each collector runs one query then records and submits; judges
    decide, except that ``refine`` claims are refined into two children. ``delays``
    maps an agent (or role) to its simulated model latency in seconds."""

    def __init__(self, *, refine: tuple[str, ...] = (), delays: dict[str, float] | None = None,
                 claims: list[str] = CLAIMS) -> None:
        super().__init__()
        self.refine = refine
        self.delays = delays or {}
        self.claims = claims
        self.spans: dict[str, list[float]] = {}  # agent -> [first start, last end]
        self.in_flight = self.most_in_flight = 0

    async def respond(self, request: ModelRequest) -> ModelResponse:
        delay = self.delays.get(request.agent, self.delays.get(request.role, 0.0))
        start = time.perf_counter()
        counted = request.role == "collector"
        self.in_flight += counted
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await asyncio.sleep(delay)
            return self(request)
        finally:
            self.in_flight -= counted
            span = self.spans.setdefault(request.agent, [start, 0.0])
            span[1] = time.perf_counter()

    def hypothesizer(self, turn: Turn) -> list[Action] | str:
        return [("add_hypothesis", {"statement": s, "rationale": "test"})
                for s in self.claims] + [("done", {"summary": "claims"})]

    def collector(self, turn: Turn) -> list[Action] | str:
        if turn.step == 0:
            return [("run_sql", {"sql": f"SELECT count(*) AS n FROM patients -- "
                                        f"{turn.hypothesis_id}"})]
        return [("record_evidence", {"query_id": "Q1", "description": "patients",
                                     "stance": "supports", "reading": "many patients"}),
                ("submit_for_judgement", {"summary": "one count"})]

    def judge(self, turn: Turn) -> list[Action] | str:
        statement = next(h.statement for h in turn.hypotheses() if h.id == turn.hypothesis_id)
        evidence = [e for _, e in turn.linked_evidence()]
        verdict = {"status": "supported", "confidence": 0.7, "rationale": "counted",
                   "evidence_ids": evidence}
        may_refine = any(spec.name == "refine" for spec in turn.request.tools)
        if statement in self.refine and may_refine:
            return [("refine", {**verdict, "children": [
                {"statement": f"{statement} for the old"},
                {"statement": f"{statement} for the young"}]})]
        return [("give_verdict", verdict)]

    def model(self, name: str = "offline-policy", **options) -> FunctionModel:
        return FunctionModel(self.respond, name=name, **options)


def statuses(board: Board) -> dict[str, HypothesisStatus]:
    return {h.statement: h.status for h in board.list_hypotheses()}


async def test_refined_children_start_before_their_siblings_finish(con):
    # Claim 1 is quick and refined; claims 2-3 have slow collectors.
    policy = Claims(refine=("Claim 1 holds",), claims=CLAIMS[:3],
                    delays={"collector-H2": 0.3, "collector-H3": 0.3})
    result = await investigate(con, QUESTION, model=policy.model(), collectors=4)
    assert result.state == "finished"
    children = [h for h in result.board.list_hypotheses() if h.parent_id == "H1"]
    assert [c.round for c in children] == [2, 2]
    slow_end = min(policy.spans["collector-H2"][1], policy.spans["collector-H3"][1])
    for child in children:
        assert policy.spans[f"collector-{child.id}"][0] < slow_end, "waited for a round"
        assert child.status is HypothesisStatus.SUPPORTED


async def test_more_hypotheses_than_collectors_all_run_without_orchestration(con):
    policy = Claims(delays={"collector": 0.01})
    result = await investigate(con, QUESTION, model=policy.model(), collectors=2)
    assert set(statuses(result.board).values()) == {HypothesisStatus.SUPPORTED}
    assert policy.most_in_flight == 2
    orchestrator = result.board.list_model_calls(agent="orchestrator")
    assert len(orchestrator) == 2  # one triage of the new claims, one end decision
    triage = orchestrator[0].request["messages"][0]["text"]
    assert "NEW HYPOTHESES: H1, H2, H3, H4, H5, H6 (" in triage
    # the triage says which it may still abandon: those not yet examined nor decided
    said = triage.split("NEW HYPOTHESES: ", 1)[1].split(")", 1)[0]
    assert "queued" in said or "None is left to abandon" in triage
    for hypothesis in ("H1", "H2", "H3", "H4", "H5", "H6"):
        assert hypothesis in said
    assert "Collectors" not in orchestrator[0].request["system"] + \
        orchestrator[0].request["messages"][0]["text"]
    assert result.usage.by_role["orchestrator"].calls == 2


class Triaged(Claims):
    """The orchestrator's triage is slow and abandons the last claim; collector calls in
    flight are counted separately before and after the triage's answer."""

    def __init__(self, **kwargs) -> None:
        super().__init__(delays={"orchestrator": 0.3, "collector": 0.1}, **kwargs)
        self.triaged = False
        self.most_before_triage = 0

    async def respond(self, request: ModelRequest) -> ModelResponse:
        if request.role == "collector" and not self.triaged:
            self.most_before_triage = max(self.most_before_triage, self.in_flight + 1)
        response = await super().respond(request)
        self.triaged = self.triaged or request.role == "orchestrator"
        return response

    def orchestrator(self, turn: Turn, **_: object) -> list[Action] | str:
        return super().orchestrator(turn, abandon=("H6",) if "NEW HYPOTHESES" in
                                    turn.request.messages[0].text else (),
                                    reason="duplicates H1")


async def test_new_hypotheses_wait_for_the_triage_then_more_branches_run(con):
    policy = Triaged()
    result = await investigate(con, QUESTION, model=policy.model(), collectors=6,
                               collectors_before_triage=2)
    assert policy.most_before_triage == 2  # the untriaged claims: two at a time
    assert policy.most_in_flight > 2  # once triaged, up to six
    assert result.board.get_hypothesis("H6").status is HypothesisStatus.ABANDONED
    assert "collector-H6" not in {c.agent for c in result.board.list_model_calls()}


async def test_without_the_wait_an_abandoned_hypothesis_was_already_examined(con):
    # The reason for the wait: all six start at once, so the triage comes too late.
    policy = Triaged()
    result = await investigate(con, QUESTION, model=policy.model(), collectors=6,
                               collectors_before_triage=6)
    assert result.board.get_hypothesis("H6").status is not HypothesisStatus.ABANDONED
    assert "collector-H6" in {c.agent for c in result.board.list_model_calls()}


async def test_the_depth_limit_is_per_branch(con):
    refine = ("Claim 1 holds", "Claim 1 holds for the old")
    result = await investigate(con, QUESTION, model=Claims(refine=refine, claims=CLAIMS[:1])
                               .model(), max_depth=2)
    depths = {h.statement: h.round for h in result.board.list_hypotheses()}
    assert max(depths.values()) == 2  # the generation-2 judge could not refine
    first = {c.agent: c.request["messages"][0]["text"]
             for c in result.board.list_model_calls() if c.role == "judge"}
    assert "Refining it is possible" in first["judge-H1"]
    assert "Refining it is not possible" in first["judge-H2"]
    assert not [h for h in result.board.list_hypotheses() if not h.status.is_settled]


class Interrupting(Claims):
    """Cancels the run from inside (like Ctrl-C) at the ``at``-th collector call."""

    def __init__(self, at: int, **kwargs) -> None:
        super().__init__(**kwargs)
        self.at, self.collector_calls = at, 0
        self.task: asyncio.Task | None = None

    async def respond(self, request: ModelRequest) -> ModelResponse:
        if request.role == "collector":
            self.collector_calls += 1
            if self.collector_calls == self.at and self.task is not None:
                self.task.cancel()
                await asyncio.sleep(10)
        return await super().respond(request)


@pytest.mark.parametrize("stop", ["budget", "time", "interrupt"])
async def test_a_run_stopped_mid_stream_resumes_to_the_same_end(con, tmp_path, stop):
    refine = ("Claim 2 holds",)
    whole = await investigate(con, QUESTION, model=Claims(refine=refine).model(), collectors=2)
    board_path = tmp_path / f"{stop}.d2board"
    if stop == "budget":
        first = await investigate(con, QUESTION, board=board_path, collectors=2,
                                  model=Claims(refine=refine).model(), max_calls=12)
        assert first.stop_reason and "10 of max_calls=12" in first.stop_reason  # 15% kept
    elif stop == "time":
        first = await investigate(con, QUESTION, board=board_path, collectors=2,
                                  model=Claims(refine=refine, delays={"collector": 0.05})
                                  .model(), max_seconds=0.4)
        assert first.stop_reason and "time budget" in first.stop_reason
    else:
        policy = Interrupting(7, refine=refine)
        policy.task = asyncio.create_task(investigate(con, QUESTION, board=board_path,
                                                      collectors=2, model=policy.model()))
        with pytest.raises(asyncio.CancelledError):
            await policy.task
    with Board.open(board_path) as board:
        assert board.get_investigation("I1").state.value in {"finished", "interrupted"}
        assert [h for h in board.list_hypotheses() if not h.status.is_settled], \
            "stopped mid-stream"
    options = {"max_calls": None} if stop == "budget" else {}  # a stop on the budget
    options |= {"max_seconds": None} if stop == "time" else {}  # resumes with a larger one
    resumed = await investigate(con, None, board=board_path, resume=True,
                                model=Claims(refine=refine).model(), **options)
    assert resumed.state == "finished"
    assert statuses(resumed.board) == statuses(whole.board)
    assert sorted(h.round for h in resumed.board.list_hypotheses()) == \
        sorted(h.round for h in whole.board.list_hypotheses())


async def test_replay_is_identical_over_40_jittered_runs(con, tmp_path):
    for seed in range(40):
        recorded = tmp_path / f"run{seed}.d2board"
        original = await investigate(con, QUESTION, board=recorded, model=Jittery(seed).model(),
                                     collectors=1 + seed % 4,
                                     collectors_before_triage=1 + seed % 3)
        replayed = await investigate(con, None, board=tmp_path / f"replay{seed}.d2board",
                                     replay=recorded)
        assert fingerprint(replayed.board) == fingerprint(original.board), f"seed {seed}"
        original.board.close()
        replayed.board.close()


async def test_a_role_model_is_recorded_priced_resumed_and_replayed(con, tmp_path):
    board_path = tmp_path / "roles.d2board"
    policy = Claims(claims=CLAIMS[:2])
    result = await investigate(con, QUESTION, board=board_path, model=policy.model(),
                               models={"collector": policy.model(name="fast-collector"),
                                       "judge": policy.model(name="haiku-judge",
                                                             model_id="claude-haiku-4-5")})
    calls = result.board.list_model_calls()
    assert {c.model for c in calls if c.role == "collector"} == {"fast-collector"}
    assert {c.model for c in calls if c.role == "judge"} == {"haiku-judge"}
    assert {c.model for c in calls if c.role in ("hypothesizer", "orchestrator",
                                                 "reporter")} == {"offline-policy"}
    judge_cost = sum(c.cost_usd or 0.0 for c in calls if c.role == "judge")
    assert judge_cost > 0 and result.usage.by_role["judge"].cost_usd == pytest.approx(
        judge_cost)  # priced with the judge's own model
    assert result.usage.by_role["collector"].unpriced_calls == len(
        [c for c in calls if c.role == "collector"])
    replayed = await investigate(con, None, board=tmp_path / "replay.d2board",
                                 replay=board_path)
    assert fingerprint(replayed.board) == fingerprint(result.board)


async def test_role_model_names_are_stored_and_used_again_on_resume(con, tmp_path):
    from d2_notebook.llm import register_provider

    made: list[str] = []

    def factory(model_id: str, **options):
        made.append(model_id)
        return Claims(claims=CLAIMS[:2]).model(name=f"stored:{model_id}")

    register_provider("stored", factory, replace=True)
    board_path = tmp_path / "stored.d2board"
    first = await investigate(con, QUESTION, board=board_path, max_calls=5,
                              model=Claims(claims=CLAIMS[:2]).model(),
                              models={"collector": "stored:quick"})
    assert first.settings.role_models == {"collector": "stored:quick"}
    assert first.stop_reason and "max_calls" in first.stop_reason
    first.board.close()
    resumed = await investigate(con, None, board=board_path, resume=True, max_calls=None,
                                model=Claims(claims=CLAIMS[:2]).model())
    assert resumed.state == "finished" and made == ["quick", "quick"]
    collectors = {c.model for c in resumed.board.list_model_calls() if c.role == "collector"}
    assert collectors == {"stored:quick"}


async def test_a_model_for_an_unknown_role_names_the_roles(con):
    from d2_notebook.errors import InvalidRecordError

    with pytest.raises(InvalidRecordError, match=r"unknown role.*'boss'.*roles are: "
                                                 r"hypothesizer, orchestrator"):
        await investigate(con, QUESTION, model=Claims().model(), models={"boss": "x:y"})



async def test_the_queue_keeps_its_limit_order_and_hands_a_slot_to_a_child():
    from d2_notebook.detective.scheduler import BranchScheduler
    from d2_notebook.errors import BudgetExceededError

    started: list[str] = []
    skipped = {"H3"}  # e.g. abandoned while it waited

    async def branch(hyp: str) -> None:
        await asyncio.sleep(0.01)
        if hyp == "H1":  # refines: its children enter while it still holds its slot
            queue.offer("H6", 2, "H1")
            queue.offer("H7", 2, "H1")
        if hyp == "H5":
            raise BudgetExceededError("model call budget spent")

    def begin(hyp: str) -> bool:
        if hyp in skipped:
            return False
        started.append(hyp)
        return True

    queue = BranchScheduler(2, branch, begin)
    for n in range(1, 6):
        queue.offer(f"H{n}", 1)
    queue.offer("H2", 1)  # offered twice: queued once
    assert started == ["H1", "H2"] and queue.busy
    with pytest.raises(BudgetExceededError):
        await queue.idle()
    # H1's slot went to its first child; H6/H7 (deeper) before H4; H3 was skipped.
    assert started[:4] == ["H1", "H2", "H6", "H7"]
    assert set(started) == {"H1", "H2", "H4", "H5", "H6", "H7"}
    assert not queue.busy


async def test_a_batch_of_queries_runs_at_once_and_keeps_its_query_ids_in_order(con):
    from d2_notebook.data import GuardedSQL

    class SlowFirst(GuardedSQL):
        """The first query of the batch is the slowest: results arrive out of order."""

        running = most = 0

        def run(self, sql, **kwargs):
            type(self).running += 1
            type(self).most = max(type(self).most, type(self).running)
            try:
                time.sleep(0.15 if "-- first" in sql else 0.02)
                return super().run(sql, **kwargs)
            finally:
                type(self).running -= 1

    class Batching(Claims):
        def collector(self, turn: Turn) -> list[Action] | str:
            if turn.step == 0:
                return [("run_sql", {"sql": "SELECT 1 AS a -- first"}),
                        ("run_sql", {"sql": "SELECT 2 AS b"}),
                        ("run_sql", {"sql": "SELECT 2 AS b"}),  # a twin: refused
                        ("run_sql", {"sql": "SELECT nope FROM nowhere"}),
                        ("run_sql", {"sql": "SELECT 3 AS c"})]
            return [("record_evidence", {"query_id": "Q3", "description": "three",
                                         "stance": "supports", "reading": "c is 3"}),
                    ("submit_for_judgement", {"summary": "batched"})]

    result = await investigate(SlowFirst(con), QUESTION, model=Batching(claims=CLAIMS[:1])
                               .model())
    call = result.board.list_model_calls(agent="collector-H1")[1]
    tool_results = [m for m in call.request["messages"] if m.get("role") == "tool"]
    contents = [m["content"].split("\n", 1)[0] for m in tool_results]
    assert contents[0].startswith("Q1: ") and contents[1].startswith("Q2: ")
    assert "already ran this query as Q2" in contents[2] and tool_results[2]["is_error"]
    assert tool_results[3]["is_error"] and contents[4].startswith("Q3: ")
    assert SlowFirst.most >= 2  # they overlapped
    evidence = result.board.list_evidence()
    assert "SELECT 3 AS c" in evidence[-1].sql


class Streaming(Claims):
    """A hypothesizer that adds one claim, explores on (a slow second turn), then adds
    the rest: the first claim's collection must not wait for that turn."""

    def hypothesizer(self, turn: Turn) -> list[Action] | str:
        if turn.step == 0:
            return [("add_hypothesis", {"statement": self.claims[0], "rationale": "seen"}),
                    ("run_sql", {"sql": "SELECT count(*) AS n FROM admissions"})]
        return [("add_hypothesis", {"statement": s, "rationale": "then"})
                for s in self.claims[1:]] + [("done", {"summary": "claims"})]


async def test_the_first_hypothesis_is_collected_while_the_hypothesizer_still_explores(con):
    policy = Streaming(claims=CLAIMS[:3], delays={"hypothesizer": 0.4})
    result = await investigate(con, QUESTION, model=policy.model(), collectors=4)
    assert result.state == "finished"
    hypothesizer_end = policy.spans["hypothesizer"][1]
    first_collection = policy.spans["collector-H1"][0]
    assert first_collection < hypothesizer_end - 0.2, "H1 waited for the hypothesizer's turn"
    assert set(statuses(result.board).values()) == {HypothesisStatus.SUPPORTED}
