"""``link_evidence`` reaches the models whose prompts name it: collectors, judges and the
single agent are offered it through their variant, so evidence already on the board is
linked instead of its query running again (it was built but never offered: a real-model
collector re-ran an exploration trend, and judges told to link a check sent it back)."""

from __future__ import annotations

import re

import duckdb
import pandas as pd
import pytest

from d2_notebook.board import Board
from d2_notebook.board.records import ToolCall
from d2_notebook.data import open_source
from d2_notebook.detective import roles
from d2_notebook.detective.context import TeamContext
from d2_notebook.detective.decisions import Judgement
from d2_notebook.detective.digest import OTHER_EVIDENCE_SHOWN, board_digest
from d2_notebook.detective.settings import InvestigationSettings
from d2_notebook.detective.variant import ALL_VARIANTS, Role
from d2_notebook.llm import ModelRequest, ModelResponse
from d2_notebook.llm.offline import FunctionModel, tool_call, tool_calls

_ROLE_FILES = {Role.COLLECTOR: "collector", Role.JUDGE: "judge",
               Role.DETECTIVE: "single_agent"}


@pytest.mark.parametrize("variant", [v for v in ALL_VARIANTS if any(
    role in v.tools for role in _ROLE_FILES)], ids=str)
def test_every_role_whose_prompt_names_link_evidence_is_offered_it(variant) -> None:
    for role, prompt in _ROLE_FILES.items():
        if role not in variant.tools:
            continue
        text = roles.instructions(prompt)
        assert "link_evidence" in text, f"{prompt}.txt says when to link"
        assert "link_evidence" in variant.tools_of(role), f"{variant} {role.value}"


def _context(board: Board, model: FunctionModel) -> TeamContext:
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT range AS i FROM range(10)")
    investigation = board.start_investigation("Which customers churn less?")
    return TeamContext(board=board, sql=open_source(con), model=model,
                       investigation_id=investigation.id, question=investigation.question,
                       schema_summary="t (table, 10 rows)", settings=InvestigationSettings())


def _exploration(board: Board, ctx: TeamContext) -> str:
    frame = pd.DataFrame({"segment": ["referral", "ads"], "churn": [0.11, 0.27]})
    return board.add_evidence("SELECT segment, avg(churned) AS churn FROM customers GROUP BY 1",
                              frame, description="churn by segment",
                              investigation_id=ctx.investigation_id).id


async def test_a_collector_links_the_exploration_and_submits_in_one_call(board) -> None:
    requests: list[ModelRequest] = []

    def collector(request: ModelRequest) -> ModelResponse:
        requests.append(request)
        evidence_id = re.search(r"\[(E\d+)\]", request.messages[0].text).group(1)  # type: ignore[union-attr]
        return tool_calls(("link_evidence", {"evidence_id": evidence_id, "stance": "supports",
                                             "reading": "referral churns at 0.11 against 0.27"}),
                          ("submit_for_judgement", {"summary": f"[{evidence_id}] decides it"}))

    ctx = _context(board, FunctionModel(collector))
    explored = _exploration(board, ctx)
    hyp = board.add_hypothesis("Referral customers churn less", motivated_by=[explored],
                               investigation_id=ctx.investigation_id)
    handed = await roles.collect(ctx, hyp.id)
    assert len(requests) == 1, "linked and submitted in its first call"
    assert "link_evidence" in [t.name for t in requests[0].tools]
    (link,) = board.list_links(hypothesis_id=hyp.id)
    assert (link.evidence_id, link.stance) == (explored, "supports")
    assert len(board.list_evidence(investigation_id=ctx.investigation_id)) == 1, "no re-run"
    assert handed.summary == f"[{explored}] decides it"


