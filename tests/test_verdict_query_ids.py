"""An agent that records its own evidence may cite it by query id in its verdict.

A real-model single agent recorded evidence and gave verdicts in one answer, as its prompt
asks, and had to guess the evidence ids the new records would get. A verdict (and a link)
by an agent with its own queries now takes the query id that became the evidence.
"""

from __future__ import annotations

import duckdb
import pytest

from d2_notebook import investigate
from d2_notebook.datasets import hospital
from d2_notebook.llm import ModelRequest, ModelResponse, ToolCallPart, ToolResult
from d2_notebook.llm.offline import FunctionModel

QUESTION = hospital.QUESTION
BY_DRUG = ("SELECT t.drug, count(*) AS patients FROM treatments t GROUP BY t.drug "
           "ORDER BY t.drug")
BY_WARD = "SELECT count(*) AS admissions FROM admissions"


@pytest.fixture
def con() -> duckdb.DuckDBPyConnection:
    return hospital.create()


def _errors(requests: list[ModelRequest]) -> list[str]:
    seen = {m.tool_call_id: m.content for r in requests for m in r.messages
            if isinstance(m, ToolResult) and m.is_error}
    return list(seen.values())


async def test_a_single_agent_cites_what_it_recorded_in_the_same_answer_by_query_id(
        con) -> None:
    steps = iter([
        [("run_sql", {"sql": BY_DRUG}), ("run_sql", {"sql": BY_WARD})],
        [("add_hypothesis", {"statement": "Every drug was given to at least one patient",
                             "rationale": "the counts by drug [Q1]", "query_ids": ["Q1"]}),
         ("add_hypothesis", {"statement": "Admissions outnumber patients",
                             "rationale": "a count [Q2]", "query_ids": []}),
         ("record_evidence", {"hypothesis_id": "H2", "query_id": "Q2",
                              "description": "admissions counted", "stance": "supports",
                              "reading": "the admissions are counted [Q2]"}),
         # cites Q2, which the call before recorded: its new evidence id is not known yet
         ("give_verdict", {"hypothesis_id": "H2", "status": "supported", "confidence": 0.6,
                           "rationale": "the admission count [Q2]", "evidence_ids": ["Q2"],
                           "claim_kind": "other"}),
         ("link_evidence", {"hypothesis_id": "H1", "evidence_id": "Q2", "stance": "neutral",
                            "reading": "a count of admissions, not of drugs"}),
         ("give_verdict", {"hypothesis_id": "H1", "status": "supported", "confidence": 0.7,
                           "rationale": "every drug has patients (Q1)",
                           "evidence_ids": ["Q1"], "claim_kind": "other",
                           "discounted": [{"evidence_id": "Q2", "reason": "off_target",
                                           "explanation": "it counts admissions"}]})],
        [("run_sql", {"sql": BY_DRUG + " LIMIT 2"})],
        # Q3 was run but never recorded: the refusals name the fix
        [("give_verdict", {"hypothesis_id": "H1", "status": "supported", "confidence": 0.7,
                           "rationale": "two drugs [Q3]", "evidence_ids": ["Q3"],
                           "claim_kind": "other"}),
         ("link_evidence", {"hypothesis_id": "H2", "evidence_id": "Q3", "stance": "neutral",
                            "reading": "two drugs"})],
        [("run_sql", {"sql": BY_DRUG + " LIMIT 3"})],
        # records Q4 and cites it in the report of the same answer
        [("record_evidence", {"hypothesis_id": "H1", "query_id": "Q4",
                              "description": "three drugs", "stance": "supports",
                              "reading": "three drugs have patients"}),
         ("write_report", {"markdown": "## Answer\nEvery drug was given [E1, Q4]. Sales "
                                       "fell in the first quarter (Q4); Q2: flat.\n"})],
    ])
    requests: list[ModelRequest] = []

    def detective(request: ModelRequest) -> ModelResponse:
        requests.append(request)
        parts = [ToolCallPart(f"c{len(requests)}-{i}", name, args)
                 for i, (name, args) in enumerate(next(steps))]
        return ModelResponse(parts=parts, stop_reason="tool_use")

    result = await investigate(con, QUESTION, model=FunctionModel(detective),
                               variant="single_agent_board")
    board = result.board
    recorded = {e.sql: e.id for e in board.list_evidence()}
    drugs, admissions = recorded[BY_DRUG], recorded[BY_WARD]
    h2 = board.latest_verdict("H2")
    assert list(h2.evidence_ids) == [admissions]
    assert f"[{admissions}]" in h2.rationale and "Q2" not in h2.rationale
    h1 = board.latest_verdict("H1")
    assert list(h1.evidence_ids) == [drugs] and f"({drugs})" in h1.rationale
    assert [d.evidence_id for d in h1.discounted] == [admissions]
    assert admissions in {link.evidence_id for link in board.list_links(hypothesis_id="H1")}
    three = recorded[BY_DRUG + " LIMIT 3"]
    # only square brackets cite: "(Q4)" and "Q2:" may be quarters in a report
    assert result.report.startswith(f"## Answer\nEvery drug was given [{drugs}, {three}]. "
                                    "Sales fell in the first quarter (Q4); Q2: flat.")
    errors = _errors(requests)
    assert errors == ["Q3 is a query of yours that is not evidence yet: record it with "
                      "record_evidence (before this call, in the same answer or an earlier "
                      "one), then cite it"] * 2, errors
    # the schema says so, to the agents that record their own evidence only
    spec = next(t for t in requests[0].tools if t.name == "give_verdict")
    assert "(Q7) stands for the evidence recorded from it" in str(spec.parameters)


async def test_a_deciding_collector_cites_its_recorded_query_by_id(con) -> None:
    """In the no_judge team a collector decides its hypothesis: its verdict may cite the
    query it recorded in the same answer by query id, with the size's evidence too."""
    from d2_notebook.detective.policies.hospital import HospitalWalkthrough
    from d2_notebook.detective.policies.team_policy import Turn

    class Citing(HospitalWalkthrough):
        def collector(self, turn: Turn):
            if turn.hypothesis_id == "H1" and turn.step == 0:
                return [("run_sql", {"sql": BY_WARD})]
            if turn.hypothesis_id == "H1" and turn.step == 1:
                return [("record_evidence", {"query_id": "Q1", "description": "admissions",
                                             "stance": "neutral",
                                             "reading": "the admissions are counted"}),
                        ("give_verdict", {"status": "inconclusive", "confidence": 0.3,
                                          "rationale": "a count alone decides nothing [Q1]",
                                          "evidence_ids": ["Q1"]})]
            return super().collector(turn)

    result = await investigate(con, QUESTION, model=Citing().model(), variant="no_judge")
    board = result.board
    admissions = next(e.id for e in board.list_evidence() if e.sql == BY_WARD)
    verdict = board.latest_verdict("H1")
    assert list(verdict.evidence_ids) == [admissions]
    assert f"[{admissions}]" in verdict.rationale
