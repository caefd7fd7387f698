"""The coverage map in the team: the digest shows it, the orchestrator may not finish
while a candidate dimension is untouched unless it dismisses it (a board record, in the
report's "Not examined")."""

from __future__ import annotations

import re

import duckdb
import pytest
from analysis_data import one_category_claims

from d2_notebook import investigate
from d2_notebook.board import Board
from d2_notebook.data import GuardedSQL
from d2_notebook.datasets import hospital
from d2_notebook.detective.coverage_view import board_coverage, read_candidates
from d2_notebook.detective.digest import board_digest
from d2_notebook.detective.policies.team_policy import Action, TeamPolicy, Turn
from d2_notebook.detective.team_tools import _dismissed_names
from d2_notebook.detective.tools import ToolError
from d2_notebook.errors import InvalidRecordError, NotFoundError

BY_SEVERITY = ("SELECT a.severity, avg(o.died::INTEGER) AS rate FROM admissions a "
               "JOIN outcomes o USING (admission_id) GROUP BY a.severity")


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    return hospital.create()


class OneQuery(TeamPolicy):
    """One hypothesis tested by one grouped query; the orchestrator tries to finish
    before dismissing, then dismisses a wrong name and every untouched dimension."""

    def __init__(self) -> None:
        super().__init__()
        self.orchestrator_results: list[tuple[bool, str]] = []
        self.digests: list[str] = []

    def hypothesizer(self, turn: Turn) -> list[Action] | str:
        if turn.step == 0:
            return [("add_hypothesis", {"statement": "Severity moves the rate",
                                        "rationale": "r"}), ("done", {"summary": "one"})]
        return "done"

    def collector(self, turn: Turn) -> list[Action] | str:
        if turn.step == 0:
            return [("run_sql", {"sql": BY_SEVERITY})]
        return [("record_evidence", {"query_id": "Q1", "description": "rate by severity",
                                     "stance": "supports", "reading": "it does"}),
                ("submit_for_judgement", {"summary": "one query"})]

    def judge(self, turn: Turn) -> list[Action] | str:
        self.digests.append(turn.first_message)
        return [("give_verdict", {"status": "supported", "confidence": 0.9,
                                  "rationale": "E1", "evidence_ids": ["E1"]})]

    def orchestrator(self, turn: Turn) -> list[Action] | str:
        if any(h.status in ("proposed", "investigating") for h in turn.hypotheses()):
            return [("carry_on", {})]
        self.orchestrator_results = [(r.is_error, r.content) for r in turn.results]
        self.orchestrator_digest = turn.first_message
        if turn.step == 0:
            return [("finish", {"reason": "done"})]
        if turn.step == 1:  # one wrong name in a batch: nothing is dismissed
            return [("dismiss_dimension", {"dimensions": [*turn.untouched_dimensions()[:2],
                                                          "no.such"], "reason": "x"})]
        return [("dismiss_dimension", {"dimensions": turn.untouched_dimensions(),
                                       "reason": "outside the objective"}),
                ("finish", {"reason": "done"})]


