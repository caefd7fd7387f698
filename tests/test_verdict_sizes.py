"""Sizes, not dismissals: a verdict states a factor's size (effect, interval, share of a
change) read from a cited evidence's row, the board stores it typed, every view shows
it, and the report ranks factors by it. Real board, real DuckDB, real decompose."""

from __future__ import annotations

import json
import re
from pathlib import Path

import duckdb
import pytest
from change_data import rising_churn
from verdict_sizing import decompose_size as _size
from verdict_sizing import hypothesis_with_evidence as _hypothesis_with_evidence

from d2_notebook.board import Board, Contribution, ContributionRole, HypothesisStatus
from d2_notebook.board.contributions import states_absence
from d2_notebook.board.render import render_tree
from d2_notebook.data import GuardedSQL
from d2_notebook.data.analysis import decompose
from d2_notebook.detective.claim_check import check_report
from d2_notebook.detective.context import TeamContext
from d2_notebook.detective.decisions import JudgeDecision
from d2_notebook.detective.digest import board_digest
from d2_notebook.detective.report import (
    RANKING_NOTE,
    board_sections,
    fallback_report,
    ranked_factors,
)
from d2_notebook.detective.reporter_brief import reporter_brief
from d2_notebook.detective.settings import InvestigationSettings
from d2_notebook.detective.tools import Toolset
from d2_notebook.detective.verdict_tools import verdict_tools
from d2_notebook.errors import BoardFormatError, InvalidRecordError
from d2_notebook.llm import ToolCallPart
from d2_notebook.llm.offline import FunctionModel, text
from d2_notebook.notebook.snapshot import board_snapshot

SOURCE = "accounts a JOIN customers c ON a.customer_id = c.customer_id"
CHURN = "avg(CASE WHEN a.churned THEN 1 ELSE 0 END)"


@pytest.fixture(scope="module")
def sql() -> GuardedSQL:
    return GuardedSQL(rising_churn())


@pytest.fixture(scope="module")
def result(sql: GuardedSQL):
    return decompose(sql, source=SOURCE, metric=CHURN, period="year(a.opened_on)",
                     dimensions=["c.region"])


@pytest.fixture
def ctx(board: Board, sql: GuardedSQL) -> TeamContext:
    investigation = board.start_investigation("Why did churn rise from 2024 to 2025?")
    return TeamContext(board=board, sql=sql, model=FunctionModel(lambda r: text("")),
                       investigation_id=investigation.id, question="q", schema_summary="",
                       settings=InvestigationSettings())


def _row(result, segment: str) -> dict:
    frame = result.frame
    return frame[frame["segment"] == segment].iloc[0].to_dict()


async def _verdict(ctx: TeamContext, hypothesis_id: str, evidence: list[str],
                   status: str = "supported", **extra: object) -> tuple[bool, str]:
    tools = verdict_tools(ctx, "judge", JudgeDecision(), hypothesis_id, can_send_back=True)
    answer = await Toolset(tools).call(ToolCallPart("c", "give_verdict", {
        "status": status, "confidence": 0.8, "rationale": "r", "evidence_ids": evidence,
        "claim_kind": "other", **extra}))
    return answer.is_error, answer.content


async def test_a_real_small_factor_is_supported_as_a_minor_contributor(ctx, result,
                                                                       board_path: Path):
    hyp, evidence = _hypothesis_with_evidence(ctx, result, "Region east adds to the rise")
    failed, answer = await _verdict(ctx, hyp, [evidence],
                                    contribution=_size(_row(result, "east"), evidence))
    assert not failed, answer
    assert answer.startswith(f"{hyp} is supported as a minor contributor (explains ~13% of "
                             "the change, 95% CI 10% to 16%; rate change of the segment: 0.03, "
                             "95% CI 0.0212 to 0.0388, E1)")
    ctx.board.close()
    with Board.open(board_path) as reopened:  # stored typed, through the migration's column
        verdict = reopened.latest_verdict(hyp)
        assert verdict.contribution.role is ContributionRole.MINOR
        assert verdict.contribution.share == pytest.approx(0.13, abs=0.001)
        assert verdict.headline.startswith("supported as a minor contributor (explains ~13%")
        assert "size: supported as a minor contributor (explains ~13%" in render_tree(reopened)
        assert "size: supported as a minor contributor" in board_digest(reopened)
        snapshot = board_snapshot(reopened)["hypotheses"][hyp]["verdict"]
        assert snapshot["headline"] == verdict.headline
        assert snapshot["contribution"]["role"] == "minor"
        event = [e for e in reopened.events() if e.kind == "verdict.added"][-1]
        assert event.payload["contribution"]["share"] == pytest.approx(0.13, abs=0.001)


