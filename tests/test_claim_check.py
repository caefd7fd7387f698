"""The claim check: every number of a report is looked up in the evidence it cites."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from d2_notebook import investigate
from d2_notebook.board import Board
from d2_notebook.datasets import hospital
from d2_notebook.detective.claim_check import (
    MARK,
    ClaimCheck,
    UnverifiedClaim,
    check_board_report,
    check_claims,
)
from d2_notebook.detective.policies.hospital import HospitalWalkthrough
from d2_notebook.detective.policies.team_policy import Action, Turn
from d2_notebook.detective.report_numbers import NumberKind, find_numbers
from d2_notebook.detective.result_summary import column_statistics

RATES = pd.DataFrame({
    "treatment": ["A", "B", "care"],
    "patients": [1234, 877, 2410],
    "death_rate": [0.2371, 0.1204, 0.412],
    "first_seen": pd.to_datetime(["2020-03-01 14:30:00", "2020-04-11 00:00:00",
                                  "2021-01-05 00:00:00"]),
})
NOTES = pd.DataFrame({"note": ["The witness saw a car with 42 on its plate at 9 pm."]})


def _unverified(check: ClaimCheck) -> list[str]:
    return [claim.number for claim in check.unverified]


def test_numbers_in_rounding_and_percent_forms_are_found() -> None:
    report = ("## Answer\nA cuts deaths to 23.7% against 41.2% under care (1,234 patients, "
              "0.237 vs 0.41) [E1]. B: 12% [E1].\n")
    check = check_claims(report, {"E1": RATES}, [])
    assert check.numbers_checked == 6
    assert check.unverified == ()
    assert check.unverified_rate == 0.0
    assert "(unverified)" not in check.marked_report
    assert check.marked_report.endswith("*Claim check: every one of 6 numbers was found "
                                        "in the evidence.*\n")


def test_invented_numbers_are_marked_and_counted() -> None:
    report = "## Answer\nA cuts deaths to 23.7% [E1], and B to 9.5% in 3,120 patients [E1].\n"
    check = check_claims(report, {"E1": RATES}, [])
    assert _unverified(check) == ["9.5%", "3,120"]
    assert check.numbers_checked == 3
    assert check.unverified_rate == pytest.approx(2 / 3)
    assert check.unverified[0] == UnverifiedClaim(
        "9.5%", "A cuts deaths to 23.7% [E1], and B to 9.5% in 3,120 patients [E1].", ("E1",))
    assert f"9.5%{MARK} in 3,120{MARK} patients" in check.marked_report
    assert "2 of 3 numbers were not found" in check.marked_report
    one = check_claims("## Answer\nB: 9.5% [E1].\n", {"E1": RATES}, [])
    assert "1 of 1 number was not found" in one.marked_report


def test_a_number_is_looked_up_only_in_the_evidence_its_sentence_cites() -> None:
    other = pd.DataFrame({"x": [55.5]})
    report = "## Answer\nThe rate is 55.5 [E1]. Elsewhere it is 55.5 [E2].\n"
    check = check_claims(report, {"E1": RATES, "E2": other}, [])
    assert [c.cited for c in check.unverified] == [("E1",)]


def test_uncited_sentences_fall_back_to_their_line_then_section_then_all_evidence() -> None:
    report = ("## H1 — supported [E2]\nThe rate is 55.5.\n\n## Answer\n"
              "Patients: 877.\n")
    check = check_claims(report, {"E1": RATES, "E2": pd.DataFrame({"x": [55.5]})}, [])
    assert check.unverified == ()
    wrong = check_claims("## H1 [E2]\nPatients: 877.\n", {"E1": RATES,
                                                       "E2": pd.DataFrame({"x": [55.5]})}, [])
    assert _unverified(wrong) == ["877"]


def test_verdict_texts_count_as_found() -> None:
    report = "## Answer\nH2 is supported with confidence 0.85; the margin is 18 points.\n"
    check = check_claims(report, {}, ["confidence 0.85", "a margin of 18 points"])
    assert check.unverified == ()
    assert check.numbers_checked == 2


def test_differences_and_ratios_of_cited_values_are_found() -> None:
    report = "## Answer\nA's risk is 0.58 of care's, 17.5 points lower [E1].\n"
    check = check_claims(report, {"E1": RATES}, [])
    assert check.unverified == ()


def test_a_total_of_the_cells_a_sentence_lists_is_found() -> None:
    """Three answerers' readings were marked unverified for adding up the cells they
    listed themselves ("Fred's 385 incidents: 92, 84, 78, 71 and 60 by closer"): no
    two-value arithmetic gives 385. The total of one column's cells that hold the
    sentence's other numbers now counts; any other total still does not."""
    closers = pd.DataFrame({"assignee": ["Fred"] * 5 + ["Beth"] * 3,
                            "closer": list("CFLHB") + list("CFL"),
                            "n": [92, 84, 78, 71, 60, 11, 10, 9]})
    listed = "Fred's 385 incidents are closed by C 92, F 84, L 78, H 71 and B 60 [E1].\n"
    assert check_claims(listed, {"E1": closers}, []).unverified == ()
    wrong = "Fred's 390 incidents are closed by C 92, F 84, L 78, H 71 and B 60 [E1].\n"
    assert _unverified(check_claims(wrong, {"E1": closers}, [])) == ["390"]
    # The cells must be listed in the same sentence (or their rows' label named, below):
    # 385 alone is no cell and no total.
    alone = ("The top assignee has 385 incidents [E1]. They are closed by C 92, F 84, L 78, "
             "H 71, B 60 [E1].\n")
    assert _unverified(check_claims(alone, {"E1": closers}, [])) == ["385"]


