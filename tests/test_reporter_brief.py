"""The reporter reads what it needs: on the stored real boards its brief stays within its
budget and carries every cited evidence id with the rows that carry its readings, every
verdict whole, and every other result with numbers; analysis evidence is named by its
tool call, never by its generated SQL."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator

import pandas as pd
import pytest

from d2_notebook.board import Board, ToolCall
from d2_notebook.data import GuardedSQL
from d2_notebook.data.analysis import compare_within
from d2_notebook.datasets import hospital
from d2_notebook.detective.dimension_names import named_dimensions
from d2_notebook.detective.evidence_view import evidence_details
from d2_notebook.detective.reporter_brief import (
    CITED_ROWS,
    MIN_CITED_ROWS,
    REPORTER_BRIEF_TOKENS,
    reporter_brief,
)
from d2_notebook.detective.result_summary import claim_rows, covering_rows
from d2_notebook.detective.sql_tools import analysis_description
from d2_notebook.llm import estimate_tokens
from tests.shared_dir import shared_dir


@pytest.fixture(scope="module")
def boards(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Board]]:
    """The real team boards, copied (the shared copies stay as they are)."""
    work = tmp_path_factory.mktemp("real-boards")
    opened = []
    for stored in sorted(shared_dir("real-boards").glob("*--full.d2board")):
        copy = work / stored.name
        shutil.copy(stored, copy)
        opened.append(Board.open(copy))
    assert len(opened) == 4
    yield opened
    for board in opened:
        board.close()


def _cited(board: Board, investigation_id: str) -> list[str]:
    return list(dict.fromkeys(
        e for h in board.list_hypotheses(investigation_id=investigation_id)
        if (v := board.latest_verdict(h.id)) is not None for e in v.evidence_ids))


def _carrying(board: Board, evidence_id: str) -> list[int]:
    """The rows the brief must show for a cited evidence (1-based): those showing the
    numbers its verdicts state first, then those carrying what the team said of it."""
    item = board.get_evidence(evidence_id)
    frame = board.evidence_frame(evidence_id)
    claims = [item.description]
    for link in board.list_links(evidence_id=evidence_id):
        claims += [link.rationale, board.get_hypothesis(link.hypothesis_id).statement]
    claims += [h.statement + " " + h.rationale for h in board.list_hypotheses()
               if evidence_id in h.motivated_by]
    verdicts = [v.rationale + ("\n" + v.headline if v.contribution is not None else "")
                for v in board.list_verdicts() if evidence_id in v.evidence_ids]
    claims += verdicts
    most = min(len(frame), MIN_CITED_ROWS)
    rows = list(dict.fromkeys(covering_rows(frame, verdicts, most)
                              + claim_rows(frame, claims, most)))[:most]
    rows += [p for p in range(len(frame)) if p not in rows][:most - len(rows)]
    return [p + 1 for p in rows]


def _block(brief: str, evidence_id: str) -> str:
    match = re.search(rf"^\[{evidence_id}\] .*?(?=\n\n|\Z)", brief, re.S | re.M)
    assert match, f"{evidence_id} is missing from the brief"
    return match.group(0)


def _check(board: Board, budget: int) -> str:
    investigation = board.list_investigations()[-1].id
    brief = reporter_brief(board, investigation, budget_tokens=budget)
    for evidence_id in _cited(board, investigation):
        block = _block(brief, evidence_id)
        frame = board.evidence_frame(evidence_id)
        for row in _carrying(board, evidence_id):
            values = [str(v) for v in frame.iloc[row - 1].tolist()
                      if not pd.isna(v) and len(str(v)) < 40 and not isinstance(v, float)]
            line = next((x for x in block.splitlines() if re.match(rf"\s*{row}\s", x)), None)
            assert line is not None, f"{evidence_id}: row {row} that carries it is not shown"
            assert all(v in line for v in values[:3]), (evidence_id, row, line)
    for evidence in board.list_evidence(investigation_id=investigation):
        if not evidence.redundant:
            _block(brief, evidence.id)  # every result is there, cited or not
    for hypothesis in board.list_hypotheses(investigation_id=investigation):
        verdict = board.latest_verdict(hypothesis.id)
        if verdict is not None:  # whole, never cut mid-sentence
            assert " ".join(verdict.rationale.split()) in brief
    return brief


def test_the_brief_of_each_real_board_fits_its_budget_with_every_cited_row(boards) -> None:
    for board in boards:
        brief = _check(board, REPORTER_BRIEF_TOKENS)
        assert estimate_tokens(brief) <= REPORTER_BRIEF_TOKENS
        assert "DATABASE" not in brief and "(number): min" not in brief  # no column stats
        assert "dimensions controlled or split by" not in brief
        # Every exploration result carries rows, not just its title, at this budget.
        assert all("\n" in _block(brief, e.id) for e in board.list_evidence()
                   if e.row_count and not e.redundant)


def test_a_tight_budget_drops_rows_but_never_a_cited_piece_or_its_carrying_rows(
        boards) -> None:
    for board in boards:
        roomy = reporter_brief(board, board.list_investigations()[-1].id)
        tight = _check(board, REPORTER_BRIEF_TOKENS // 4)
        assert len(tight) < len(roomy)


def test_the_budget_is_far_below_what_the_reporter_read_before(boards) -> None:
    for board in boards:
        investigation = board.list_investigations()[-1].id
        before = evidence_details(board, _cited(board, investigation), budget_tokens=None)
        brief = reporter_brief(board, investigation)
        assert "SQL:" in before and "SQL:" not in brief
    assert REPORTER_BRIEF_TOKENS <= 200_000 // 8  # the window the old budget used


def test_analysis_evidence_is_named_by_its_call_not_its_generated_sql(boards) -> None:
    board = boards[0]
    evidence = next(e for e in board.list_evidence() if not e.redundant)
    call = ToolCall("segment_scan", {"table": "person", "outcome": "income",
                                     "dimensions": ["hair_color", "car_make"]})
    board.record_tool_call(evidence.id, call, actor="test")
    shown = evidence_details(board, [evidence.id])
    origin = shown.splitlines()[1]
    assert origin.startswith("From segment_scan(") and origin.endswith(")")
    for arg in ("table=person", "outcome=income", "dimensions=[hair_color, car_make]"):
        assert arg in origin
    assert "SQL:" not in shown and " ".join(evidence.sql.split())[:60] not in shown
    brief = reporter_brief(board, board.list_investigations()[-1].id)
    assert "; from segment_scan(" in _block(brief, evidence.id).splitlines()[0]


def test_an_analysis_result_shows_its_overall_and_flagged_rows_first() -> None:
    """Whatever the readings say, the reporter sees a compare_within's overall row and
    its flagged strata — not the first strata of an arbitrary month."""
    from d2_notebook.data import GuardedSQL
    from d2_notebook.data.analysis import compare_within
    from d2_notebook.datasets import hospital
    from d2_notebook.detective.reporter_brief import analysis_anchor_rows

    result = compare_within(GuardedSQL(hospital.create(patients=1500)),
                            source="admissions a JOIN treatments t USING (admission_id) "
                                   "JOIN outcomes o USING (admission_id)",
                            metric="avg(CASE WHEN o.died THEN 1 ELSE 0 END)",
                            exposure="a.ward", value="icu")
    anchors = analysis_anchor_rows(result.frame)
    assert anchors[0] == 0 and result.frame["dimension"].iloc[0] == "(overall)"
    flagged = [p for p in range(len(result.frame)) if result.frame["flag"].iloc[p]]
    assert flagged and anchors[1:] == flagged


def test_an_analysis_summary_reaches_the_reporter_as_its_readings() -> None:
    """What a tool covered (the dimensions it checked, the strata without overlap, what
    it could not test) is for the judges; the reporter gets the readings, and the report's
    coverage comes from the board's own sections."""
    from d2_notebook.detective.reporter_brief import readings

    summary = "\n".join([
        "compare_within: avg(x) for g = a vs the rest: 0.6 (n = 40) vs 0.4 (n = 60).",
        "FLAGS (1):", "- CONFOUNDING by g.tier: the effect changes once it is held fixed.",
        "No heterogeneity beyond chance among the 3 dimensions tested for it.",
        "Tested: confounding 3 of 3 dimensions, heterogeneity 3 of 3.",
        "Dimensions checked: g.tier, g.region, month(g.day).",
        "Strata without overlap (one arm only): g.region: west (exposed only).",
        "Not tested (fewer than 10 rows): 2 segments.",
        "Not tested: g.band determine(s) the metric exactly.",
        "Effect with one dimension held fixed (standardised over its strata): g.region 0.19.",
        "Not tested (fewer than two of their values hold rows of both arms): g.code.",
        "Heterogeneity not tested for g.size: it needs two strata with 12 rows in each arm.",
        "Left out of this scan: g.age, which the where filter reads.",
        "Heterogeneity near the level, not flagged (q below 0.05 but not 0.001): g.region.",
        "Recorded as: the rate for a vs the rest (supports H2)"])
    kept = readings(summary).splitlines()
    assert kept == [summary.splitlines()[i] for i in (0, 1, 2, 3, 8, 13, 14)]
    assert readings("The count per ward (a plain query)") == "The count per ward (a plain query)"