@pytest.mark.parametrize(("status", "change", "refusal"), [
    ("supported", {"effect": 0.05}, "is not one row of E1: copy the effect"),
    ("supported", {"share": 13, "share_low": 10, "share_high": 17},
     "is not one row of the cited evidence: copy share_of_change"),
    ("supported", {"evidence_id": "E9"}, "E9, which the verdict does not cite"),
    ("contradicted", {}, "a minor contributor makes this hypothesis supported, not "
                         "contradicted"),
    ("contradicted", {"role": "none"}, "excludes zero, so the factor is real: support it as "
                                       "a minor contributor"),
    ("inconclusive", {}, "an inconclusive verdict gives no size"),
    ("supported", {"role": "huge"}, "must be one of ['major', 'minor', 'none']"),
    ("supported", {"measure": " "}, "argument 'measure' must not be empty"),
])
async def test_a_size_that_does_not_fit_is_refused_with_the_fix(ctx, result, status, change,
                                                                refusal):
    hyp, evidence = _hypothesis_with_evidence(ctx, result, "Region east adds to the rise")
    size = _size(_row(result, "east"), evidence, **change)
    failed, answer = await _verdict(ctx, hyp, [evidence], status, contribution=size)
    assert failed and refusal in answer, answer
    assert ctx.board.latest_verdict(hyp) is None  # nothing half-written


async def test_an_exact_what_if_figure_is_sized_with_its_interval_equal_to_it(ctx, sql):
    """A what-if over every row (the average without some orders) has no sampling in it:
    the size's schema says to give it with ci_low = ci_high = the effect, and it holds."""
    hyp = ctx.board.add_hypothesis("Test accounts pull churn up",
                                   investigation_id=ctx.investigation_id).id
    what_if = sql.run("SELECT -0.0125 AS churn_without_test_accounts_minus_all")
    evidence = ctx.board.add_evidence(what_if.sql, what_if.frame, description="what-if",
                                      investigation_id=ctx.investigation_id)
    ctx.board.link(evidence.id, hyp, "supports", actor="collector")
    assert "ci_high equal to it" in str(verdict_tools(
        ctx, "judge", JudgeDecision(), hyp, can_send_back=True)[0].spec.parameters)
    size = {"role": "minor", "evidence_id": evidence.id, "measure": "what-if difference",
            "effect": -0.0125, "ci_low": -0.0125, "ci_high": -0.0125}
    failed, answer = await _verdict(ctx, hyp, [evidence.id], contribution=size)
    assert not failed, answer
    sized = ctx.board.latest_verdict(hyp).contribution
    assert sized.ci_high == -0.0125 and sized.is_exact
    # told as exact, not as a zero-width interval that reads as certainty
    assert sized.describe() == ("minor contributor (what-if difference: -0.0125, given as "
                                f"exact (its interval equal to it), {evidence.id})")
    shared = Contribution(ContributionRole.MAJOR, evidence.id, "what-if", 0.143, 0.143, 0.143,
                          0.48, 0.48, 0.48)
    assert shared.describe() == ("major contributor (explains ~48% of the change; what-if: "
                                 f"0.143, given as exact (its interval equal to it), "
                                 f"{evidence.id})")


