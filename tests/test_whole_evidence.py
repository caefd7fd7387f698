"""Whole evidence for those who weigh it: budgets in tokens, nothing dropped, text whole."""

from __future__ import annotations

import re

import duckdb
import numpy as np
import pandas as pd
import pytest

from d2_notebook.board import Board, ToolCall
from d2_notebook.data import GuardedSQL, open_source
from d2_notebook.data.analysis.compare_within import compare_within
from d2_notebook.detective import roles
from d2_notebook.detective.context import TeamContext
from d2_notebook.detective.digest import board_digest
from d2_notebook.detective.evidence_view import Detail, cut_at_word, evidence_details
from d2_notebook.detective.settings import InvestigationSettings
from d2_notebook.errors import InvalidRecordError
from d2_notebook.llm import (
    ContextWindowTable,
    ModelRequest,
    ModelResponse,
    context_window,
    estimate_tokens,
    set_context_window,
)
from d2_notebook.llm.context_window import DEFAULT_CONTEXT_TOKENS
from d2_notebook.llm.offline import FunctionModel, tool_call

LONG_STATEMENT = (
    "Customers of the northern region who joined through the referral programme in the "
    "first quarter, and who were later moved to the discounted plan by the retention team, "
    "churn less often within twelve months than comparable customers who joined through "
    "paid advertising in the same quarter, once their starting plan and tenure are held "
    "equal, and the difference is not explained by the region's own seasonal pattern.")
CLUE = "and the last thing I saw was the courier's van with a cracked left mirror"


def _transcript(words: int, ending: str) -> str:
    filler = " ".join(f"word{i % 97}" for i in range(words))
    return f"{filler} {ending}."


def _big_result(seed: int, rows: int = 4_000) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "segment": [f"segment {i % 40}" for i in range(rows)],
        "customers": rng.integers(50, 900, rows),
        "churn_rate": np.round(rng.uniform(0.05, 0.6, rows), 4),
    })


@pytest.fixture
def db() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT range AS i FROM range(10)")
    return con


class Judge:
    """A judge model that reads its first message and decides at once."""

    def __init__(self) -> None:
        self.first_messages: list[str] = []

    def __call__(self, request: ModelRequest) -> ModelResponse:
        first = request.messages[0].text  # type: ignore[union-attr]
        self.first_messages.append(first)
        if request.role == "collector":
            return tool_call("submit_for_judgement", {"summary": "done"})
        linked = re.findall(r"^\[(E\d+)\]", first, re.MULTILINE)
        return tool_call("give_verdict", {"status": "supported", "confidence": 0.7,
                                          "rationale": "read", "evidence_ids": linked[:1]})


def _context(board: Board, db: duckdb.DuckDBPyConnection, model: Judge,
             **settings: object) -> TeamContext:
    investigation = board.start_investigation("Which customers churn less?")
    return TeamContext(board=board, sql=open_source(db), model=FunctionModel(model),
                       investigation_id=investigation.id, question=investigation.question,
                       schema_summary="t (table, 10 rows)",
                       settings=InvestigationSettings(**settings))  # type: ignore[arg-type]


def _link(board: Board, ctx: TeamContext, hyp_id: str, frame: pd.DataFrame, reading: str,
          description: str = "churn by segment") -> str:
    evidence = board.add_evidence(f"SELECT * FROM churn -- {len(board.list_evidence())}",
                                  frame, description=description,
                                  investigation_id=ctx.investigation_id)
    board.link(evidence.id, hyp_id, "supports", reading, actor="collector")
    return evidence.id


async def test_a_judge_with_many_long_evidences_keeps_every_linked_one(board, db) -> None:
    model = Judge()
    ctx = _context(board, db, model, context_window_tokens=40_000)
    hyp = board.add_hypothesis("Referral customers churn less",
                               investigation_id=ctx.investigation_id)
    ids = [_link(board, ctx, hyp.id, _big_result(seed), f"segment 7 churns at 0.{seed + 10}")
           for seed in range(25)]
    await roles.judge(ctx, hyp.id, can_send_back=False, can_refine=True, summary=None)
    first = model.first_messages[-1]
    assert re.findall(r"^\[(E\d+)\]", first, re.MULTILINE) == ids, "every piece is there"
    assert estimate_tokens(first) < 40_000, "and the prompt fits the window"
    assert "4,000 rows x 3 columns" in first and "summarised" in first
    assert "details left out" not in first