# --- an analysis result's rows follow the dimension its readings name -------------------

SOURCE = ("admissions a JOIN treatments t USING (admission_id) "
          "JOIN outcomes o USING (admission_id) JOIN patients p USING (patient_id)")
CHECK = {"source": SOURCE, "metric": "avg(CASE WHEN o.died THEN 1 ELSE 0 END)",
         "exposure": "t.drug", "value": "Virexa", "reference": "Standard care",
         "dimensions": ["a.severity", "a.ward", "p.sex", "month(admissions.admitted_on)",
                        "day_of_week(admissions.admitted_on)",
                        "quarter(admissions.admitted_on)"]}
"""A collector's check of a drug without effect: no dimension flagged, and the effect
standardised over each one near -0.015, each repeated on every row of its dimension."""
SEVERITY = "Standardised over severity, Virexa lowers the death rate by only 0.015."


@pytest.fixture(scope="module")
def hospital_db():
    return hospital.create()


@pytest.fixture(scope="module")
def check(hospital_db):
    return compare_within(GuardedSQL(hospital_db), **CHECK)


def _judged(board: Board, result, verdict: str, *, tool: bool = True) -> str:
    """The id of ``result`` recorded as evidence (with its tool call, unless ``tool`` is
    false: then a plain query's result), linked and cited by a verdict reading it."""
    investigation = board.start_investigation("Which treatment lowers the death rate?")
    hypothesis = board.add_hypothesis("Virexa lowers the death rate",
                                      investigation_id=investigation.id)
    description = analysis_description(result, "") if tool else "death rate per stratum"
    evidence = board.add_evidence(result.sql, result.frame, description=description,
                                  investigation_id=investigation.id)
    if tool:
        board.record_tool_call(evidence.id, ToolCall("compare_within", CHECK), actor="collector")
    board.link(evidence.id, hypothesis.id, "contradicts", verdict, actor="collector")
    board.add_verdict(hypothesis.id, "contradicted", 0.8, verdict, [evidence.id], author="judge")
    return evidence.id