async def test_a_negligible_exact_figure_is_no_effect(ctx, sql):
    """An exact what-if that is not zero only through rounding in the data (a real-model
    judge had a within-product price effect of 0.000016 on a 14.8 drop forced to a
    "real" minor contributor) is no effect when it is under 1% of the figures it compares
    in its row, or its share of the change, copied from a row, is under 1%; a difference
    of 2% of its levels stays real."""

    def what_if(select: str, stance: str = "contradicts") -> str:
        result = sql.run(select)
        evidence = ctx.board.add_evidence(result.sql, result.frame, description="what-if",
                                          investigation_id=ctx.investigation_id).id
        ctx.board.link(evidence, hyp, stance, actor="collector")
        return evidence

    def size(evidence: str, effect: float, **more: float) -> dict:
        return {"role": "none", "evidence_id": evidence, "measure": "what-if difference",
                "effect": effect, "ci_low": effect, "ci_high": effect, **more}

    hyp = ctx.board.add_hypothesis("Prices fell within products",
                                   investigation_id=ctx.investigation_id).id
    alone = what_if("SELECT 0.000016 AS price_effect, 0.0000011 AS share_of_drop")
    failed, answer = await _verdict(ctx, hyp, [alone], "contradicted",
                                    contribution=size(alone, 0.000016))
    assert failed and "under 1% of the largest figure in its row" in answer
    beside_levels = what_if("SELECT 89.11 AS avg_net, 89.110016 AS avg_net_at_list_price, "
                            "0.000016 AS price_effect")
    failed, answer = await _verdict(ctx, hyp, [beside_levels], "contradicted",
                                    contribution=size(beside_levels, 0.000016))
    assert not failed, answer
    assert ctx.board.latest_verdict(hyp).contribution.role is ContributionRole.NONE
    failed, answer = await _verdict(ctx, hyp, [alone], "contradicted",
                                    contribution=size(alone, 0.000016, share=0.0000011))
    assert not failed, answer
    real = what_if("SELECT 0.50 AS rate_before, 0.51 AS rate_after, 0.01 AS difference")
    failed, answer = await _verdict(ctx, hyp, [real], "contradicted",
                                    contribution=size(real, 0.01))
    assert failed and "excludes zero, so the factor is real" in answer


def _exact_size(evidence: str, effect: float, **more: float) -> dict:
    return {"role": "none", "evidence_id": evidence, "measure": "what-if difference",
            "effect": effect, "ci_low": effect, "ci_high": effect, **more}


def _exact_what_if(ctx: TeamContext, sql: GuardedSQL, select: str) -> tuple[str, str]:
    hyp = ctx.board.add_hypothesis("Prices fell within products",
                                   investigation_id=ctx.investigation_id).id
    result = sql.run(select)
    evidence = ctx.board.add_evidence(result.sql, result.frame, description="what-if",
                                      investigation_id=ctx.investigation_id).id
    ctx.board.link(evidence, hyp, "contradicts", actor="collector")
    return hyp, evidence


@pytest.mark.parametrize("beside", [
    "50000 AS n_orders", "2024 AS year", "50000.0 AS n_orders", "1234567 AS customer_id"])
async def test_a_count_year_or_id_in_the_row_is_no_scale_for_an_exact_figure(ctx, sql, beside):
    """The row's scale is the levels an exact what-if compares (fractional means or rates),
    not a count, year or id beside them (whole numbers): a difference of 2% of its rates
    stays real though the row also holds 50,000 orders or the year 2024."""
    hyp, evidence = _exact_what_if(ctx, sql, "SELECT 0.50 AS rate_before, 0.51 AS rate_after, "
                                             f"0.01 AS difference, {beside}")
    failed, answer = await _verdict(ctx, hyp, [evidence], "contradicted",
                                    contribution=_exact_size(evidence, 0.01))
    assert failed and "excludes zero, so the factor is real" in answer, answer
    assert ctx.board.latest_verdict(hyp) is None


async def test_an_exact_figure_with_a_share_is_judged_by_its_share_alone(ctx, sql):
    """A what-if that explains 60% of a small change (a rate from 0.500 to 0.498) is small
    against its levels but is the change's main part: with a share given, only the share
    decides whether the figure is negligible."""
    hyp, evidence = _exact_what_if(ctx, sql, "SELECT 0.500 AS rate_before, 0.498 AS rate_after, "
                                             "-0.0012 AS effect_of_x, 0.6 AS share_of_change")
    failed, answer = await _verdict(ctx, hyp, [evidence], "contradicted",
                                    contribution=_exact_size(evidence, -0.0012, share=0.6))
    assert failed and "excludes zero, so the factor is real" in answer, answer
    assert "its share of the change, copied from a cited row, is under 1%" in answer
    assert ctx.board.latest_verdict(hyp) is None


