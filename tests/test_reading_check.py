"""A link's reading is checked like a report: its numbers must be in the rows of the
evidence it reads (or of evidence it cites). A real-model collector stored year figures
in the reading of a result that held no year; a judge had to spend a call finding out,
and a verdict that copied them would have made them look verified in the report."""

from __future__ import annotations

import pandas as pd
from account_case import account_context as _context

from d2_notebook.board import Board
from d2_notebook.detective import roles
from d2_notebook.detective.claim_check import check_claims
from d2_notebook.detective.context import QueryLog
from d2_notebook.detective.digest import board_digest
from d2_notebook.detective.reading_check import check_text
from d2_notebook.detective.team_tools import evidence_tools
from d2_notebook.llm import ModelRequest, ModelResponse
from d2_notebook.llm.messages import ToolResult
from d2_notebook.llm.offline import FunctionModel, tool_call

RATES = pd.DataFrame({"drug": ["Corvalin", "Standard care"], "admissions": [466, 708],
                      "death_rate": [0.1416, 0.3178]})


def _board_with_rates(board: Board, investigation_id: str | None = None
                      ) -> tuple[str, str, str]:
    if investigation_id is None:
        investigation_id = board.start_investigation("Which treatment works for the old?").id
    hyp = board.add_hypothesis("Corvalin lowers mortality", investigation_id=investigation_id)
    rates = board.add_evidence("SELECT drug, count(*) AS admissions, avg(died) AS death_rate "
                               "FROM t WHERE age >= 65 GROUP BY drug", RATES,
                               description="death rate by drug, 65 and older",
                               investigation_id=investigation_id)
    years = board.add_evidence("SELECT year, avg(died) AS death_rate FROM t GROUP BY year",
                               pd.DataFrame({"year": [2020, 2021],
                                             "death_rate": [0.186, 0.169]}),
                               description="by year", investigation_id=investigation_id)
    return hyp.id, rates.id, years.id


def test_numbers_in_the_rows_their_differences_and_restatements_pass(board: Board) -> None:
    hyp, rates, _ = _board_with_rates(board)
    for reading in ("Corvalin 0.142 (n = 466) against 0.318 on standard care",
                    "Corvalin is 0.176 lower than standard care",  # a difference of two values
                    "14.2% of Corvalin patients died",
                    "among patients 65 and older Corvalin does best"):  # the SQL's threshold
        checked = check_text(board, [rates], hyp, reading)
        assert checked.unverified == () and checked.text == reading, reading
        assert checked.note() is None


def test_a_number_in_no_row_is_marked_and_named(board: Board) -> None:
    hyp, rates, years = _board_with_rates(board)
    checked = check_text(board, [rates], hyp,
                            "Corvalin 0.142 against 0.318; -0.186 in 2020 and -0.169 in 2021")
    # no year is in the rows either: the figures were not read from this result
    assert checked.unverified == ("-0.186", "2020", "-0.169", "2021")
    assert checked.text == ("Corvalin 0.142 against 0.318; -0.186 *(unverified)* in 2020 "
                            "*(unverified)* and -0.169 *(unverified)* in 2021 *(unverified)*")
    note = checked.note()
    assert note.startswith(f"note: -0.186, 2020, -0.169, 2021 in your text are not in the "
                           f"rows of {rates}")
    assert "link or record the evidence that holds them" in note
    cited = check_text(board, [rates], hyp, f"0.186 in 2020 and 0.169 in 2021 [{years}]; "
                                             "Corvalin 0.142")
    assert cited.unverified == (), "numbers of the evidence it cites, and its own"


async def test_a_collectors_unfounded_reading_is_stored_marked_and_the_judge_sees_it(
        board: Board) -> None:
    """A real collector turn: the reading's made-up total is named in the tool's answer
    and stored marked, which is what the judge's digest shows."""
    answers: list[str] = []

    def collector(request: ModelRequest) -> ModelResponse:
        answers[:] = [m.content for m in request.messages if isinstance(m, ToolResult)]
        if not answers:
            return tool_call("run_sql", {"sql": "SELECT tier, count(*) AS n FROM account "
                                                "GROUP BY tier ORDER BY tier"})
        if len(answers) == 1:
            return tool_call("record_evidence", {
                "query_id": "Q1", "description": "accounts by tier", "stance": "supports",
                "reading": "2 gold and 1 basic: 40% gold"})
        return tool_call("submit_for_judgement", {"summary": "[Q1]"})

    ctx = _context(board, FunctionModel(collector))
    hyp = board.add_hypothesis("Gold accounts are the majority",
                               investigation_id=ctx.investigation_id)
    await roles.collect(ctx, hyp.id)
    assert answers[1].startswith(f"recorded E1 (supports {hyp.id})\nnote: 40% in your text "
                                 "is not in the rows of E1")
    link = board.list_links(hypothesis_id=hyp.id)[0]
    assert link.rationale == "2 gold and 1 basic: 40% *(unverified)* gold"
    digest = board_digest(board, investigation_id=ctx.investigation_id, focus=hyp.id)
    assert "40% *(unverified)* gold" in digest