def test_a_total_of_the_cells_its_clause_lists_is_found_in_a_longer_sentence() -> None:
    """A real-model collector wrote "All 52 closed in Aug (0 carried into Sep); Jul's 44
    closed in Jul (24) and Aug (20); of Sep's 4, 1 closed in Sep and 3 in Oct" and its
    right 44 was marked: the sentence's listed cells add up to 100. The cells its own
    clause lists count too; a figure no clause or sentence adds up to still does not."""
    months = pd.DataFrame({"opened": ["Jul", "Jul", "Aug", "Aug", "Sep", "Sep"],
                           "closed": ["Jul", "Aug", "Aug", "Sep", "Sep", "Oct"],
                           "n_hw": [24, 20, 52, 0, 1, 3]})
    reading = ("All 52 hardware incidents closed in Aug (0 carried into Sep); Jul's {} closed "
               "in Jul (24) and Aug (20); of Sep's 4, 1 closed in Sep and 3 in Oct [E1].\n")
    assert check_claims(reading.format(44), {"E1": months}, []).unverified == ()
    assert _unverified(check_claims(reading.format(45), {"E1": months}, [])) == ["45"]
    dashed = "Jul's 44 closed in Jul (24) and Aug (20) \u2014 all 52 of Aug's in Aug [E1].\n"
    assert check_claims(dashed, {"E1": months}, []).unverified == ()


def test_a_total_of_listed_cells_of_ten_or_less_is_found() -> None:
    """A review found the reporter's own example, "42 fewer: 23, 8, 6 and 5", marked: bare
    integers up to 10 are no claims, so they were no cells of a total either. They are
    cells now, while a small number that is no cell ("in 3 groups") does not spoil the
    total of the others."""
    losses = pd.DataFrame({"agent": list("ABCDEFG"), "lost": [23, 8, 6, 5, 13, 19, 29]})
    listed = "The other agents had 42 fewer: 23, 8, 6 and 5 [E1].\n"
    assert check_claims(listed, {"E1": losses}, []).unverified == ()
    grouped = "In 3 groups, the agents had 42 fewer: 23, 8, 6 and 5 [E1].\n"
    assert check_claims(grouped, {"E1": losses}, []).unverified == ()
    wrong = "The other agents had 43 fewer: 23, 8, 6 and 5 [E1].\n"
    assert _unverified(check_claims(wrong, {"E1": losses}, [])) == ["43"]
    plus = "258 are still open (Submitted 144 + Pending 114) [E1].\n"
    states = pd.DataFrame({"state": ["Submitted", "Pending", "Processed"],
                           "n": [144, 114, 242]})
    assert check_claims(plus, {"E1": states}, []).unverified == ()


def test_a_subtotal_the_sentence_does_not_list_stays_unverified() -> None:
    """"44 analysts" over the rows Analyst/junior 25 and Analyst/senior 19 is not found:
    three independent reviews of rules that add up the rows a label names found wrong
    numbers accepted (a head count summed over months, a second count column, rows of a
    ROLLUP), and a wrong number passed is worse than a right one marked. The sentence
    that lists its cells is checked instead (above)."""
    staff = pd.DataFrame({"role": ["Analyst", "Analyst", "Engineer", "Manager"],
                          "level": ["junior", "senior", "junior", "senior"],
                          "people": [25, 19, 70, 11]})
    assert _unverified(check_claims("The team has 44 analysts [E1].\n", {"E1": staff},
                                    [])) == ["44"]
    listed = "The team has 44 analysts: 25 junior and 19 senior [E1].\n"
    assert check_claims(listed, {"E1": staff}, []).unverified == ()