async def test_every_row_holding_an_exact_figure_sets_its_scale_and_the_smallest_counts(
        ctx, sql):
    """In a frame where two rows hold the same difference, the first row's large levels
    (revenue) do not make it negligible: the other row compares rates, and against them
    it is 2%, so the figure stays real (a factor is kept as real when in doubt)."""
    hyp, evidence = _exact_what_if(
        ctx, sql, "SELECT 'revenue' AS measure, 1500.50 AS level_before, "
                  "1500.51 AS level_after, 0.01 AS difference "
                  "UNION ALL SELECT 'rate', 0.50, 0.51, 0.01")
    failed, answer = await _verdict(ctx, hyp, [evidence], "contradicted",
                                    contribution=_exact_size(evidence, 0.01))
    assert failed and "excludes zero, so the factor is real" in answer, answer
    assert ctx.board.latest_verdict(hyp) is None
    hyp, evidence = _exact_what_if(
        ctx, sql, "SELECT 'revenue' AS measure, 1500.50 AS level_before, "
                  "1500.51 AS level_after, 0.01 AS difference "
                  "UNION ALL SELECT 'rate', 2.50, 2.51, 0.01")
    failed, answer = await _verdict(ctx, hyp, [evidence], "contradicted",
                                    contribution=_exact_size(evidence, 0.01))
    assert not failed, answer  # under 1% of every row's levels
    assert ctx.board.latest_verdict(hyp).contribution.role is ContributionRole.NONE

async def test_a_main_cause_is_not_minor(ctx, result):
    hyp, evidence = _hypothesis_with_evidence(ctx, result, "Region north drives the rise")
    failed, answer = await _verdict(ctx, hyp, [evidence],
                                    contribution=_size(_row(result, "north"), evidence))
    assert failed and "a share of 87% is not minor" in answer
    failed, answer = await _verdict(
        ctx, hyp, [evidence], contribution=_size(_row(result, "north"), evidence, "major"))
    assert not failed and "supported as a major contributor (explains ~87%" in answer


async def test_no_effect_is_contradicted_with_role_none(ctx, result):
    hyp, evidence = _hypothesis_with_evidence(ctx, result, "Region west adds to the rise")
    failed, answer = await _verdict(ctx, hyp, [evidence], "contradicted",
                                    contribution=_size(_row(result, "west"), evidence, "none"))
    assert not failed, answer
    assert "contradicted: no contributor (explains ~0% of the change" in answer


async def test_a_hypothesis_that_a_factor_does_not_matter_turns_the_polarity(ctx, result):
    """"West does not explain the rise" is *supported* by west's no-contribution size, and
    "East does not add to the rise" is *contradicted* by east's minor one (real-model
    judges could not record either)."""
    west, evidence = _hypothesis_with_evidence(ctx, result, "Region west does not explain "
                                                            "the rise")
    failed, answer = await _verdict(ctx, west, [evidence], "supported",
                                    contribution=_size(_row(result, "west"), evidence, "none"))
    assert not failed, answer
    assert "supported, no effect as claimed: no contributor" in answer
    east, evidence = _hypothesis_with_evidence(ctx, result, "Region east doesn't add to the "
                                                            "rise")
    failed, answer = await _verdict(ctx, east, [evidence], "supported",
                                    contribution=_size(_row(result, "east"), evidence))
    assert failed and "makes this hypothesis contradicted, not supported (the hypothesis " \
        "says the factor does not matter)" in answer
    failed, answer = await _verdict(ctx, east, [evidence], "contradicted",
                                    contribution=_size(_row(result, "east"), evidence))
    assert not failed and "contradicted, the factor matters: minor contributor (explains ~13%" \
        in answer, answer


async def test_the_judge_may_say_what_the_hypothesis_claims_when_its_wording_hides_it(
        ctx, result):
    """"The rise is the named causes, with nothing left for the west" claims the west's
    absence in words the board does not read as one (a real judge had to drop the size);
    the judge says so in the size, and a size of none supports it."""
    statement = "The rise is north's and east's, with nothing left for region west"
    hyp, evidence = _hypothesis_with_evidence(ctx, result, statement)
    size = _size(_row(result, "west"), evidence, "none")
    failed, answer = await _verdict(ctx, hyp, [evidence], "supported", contribution=size)
    assert failed and "makes this hypothesis contradicted, not supported" in answer
    failed, answer = await _verdict(ctx, hyp, [evidence], "supported", contribution={
        **size, "hypothesis_says": "it does not matter"})
    assert not failed and "supported, no effect as claimed: no contributor" in answer, answer