async def test_a_judge_links_a_check_on_the_board_and_decides_without_a_send_back(
        board) -> None:
    def judge(request: ModelRequest) -> ModelResponse:
        if len(request.messages) == 1:
            return tool_call("link_evidence", {"evidence_id": other_evidence,
                                               "stance": "supports",
                                               "reading": "the same split holds here"})
        return tool_call("give_verdict", {
            "status": "supported", "confidence": 0.7, "rationale": "linked and read",
            "evidence_ids": [own_evidence, other_evidence]})

    ctx = _context(board, FunctionModel(judge))
    other_evidence = _exploration(board, ctx)
    hyp = board.add_hypothesis("Referral customers churn less",
                               investigation_id=ctx.investigation_id)
    own_evidence = board.add_evidence("SELECT 1 AS one", pd.DataFrame({"one": [1]}),
                                      description="one row",
                                      investigation_id=ctx.investigation_id).id
    board.link(own_evidence, hyp.id, "supports", "one row", actor="collector")
    decision = await roles.judge(ctx, hyp.id, can_send_back=True, can_refine=False,
                                 summary=None)
    assert decision.judgement is Judgement.VERDICT
    assert {link.evidence_id for link in board.list_links(hypothesis_id=hyp.id)} == {
        own_evidence, other_evidence}
    (verdict,) = board.list_verdicts(hypothesis_id=hyp.id)
    assert set(verdict.evidence_ids) == {own_evidence, other_evidence}


async def test_a_judge_link_of_an_unknown_id_is_refused_and_nothing_is_linked(board) -> None:
    answers: list[str] = []

    def judge(request: ModelRequest) -> ModelResponse:
        if len(request.messages) == 1:
            return tool_call("link_evidence", {"evidence_id": "E99", "stance": "supports",
                                               "reading": "r"})
        answers.append(request.messages[-1].content)  # type: ignore[union-attr]
        return tool_call("request_more_evidence", {"hints": "compare within segment"})

    ctx = _context(board, FunctionModel(judge))
    hyp = board.add_hypothesis("Referral customers churn less",
                               investigation_id=ctx.investigation_id)
    await roles.judge(ctx, hyp.id, can_send_back=True, can_refine=False, summary=None)
    assert "E99" in answers[0] and board.list_links(hypothesis_id=hyp.id) == []


def test_a_focused_digest_lists_evidence_recorded_for_other_hypotheses(board) -> None:
    """A collector's digest names the evidence recorded for other hypotheses, analyses
    and plain queries, one line each, not its own (a real-model team ran the same
    IT-against-the-rest compare_within three times; four collectors of another case ran
    the same adjusted query, which a list of analyses alone hid). Only evidence written
    before the focused branch's latest write is listed: a replay builds the prompt at
    another moment between the same writes."""
    inv = board.start_investigation("Why is resolution slow?")
    mine = board.add_hypothesis("IT tickets take longer", investigation_id=inv.id)
    other = board.add_hypothesis("Hardware tickets take longer", investigation_id=inv.id)
    frame = pd.DataFrame({"group": ["IT", "rest"], "days": [9.5, 4.1]})
    compared = board.add_evidence("SELECT 1", frame, description=(
        "compare_within: days for department = IT against the rest, within category"),
        investigation_id=inv.id)
    board.record_tool_call(compared.id, ToolCall("compare_within", {"metric": "days"}),
                           actor="collector")
    board.link(compared.id, other.id, "supports", "IT 9.5 days against 4.1", actor="collector")
    plain = board.add_evidence("SELECT 3", frame, description="plain query",
                               investigation_id=inv.id)
    board.link(plain.id, other.id, "supports", "r", actor="collector")
    own = board.add_evidence("SELECT 2", frame, description="trend of days by week",
                             investigation_id=inv.id)
    board.record_tool_call(own.id, ToolCall("trend", {"metric": "days"}), actor="collector")
    board.link(own.id, mine.id, "supports", "rising", actor="collector")  # its latest write
    later = board.add_evidence("SELECT 5", frame, description="written after it",
                               investigation_id=inv.id)

    text = board_digest(board, investigation_id=inv.id, focus=mine.id, other_evidence=True)
    listed = text.split("OTHER EVIDENCE ON THE BOARD")[1]
    assert f"{compared.id} (2 rows) compare_within: days for department = IT" in listed
    assert f"{plain.id} (2 rows) plain query" in listed
    assert f"  {own.id} " not in listed
    assert later.id not in listed, "written after the branch's latest write"
    assert "OTHER EVIDENCE" not in board_digest(board, investigation_id=inv.id)
    # a reader without link_evidence (a re-judge) is not told to link
    assert "OTHER EVIDENCE" not in board_digest(board, investigation_id=inv.id,
                                                focus=mine.id)
    # another investigation's evidence is not listed; the list keeps the newest 25
    other_inv = board.start_investigation("Another question")
    elsewhere = board.add_evidence("SELECT 4", frame, description="trend elsewhere",
                                   investigation_id=other_inv.id)
    board.record_tool_call(elsewhere.id, ToolCall("trend", {}), actor="collector")
    for i in range(OTHER_EVIDENCE_SHOWN):
        extra = board.add_evidence(f"SELECT {10 + i}", frame, description=f"scan {i}",
                                   investigation_id=inv.id)
        board.record_tool_call(extra.id, ToolCall("segment_scan", {}), actor="collector")
    board.log_event("collector.submitted", {"hypothesis_id": mine.id, "summary": "s"},
                    actor="collector", investigation_id=inv.id)  # the branch writes again
    text = board_digest(board, investigation_id=inv.id, focus=mine.id, other_evidence=True)
    listed_ids = set(re.findall(r"^  (E\d+) ", text, flags=re.MULTILINE))
    assert elsewhere.id not in listed_ids and compared.id not in listed_ids
    assert len(listed_ids) == OTHER_EVIDENCE_SHOWN
    assert f"segment_scan: scan {OTHER_EVIDENCE_SHOWN - 1}" in text
    assert "(3 more not listed: older or further from yours)" in text  # nothing nearer