def test_the_statistics_a_summarised_view_states_are_the_evidences_own() -> None:
    """A real judge quoted "median 168" from a summarised result and the check marked it:
    the median, the mean, a most-common count and the row count are the rows' figures.
    They are matched as written, never combined: a share made of a mean over a count
    stays unverified."""
    claims = pd.DataFrame({"user": ["ann", "ann", "ann", "bob"],
                           "amount": [10.0, 20.0, 50.0, 1000.0]})
    assert any("median 35, mean 270" in line for line in column_statistics(claims))
    report = ("## Answer\nThe median claim is 35 and the mean 270 over 4 claims, 3 of "
              "them Ann's [E1]. The mean is 7.7 times the median [E1].\n")
    check = check_claims(report, {"E1": claims}, [])
    assert _unverified(check) == ["7.7"]


def test_ids_codes_list_numbers_small_counts_and_code_are_not_claims() -> None:
    report = ("## Answer\n1. H3 and E4 (COVID-19, code A12B, 30-day deaths): 2 hypotheses, "
              "`SELECT 4242`.\n")
    assert find_numbers(report) == []
    assert check_claims(report, {}, []).numbers_checked == 0
    assert check_claims(report, {}, []).marked_report == report


def test_an_intervals_confidence_level_is_a_label_not_a_claim() -> None:
    """A real-model reading "difference -0.18 days, 95% CI -1.02 to 0.65" had its 95
    marked unverified: the level names the interval; a share of 95% is still a claim."""
    for text, claims in (("difference -0.18 days, 95% CI -1.02 to 0.65",
                          ["-0.18", "-1.02", "0.65"]),
                         ("a 90 % confidence interval of 3.2 to 4.1", ["3.2", "4.1"]),
                         ("gap 11.2 (95%-CI 8.45 to 14.0)", ["11.2", "8.45", "14.0"]),
                         ("a 99.9% credible interval", []),
                         ("95% of rows are Processed", ["95%"]),
                         ("up 95%. CIs come later", ["95%"])):
        assert [n.text for n in find_numbers(text)] == claims, text


def test_years_and_dates_are_looked_up_as_dates() -> None:
    report = ("## Answer\nFirst seen 2020-03-01 at 14:30, the last in 2021 [E1]; "
              "none in 2019 or on 2020-02-02 [E1].\n")
    kinds = [n.kind for n in find_numbers(report)]
    assert kinds == [NumberKind.DATE, NumberKind.DATE, NumberKind.YEAR, NumberKind.YEAR,
                     NumberKind.DATE]
    check = check_claims(report, {"E1": RATES}, [])
    assert _unverified(check) == ["2019", "2020-02-02"]


def test_numbers_in_text_cells_are_found() -> None:
    report = "## Answer\nThe witness saw 42 on the plate [E3]; she said 17 [E3].\n"
    check = check_claims(report, {"E3": NOTES}, [])
    assert _unverified(check) == ["17"]


def test_numbers_packed_into_a_text_cell_are_found() -> None:
    """A real collector packed per-stratum rates into one string_agg cell ("critical
    16:0.188 vs 144:0.326"); its reading's 0.188 and 0.326 were marked unverified."""
    packed = pd.DataFrame({"scope": ["all"], "per_stratum": [
        "critical 16:0.188 vs 144:0.326; severe 41:0.122 vs 181:0.221"]})
    report = "## Answer\nCritical 0.188 vs 0.326, severe 0.122 vs 0.221 [E1]; 0.5 [E1].\n"
    assert _unverified(check_claims(report, {"E1": packed}, [])) == ["0.5"]