def test_the_board_checks_the_size_itself(board: Board):
    investigation = board.start_investigation("q")
    hyp = board.add_hypothesis("x", investigation_id=investigation.id)
    evidence = board.add_evidence("SELECT 1 AS x", duckdb.connect().execute("SELECT 1 AS x").df(),
                                  description="one", investigation_id=investigation.id)
    size = Contribution(ContributionRole.MINOR, evidence.id, "m", 0.5, 0.1, 0.4)
    with pytest.raises(InvalidRecordError, match="not inside its interval"):
        board.add_verdict(hyp.id, "supported", 0.5, "r", [evidence.id], author="j",
                          contribution=size)
    size = Contribution(ContributionRole.MINOR, evidence.id, "m", 0.2, 0.1, 0.4, 0.1, 0.2, 0.3)
    with pytest.raises(InvalidRecordError, match=r"share 0\.1 is not inside its interval"):
        board.add_verdict(hyp.id, "supported", 0.5, "r", [evidence.id], author="j",
                          contribution=size)
    size = Contribution(ContributionRole.MINOR, evidence.id, "m", 0.2, 0.1, 0.4, 0.1, 0.05)
    with pytest.raises(InvalidRecordError, match="both ends"):
        board.add_verdict(hyp.id, "supported", 0.5, "r", [evidence.id], author="j",
                          contribution=size)
    assert board.latest_verdict(hyp.id) is None
    plain = board.add_verdict(hyp.id, "supported", 0.5, "r", [evidence.id], author="j")
    assert plain.contribution is None and plain.headline == "supported"


async def test_reports_rank_supported_factors_by_size_and_keep_the_minor_ones(ctx, result):
    east, e1 = _hypothesis_with_evidence(ctx, result, "Region east adds to the rise")
    plain, e2 = _hypothesis_with_evidence(ctx, result, "Accounts churn more than before")
    north, e3 = _hypothesis_with_evidence(ctx, result, "Region north drives the rise")
    west, e4 = _hypothesis_with_evidence(ctx, result, "Region west does not explain the rise")
    # supported with no contributor, sized first: a claim of absence, ranked after causes
    assert not (await _verdict(ctx, west, [e4],
                               contribution=_size(_row(result, "west"), e4, "none")))[0]
    assert not (await _verdict(ctx, east, [e1],
                               contribution=_size(_row(result, "east"), e1)))[0]
    assert not (await _verdict(ctx, plain, [e2]))[0]
    assert not (await _verdict(ctx, north, [e3],
                               contribution=_size(_row(result, "north"), e3, "major")))[0]
    report = fallback_report(ctx.board, ctx.investigation_id)
    answer = report.split("## Answer", 1)[1].split("## Hypotheses", 1)[0]
    bullets = [line for line in answer.splitlines() if line.startswith("- ")]
    assert [b.split("**")[1] for b in bullets] == [north, east, plain, west]
    assert "major contributor (explains ~87% of the change, 95% CI" in bullets[0]
    assert "minor contributor (explains ~13% of the change, 95% CI 10% to 1" in bullets[1]
    brief = reporter_brief(ctx.board, ctx.investigation_id)
    ranking = brief.split("FACTORS BY SIZE", 1)[1]
    assert ranking.index(f"{north}: supported as a major") < ranking.index(
        f"{east}: supported as a minor") < ranking.index(f"{plain}: supported")
    assert "SIZE: supported as a minor contributor" in brief
    assert ctx.board.get_hypothesis(east).status is HypothesisStatus.SUPPORTED