def _shown(board: Board, evidence_id: str, budget: int = REPORTER_BRIEF_TOKENS) -> list[int]:
    """The rows (0-based) the brief shows of an evidence; ``budget`` 1 gives the shortest
    form, where a cited evidence keeps only the :data:`MIN_CITED_ROWS` that carry it most."""
    brief = reporter_brief(board, board.list_investigations()[-1].id, budget_tokens=budget)
    return [int(m.group(1)) - 1 for line in _block(brief, evidence_id).splitlines()
            if (m := re.match(r"\s*(\d+)\s", line))]


@pytest.mark.parametrize(("verdict", "named"), [
    (SEVERITY, "admissions.severity"),
    ("Held fixed by day of week, Virexa lowers the death rate by 0.0146.",
     "day_of_week(admissions.admitted_on)"),
])
def test_a_reading_of_one_dimension_is_carried_by_that_dimensions_rows(
        board: Board, check, verdict: str, named: str) -> None:
    """"Standardised over severity, ... 0.015": the number repeats on every row of its
    dimension and rounds alike on other dimensions' rows; over the whole result those
    came first (a real-model brief showed a Wednesday row and a 2021-09 row, and the
    reporter took its figure from the verdict's text). The rows that carry it are the
    overall row and the named dimension's, which the brief shows at any budget."""
    frame = check.frame
    dimension = frame["dimension"]
    trap = claim_rows(frame, [check.summary, verdict], MIN_CITED_ROWS)
    assert any(dimension.iloc[p] not in ("(overall)", named) for p in trap)  # the old pick
    evidence = _judged(board, check, verdict)
    shortest = _shown(board, evidence, budget=1)
    assert len(shortest) == MIN_CITED_ROWS
    assert [dimension.iloc[p] for p in shortest] == ["(overall)", named]
    own = [p for p in range(len(frame)) if dimension.iloc[p] == named]
    block = _block(reporter_brief(board, board.list_investigations()[-1].id), evidence)
    assert f"({1 + len(own)} that carry it, then the first others)" in block
    assert {0, *own} <= set(_shown(board, evidence))