async def test_large_results_are_summarised_with_statistics_claim_rows_head_and_tail(
        board, db) -> None:
    ctx = _context(board, db, Judge())
    hyp = board.add_hypothesis("Segment 7 churns least", investigation_id=ctx.investigation_id)
    frame = _big_result(1)
    frame.loc[2_222, ["segment", "churn_rate"]] = ["segment 7", 0.0123]
    evidence_id = _link(board, ctx, hyp.id, frame, "segment 7 churns at 0.0123 only")
    text = evidence_details(board, [evidence_id])
    assert "churn_rate (number): min 0.0123" in text
    assert "segment (text): 40 distinct" in text
    assert "rows 1-5 (first)" in text and "rows 3996-4000 (last)" in text
    assert re.search(r"2223\s+segment 7\s+\d+\s+0\.0123", text), "the claim's row first"
    shown = re.findall(r"^\s*(\d+)\s+segment (\d+)\s", text, re.MULTILINE)
    middle = [segment for row, segment in shown if 5 < int(row) < 3996]
    assert middle and set(middle) == {"7"}, "then rows of the segment the reading names"


async def test_a_transcript_reaches_the_judge_whole(board, db) -> None:
    model = Judge()
    ctx = _context(board, db, model, context_window_tokens=60_000)
    hyp = board.add_hypothesis("The courier was at the scene",
                               investigation_id=ctx.investigation_id)
    transcript = _transcript(900, CLUE)
    one = pd.DataFrame({"person_id": [14_887], "transcript": [transcript]})
    many = pd.DataFrame({
        "person_id": range(300),
        "name": [f"Person{i}" for i in range(300)],
        "transcript": [_transcript(300, "nothing else") for _ in range(300)]})
    many.loc[211, ["name", "transcript"]] = ["Morgana", _transcript(700, CLUE)]
    _link(board, ctx, hyp.id, one, "the witness saw the courier's van", "the interview")
    _link(board, ctx, hyp.id, many, "Morgana's interview names the van", "all interviews")
    await roles.judge(ctx, hyp.id, can_send_back=False, can_refine=True, summary=None)
    first = model.first_messages[-1]
    assert first.count(CLUE) == 2, "both transcripts that carry the clue arrive whole"
    assert transcript in first
    assert "…" not in first.split("THE LINKED EVIDENCE")[1]


async def test_a_hypothesis_statement_is_never_cut_for_its_collector_and_judge(
        board, db) -> None:
    model = Judge()
    ctx = _context(board, db, model)
    hyp = board.add_hypothesis(LONG_STATEMENT, investigation_id=ctx.investigation_id)
    _link(board, ctx, hyp.id, pd.DataFrame({"x": [1]}), "one row")
    await roles.collect(ctx, hyp.id)
    await roles.judge(ctx, hyp.id, can_send_back=False, can_refine=True, summary=None)
    collector_first, judge_first = model.first_messages
    for first in (collector_first, judge_first):
        assert first.startswith(("YOUR HYPOTHESIS: H1: " + LONG_STATEMENT,
                                 "HYPOTHESIS TO JUDGE: H1: " + LONG_STATEMENT))
        assert f"H1 | investigating | - | {LONG_STATEMENT}" in first or (
            f"| {LONG_STATEMENT}" in first)
    assert LONG_STATEMENT in board_digest(board)


def test_every_piece_survives_a_tiny_budget_at_its_shortest(board) -> None:
    ids = [board.add_evidence(f"SELECT {i}", _big_result(i), description=f"piece {i}").id
           for i in range(6)]
    full = evidence_details(board, ids)
    tiny = evidence_details(board, ids, budget_tokens=500)
    assert re.findall(r"^\[(E\d+)\]", tiny, re.MULTILINE) == ids
    assert len(tiny) < len(full) / 2
    assert "none is left out" in tiny
    roomy = evidence_details(board, ids, budget_tokens=estimate_tokens(full))
    assert roomy == full