async def test_a_judge_reads_the_exploration_that_suggested_the_hypothesis(board) -> None:
    """A judge used to see the motivating exploration by id and title only (a real-model
    judge on a SQL City case could not read the witness interview every suspect rested
    on); now its rows come after the linked evidence, marked as context to link."""
    messages: list[str] = []

    def judge(request: ModelRequest) -> ModelResponse:
        messages.append(request.messages[0].text)  # type: ignore[union-attr]
        return tool_call("request_more_evidence", {"hints": "compare within segment"})

    ctx = _context(board, FunctionModel(judge))
    explored = _exploration(board, ctx)
    hyp = board.add_hypothesis("Referral customers churn less", motivated_by=[explored],
                               investigation_id=ctx.investigation_id)
    own = board.add_evidence("SELECT 1 AS one", pd.DataFrame({"one": [1]}),
                             description="one row", investigation_id=ctx.investigation_id)
    board.link(own.id, hyp.id, "supports", "one row", actor="collector")
    await roles.judge(ctx, hyp.id, can_send_back=True, can_refine=False, summary=None)
    context = messages[0].split("THE EXPLORATION THAT SUGGESTED IT")[1]
    assert explored in context and "referral" in context and "0.11" in context
    assert "THE LINKED EVIDENCE" in messages[0].split("THE EXPLORATION THAT SUGGESTED IT")[0]
    messages.clear()
    board.link(explored, hyp.id, "supports", "referral 0.11", actor="judge")
    await roles.judge(ctx, hyp.id, can_send_back=True, can_refine=False, summary=None)
    assert "THE EXPLORATION THAT SUGGESTED IT" not in messages[0]  # linked: shown once