def test_a_number_on_every_row_of_a_named_dimension_carries_it_however_many_rows(
        board: Board, check) -> None:
    """Calendar months: 24 rows, each with the standardised effect the reading states.
    Over the whole result a number on so many rows tells no row apart; among the named
    dimension's rows it is what carries the reading."""
    verdict = "Standardised over month(a.admitted_on), the effect is -0.0168: none."
    evidence = _judged(board, check, verdict)
    brief = reporter_brief(board, board.list_investigations()[-1].id)
    assert "the 10 rows that carry it; numbered by place in the tool's result" in _block(
        brief, evidence)
    assert [check.frame["dimension"].iloc[p] for p in _shown(board, evidence)] == [
        "(overall)"] + ["month(admissions.admitted_on)"] * 9


def test_a_stratum_the_reading_names_comes_first_among_its_dimensions_rows(
        board: Board, check) -> None:
    evidence = _judged(board, check, SEVERITY + " Even in severe cases it does not help.")
    overall, first = _shown(board, evidence, budget=1)
    assert check.frame["dimension"].iloc[overall] == "(overall)"
    assert (check.frame["dimension"].iloc[first], check.frame["stratum"].iloc[first]) == (
        "admissions.severity", "severe")


def test_other_dimensions_rows_carry_a_reading_no_named_dimensions_row_carries(
        board: Board, check) -> None:
    """Sex named, but its rows hold none of the reading's numbers: the rows that carry
    it over the whole result do, whatever their dimension (2021-Q3's effect, 0.088).
    The row showing the verdict's own number comes before the rows that match the most
    numbers of everything said (a 2020-03 row, holding the summary's effect by rounding),
    so at the shortest it is the one shown beside the overall row."""
    verdict = "Held fixed by sex nothing changes, yet in one period the rate rose by 0.088."
    evidence = _judged(board, check, verdict)
    frame = check.frame
    claims = [board.get_evidence(evidence).description, verdict, "Virexa lowers the death "
              "rate", verdict]
    carrying = [p for p in claim_rows(frame, claims, CITED_ROWS) if p != 0]
    q3 = next(p for p in range(len(frame))
              if tuple(frame[["dimension", "stratum"]].iloc[p]) == (
                  "quarter(admissions.admitted_on)", "2021-Q3"))
    assert carrying[0] != q3  # the strongest match over all that was said is another row
    assert _shown(board, evidence, budget=1) == [0, q3]
    assert frame["dimension"].iloc[q3] != "patients.sex"
    assert q3 in carrying and q3 in _shown(board, evidence)