def test_small_results_are_shown_whole_when_they_fit(board) -> None:
    frame = pd.DataFrame({"k": range(60), "v": np.arange(60) / 7})
    evidence_id = board.add_evidence("SELECT k, v FROM t", frame, description="sixty rows").id
    text = evidence_details(board, [evidence_id])
    assert "(60 rows x 2 columns, all shown)" in text
    assert len(text.splitlines()) == 3 + 61
    assert Detail.WHOLE > Detail.SUMMARY > Detail.BRIEF > Detail.MINIMAL


def test_texts_are_shortened_at_word_boundaries() -> None:
    assert cut_at_word("a witness saw who did it", 14) == "a witness saw …"
    assert cut_at_word("short", 14) == "short"
    assert cut_at_word("unbreakableword and more", 5) == "unbreakableword …"


def test_context_windows_by_model_with_a_default_and_overrides() -> None:
    assert context_window("anthropic:claude-sonnet-4-6") == 200_000
    assert context_window("openai:gpt-4o-mini") == 128_000
    assert context_window("offline-policy") == DEFAULT_CONTEXT_TOKENS
    table = ContextWindowTable({"local-": 8_192})
    assert context_window("openai:local-llama", table) == 8_192
    table.set_window("local-llama-long", 32_768)
    assert context_window("local-llama-long-1", table) == 32_768
    with pytest.raises(ValueError, match="at least 1 token"):
        table.set_window("x", 0)
    set_context_window("my-local-model", 16_000)
    assert context_window("my-local-model-q4") == 16_000
    assert estimate_tokens("x" * 300) == 100


def test_the_context_window_setting_is_validated() -> None:
    assert InvestigationSettings(context_window_tokens=32_000).context_window_tokens == 32_000
    with pytest.raises(InvalidRecordError, match="context_window_tokens must be at least 1000"):
        InvestigationSettings(context_window_tokens=10)


async def test_a_transcript_reaches_the_querying_agent_whole(board) -> None:
    con = duckdb.connect()
    transcript = _transcript(250, CLUE)
    con.execute("CREATE TABLE interview (person_id INTEGER, transcript VARCHAR)")
    con.execute("INSERT INTO interview VALUES (1, ?), (2, 'nothing')", [transcript])
    seen: list[str] = []

    def collector(request: ModelRequest) -> ModelResponse:
        if len(request.messages) == 1:
            return tool_call("run_sql", {"sql": "SELECT * FROM interview"})
        seen.append(request.messages[-1].content)  # type: ignore[union-attr]
        return tool_call("submit_for_judgement", {"summary": "read"})

    investigation = board.start_investigation("Who was there?")
    ctx = TeamContext(board=board, sql=open_source(con), model=FunctionModel(collector),
                      investigation_id=investigation.id, question=investigation.question,
                      schema_summary="interview", settings=InvestigationSettings())
    hyp = board.add_hypothesis("The courier was there", investigation_id=investigation.id)
    await roles.collect(ctx, hyp.id)
    assert len(transcript) > 1_500 and transcript in seen[0]