async def test_sizes_on_different_measures_are_not_ranked_as_one_scale(ctx, result):
    def effect_only(row: dict, cited: str) -> dict:
        size = _size(row, cited)
        return {k: v for k, v in size.items() if not k.startswith("share")}

    east_rate, e1 = _hypothesis_with_evidence(ctx, result, "East's churn rate rose")
    north_rate, e2 = _hypothesis_with_evidence(ctx, result, "North's churn rate rose")
    east_share, e3 = _hypothesis_with_evidence(ctx, result, "Region east adds to the rise")
    north_share, e4 = _hypothesis_with_evidence(ctx, result, "Region north drives the rise")
    for hyp, evidence, size in (
            (east_rate, e1, effect_only(_row(result, "east"), e1)),
            (north_rate, e2, effect_only(_row(result, "north"), e2)),
            (east_share, e3, _size(_row(result, "east"), e3)),
            (north_share, e4, _size(_row(result, "north"), e4, "major"))):
        assert not (await _verdict(ctx, hyp, [evidence], contribution=size))[0]
    hypotheses = ctx.board.list_hypotheses(investigation_id=ctx.investigation_id)
    # major first; then the minor one with a share of the change; then the effects alone
    # in board order: north's 0.2 is not "larger" than east's 0.03 on one scale
    assert [h.id for h, _ in ranked_factors(ctx.board, hypotheses)] == [
        north_share, east_share, east_rate, north_rate]
    added = board_sections(ctx.board, ctx.investigation_id, "## Answer\n\nWritten.")
    listed = re.findall(r"^- \*\*(H\d+)\*\*", added, re.MULTILINE)
    assert listed == [north_share, east_share, east_rate, north_rate]
    assert added.startswith(f"## Hypotheses\n\n{RANKING_NOTE}\n\n- **{north_share}** supported")


async def test_a_size_travels_with_the_board_and_a_garbled_one_is_refused(ctx, result, tmp_path):
    hyp, evidence = _hypothesis_with_evidence(ctx, result, "Region east adds to the rise")
    assert not (await _verdict(ctx, hyp, [evidence],
                               contribution=_size(_row(result, "east"), evidence)))[0]
    document = json.loads(ctx.board.to_json())
    with Board.from_json(document, tmp_path / "copy.d2board") as copy:
        assert copy.latest_verdict(hyp) == ctx.board.latest_verdict(hyp)
    verdict = next(v for v in document["verdicts"] if v["hypothesis_id"] == hyp)
    verdict["contribution"] = json.dumps({"role": "huge"})
    with pytest.raises(BoardFormatError, match="field 'contribution' is not a size"):
        Board.from_json(document, tmp_path / "bad.d2board")


@pytest.mark.parametrize(("statement", "absence"), [
    ("Region west does not explain the rise", True),
    ("Differences in target difficulty do not explain the departmental gap", True),
    ("Goal category and metric have no material effect on achievement", True),
    ("Weekday doesn't affect resolution time", True),
    ("Assignment group is not a driver of resolution time", True),
    ("Churn is unrelated to the plan", True),
    ("Neither region nor channel explains the gap", True),
    ("There is no difference in achievement between departments", True),
    ("The rise cannot be explained by a change in mix", True),
    ("The gap isn't driven by priority", True),
    # an effect, though a negation appears in the sentence
    ("IT's advantage is not only a higher completion share: its completed goals reach "
     "target more often", False),
    ("Customers without a discount churn more", False),
    ("The new drug lowers readmission for patients who are not diabetic", False),
    ("Tickets that were not reassigned close faster", False),
    ("Shorter goal duration is associated with higher achievement", False),
    ("Churn is not associated with region", True),
    ("The difference between regions is not statistically significant", True),
    ("Region can't explain the gap", True),
    ("Discounts won't affect churn", True),
    ("Churn is not higher for discounted customers", True),
    ("Region is not linked to churn", True),
    ("Churn is independent of the plan", True),
    ("Stores that did not increase prices lost fewer customers", False),
    ("Customers who have not changed plans churn more", False),
    ("Customers with neither a discount nor a contract churn more", False),
    ("Churn rises with price, independent of region", False),
    ("Products with no link to a promotion sell less", False),
    ("The campaign does not address older customers, who churn more", False),
    # a claim that something did not change (the retail case's judges were refused)
    ("Other suppliers' orders show no rise in return rate between the quarters", True),
    ("Returns did not rise for other suppliers", True),
    ("There is no decline in units per order", True),
    ("Achievement rate has no material trend over goal start months", True),
    ("Prices stayed the same between quarters", True),
    ("The weekend share remained roughly stable", True),
    ("Products whose price did not fall sold less", False),
    ("Orders with no change of address ship faster", False),
    # only the main claim counts (the review's false positives), and more ways to say it
    ("The 20% discount caused the drop; list prices stayed the same", False),
    ("Returns lowered net revenue while order counts did not fall", False),
    ("Revenue fell although there was no change in list prices", False),
    ("Products whose unit price did not fall drove the drop", False),
    ("Customers whose spend stayed the same churned less", False),
    ("List prices were unchanged between the quarters", True),
    ("The weekend share held steady", True),
    ("Region west does not explain the rise, but east does", True),
])
def test_a_hypothesis_states_an_absence_by_its_wording_not_by_any_negation(
        statement: str, absence: bool) -> None:
    """The size's polarity turns only for a hypothesis that says a factor does not matter;
    a judge's contradicted-with-no-contribution verdict on "not only X but Y" was refused
    as if the hypothesis said X does not matter."""
    assert states_absence(statement) is absence


