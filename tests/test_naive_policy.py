"""The naive offline policy on the bundled hospital data (issue 13, "How to verify
without a model key"): knowing nothing of the domain, acting only on the tools' flags,
it ends with the comorbidity subgroup refined and supported and the confounded drug
contradicted."""

from __future__ import annotations

import re
from pathlib import Path

import change_data
import duckdb
import pytest
from board_fingerprint import fingerprint

from d2_notebook import investigate
from d2_notebook.board import ContributionRole, HypothesisStatus
from d2_notebook.datasets import hospital
from d2_notebook.detective.policies import naive as naive_policy
from d2_notebook.detective.policies.naive import NaivePolicy, Schema


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    return hospital.create()


async def test_the_naive_policy_finds_the_subgroup_and_the_confounder(con):
    result = await investigate(con, hospital.QUESTION, model=NaivePolicy().model())
    board = result.board
    hyps = {h.statement: h for h in board.list_hypotheses()}
    drug = "treatments.drug = '{}' changes the rate of outcomes.died against " \
           "treatments.drug = 'Standard care'"
    # The drug that only looks good because it goes to mild cases: contradicted.
    assert hyps[drug.format("Corvalin")].status is HypothesisStatus.CONTRADICTED
    # The subgroup drug: refined by the judge along the flagged comorbidity, and the
    # subgroup with the comorbidity is supported, the rest not.
    parent = hyps[drug.format("Virexa")]
    children = {h.statement: h for h in board.list_hypotheses() if h.parent_id == parent.id}
    within = drug.format("Virexa") + " within has comorbidities.condition = asthma: {}"
    assert set(children) == {within.format("yes"), within.format("no")}
    assert children[within.format("yes")].status is HypothesisStatus.SUPPORTED
    assert children[within.format("no")].status is HypothesisStatus.CONTRADICTED
    assert {c.author_role for c in children.values()} == {"judge"}
    # The clearly effective drug holds once severity is held fixed.
    assert hyps[drug.format("Pulmorex")].status is HypothesisStatus.SUPPORTED
    # Every evidence is an analysis tool's result or the exploration (no hand-written
    # domain SQL), and the investigation finished with a report.
    assert all(e.description.startswith(("segment_scan", "compare_within", "values of"))
               for e in board.list_evidence())
    assert result.state == "finished"


def test_the_policy_carries_no_dataset_words():
    source = Path(naive_policy.__file__).read_text(encoding="utf-8").lower()
    words = {w.lower() for w in (*hospital.DRUGS, *hospital.CONDITIONS, *hospital.SEVERITIES)}
    words |= set(hospital.TABLES) | {"died", "drug", "patient", "comorbid"}
    found = {w for w in words if re.search(rf"\b{re.escape(w)}", source)}
    assert not found, f"the naive policy must not know the domain: {sorted(found)}"


def test_the_schema_reading_is_generic():
    schema = Schema.read("DATABASE SCHEMA (DuckDB):\nDuckDB database: 2 tables/views.\n"
                         "orders (table, 10 rows)\n  order_id INTEGER e.g. 1\n"
                         "  channel VARCHAR e.g. web\n  returned BOOLEAN e.g. True\n"
                         "lines (table, 30 rows)\n  order_id INTEGER e.g. 1\n"
                         "  item VARCHAR e.g. x\n"
                         "Join keys (child -> parent; N:1 = many child rows per parent row):\n"
                         "  lines.order_id -> orders.order_id (N:1, declared)\n")
    assert schema.outcome() == "orders.returned"
    assert schema.exposure("Which line sells best?") == "lines.item"
    assert schema.exposure("How are we doing?") is None
    assert schema.source("orders", "lines") == (
        "orders JOIN lines ON lines.order_id = orders.order_id")


async def test_a_run_with_analysis_tools_in_parallel_collectors_replays_identically(tmp_path):
    """The analysis tools' rows (ties, float sums) and the evidence ids parallel collectors
    get must not depend on timing: the recorded run replays call for call."""
    recorded = tmp_path / "recorded.d2board"
    original = await investigate(hospital.create(), hospital.QUESTION, board=recorded,
                                 model=NaivePolicy().model(), collectors=4)
    replayed = await investigate(hospital.create(), None, board=tmp_path / "again.d2board",
                                 replay=recorded, collectors=4)
    assert replayed.state == "finished"
    assert fingerprint(replayed.board) == fingerprint(original.board)
    assert replayed.report == original.report


async def test_a_real_secondary_factor_ends_a_minor_contributor_with_its_share():
    """Issue 19 item 7: on a rise with a main cause (north) and a real secondary factor
    (east), the naive team sizes both with decompose; east ends "supported as a minor
    contributor" with its share, the flat regions contradicted, and the report ranks
    east after north."""
    result = await investigate(change_data.rising_churn(), change_data.QUESTION,
                               model=NaivePolicy().model())
    board = result.board
    assert result.state == "finished"
    hyps = {h.statement.split("'")[1]: h for h in board.list_hypotheses()}
    assert set(hyps) == set(change_data.REGIONS)
    north, east = (board.latest_verdict(hyps[r].id) for r in ("north", "east"))
    assert north.contribution.role is ContributionRole.MAJOR
    assert east.status is HypothesisStatus.SUPPORTED
    assert east.contribution.role is ContributionRole.MINOR
    assert east.contribution.share == pytest.approx(0.0075 / 0.0575, abs=1e-3)
    assert east.contribution.share_low > 0
    assert east.headline.startswith("supported as a minor contributor (explains ~13% of the "
                                    "change, 95% CI 10% to ")
    for flat in ("west", "south"):
        verdict = board.latest_verdict(hyps[flat].id)
        assert verdict.status is HypothesisStatus.CONTRADICTED
        assert verdict.contribution.role is ContributionRole.NONE
    answer = result.report.split("## Answer", 1)[1].split("## Hypotheses", 1)[0]
    assert answer.index(f"**{hyps['north'].id}**") < answer.index(f"**{hyps['east'].id}**")
    assert "minor contributor (explains ~13% of the change" in answer
    assert all(e.description.startswith(("segment_scan", "decompose", "values of"))
               for e in board.list_evidence())
