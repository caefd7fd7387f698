"""The analysis tools in the team: offered by variant, run through the guard, stored as
evidence like any query (generated SQL, rows, the tool's summary as description)."""

from __future__ import annotations

import duckdb
import pytest

from d2_notebook import investigate
from d2_notebook.data import GuardedSQL
from d2_notebook.data.analysis import compare_within
from d2_notebook.datasets import hospital
from d2_notebook.detective.analysis_tools import ANALYSIS_TOOL_NAMES, analysis_tool_of
from d2_notebook.detective.policies.team_policy import Action, TeamPolicy, Turn
from d2_notebook.detective.variant import ALL_VARIANTS, REACT_SQL, SINGLE_AGENT_BOARD, Role

SOURCE = ("admissions a JOIN treatments t USING (admission_id) "
          "JOIN outcomes o USING (admission_id)")
METRIC = "avg(CASE WHEN o.died THEN 1 ELSE 0 END)"
CHECK = {"source": SOURCE, "metric": METRIC, "exposure": "t.drug", "value": "Corvalin",
         "reference": "Standard care"}


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    return hospital.create()


class Analyst(TeamPolicy):
    """Scans, adds one hypothesis from the scan, checks it with compare_within."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: dict[str, list[tuple[bool, str]]] = {}

    def _see(self, turn: Turn) -> None:
        self.seen.setdefault(turn.agent, []).extend((r.is_error, r.content)
                                                    for r in turn.results)

    def hypothesizer(self, turn: Turn) -> list[Action] | str:
        if turn.step == 0:
            return [("segment_scan", {"source": SOURCE, "metric": METRIC}),
                    ("segment_scan", {"source": SOURCE, "metric": "sum(o.died)"})]
        self._see(turn)
        return [("add_hypothesis", {"statement": "The treatment changes the outcome rate",
                                    "rationale": "the scan", "query_ids": ["Q1"]}),
                ("done", {"summary": "one"})]

    def collector(self, turn: Turn) -> list[Action] | str:
        if turn.step == 0:
            return [("compare_within", CHECK), ("compare_within", CHECK)]
        self._see(turn)
        return [("record_evidence", {"query_id": "Q1", "description": "the check",
                                     "stance": "contradicts", "reading": "confounded"}),
                ("submit_for_judgement", {"summary": "checked"})]

    def judge(self, turn: Turn) -> list[Action] | str:
        evidence = [e for _, e in turn.linked_evidence()]
        return [("give_verdict", {"status": "contradicted", "confidence": 0.8,
                                  "rationale": f"{evidence[0]} is confounded",
                                  "evidence_ids": evidence})]


async def test_analysis_calls_become_evidence_like_any_query(con):
    policy = Analyst()
    result = await investigate(con, hospital.QUESTION, model=policy.model())
    board = result.board
    [scan, check] = board.list_evidence()
    # The scan that motivated the hypothesis and the collector's check are on the board,
    # with the generated SQL, its rows, and the tool's summary as the description.
    assert analysis_tool_of(scan).value == "segment_scan"
    assert analysis_tool_of(check).value == "compare_within"
    expected = compare_within(GuardedSQL(con), **CHECK)
    assert check.sql == expected.sql
    assert check.description.startswith(expected.summary.split("\n")[0])
    assert "CONFOUNDING" in check.description and "Recorded as: the check" in check.description
    # The rows are the tool's rows (computed from what the generated SQL returned).
    stored = board.evidence_frame(check.id)
    assert list(stored.columns) == list(expected.frame.columns)
    assert len(stored) == len(expected.frame) and check.row_count == expected.row_count
    assert board.get_hypothesis("H1").motivated_by == (scan.id,)
    # A bad input comes back as a tool error naming the fix; a repeat is refused.
    hyp_results = policy.seen["hypothesizer"]
    assert hyp_results[0][0] is False and hyp_results[0][1].startswith(
        'Q1: <data source="segment_scan result Q1">\nsegment_scan')
    assert hyp_results[1][0] is True and "not one mean over rows" in hyp_results[1][1]
    collector_results = policy.seen["collector-H1"]
    assert collector_results[0][1].startswith(
        'Q1: <data source="compare_within result Q1">\ncompare_within')
    assert collector_results[1] == (True, "you already ran this compare_within call as Q1; "
                                          "use that result instead of running it again")


def test_the_variants_offer_the_tools_to_the_roles_that_query():
    for variant in ALL_VARIANTS:
        for role in variant.roles:
            names = variant.tools_of(role)
            if variant is REACT_SQL:
                assert not set(ANALYSIS_TOOL_NAMES) & set(names), "react_sql stays SQL-only"
            elif "run_sql" in names:
                assert set(ANALYSIS_TOOL_NAMES) <= set(names), (variant.name, role)
            else:
                assert not set(ANALYSIS_TOOL_NAMES) & set(names), (variant.name, role)
    assert "compare_within" in SINGLE_AGENT_BOARD.tools_of(Role.DETECTIVE)