async def test_a_collectors_summary_is_checked_against_the_linked_evidence(
        board: Board) -> None:
    """The summary the judge reads first: a real collector told the judge a quarter held
    133 of 134 rows, which no result showed. Its numbers are looked up like a reading's."""
    def collector(request: ModelRequest) -> ModelResponse:
        answers = [m.content for m in request.messages if isinstance(m, ToolResult)]
        if not answers:
            return tool_call("run_sql", {"sql": "SELECT tier, count(*) AS n FROM account "
                                                "GROUP BY tier ORDER BY tier"})
        if len(answers) == 1:
            return tool_call("record_evidence", {
                "query_id": "Q1", "description": "accounts by tier", "stance": "supports",
                "reading": "2 gold and 1 basic"})
        return tool_call("submit_for_judgement",
                         {"summary": "gold 2 vs basic 1 [Q1]; 75% of the region is gold"})

    ctx = _context(board, FunctionModel(collector))
    hyp = board.add_hypothesis("Gold accounts are the majority",
                               investigation_id=ctx.investigation_id)
    await roles.collect(ctx, hyp.id)
    submitted = [e.payload["summary"] for e in board.events()
                 if e.kind == "collector.submitted"]
    assert submitted == ["gold 2 vs basic 1 [E1]; 75% *(unverified)* of the region is gold"]


async def test_linking_with_a_founded_reading_adds_no_note(board: Board) -> None:
    ctx = _context(board, FunctionModel(lambda request: tool_call("done")))
    hyp, rates, _ = _board_with_rates(board, ctx.investigation_id)
    link = {t.name: t for t in evidence_tools(ctx, QueryLog(), "judge-H", "judge",
                                              None)}["link_evidence"]
    answer = await link.handler({"hypothesis_id": hyp, "evidence_id": rates,
                                 "stance": "supports", "reading": "0.142 against 0.318"})
    assert "note:" not in answer


def test_a_reading_is_stored_whole_with_its_marks(board: Board) -> None:
    """A Markdown rule inside a reading is not the report's summary line: nothing of the
    reading is cut, and its line breaks stay."""
    hyp, rates, _ = _board_with_rates(board)
    reading = "Corvalin 0.142\n\n---\n\nand 0.9 elsewhere\n"
    checked = check_text(board, [rates], hyp, reading)
    assert checked.text == "Corvalin 0.142\n\n---\n\nand 0.9 *(unverified)* elsewhere\n"


def test_over_many_rows_only_the_named_rows_make_differences(board: Board) -> None:
    """Two-value arithmetic over 200 values matches almost any figure: an invented share
    in a reading that names no row is marked; a difference of two named rows is not."""
    investigation = board.start_investigation("Which ward does best?")
    hyp = board.add_hypothesis("Ward 7 does best", investigation_id=investigation.id).id
    names = [f"ward {a}{b}" for a in "abcdefghij" for b in "abcdefghijklmnopqrst"]
    frame = pd.DataFrame({"ward": names,  # no digits in the names: only rates are numbers
                          "rate": [round(0.05 + 0.0037 * i, 4) for i in range(200)]})
    evidence = board.add_evidence("SELECT ward, rate FROM t", frame, description="by ward",
                                  investigation_id=investigation.id)
    invented = check_text(board, [evidence.id], hyp, "deaths fall by 93% and by 12.5 points")
    assert invented.unverified == ("93%", "12.5 points")
    named = check_text(board, [evidence.id], hyp, "ward ah is 0.0111 below ward ak")
    assert named.unverified == (), "0.087 - 0.0759: a difference of the two rows it names"
    anywhere = check_text(board, [evidence.id], hyp, "ward ah is 0.0444 below the best")
    assert anywhere.unverified == ("0.0444",), "a difference with a row it does not name"