def test_an_analysis_result_is_told_by_its_summary_and_the_rows_that_carry_it(board) -> None:
    """A compare_within result of many strata reaches the judge as its summary and the
    rows its readings come from, not as column statistics that repeat the summary."""
    con = duckdb.connect()
    con.execute("""CREATE TABLE visits AS SELECT i AS id,
        CASE WHEN i % 3 = 0 THEN 'new' ELSE 'old' END AS drug,
        ['north', 'south', 'east', 'west', 'centre'][1 + i % 5] AS region,
        'ward ' || (i % 7) AS ward, (i % 4) AS weekday,
        CASE WHEN (i * 7919) % 10 < (CASE WHEN i % 3 = 0 THEN 3 ELSE 5 END) THEN 1 ELSE 0
        END AS readmitted FROM range(3000) t(i)""")
    args = {"source": "visits", "metric": "avg(readmitted)", "exposure": "drug",
            "value": "new"}
    result = compare_within(GuardedSQL(con), **args)
    assert len(result.frame) > 12
    investigation = board.start_investigation("Does the new drug lower readmission?")
    hypothesis = board.add_hypothesis("The new drug lowers readmission",
                                      investigation_id=investigation.id)
    evidence = board.add_evidence(result.sql, result.frame,
                                  description=result.summary,
                                  investigation_id=investigation.id)
    board.record_tool_call(evidence.id, ToolCall("compare_within", args), actor="collector")
    board.link(evidence.id, hypothesis.id, "supports", result.summary, actor="collector")

    text = evidence_details(board, [evidence.id])
    assert result.summary.split(":")[0] in text  # the readings, as the tool wrote them
    assert "From compare_within(" in text and result.sql not in text
    assert "Columns, over the" not in text  # no statistics that repeat the summary
    assert "Columns: dimension, stratum" in text
    shown = re.findall(r"^ *(\d+) ", text.split("Rows shown:")[1], re.MULTILINE)
    assert shown[0] == "1" and len(shown) <= 9  # the overall row, then the carrying rows
    overall = result.frame.iloc[0]
    assert f"{overall['n_exposed']}" in text.split("Rows shown:")[1]


def test_an_empty_analysis_result_survives_the_shortest_form(board) -> None:
    """A budget that shrinks an analysis result with no rows to its shortest form shows
    "(no rows)" instead of failing on a first row that is not there."""
    investigation = board.start_investigation("q")
    frame = pd.DataFrame({"dimension": pd.Series([], dtype=str),
                          "effect": pd.Series([], dtype=float)})
    evidence = board.add_evidence("SELECT 1 WHERE false", frame, description="compare_within: "
                                  "nothing to compare", investigation_id=investigation.id)
    board.record_tool_call(evidence.id, ToolCall("compare_within", {"source": "t"}),
                           actor="collector")
    text = evidence_details(board, [evidence.id], budget_tokens=1)
    assert "(no rows)" in text and f"[{evidence.id}]" in text


async def test_a_judge_that_may_refine_sees_the_other_hypotheses(board, db) -> None:
    """A real-model judge refined a hypothesis into a child that restated a supported
    sibling it never saw: a judge that may refine is shown the others, one line each."""
    model = Judge()
    ctx = _context(board, db, model)
    sibling = board.add_hypothesis("Churn is concentrated in segment 7",
                                   investigation_id=ctx.investigation_id)
    hyp = board.add_hypothesis("Referral customers churn less",
                               investigation_id=ctx.investigation_id)
    child = board.add_hypothesis("Referral customers of segment 3 churn less",
                                 investigation_id=ctx.investigation_id, parent_id=hyp.id)
    _link(board, ctx, hyp.id, _big_result(1), "segment 7 churns at 0.11")
    await roles.judge(ctx, hyp.id, can_send_back=False, can_refine=True, summary=None)
    others = model.first_messages[-1].split("OTHER HYPOTHESES ON THE BOARD", 1)[1]
    listed = re.findall(r"^  (H\d+) \|", others, re.MULTILINE)
    assert listed == [sibling.id], "the sibling, not the judged one or its child"
    assert "Churn is concentrated in segment 7" in others and child.id not in listed
    await roles.judge(ctx, hyp.id, can_send_back=False, can_refine=False, summary=None)
    assert "OTHER HYPOTHESES ON THE BOARD" not in model.first_messages[-1]