async def test_a_size_copied_within_tolerance_reads_as_verified_in_the_report(ctx, result):
    """A judge's size may round the row's figures (within the match tolerance); the
    verdict line the report takes from the board prints them as given, and the claim
    check accepts them as the board's own text rather than marking them unverified."""
    hyp, evidence = _hypothesis_with_evidence(ctx, result, "Region east adds to the rise")
    row = _row(result, "east")
    size = _size(row, evidence, effect=round(row["rate_change"] * 1.01, 5),
                 share=None, share_low=None, share_high=None)
    size = {k: v for k, v in size.items() if v is not None}
    failed, answer = await _verdict(ctx, hyp, [evidence], contribution=size)
    assert not failed, answer
    text = board_sections(ctx.board, ctx.investigation_id, "## Answer\n\nSee below.\n")
    assert f"{size['effect']:.3g}"[:4] in text
    check = check_report(ctx.board, ctx.investigation_id, text)
    assert check.numbers_checked > 0 and not check.unverified, check.marked_report


def test_a_factor_working_against_the_change_ranks_after_those_driving_it(board: Board):
    investigation = board.start_investigation("Why did churn rise?")
    evidence = board.add_evidence("SELECT 1 AS x", duckdb.connect().execute("SELECT 1 AS x").df(),
                                  description="one", investigation_id=investigation.id)

    def sized(statement: str, role: ContributionRole, share: float) -> str:
        hyp = board.add_hypothesis(statement, investigation_id=investigation.id)
        size = Contribution(role, evidence.id, "rate change", 0.02, 0.01, 0.03,
                            share, share - 0.05, share + 0.05)
        board.add_verdict(hyp.id, "supported", 0.8, "r", [evidence.id], author="j",
                          contribution=size)
        return hyp.id

    driver = sized("Region north drives the rise", ContributionRole.MAJOR, 0.9)
    small = sized("Region east adds to the rise", ContributionRole.MINOR, 0.2)
    against = sized("Region west held churn down", ContributionRole.MINOR, -0.4)
    hypotheses = board.list_hypotheses(investigation_id=investigation.id)
    # west's |-40%| is larger than east's 20%, but it offsets the change: it comes last
    assert [h.id for h, _ in ranked_factors(board, hypotheses)] == [driver, small, against]
    line = next(line for line in board_sections(board, investigation.id, "## Answer\n\nA.")
                .splitlines() if line.startswith(f"- **{against}**"))
    assert "minor contributor (works against the change: ~-40% of it, 95% CI -45% to -35%" in line
    assert "explains" not in line
    near_zero = Contribution(ContributionRole.MINOR, evidence.id, "m", 0.02, 0.01, 0.03,
                             -0.004, -0.01, 0.002)
    assert not near_zero.works_against_change, "its interval reaches zero: not offsetting"