def test_the_rows_its_hypothesis_names_make_differences_too(board: Board) -> None:
    """A reading that names no row may size the hypothesis's own comparison: "lower by
    0.0148" of a hypothesis on wards ah and al is a difference of those rows; the same
    figure against a hypothesis that names other wards is not."""
    investigation = board.start_investigation("Which ward does best?")
    names = [f"ward {a}{b}" for a in "abcdefghij" for b in "abcdefghijklmnopqrst"]
    frame = pd.DataFrame({"ward": names,
                          "rate": [round(0.05 + 0.0037 * i, 4) for i in range(200)]})
    evidence = board.add_evidence("SELECT ward, rate FROM t", frame, description="by ward",
                                  investigation_id=investigation.id)
    named = board.add_hypothesis("Ward ah has a lower rate than ward al",
                                 investigation_id=investigation.id).id
    other = board.add_hypothesis("Ward bc has a lower rate than ward bd",
                                 investigation_id=investigation.id).id
    reading = "the rate is lower by 0.0148, as claimed"  # 0.0907 - 0.0759
    assert check_text(board, [evidence.id], named, reading).unverified == ()
    assert check_text(board, [evidence.id], other, reading).unverified == ("0.0148",)


def test_the_models_own_description_is_no_source(board: Board) -> None:
    investigation = board.start_investigation("q")
    hyp = board.add_hypothesis("Admissions rose", investigation_id=investigation.id).id
    evidence = board.add_evidence("SELECT 41 AS admissions", pd.DataFrame({"admissions": [41]}),
                                  description="admissions in 2019, up 12%",
                                  investigation_id=investigation.id)
    checked = check_text(board, [evidence.id], hyp, "41 admissions in 2019, up 12%")
    assert checked.unverified == ("2019", "12%")


async def test_a_verdicts_unfounded_figure_is_marked_and_verifies_nothing(board: Board) -> None:
    """The judge's rationale is checked against the evidence it cites or links; a marked
    figure in it does not make the same figure in the report look verified."""
    from d2_notebook.detective.claim_check import check_report
    from d2_notebook.detective.decisions import JudgeDecision
    from d2_notebook.detective.tools import Toolset
    from d2_notebook.detective.verdict_tools import verdict_tools
    from d2_notebook.llm import ToolCallPart

    ctx = _context(board, FunctionModel(lambda request: tool_call("done")))
    hyp, rates, _ = _board_with_rates(board, ctx.investigation_id)
    board.link(rates, hyp, "supports", "0.142 against 0.318", actor="collector")
    tools = verdict_tools(ctx, "judge", JudgeDecision(), hyp, can_send_back=True)
    answer = await Toolset(tools).call(ToolCallPart("c", "give_verdict", {
        "status": "supported", "confidence": 0.8, "evidence_ids": [rates],
        "rationale": f"Corvalin 0.142 against 0.318 [{rates}]; 0.186 lower in 2020",
        "claim_kind": "other"}))
    assert not answer.is_error, answer.content
    assert "note: 0.186, 2020 in your text are not in the rows of" in answer.content
    verdict = board.latest_verdict(hyp)
    assert verdict.rationale == (f"Corvalin 0.142 against 0.318 [{rates}]; 0.186 *(unverified)* "
                                 "lower in 2020 *(unverified)*")
    report = f"Corvalin's death rate was 0.186 lower in 2021 than in 2020 [{rates}]."
    checked = check_report(board, ctx.investigation_id, report)
    assert [c.number for c in checked.unverified] == ["0.186", "2021", "2020"]


def test_the_row_count_of_the_evidence_is_a_number_it_holds(board: Board) -> None:
    """"Of 18 women ..." counts the evidence's rows (a real-model reading of 18 matching
    people was marked)."""
    investigation = board.start_investigation("Who did it?")
    hyp = board.add_hypothesis("Ann did it", investigation_id=investigation.id).id
    people = pd.DataFrame({"name": [f"person {chr(97 + i)}" for i in range(18)]})
    evidence = board.add_evidence("SELECT name FROM person WHERE hair = 'white'", people,
                                  description="white-haired", investigation_id=investigation.id)
    assert check_text(board, [evidence.id], hyp, "of 18 white-haired women").unverified == ()
    assert check_text(board, [evidence.id], hyp, "of 27 white-haired women").unverified == (
        "27",)