def test_an_approximate_round_number_stands_for_what_rounds_to_it() -> None:
    """A real-model rationale's "~1,750" and "~5,900" (1,747 and 5,880 in the rows) were
    marked: a round number written as an approximation states no trailing digits."""
    rows = pd.DataFrame({"amount": [1747.0, 5880.0]})
    report = ("## Answer\nThe cap sits at ~1,750 and about 5,900 [E1], not 1,750 or "
              "about 5,990 [E1].\n")
    assert _unverified(check_claims(report, {"E1": rows}, [])) == ["1,750", "5,990"]
    loose = pd.DataFrame({"n": [2999.0, 185.0, 0.2999]})  # no looser than two digits
    vague = "## Answer\nAbout 2,000 [E1], ~200 [E1] and about 30% [E1].\n"
    assert _unverified(check_claims(vague, {"E1": loose}, [])) == ["2,000", "200"]


def test_k_and_million_forms_and_signs() -> None:
    frame = pd.DataFrame({"revenue": [1_187_433.0, 2_480.0], "change": [-0.12, 0.3]})
    report = "## Answer\nRevenue 1.19 million and 2.5k; it fell by 0.12 [E1].\n"
    assert check_claims(report, {"E1": frame}, []).unverified == ()


def test_checking_a_marked_report_again_gives_the_same_result() -> None:
    report = "## Answer\nA: 23.7% [E1]; B: 9.5% [E1].\n"
    first = check_claims(report, {"E1": RATES}, [])
    again = check_claims(first.marked_report, {"E1": RATES}, [])
    assert again == first


def test_empty_report_checks_nothing() -> None:
    check = check_claims("", {"E1": RATES}, [])
    assert check == ClaimCheck(0, (), "")
    assert check.unverified_rate == 0.0


def _finished(board: Board, report: str) -> str:
    investigation = board.start_investigation("Which treatment works for patients over 65?")
    evidence = board.add_evidence("SELECT treatment, patients, death_rate, first_seen FROM t",
                                  RATES, description="rates", investigation_id=investigation.id)
    hyp = board.add_hypothesis("A lowers deaths by a third", investigation_id=investigation.id)
    board.link(evidence.id, hyp.id, "supports", "A lowest", actor="collector")
    board.add_verdict(hyp.id, "supported", 0.8, f"{evidence.id}: 23.7% vs 41.2%",
                      [evidence.id], author="judge")
    board.set_investigation_state(investigation.id, "finished", actor="detective",
                                  report=report.replace("EV", evidence.id))
    return investigation.id


def test_board_report_is_checked_against_its_evidence_and_verdicts(board: Board) -> None:
    investigation_id = _finished(
        board, "## Answer\nA (confidence 0.80) for patients over 65: 23.7% [EV], "
               "in 4,000 patients [EV].\n")
    check = check_board_report(board, investigation_id)
    assert _unverified(check) == ["4,000"]
    assert check.numbers_checked == 4
    assert check_board_report(board) == check  # the last investigation by default


def test_board_without_report_or_investigation_checks_nothing(board: Board) -> None:
    assert check_board_report(board) == ClaimCheck(0, (), "")
    board.start_investigation("q")
    assert check_board_report(board).numbers_checked == 0


def test_board_without_evidence_uses_the_query_results_its_agent_read(board: Board) -> None:
    investigation = board.start_investigation("q")
    request = {"messages": [{"role": "user", "text": "q"},
                            {"role": "tool", "tool_call_id": "c1", "is_error": False,
                             "content": "Q1: 1 rows x 1 columns\nrate\n0.4127"}]}
    board.record_model_call(role="react", agent="react", model="scripted", request=request,
                            response=None, investigation_id=investigation.id)
    board.set_investigation_state(investigation.id, "finished", actor="detective",
                                  report="## Answer\nThe rate is 41.3% (Q1), not 50.5%.\n")
    assert _unverified(check_board_report(board)) == ["50.5%"]


class _InventingReporter(HospitalWalkthrough):
    """The walkthrough, whose reporter adds one number no evidence holds."""

    def reporter(self, turn: Turn) -> list[Action] | str:
        actions = super().reporter(turn)
        if isinstance(actions, list) and actions and actions[0][0] == "write_report":
            markdown = actions[0][1]["markdown"] + "\n\nDeaths fell by 37.25% overall [E5].\n"
            return [("write_report", {"markdown": markdown})]
        return actions


async def test_every_investigation_report_is_checked_and_marked() -> None:
    result = await investigate(hospital.create(), hospital.QUESTION,
                               model=_InventingReporter().model())
    assert result.unverified_claims == 1
    assert result.claim_check.unverified[0].number == "37.25%"
    assert result.claim_check.unverified[0].cited == ("E5",)
    assert f"37.25%{MARK}" in result.report
    stored = result.board.get_investigation(result.investigation_id).report
    assert stored == result.report
    assert check_board_report(result.board) == result.claim_check