async def test_a_trend_verdict_is_sized_from_the_summary_line_that_states_its_slope(ctx):
    """A trend's slope is in its summary, not its per-period rows: the judge copies it
    from the line that states it, signs as written; the sign turned is refused."""
    from analysis_data import planted

    from d2_notebook.board import ToolCall
    from d2_notebook.data.analysis import trend

    result = trend(GuardedSQL(planted()), source="orders", metric="avg(amount)",
                   time="ordered_on")
    stated = re.search(r"\(slope (\S+), 95% CI (\S+) to (\S+),", result.summary)
    slope, low, high = (float(v) for v in stated.groups())
    hyp, evidence = _hypothesis_with_evidence(ctx, result, "Order amounts rise over time")
    call = ToolCall("trend", {"source": "orders", "metric": "avg(amount)",
                              "time": "ordered_on"})
    ctx.board.record_tool_call(evidence, call, actor="collector")
    size = {"role": "major", "evidence_id": evidence, "measure": "slope per month"}
    error, content = await _verdict(ctx, hyp, [evidence], contribution={
        **size, "effect": slope, "ci_low": low, "ci_high": high})
    assert not error, content
    stored = ctx.board.get_hypothesis(hyp)
    assert stored.status is HypothesisStatus.SUPPORTED
    other, linked = _hypothesis_with_evidence(ctx, result, "Order amounts fall over time")
    ctx.board.record_tool_call(linked, call, actor="collector")
    error, content = await _verdict(ctx, other, [linked], status="contradicted", contribution={
        **size, "evidence_id": linked, "effect": -slope, "ci_low": -high, "ci_high": -low,
        "opposite": True})
    assert error and "from one line of the tool's summary" in content


async def test_an_exact_figure_beside_the_rounded_means_it_compares_takes_their_scale(ctx, sql):
    """A real-model collector rounded a department's crude and category-standardised
    means to whole numbers (49143 and 49503) beside their difference (-360) and the
    category percentages: the two means the figure is the difference of are its levels,
    so -360 (0.7% of them) is no effect, not 9 times the percentages beside it."""
    hyp, evidence = _exact_what_if(
        ctx, sql, "SELECT 'Sales' AS department, 49143.0 AS crude_mean, "
                  "49503.0 AS standardised_mean, -360.0 AS crude_minus_standardised, "
                  "38.1 AS pct_services, 26.2 AS pct_assets")
    failed, answer = await _verdict(ctx, hyp, [evidence], "contradicted",
                                    contribution=_exact_size(evidence, -360.0))
    assert not failed, answer
    assert ctx.board.latest_verdict(hyp).contribution.role is ContributionRole.NONE
    hyp, evidence = _exact_what_if(
        ctx, sql, "SELECT 4914.0 AS crude_mean, 5274.0 AS standardised_mean, "
                  "-360.0 AS crude_minus_standardised, 38.1 AS pct_services")
    failed, answer = await _verdict(ctx, hyp, [evidence], "contradicted",
                                    contribution=_exact_size(evidence, -360.0))
    assert failed and "excludes zero, so the factor is real" in answer, answer  # 7% of them


async def test_a_trend_size_must_be_its_slope_and_interval_not_other_numbers_of_the_line(ctx):
    """The summary line also holds the unsigned "by X", the 95 of "95% CI" and a p-value:
    a size made of those (a real trend sized as no effect) is refused."""
    from analysis_data import planted

    from d2_notebook.board import ToolCall
    from d2_notebook.data.analysis import trend

    result = trend(GuardedSQL(planted()), source="orders", metric="avg(amount)",
                   time="ordered_on")
    slope, low, _ = (float(v) for v in re.search(
        r"\(slope (\S+), 95% CI (\S+) to (\S+),", result.summary).groups())
    hyp, evidence = _hypothesis_with_evidence(ctx, result, "Order amounts do not change")
    ctx.board.record_tool_call(evidence, ToolCall("trend", {"source": "orders"}),
                               actor="collector")
    error, content = await _verdict(ctx, hyp, [evidence], contribution={
        "role": "none", "evidence_id": evidence, "measure": "slope per month",
        "effect": slope, "ci_low": -low, "ci_high": 95})
    assert error and "is not one row" in content, content


async def test_counts_that_differ_by_the_figure_are_no_levels_it_compares(ctx, sql):
    """Two counts (1200, 1210) that differ by a 10-point change by chance do not make
    it negligible: only columns of no integer type are levels."""
    hyp, evidence = _exact_what_if(
        ctx, sql, "SELECT 1200 AS n_2023, 1210 AS n_2024, 10.0 AS rate_change_pts, "
                  "38.1 AS pct_services")
    failed, answer = await _verdict(ctx, hyp, [evidence], "contradicted",
                                    contribution=_exact_size(evidence, 10.0))
    assert failed and "excludes zero, so the factor is real" in answer, answer