def test_a_plain_query_result_keeps_the_rows_that_carry_it_over_the_whole_result(
        board: Board, check) -> None:
    """Only an analysis tool's result is read by its dimensions; a query's rows carry a
    reading by its numbers and names over the whole result, as before."""
    evidence = _judged(board, check, SEVERITY, tool=False)
    claims = ["death rate per stratum", SEVERITY, "Virexa lowers the death rate", SEVERITY]
    assert _shown(board, evidence, budget=1) == sorted(
        claim_rows(check.frame, claims, MIN_CITED_ROWS))


@pytest.fixture(scope="module")
def labels(hospital_db) -> list[str]:
    """Every dimension of the hospital as compare_within labels it."""
    result = compare_within(GuardedSQL(hospital_db), **{**CHECK, "dimensions": None})
    return list(dict.fromkeys(result.frame["dimension"]))


@pytest.mark.parametrize(("text", "named"), [
    ("standardised over severity", {"admissions.severity"}),
    ("held fixed by A.Severity_Score", {"admissions.severity_score"}),
    ("by severity score", {"admissions.severity_score"}),
    ("within each ward", {"admissions.ward"}),
    ("by day of week", {"day_of_week(admissions.admitted_on)",
                        "day_of_week(treatments.started_on)"}),
    ("the day-of-week split (dow)", {"day_of_week(admissions.admitted_on)",
                                     "day_of_week(treatments.started_on)"}),
    ("day_of_week(a.admitted_on) moves nothing", {"day_of_week(admissions.admitted_on)"}),
    ("year(admitted_on) and diabetes", {"year(admissions.admitted_on)",
                                        "has comorbidities.condition = diabetes"}),
    ("by month of year", {"month_of_year(admissions.admitted_on)",
                          "month_of_year(treatments.started_on)"}),
    ("has comorbidities.condition = ckd", {"has comorbidities.condition = ckd"}),
    ("quarter(t.started_on)", {"quarter(treatments.started_on)"}),
    ("older patients aged 80, on Wednesdays in 2021-09", set()),
    ("the severity-adjusted (severe) stratum", {"admissions.severity"}),
])
def test_how_a_text_names_a_dimension(labels: list[str], text: str, named: set[str]) -> None:
    assert named_dimensions(labels, [text]) == named


def test_a_range_no_row_carries_shows_the_rows_at_each_columns_ends(board: Board) -> None:
    """A real verdict read a range off a result, in words no row carries as written;
    the brief showed its first ten rows "(0 that carry it)". It shows the rows holding
    each number column's ends instead, says so, and says what the result is ordered by."""
    frame = pd.DataFrame({"month": [f"2023-{m:02d}" for m in range(1, 31)],
                          "claims": [1500 + (m * 37) % 400 for m in range(1, 31)]})
    investigation = board.start_investigation("Did monthly claims change?")
    hypothesis = board.add_hypothesis("Monthly claims were flat",
                                      investigation_id=investigation.id)
    sql = "SELECT month, count(*) AS claims FROM claims GROUP BY month ORDER BY 1"
    evidence = board.add_evidence(sql, frame, description="claims per month",
                                  investigation_id=investigation.id)
    verdict = "Claims stayed flat all along, their lowest month within a third of their highest."
    board.link(evidence.id, hypothesis.id, "supports", verdict, actor="collector")
    board.add_verdict(hypothesis.id, "supported", 0.8, verdict, [evidence.id], author="judge")
    block = _block(reporter_brief(board, investigation.id), evidence.id)
    least, greatest = int(frame["claims"].idxmin()), int(frame["claims"].idxmax())
    assert {least, greatest} <= set(_shown(board, evidence.id))
    assert ("none carries a reading as written: the rows holding each number column's "
            "least and greatest value, then the first others); numbered by place in the "
            "result, which is ordered by month") in block