def test_the_other_evidence_nearest_the_hypothesis_is_listed_first(board) -> None:
    """On a board of 60 results the newest 25 left out the asthma-and-diabetes comparison
    a real-model collector then ran again: evidence sharing the hypothesis's rarer words
    is listed before newer evidence that shares none."""
    inv = board.start_investigation("Which treatment is best?")
    frame = pd.DataFrame({"x": [1]})
    other = board.add_hypothesis("Virexa works for asthma", investigation_id=inv.id)
    near = board.add_evidence("SELECT 1", frame, description="Virexa vs standard care, "
                              "asthma and diabetes patients", investigation_id=inv.id)
    board.link(near.id, other.id, "supports", "r", actor="collector-H1")
    for i in range(OTHER_EVIDENCE_SHOWN + 5):
        board.add_evidence(f"SELECT {i}", frame, description=f"death rate by ward {i}",
                           investigation_id=inv.id)
    mine = board.add_hypothesis("Diabetes cancels Virexa's asthma benefit",
                                investigation_id=inv.id)
    text = board_digest(board, investigation_id=inv.id, focus=mine.id, other_evidence=True)
    listed = re.findall(r"^  (E\d+) ", text, flags=re.MULTILINE)
    assert near.id in listed and len(listed) == OTHER_EVIDENCE_SHOWN
    assert listed == sorted(listed, key=lambda e: int(e[1:]))  # shown in board order
    assert "(6 more not listed: older or further from yours)" in text


async def test_a_judge_links_and_decides_in_one_answer(board) -> None:
    """Calls of one answer run in the order written, so a verdict may cite what a link
    before it in the same answer made: a real-model judge spent a second call to be safe
    (the shared prompt now says so)."""
    from account_case import account_context

    from d2_notebook.llm.offline import FunctionModel, tool_calls

    calls = 0

    def judge(request):
        nonlocal calls
        calls += 1
        assert "Calls in one answer run in the order you write them" in request.system
        return tool_calls(
            ("link_evidence", {"evidence_id": evidence.id, "stance": "supports",
                               "reading": "two gold accounts"}),
            ("give_verdict", {"status": "supported", "confidence": 0.7,
                              "rationale": f"two gold accounts [{evidence.id}]",
                              "evidence_ids": [evidence.id], "claim_kind": "other"}))

    ctx = account_context(board, FunctionModel(judge))
    evidence = board.add_evidence("SELECT tier FROM account", pd.DataFrame(
        {"tier": ["gold", "gold"]}), description="gold accounts",
        investigation_id=ctx.investigation_id)
    hyp = board.add_hypothesis("Two accounts are gold", investigation_id=ctx.investigation_id)
    await roles.judge(ctx, hyp.id, can_send_back=True, can_refine=False, summary=None)
    assert calls == 1
    assert board.latest_verdict(hyp.id).evidence_ids == (evidence.id,)


def test_analysis_calls_with_the_same_first_line_are_told_apart(board) -> None:
    """A real-model judge read three compare_within evidences of one exposure under one
    title (the summary's first line), held fixed over different dimensions; a trend over
    all rows and one over decided rows differed only by a row count. Each analysis
    evidence's digest line gives its first line, its call's filter and its named
    dimensions, not the rest of its summary."""
    inv = board.start_investigation("Why are Travel claims declined?")
    hyp = board.add_hypothesis("Travel claims are declined more", investigation_id=inv.id)
    frame = pd.DataFrame({"stratum": ["a", "b"], "effect": [0.35, 0.34]})
    first = ("compare_within: decline rate for category = Travel vs the rest: 0.418 "
             "(n = 146) vs 0.0650 (n = 354); crude effect 0.353")
    calls = [{"exposure": "category", "value": "Travel"},
             {"exposure": "category", "value": "Travel",
              "dimensions": ["e.department", "e.amount"]},
             {"exposure": "category", "value": "Travel", "where": "state <> 'Pending'"}]
    ids = []
    for args in calls:
        item = board.add_evidence("SELECT 1", frame, description=(
            f"{first}\nNo confounding among the 8 dimensions tested for it.\nRecorded as: x"),
            investigation_id=inv.id)
        board.record_tool_call(item.id, ToolCall("compare_within", args), actor="collector")
        board.link(item.id, hyp.id, "supports", "r", actor="collector")
        ids.append(item.id)
    lines = {line.split(": ", 1)[1].split(" — ")[0]
             for line in board_digest(board, investigation_id=inv.id).splitlines()
             if line.strip().startswith("supports:")}
    assert lines == {f"{ids[0]} (2 rows) {first}",
                     f"{ids[1]} (2 rows) {first} [dimensions e.department, e.amount]",
                     f"{ids[2]} (2 rows) {first} [where state <> 'Pending']"}