async def test_finish_waits_for_every_dimension_to_be_touched_or_dismissed(con):
    policy = OneQuery()
    result = await investigate(con, hospital.QUESTION, model=policy.model())
    board = result.board
    candidates = read_candidates(GuardedSQL(con))
    names = candidates.names
    assert "admissions.severity" in names and "has comorbidities.condition" not in names
    # The judge's digest: its hypothesis's coverage (a focused digest leaves the
    # board-wide map to the orchestrator's); the orchestrator's: the untouched dimensions.
    assert "    dimensions controlled or split by: admissions.severity\n" in policy.digests[0]
    assert "untouched by any evidence" not in policy.digests[0]
    assert "untouched by any evidence: " in policy.orchestrator_digest
    assert "patients.sex" in policy.orchestrator_digest
    # ...and those evidence touched, so the count adds up (an orchestrator could not tell
    # whether a dimension it looked for was touched or not a candidate at all)
    assert "\nTOUCHED BY EVIDENCE (1): admissions.severity\n" in policy.orchestrator_digest
    # finish was refused, naming the untouched dimensions; a wrong name was refused too.
    refused, wrong = policy.orchestrator_results[0], policy.orchestrator_results[1]
    assert refused[0] and refused[1].startswith("cannot finish: no evidence has touched")
    # outcomes.died is only measured (avg(o.died)): the outcome, not a dimension left out
    untouched = [n for n in names if n not in ("admissions.severity", "outcomes.died")]
    assert all(n in refused[1] for n in untouched if "(" not in n)
    assert "outcomes.died" not in refused[1]
    assert wrong[0] and "'no.such' is not a candidate dimension; nothing was dismissed" \
        in wrong[1]
    # Every untouched dimension was dismissed, on the board and in the report.
    dismissed = board.list_dimension_dismissals(investigation_id=result.investigation_id)
    assert {d.dimension for d in dismissed} == set(untouched) - _also_touched(board, candidates)
    assert all(d.reason == "outside the objective" and d.author == "orchestrator"
               for d in dismissed)
    assert "## Not examined" in result.report
    # one compact table: the reason once, then a row per table with its dimensions
    assert result.report.count("outside the objective") == 1
    table_rows = [line for line in result.report.splitlines() if line.startswith("| ")]
    for item in dismissed:
        table = re.search(r"(\w+)\.", item.dimension).group(1)
        shown = item.dimension.replace(f"{table}.", "")
        assert any(f"| {table} |" in row and shown in row for row in table_rows), item.dimension
    assert result.state == "finished"
    kinds = [e.kind for e in board.events()]
    assert kinds.count("dimension.dismissed") == len(dismissed)
    # all of them in one call, one reason
    assert len([c for c in board.list_model_calls() if c.role == "orchestrator"]) == 4


def test_a_dismissal_names_one_dimension_or_several() -> None:
    assert _dismissed_names({"dimension": " t.a ", "reason": "r"}) == ["t.a"]
    assert _dismissed_names({"dimensions": ["t.a", "t.b", "t.a"], "dimension": "t.c"}) == [
        "t.a", "t.b", "t.c"]
    with pytest.raises(ToolError, match="name the dimensions to dismiss"):
        _dismissed_names({"dimensions": [" "], "reason": "r"})


def _also_touched(board: Board, candidates) -> set[str]:
    coverage = board_coverage(board, candidates, None)
    return set(coverage.touched) - {"admissions.severity"}


def test_dismissals_are_board_records_that_export_and_import(board_path):
    board = Board.open(board_path)
    inv = board.start_investigation("q")
    first = board.dismiss_dimension("t.a", "not asked", actor="orchestrator",
                                    investigation_id=inv.id)
    again = board.dismiss_dimension("t.a", "other words", actor="orchestrator",
                                    investigation_id=inv.id)
    assert again == first and first.reason == "not asked"
    with pytest.raises(InvalidRecordError, match=r"say why t\.b is not examined"):
        board.dismiss_dimension("t.b", "  ", actor="o", investigation_id=inv.id)
    with pytest.raises(InvalidRecordError, match="name the dimension"):
        board.dismiss_dimension(" ", "r", actor="o", investigation_id=inv.id)
    with pytest.raises(InvalidRecordError, match="name the dimension"):
        board.dismiss_dimensions(["t.c", " "], "r", actor="o", investigation_id=inv.id)
    copy = Board.from_json(board.to_json())
    assert copy.list_dimension_dismissals() == board.list_dimension_dismissals() == [first]
    assert [e.kind for e in copy.events()] == [e.kind for e in board.events()]
    # several in one transaction: each recorded once, a repeat keeps its first reason
    both = board.dismiss_dimensions(["t.a", "t.d", "t.e"], "one reason", actor="o",
                                    investigation_id=inv.id)
    assert [d.dimension for d in both] == ["t.a", "t.d", "t.e"]
    assert [d.reason for d in both] == ["not asked", "one reason", "one reason"]
    with pytest.raises(NotFoundError):  # an unknown investigation: nothing recorded
        board.dismiss_dimensions(["t.f", "t.g"], "r", actor="o", investigation_id="I99")
    assert len(board.list_dimension_dismissals()) == 3


def test_the_digest_without_candidates_has_no_map(board_path):
    board = Board.open(board_path)
    board.add_hypothesis("h")
    assert "CANDIDATE DIMENSIONS" not in board_digest(board)


def _with_price_list() -> duckdb.DuckDBPyConnection:
    """The hospital data and a price list no key joins to any of its tables."""
    con = hospital.create(patients=400)
    con.execute("CREATE TABLE price_list AS SELECT 'item' || i AS item, ['a', 'b', 'c'][1 + "
                "i % 3] AS band, ['x', 'y'][1 + i % 2] AS supplier, i * 1.5 AS price "
                "FROM range(60) r(i)")
    return con


