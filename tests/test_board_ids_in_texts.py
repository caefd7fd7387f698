"""A hypothesis's rationale and an evidence's reading name evidence by its board id: the
query ids an agent saw in its turn ("Q6") mean nothing to anyone reading the board (real
answerers had to work out which E-id a rationale's "Q12" was)."""

from __future__ import annotations

import duckdb

from d2_notebook.board import Board
from d2_notebook.data import open_source
from d2_notebook.detective import roles
from d2_notebook.detective.context import QueryLog, TeamContext
from d2_notebook.detective.settings import InvestigationSettings
from d2_notebook.llm import ModelRequest, ModelResponse
from d2_notebook.llm.offline import FunctionModel, tool_calls


def test_cited_query_ids_that_became_evidence_read_as_evidence_ids() -> None:
    log = QueryLog(evidence_ids={"Q1": "E7", "Q4": "E9"})
    assert (log.with_board_ids("It holds (Q1, Q4 row 2); [Q2] was not recorded; (Q10)")
            == "It holds (E7, E9 row 2); [Q2] was not recorded; (Q10)")
    # a quarter in running text, or in a parenthesis with words, is not a citation
    assert (log.with_board_ids("Revenue peaked in Q4 2023 (the Q4 of the fiscal year)")
            == "Revenue peaked in Q4 2023 (the Q4 of the fiscal year)")
    assert QueryLog().with_board_ids("(Q1)") == "(Q1)"
    # nor a quarter beside its year, even in brackets that hold only ids and numbers
    # (a judge read "0.456 (2024-E16)" where the row said 2024-Q1)
    assert (log.with_board_ids("0.456 (2024-Q1), 0.41 (2023 Q4), 0.5 (Q1 2024), "
                               "[FY24-Q4], (2023/Q1), (Q4-2023); but (Q1) and [E2, Q4]")
            == "0.456 (2024-Q1), 0.41 (2023 Q4), 0.5 (Q1 2024), [FY24-Q4], (2023/Q1), "
               "(Q4-2023); but (E7) and [E2, E9]")
    returned = QueryLog(results=dict.fromkeys(["Q1", "Q4"]))  # type: ignore[arg-type]
    assert returned.cited_queries("(2024-Q1) and (Q4)") == ["Q4"]
    # ids joined by a hyphen are still ids
    assert log.with_board_ids("(Q1-Q4), (E2-Q4)") == "(E7-E9), (E2-E9)"
    assert returned.cited_queries("(Q1-Q4)") == ["Q1", "Q4"]


def test_the_query_ids_a_text_cites_are_those_in_citations_and_labels() -> None:
    log = QueryLog(results=dict.fromkeys(["Q1", "Q2", "Q4", "Q5"]))  # type: ignore[arg-type]
    assert log.cited_queries("Q5: rose; it holds (Q1, Q4 row 2) and [Q9]; sales in Q2 "
                             "fell (the Q2 of the year)") == ["Q1", "Q4", "Q5"]


def test_a_query_id_labelling_a_clause_reads_as_its_evidence_id() -> None:
    """The retail case's rationales read "...; Q5: returned orders carry 0", which the
    answerers took for the second quarter of a Q1-vs-Q2 question."""
    log = QueryLog(evidence_ids={"Q2": "E12", "Q5": "E15"})
    assert (log.with_board_ids("Q2: discounts rose; Q5: returned orders carry 0. "
                               "In Q2: prices held")
            == "E12: discounts rose; E15: returned orders carry 0. In Q2: prices held")
    assert log.with_board_ids("Home fell in Q2; Q3: no query") == "Home fell in Q2; Q3: no query"
    assert (log.with_board_ids("By quarter. Q2: $89 a order\n- Q5: returns rose")
            == "By quarter. Q2: $89 a order\n- E15: returns rose")


def _hypothesizer(request: ModelRequest) -> ModelResponse:
    if len(request.messages) == 1:
        return tool_calls(("run_sql", {"sql": "SELECT 2 AS wards"}),
                          ("run_sql", {"sql": "SELECT 3 AS drugs"}))
    return tool_calls(("add_hypothesis", {"statement": "Ward matters",
                                          "rationale": "2 wards (Q1); 3 drugs (Q2); "
                                                       "Q3 of the year, Q9 unknown [Q9]",
                                          "query_ids": ["Q1"]}),
                      ("done", {"summary": "one"}))


async def test_a_hypothesis_rationale_names_its_motivating_evidence_by_board_id(
        tmp_path) -> None:
    board = Board.open(tmp_path / "ids.d2board")
    investigation = board.start_investigation("Which ward?")
    ctx = TeamContext(board=board, sql=open_source(duckdb.connect()),
                      model=FunctionModel(_hypothesizer), investigation_id=investigation.id,
                      question=investigation.question, schema_summary="(none)",
                      settings=InvestigationSettings())
    decision = await roles.hypothesize(ctx, guidance=None)
    (hyp_id,) = decision.added
    hypothesis = board.get_hypothesis(hyp_id)
    # the cited Q2 is recorded as motivating evidence too (a bare Q2 means nothing to
    # the other roles); a Q3 in running text is no citation, and Q9 was never returned
    wards, drugs = hypothesis.motivated_by
    assert hypothesis.rationale == (f"2 wards ({wards}); 3 drugs ({drugs}); "
                                    "Q3 of the year, Q9 unknown [Q9]")
    assert board.evidence_frame(drugs)["drugs"].tolist() == [3]
