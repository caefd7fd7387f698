"""A written report (the reporter's, the single agent's) is what the user gets, followed
by the sections taken from the board: each hypothesis's verdict line and what was not
examined. The single agent's own report was once replaced by the board-built fallback."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from d2_notebook import investigate
from d2_notebook.board import Board, DimensionDismissal, HypothesisStatus
from d2_notebook.datasets import hospital
from d2_notebook.detective.policies.hospital import HospitalWalkthrough
from d2_notebook.detective.report import has_section, with_missed_dismissals
from d2_notebook.llm import ModelRequest, ModelResponse
from d2_notebook.llm.offline import FunctionModel, tool_call

WRITTEN = "## Answer\n\n- Nothing in the data decides the question [E1]."


def _single_agent(request: ModelRequest) -> ModelResponse:
    """Explores once, records nothing, and writes a short report."""
    if len(request.messages) == 1:
        return tool_call("run_sql", {"sql": "SELECT count(*) AS visits FROM visits"})
    return tool_call("write_report", {"markdown": WRITTEN})


def test_the_single_agent_s_written_report_is_the_report(tmp_path: Path) -> None:
    result = asyncio.run(investigate(hospital.create(), hospital.QUESTION,
                                     board=tmp_path / "alone.d2board",
                                     model=FunctionModel(_single_agent),
                                     variant="single_agent_board"))
    assert result.state == "finished"
    assert result.report.startswith(WRITTEN)  # not the board-built "# <question>" fallback
    with Board.open(tmp_path / "alone.d2board") as board:
        assert board.list_investigations()[-1].report.startswith(WRITTEN)


class AnswerOnlyReporter(HospitalWalkthrough):
    """The walkthrough, with a reporter that writes its answer and key findings only (as
    the reporter's rules now ask): the verdicts and what was not examined come from the
    board."""

    def __call__(self, request: ModelRequest) -> ModelResponse:  # type: ignore[override]
        response = super().__call__(request)
        for part in response.tool_calls:
            if part.name == "write_report":
                part.args["markdown"] = part.args["markdown"].split("## Hypotheses")[0]
        return response


def test_the_team_report_ends_with_every_verdict_from_the_board(tmp_path: Path) -> None:
    result = asyncio.run(investigate(hospital.create(), hospital.QUESTION,
                                     board=tmp_path / "team.d2board",
                                     model=AnswerOnlyReporter().model()))
    assert result.state == "finished"
    written, added = result.report.split("\n\n## Hypotheses\n\n")
    assert written.startswith("## Answer") and "## Not examined" not in written
    verdicts, not_examined = added.split("\n\n## Not examined\n\n")
    with Board.open(tmp_path / "team.d2board") as board:
        hypotheses = board.list_hypotheses()
        supported = [h for h in hypotheses if h.status is HypothesisStatus.SUPPORTED]
        assert supported and len(supported) < len(hypotheses)
        # the supported factors first, then the others, each group in board order here
        # (no verdict of the walkthrough gives a size)
        hypotheses = supported + [h for h in hypotheses if h not in supported]
        assert len(verdicts.splitlines()) == len(hypotheses)
        for hyp, line in zip(hypotheses, verdicts.splitlines(), strict=True):
            verdict = board.latest_verdict(hyp.id)
            assert line.startswith(f"- **{hyp.id}** {hyp.status.value}")
            if verdict is not None:
                assert f"[{', '.join(verdict.evidence_ids)}]" in line
    assert not_examined.startswith("| why not examined | table | dimensions |")
    assert result.claim_check.numbers_checked > 0 and not result.claim_check.unverified


class TableCopyingReporter(HospitalWalkthrough):
    """The walkthrough, with a reporter that copies the LEFT UNEXAMINED table of its
    first message into its own "## Not examined" section (as real reporters did)."""

    def __call__(self, request: ModelRequest) -> ModelResponse:  # type: ignore[override]
        response = super().__call__(request)
        for part in response.tool_calls:
            if part.name == "write_report":
                first = request.messages[0].text  # type: ignore[union-attr]
                table = first.split("LEFT UNEXAMINED: ", 1)[1].split("\n\n", 1)[0]
                answer = part.args["markdown"].split("## Not examined")[0]
                part.args["markdown"] = f"{answer.rstrip()}\n\n## Not examined\n\n{table}\n"
        return response


def test_a_copied_not_examined_table_is_not_appended_again(tmp_path: Path) -> None:
    """The table names dimensions without their table (it has a column for that): the
    check for dismissals missing from the writer's own section reads them that way, so
    the table is not printed twice (a real-model report had it twice)."""
    result = asyncio.run(investigate(hospital.create(), hospital.QUESTION,
                                     board=tmp_path / "copy.d2board",
                                     model=TableCopyingReporter().model()))
    assert result.state == "finished"
    assert result.report.count("| why not examined | table | dimensions |") == 1
    with Board.open(tmp_path / "copy.d2board") as board:
        assert board.list_dimension_dismissals()  # the walkthrough dismisses dimensions


def _dismissal(dimension: str, reason: str = "cannot bear on the question"):
    return DimensionDismissal(id=1, investigation_id="I1", dimension=dimension, reason=reason,
                              author="orchestrator", created_at="2026-12-02T00:00:00")


def test_a_dismissal_the_writer_left_out_goes_into_its_own_section() -> None:
    """Named elsewhere in the report ("9 days") is not named in its "Not examined": the
    missed dismissal's table goes at the end of that section, before the next heading."""
    report = ("## Answer\n\nMedian stay was 9 days [E1].\n\n## Not examined\n\n"
              "| why not examined | table | dimensions |\n|---|---|---|\n"
              "| no bearing | patients | sex |\n\n## Recommendations\n\n- Act [E1].\n")
    dismissed = [_dismissal("patients.sex"), _dismissal("treatments.days")]
    merged = with_missed_dismissals(report, dismissed)
    section = merged.split("## Not examined")[1].split("## Recommendations")[0]
    assert "| cannot bear on the question | treatments | days |" in section
    assert section.count("| why not examined |") == 2  # the writer's table, then the added
    assert merged.endswith("## Recommendations\n\n- Act [E1].\n")
    assert with_missed_dismissals(report, dismissed[:1]) == report  # named: unchanged
    assert with_missed_dismissals("## Answer\n\nx\n", dismissed) == "## Answer\n\nx\n"


def test_sections_are_found_by_their_heading() -> None:
    assert has_section("## Hypotheses considered\n\n- H1", "Hypotheses")
    assert not has_section("### Hypotheses\n", "Hypotheses")
    assert not has_section("We tested hypotheses ## Hypotheses inline", "Hypotheses")


def test_the_report_writers_get_the_tools_their_prompts_name() -> None:
    """The single agent's prompt offers mark_redundant before write_report; a real-model
    single agent found no such tool in its list."""
    from d2_notebook.detective.roles import role_instructions
    from d2_notebook.detective.variant import FULL, SINGLE_AGENT_BOARD, Role

    for variant, role, role_file in ((SINGLE_AGENT_BOARD, Role.DETECTIVE, "single_agent"),
                                     (FULL, Role.REPORTER, "reporter")):
        text = role_instructions(role_file)
        for name in ("mark_redundant", "write_report"):
            assert re.search(rf"\b{name}\b", text)
            assert name in variant.tools_of(role), (variant.name, name)