def test_a_number_of_days_between_two_dates_it_reads_is_found(board: Board) -> None:
    """"Checked in 19 days before the murder" is the span between a row's date and the
    question's (a real-model SQL City reading was marked for it); a span no two dates
    make, or a plain number that merely equals one, is still marked."""
    investigation = board.start_investigation(
        "Who committed the murder that occurred on Jan.15, 2018 in SQL City?")
    hyp = board.add_hypothesis("Jeremy did it", investigation_id=investigation.id).id
    checkins = pd.DataFrame({"person": ["Jeremy Bowers", "Miranda Priestly"],
                             "check_in_date": [20171227, 20180109]})
    evidence = board.add_evidence("SELECT person, check_in_date FROM get_fit_now_check_in",
                                  checkins, description="gym check-ins",
                                  investigation_id=investigation.id).id
    for reading in ("Jeremy checked in 19 days before the murder",     # 2017-12-27 → 01-15
                    "Jeremy checked in 13 days before Miranda",       # between two rows
                    "Miranda's check-in was 6 days before it, Jeremy's 19 calendar days"):
        assert check_text(board, [evidence], hyp, reading,
                          question=investigation.question).unverified == (), reading
    assert check_text(board, [evidence], hyp, "Jeremy checked in 23 days before the murder",
                      question=investigation.question).unverified == ("23",)
    assert check_text(board, [evidence], hyp, "Jeremy lifted 19 kg").unverified == ("19",)


def test_date_columns_and_iso_dates_give_spans_too(board: Board) -> None:
    investigation = board.start_investigation("When did sales drop?")
    hyp = board.add_hypothesis("The drop began in March",
                               investigation_id=investigation.id).id
    stamps = pd.DataFrame({"day": pd.to_datetime(["2024-03-01", "2024-04-15"]),
                           "note": ["launch on 2024-02-10", "drop"]})
    evidence = board.add_evidence("SELECT day, note FROM sales", stamps, description="days",
                                  investigation_id=investigation.id).id
    assert check_text(board, [evidence], hyp,  # names both rows: every span of their dates
                      "the drop came 45 days after launch day and 65 days after launch"
                      ).unverified == ()
    assert check_text(board, [evidence], hyp, "the drop lasted 44 days").unverified == ("44",)


def test_over_a_daily_series_only_the_named_days_make_spans(board: Board) -> None:
    """Every span up to a series' length is some pair of its days: a reading must name
    the rows it counts between, and a report citing a long series gets no spans."""
    investigation = board.start_investigation("How long did recovery take?")
    hyp = board.add_hypothesis("Recovery took months", investigation_id=investigation.id).id
    days = pd.DataFrame({"day": pd.date_range("2024-01-01", periods=120),
                         "visits": [1000 + (i * 37) % 11 for i in range(120)]})
    evidence = board.add_evidence("SELECT day, visits FROM traffic", days,
                                  description="daily visits",
                                  investigation_id=investigation.id).id
    assert check_text(board, [evidence], hyp, "it took 87 days to recover").unverified == (
        "87",)
    assert check_text(board, [evidence], hyp,
                      "from 2024-01-05 to 2024-04-01, 87 days").unverified == ()
    report = check_claims(f"It took 113 days to recover [{evidence}].",
                          {evidence: board.evidence_frame(evidence)}, [])
    assert [c.number for c in report.unverified] == ["113"]


async def test_a_hypothesis_rationale_is_checked_against_the_results_it_cites(
        board: Board) -> None:
    """A rationale is what the hypothesis's collector and judge read first: a real-model
    one quoted a monthly low that no row of its cited result held."""
    answers: list[str] = []

    def hypothesizer(request: ModelRequest) -> ModelResponse:
        answers[:] = [m.content for m in request.messages if isinstance(m, ToolResult)]
        if not answers:
            return tool_call("run_sql", {"sql": "SELECT tier, count(*) AS n FROM account "
                                                "GROUP BY tier ORDER BY tier"})
        if len(answers) == 1:
            return tool_call("add_hypothesis", {
                "statement": "Gold accounts are the majority",
                "rationale": "2 gold and 1 basic [Q1]; 45% gold last year"})
        return tool_call("done", {"summary": "one"})

    ctx = _context(board, FunctionModel(hypothesizer))
    await roles.hypothesize(ctx)
    hypothesis = board.list_hypotheses(investigation_id=ctx.investigation_id)[0]
    assert hypothesis.rationale == "2 gold and 1 basic [E1]; 45% *(unverified)* gold last year"
    # the query id beside its evidence id: an agent guessed the E numbers of its results
    assert answers[1].startswith(f"added {hypothesis.id}, motivated by E1 (your Q1)\nnote: "
                                 "45% in your text is not in the rows of E1")
    assert answers[1].endswith("cite the query whose result holds them, or leave them out.")