def test_exploration_shows_the_rows_its_hypothesis_was_proposed_on(board) -> None:
    """A segment_scan's summary names its strongest segments; a hypothesis proposed on a
    weaker flagged one (diabetes) must find that row in the exploration its collector and
    judge read, not only the summary's top rows (a real-model collector was asked to test
    a figure it could not see)."""
    from d2_notebook.data.analysis import segment_scan
    from d2_notebook.datasets import hospital

    sql = GuardedSQL(hospital.create())
    args = {"source": "admissions a JOIN patients p ON a.patient_id = p.patient_id "
                      "JOIN outcomes o ON o.admission_id = a.admission_id "
                      "JOIN treatments t ON t.admission_id = a.admission_id",
            "metric": "avg(o.died::INTEGER)", "where": "p.age >= 65"}
    result = segment_scan(sql, **args)
    investigation = board.start_investigation("Which treatment works for older patients?")
    evidence = board.add_evidence(result.sql, result.frame, description=result.summary,
                                  investigation_id=investigation.id)
    board.record_tool_call(evidence.id, ToolCall("segment_scan", args), actor="hypothesizer")
    diabetes = result.frame[result.frame["value"] == "diabetes"].iloc[0]
    assert diabetes.name > 8  # beyond the rows the summary's own readings carry
    hypothesis = board.add_hypothesis(
        "Diabetes raises the death rate of older patients",
        rationale=f"the scan: with diabetes {diabetes['metric']:.3f} against "
                  f"{diabetes['rest_metric']:.3f}", investigation_id=investigation.id,
        motivated_by=[evidence.id])

    def shown(text: str) -> list[str]:
        return re.findall(r"^ *(\d+) ", text.split("Rows shown:")[1], re.MULTILINE)

    focused = evidence_details(board, [evidence.id], focus=hypothesis.id)
    assert str(diabetes.name + 1) in shown(focused)
    assert "diabetes" in focused.split("Rows shown:")[1]
    unfocused = evidence_details(board, [evidence.id])
    assert str(diabetes.name + 1) not in shown(unfocused)  # the summary's rows alone


def test_a_judge_at_its_shortest_sees_the_rows_of_the_readings_numbers(board) -> None:
    """The hypothesis names a row with two figures and a name (r3); the collector's reading
    quotes two other rows' figures. At the shortest form, two rows per result, the judge
    used to see r3 and one of them; it now sees the two rows whose numbers it must check."""
    frame = pd.DataFrame({"region": [f"r{i}" for i in range(80)],
                          "orders": [100 + i for i in range(80)],
                          "late_share": [0.05 + 0.01 * i for i in range(80)]})
    investigation = board.start_investigation("Where are orders late?")
    evidence = board.add_evidence("SELECT region, orders, late_share FROM o", frame,
                                  description="late share per region",
                                  investigation_id=investigation.id)
    hypothesis = board.add_hypothesis("Lateness is uneven: r3 has 103 orders, 0.08 late",
                                      investigation_id=investigation.id)
    board.link(evidence.id, hypothesis.id, "supports",
               "the worst regions reach 0.25 and 0.34 late", actor="collector")
    shortest = evidence_details(board, [evidence.id], budget_tokens=1, focus=hypothesis.id)
    rows = re.findall(r"^ *(\d+) ", shortest.split("Rows shown:")[1], re.MULTILINE)
    assert "21" in rows and "30" in rows  # 0.25 and 0.34 (1-based positions)
    assert "4" not in rows  # r3: named by the hypothesis, but no reading quotes it


def test_a_focused_digest_shows_its_hypothesis_rationale_whole(board) -> None:
    """A real-model collector read its own hypothesis's rationale cut at 240 characters
    ("... so category may have no …"); the hypothesis a digest is focused on is shown
    whole, the others it lists stay short."""
    inv = board.start_investigation("Why are some categories slower?")
    rationale = ("Assets run 88.8 days against 81.0 for the rest " * 6
                 + "so category may have no effect beyond opened quarter.")
    parent = board.add_hypothesis("Category matters", rationale=rationale,
                                  investigation_id=inv.id)
    child = board.add_hypothesis("Assets are slower", rationale=rationale,
                                 investigation_id=inv.id, parent_id=parent.id)
    focused = board_digest(board, investigation_id=inv.id, focus=child.id)
    assert f"    rationale: {rationale}" in focused
    assert focused.count("so category may have no effect beyond opened quarter.") == 1
    assert f"    rationale: {rationale}" not in board_digest(board, investigation_id=inv.id)