async def test_an_unreachable_table_is_listed_once_and_never_blocks_finish():
    con = _with_price_list()
    candidates = read_candidates(GuardedSQL(con))
    priced = [n for n in candidates.names if n.startswith("price_list.")]
    assert {"price_list.band", "price_list.supplier"} <= set(priced)
    policy = OneQuery()
    result = await investigate(con, hospital.QUESTION, model=policy.model())
    coverage = board_coverage(result.board, candidates, result.investigation_id)
    assert dict(coverage.unreachable) == {"price_list": tuple(priced)}
    assert not set(priced) & set(coverage.untouched)
    assert (f"UNREACHABLE DIMENSIONS (no key joins their table to the tables the evidence "
            f"reads; they do not block finishing): price_list ({len(priced)})"
            ) in policy.orchestrator_digest
    refused = policy.orchestrator_results[0][1]
    assert refused.startswith("cannot finish") and "price_list" not in refused
    dismissed = {d.dimension for d in result.board.list_dimension_dismissals()}
    assert not dismissed & set(priced) and result.state == "finished"
    assert "price_list" not in (coverage.hypothesis_line("H1") or "")


async def test_the_metric_s_own_columns_are_never_untouched_or_not_examined(con):
    """The walk-through's analysis calls measure `outcomes.died`: the coverage map names it
    once as the metric's own column, never as an untouched dimension, and the report's
    "Not examined" never lists it (a real orchestrator spent a call dismissing it)."""
    from d2_notebook.detective.policies.hospital import HospitalWalkthrough

    result = await investigate(con, hospital.QUESTION, model=HospitalWalkthrough().model())
    coverage = board_coverage(result.board, read_candidates(GuardedSQL(con)),
                              result.investigation_id)
    assert "outcomes.died" in coverage.measured
    assert "outcomes.died" not in coverage.untouched
    assert any("THE METRIC'S OWN COLUMNS" in line and "outcomes.died" in line
               for line in coverage.board_lines())
    not_examined = result.report.split("## Not examined", 1)[-1]
    assert "outcomes.died" not in not_examined and "| died" not in not_examined


def test_a_dismissed_dimension_that_evidence_touched_anyway_counts_as_examined(
        con, board_path):
    """A real orchestrator dismissed date parts early; collectors later split by them;
    the report still listed them as not examined."""
    candidates = read_candidates(GuardedSQL(con))
    assert "admissions.severity" in candidates.names
    board = Board.open(board_path)
    inv = board.start_investigation("Who dies?")
    board.dismiss_dimensions(["admissions.severity", "admissions.ward"], "not asked",
                             actor="orchestrator", investigation_id=inv.id)
    before = board_coverage(board, candidates, inv.id)
    assert {d.dimension for d in before.dismissed} == {"admissions.severity", "admissions.ward"}
    frame = GuardedSQL(con).run(BY_SEVERITY).frame
    board.add_evidence(BY_SEVERITY, frame, description="death rate by severity",
                       investigation_id=inv.id)
    after = board_coverage(board, candidates, inv.id)
    assert [d.dimension for d in after.unexamined_dismissals] == ["admissions.ward"]
    assert "admissions.severity" in after.touched
    assert "admissions.severity" not in after.untouched
    # the dismissal still exempts the dimension from the checks of other hypotheses
    assert {d.dimension for d in after.dismissed} == {"admissions.severity",
                                                      "admissions.ward"}


def test_conditional_aggregation_counts_as_a_split_in_the_digest_line(con, board) -> None:
    """A real collector compared severities inside its select list; the map said it had
    not touched severity (and called severity a column the metric measures)."""
    candidates = read_candidates(GuardedSQL(con))
    inv = board.start_investigation("Which drug works for critical patients?")
    hypothesis = board.add_hypothesis("Virexa helps critical patients", investigation_id=inv.id)
    sql = ("SELECT t.drug, avg(CASE WHEN a.severity = 'critical' THEN o.died::INT END) AS crit,"
           " avg(CASE WHEN a.severity = 'mild' THEN o.died::INT END) AS mild FROM admissions a"
           " JOIN treatments t USING (admission_id) JOIN outcomes o USING (admission_id)"
           " GROUP BY t.drug")
    evidence = board.add_evidence(sql, GuardedSQL(con).run(sql).frame,
                                  description="death rate by drug, critical vs mild",
                                  investigation_id=inv.id)
    board.link(evidence.id, hypothesis.id, "supports", actor="collector")
    coverage = board_coverage(board, candidates, inv.id)
    assert coverage.by_hypothesis[hypothesis.id] == ("admissions.severity", "treatments.drug")
    assert coverage.hypothesis_line(hypothesis.id) == (
        "dimensions controlled or split by: admissions.severity, treatments.drug")
    assert "outcomes.died" in coverage.measured
    assert "admissions.severity" not in coverage.measured + coverage.untouched