def test_an_unordered_result_says_its_rows_have_no_stated_order(board: Board) -> None:
    frame = pd.DataFrame({"user_id": [f"u{i}" for i in range(30)], "claims": list(range(30))})
    investigation = board.start_investigation("Who files the most claims?")
    evidence = board.add_evidence("SELECT user_id, count(*) AS claims FROM c GROUP BY 1",
                                  frame, description="claims per user",
                                  investigation_id=investigation.id)
    block = _block(reporter_brief(board, investigation.id), evidence.id)
    assert "numbered by place in the result, which is in no stated order" in block


# --- the rows showing a verdict's numbers come first ----------------------------------

def test_covering_rows_shows_each_stated_number_in_the_fewest_rows() -> None:
    """Six figures in six strata, and a row repeating one of them with two more matches:
    the cover takes a row per figure, the richest first, before any repeat."""
    frame = pd.DataFrame({"stratum": [f"s{i}" for i in range(8)],
                          "rate": [0.11, 0.22, 0.33, 0.44, 0.55, 0.66, 0.11, 0.9],
                          "n": [10, 20, 30, 40, 50, 60, 70, 80]})
    claim = "Rates 0.11, 0.22, 0.33, 0.44, 0.55 and 0.66; the first stratum had 10 rows."
    assert covering_rows(frame, [claim], 10) == [0, 1, 2, 3, 4, 5]
    assert covering_rows(frame, [claim], 2) == [0, 1]
    assert covering_rows(frame, ["no figure at all"], 5) == []
    assert covering_rows(frame, [claim], 0) == []
    # A figure held by a row known to be about the claim is sought there alone.
    assert covering_rows(frame, ["a rate of 0.11"], 3, about=[6]) == [6]


def test_a_number_common_to_many_rows_is_sought_only_where_the_claim_is_about() -> None:
    """0.5 sits on half of 40 rows: it tells no row apart, unless the rows known to be
    about the claim hold it (an effect repeated on every stratum of its dimension)."""
    frame = pd.DataFrame({"dimension": ["a"] * 20 + ["b"] * 20,
                          "effect": [0.5] * 20 + [0.1 * i for i in range(20)]})
    assert covering_rows(frame, ["effect 0.5"], 3) == []
    assert covering_rows(frame, ["effect 0.5"], 3, about=[5, 6]) == [5]


def test_under_a_tight_budget_the_rows_shown_are_those_holding_the_verdicts_numbers(
        board: Board) -> None:
    """A real brief at three rows per evidence left a fifth of the verdicts' figures in
    rows it did not show: the rows matching most of everything said (here the row the
    description reads two figures and a name from) came first. The verdict's own
    figures now decide the rows shown first."""
    frame = pd.DataFrame({"region": [f"r{i}" for i in range(30)],
                          "orders": [100 + i for i in range(30)],
                          "late_share": [0.05 + 0.01 * i for i in range(30)]})
    investigation = board.start_investigation("Where are orders late?")
    hypothesis = board.add_hypothesis("Late orders concentrate in a few regions",
                                      investigation_id=investigation.id)
    description = "late share per region; r3 has 103 orders, 0.08 of them late"
    evidence = board.add_evidence(
        "SELECT region, count(*) AS orders, avg(late) AS late_share FROM o GROUP BY 1",
        frame, description=description, investigation_id=investigation.id)
    verdict = "The worst regions reach late shares of 0.25 and 0.34, the best 0.05."
    board.link(evidence.id, hypothesis.id, "supports", "late share by region",
               actor="collector")
    board.add_verdict(hypothesis.id, "supported", 0.8, verdict, [evidence.id], author="judge")
    assert claim_rows(frame, [description, verdict], 1) == [3]  # the old first pick
    shortest = _shown(board, evidence.id, budget=1)
    assert len(shortest) == MIN_CITED_ROWS and 3 not in shortest
    assert set(shortest) <= {0, 20, 29}
    assert {0, 3, 20, 29} <= set(_shown(board, evidence.id, budget=REPORTER_BRIEF_TOKENS))