async def test_a_refined_childs_rationale_is_checked_against_the_parents_evidence(
        board: Board) -> None:
    """A child's collector reads its rationale first, like a hypothesizer's."""
    from d2_notebook.detective.decisions import JudgeDecision
    from d2_notebook.detective.verdict_tools import verdict_tools

    ctx = _context(board, FunctionModel(lambda request: tool_call("done")))
    hyp, rates, _ = _board_with_rates(board, ctx.investigation_id)
    board.link(rates, hyp, "supports", "0.142 against 0.318", actor="collector-H1")
    tools = {t.name: t for t in verdict_tools(ctx, "judge-H1", JudgeDecision(), hyp,
                                              can_refine=True)}
    await tools["refine"].handler({
        "status": "supported", "confidence": 0.6, "rationale": "0.142 against 0.318",
        "evidence_ids": [rates], "no_check_reason": "a test",
        "children": [{"statement": "Corvalin helps the mild", "rationale": "0.142 overall"},
                     {"statement": "Corvalin does not help the severe",
                      "rationale": "0.44 in the severe"}]})
    children = [h for h in board.list_hypotheses() if h.parent_id == hyp]
    assert [c.rationale for c in children] == ["0.142 overall",
                                               "0.44 *(unverified)* in the severe"]


def test_a_columns_total_is_a_number_the_rows_hold(board: Board) -> None:
    """"The interviews cover 81 people" adds up a count column (1+15+19+23+23): a
    real-model reading and verdict were marked for it."""
    investigation = board.start_investigation("Who did it?")
    hyp = board.add_hypothesis("She acted alone", investigation_id=investigation.id).id
    counts = pd.DataFrame({"transcript": list("abcde"), "n": [1, 15, 19, 23, 23]})
    evidence = board.add_evidence("SELECT transcript, count(*) AS n FROM interview GROUP BY 1",
                                  counts, description="transcripts",
                                  investigation_id=investigation.id).id
    assert check_text(board, [evidence], hyp, "the interviews cover 81 people").unverified == ()
    assert check_text(board, [evidence], hyp, "the interviews cover 82 people").unverified == (
        "82",)


async def test_a_tables_row_count_from_the_schema_summary_is_known(board: Board) -> None:
    """"Of the 3 accounts" (more than the small counts the check skips: here a table of
    81 interviews) restates the schema summary every role reads: a real-model rationale
    was marked for it."""
    ctx = _context(board, FunctionModel(lambda request: tool_call("done")))
    hyp, rates, _ = _board_with_rates(board, ctx.investigation_id)
    link = {t.name: t for t in evidence_tools(ctx, QueryLog(), "judge-H", "judge",
                                              None)}["link_evidence"]
    ctx.schema_summary = "interview (table, 81 rows)"
    answer = await link.handler({"hypothesis_id": hyp, "evidence_id": rates,
                                 "stance": "supports",
                                 "reading": "0.142 against 0.318, from 81 interviews"})
    assert "note:" not in answer


def test_a_total_of_cells_its_sentence_lists_passes_and_the_note_says_so(board: Board) -> None:
    """Three real-model answerers read "127 *(unverified)* rows" (71 + 56 of the rows it
    read) as a correct figure marked wrong. A total not listed stays unverified (by
    decision: wrong subtotals were accepted); the note now names the way out, listing
    the cells in the sentence, and a sentence that does so passes."""
    investigation_id = board.start_investigation("Who closes their own incidents?").id
    hyp = board.add_hypothesis("Closers differ from assignees", investigation_id=investigation_id)
    own = board.add_evidence(
        "SELECT assigned_to, count(*) AS n FROM incident WHERE closed_by = assigned_to "
        "GROUP BY ALL", pd.DataFrame({"assigned_to": ["Beth", "Luke", "Fred"],
                                      "n": [71, 56, 9]}),
        description="own closures", investigation_id=investigation_id).id
    bare = check_text(board, [own], hyp.id, "closed by their assignee on 127 rows only")
    assert bare.unverified == ("127",)
    note = bare.note()
    assert "nor a total of cells its sentence lists" in note
    assert "a total counts once its sentence lists the cells it adds" in note
    listed = check_text(board, [own], hyp.id,
                        "closed by their assignee on 127 rows only: Beth 71 and Luke 56")
    assert listed.unverified == () and listed.note() is None