def test_a_dimension_compare_within_could_not_hold_fixed_is_not_controlled(board) -> None:
    """A real judge read "every candidate dimension" controlled on a compare_within whose
    summary said category was not tested: the exposed rows held one category only."""
    from d2_notebook.board import ToolCall
    from d2_notebook.data.analysis import compare_within

    con = one_category_claims()
    guard = GuardedSQL(con)
    args = {"source": "claims", "metric": "avg(claims.amount)",
            "exposure": "claims.user_id", "value": "u1"}
    result = compare_within(guard, **args)
    assert "claims.category (both arms only in travel" in result.summary
    inv = board.start_investigation("Does user u1 claim more?")
    hypothesis = board.add_hypothesis("u1 claims more", investigation_id=inv.id)
    evidence = board.add_evidence(result.sql, result.frame, description=result.summary,
                                  investigation_id=inv.id)
    board.record_tool_call(evidence.id, ToolCall("compare_within", args), actor="collector")
    board.link(evidence.id, hypothesis.id, "supports", actor="collector")
    coverage = board_coverage(board, read_candidates(guard), inv.id)
    assert "claims.region" in coverage.by_hypothesis[hypothesis.id]
    assert "claims.category" not in coverage.by_hypothesis[hypothesis.id]
    assert coverage.hypothesis_line(hypothesis.id) != (
        "dimensions controlled or split by: every candidate dimension")
    con.close()


def test_an_entity_column_is_named_in_the_map_and_marked_once_grouped(board) -> None:
    """An orchestrator on an InsightBench expense task read "0 of them untouched" and saw
    no trace of ``user`` (50 values, more than a dimension may have), whose spread was a
    reference insight. A text column of many values, each over several rows, is named
    as an entity column with whether evidence grouped by it; a unique column (an id, a
    description) is not, and neither blocks finishing."""
    con = duckdb.connect()
    con.execute("""
        CREATE TABLE expense AS
        SELECT i AS expense_id, 'user' || (i % 50) AS submitter, 'note ' || i AS note,
               CASE WHEN i % 10 = 0 THEN 'comment ' || i END AS comment,
               ['Travel', 'Assets', 'Services', 'Misc'][1 + i % 4] AS category,
               (i % 7) * 10.0 AS amount
        FROM range(500) r(i)""")
    candidates = read_candidates(GuardedSQL(con))
    assert [(c.name, c.values) for c in candidates.entities] == [("expense.submitter", 50)]
    inv = board.start_investigation("How do expenses vary?")
    coverage = board_coverage(board, candidates, inv.id)
    line = next(text for text in coverage.board_lines() if text.startswith("ENTITY COLUMNS"))
    assert re.search(r"expense\.submitter \(50 values; no evidence groups by it\)$",
                     line), line
    assert "a GROUP BY question" in line and "they do not block finishing" in line
    assert "expense.submitter" not in coverage.untouched
    # a mostly-NULL free-text column (50 values over 50 filled rows) is no entity column
    assert "expense.comment" not in line
    one = "SELECT count(*) AS n FROM expense WHERE submitter = 'user7'"
    board.add_evidence(one, GuardedSQL(con).run(one).frame, description="one user's lines",
                       investigation_id=inv.id)
    assert any("no evidence groups by it" in text  # a filter looks at one entity only
               for text in board_coverage(board, candidates, inv.id).board_lines())
    sql = "SELECT submitter, count(*) AS n FROM expense GROUP BY submitter ORDER BY n DESC"
    board.add_evidence(sql, GuardedSQL(con).run(sql).frame, description="reports per user",
                       investigation_id=inv.id)
    grouped = board_coverage(board, candidates, inv.id)
    assert any(re.search(r"expense\.submitter \(50 values; grouped by evidence\)", text)
               for text in grouped.board_lines())
    assert "ENTITY COLUMNS" in board_digest(board, investigation_id=inv.id, coverage=grouped)