class _QuotingBaseline(HospitalWalkthrough):
    """The walkthrough's SQL-only agent, quoting one number of its Q1 and one of none."""

    def react(self, turn: Turn) -> list[Action] | str:
        actions = super().react(turn)
        if turn.step == 0 or isinstance(actions, str):
            return actions
        rows = [line for line in turn.results[0].content.split("\n") if line != "</data>"]
        first = rows[-1].split()[-1]  # a value of Q1's last row (inside its data fence)
        name, args = actions[0]
        markdown = f"{args['answer_markdown']}: a difference of {first} (Q1), not 0.4321."
        return [(name, {**args, "answer_markdown": markdown})]


async def test_the_sql_only_baseline_is_checked_against_its_own_queries() -> None:
    result = await investigate(hospital.create(), hospital.QUESTION,
                               model=_QuotingBaseline().model(), variant="react_sql")
    assert result.board.list_evidence() == []
    assert [c.number for c in result.claim_check.unverified] == ["0.4321"]
    assert result.claim_check.numbers_checked == 2
    read_back = check_board_report(result.board)  # from the tool results it read
    assert [c.number for c in read_back.unverified] == ["0.4321"]


async def test_budget_figures_the_system_wrote_are_not_claims() -> None:
    result = await investigate(hospital.create(), hospital.QUESTION,
                               model=HospitalWalkthrough().model(), max_calls=14,
                               max_depth=3)
    assert "Not examined" in result.report and result.stop_reason
    assert re.search(r"1[0-4] of max_calls=1[0-4]", result.report)
    assert result.unverified_claims == 0, result.claim_check.unverified


def test_an_analysis_summary_is_its_evidences_source_but_not_the_agents_words(
        board: Board) -> None:
    """"Among 65+ patients (2,893 rows)" restates the rows a segment_scan scanned, which
    its summary gives and no stored row holds: a real-model report was marked for it.
    What the recording agent wrote after "Recorded as:" is no source."""
    from d2_notebook.board.records import ToolCall
    from d2_notebook.detective.claim_check import check_report

    investigation = board.start_investigation("Which treatment is best?")
    scan = board.add_evidence(
        "SELECT 1", pd.DataFrame({"segment": ["critical"], "rate": [0.517]}),
        description="segment_scan of avg(died) over 2893 rows (overall 0.253): 1 segment"
                    "\nRecorded as: the scan, 4100 patients", investigation_id=investigation.id)
    board.record_tool_call(scan.id, ToolCall("segment_scan", {}), actor="hypothesizer")
    checked = check_report(board, investigation.id,
                           f"Of 2,893 older patients, critical ones die at 0.517 [{scan.id}]; "
                           f"4,100 patients in all [{scan.id}].")
    assert [c.number for c in checked.unverified] == ["4,100"]


def test_an_analysis_evidence_with_its_tool_summary_keeps_its_totals() -> None:
    """An analysis evidence's source takes its tool's summary too; the totals of its
    columns' cells a sentence lists still count (they were lost when the summary was
    added)."""
    closers = pd.DataFrame({"assignee": ["Fred"] * 5 + ["Beth"] * 3,
                            "closer": list("CFLHB") + list("CFL"),
                            "n": [92, 84, 78, 71, 60, 11, 10, 9]})
    summaries = {"E1": "Scanned every closer."}
    listed = "The 385 incidents are closed by C 92, F 84, L 78, H 71 and B 60 [E1].\n"
    assert check_claims(listed, {"E1": closers}, [], tool_summaries=summaries).unverified == ()


def test_a_figure_the_tool_summary_prints_in_scientific_notation_is_found() -> None:
    """flag-4: a trend's interval ended at "-7.16e-05" in its summary only, and the
    rationale's "-0.00007" copying it was marked unverified."""
    rows = pd.DataFrame({"period": ["2023-01", "2023-02"], "metric": [0.41, 0.42]})
    summaries = {"E1": "The straight line's slope: 0.009 per month (95% CI -7.16e-05 to "
                       "0.018; p = 0.052)."}
    text = "The slope is 0.009 a month (95% CI -0.00007 to 0.018) [E1]."
    assert check_claims(text, {"E1": rows}, [], tool_summaries=summaries).unverified == ()
    assert [c.number for c in check_claims(text, {"E1": rows}, []).unverified] == \
        ["0.009", "-0.00007", "0.018"]
