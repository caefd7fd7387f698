"""InsightBench scoring: the offline proxy on hand-written reports, and the LLM judge."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from benchmark.insightbench.judge import InsightJudge, JudgeCache, parse_judgement
from benchmark.insightbench.proxy import (
    content_words,
    rouge1_recall,
    score_insight,
    value_stated,
)
from benchmark.insightbench.scoring import score_report
from benchmark.insightbench.tasks import GroundTruthInsight, InsightTask, TaskTable
from d2_notebook.errors import ModelAPIError
from d2_notebook.llm import ModelRequest
from d2_notebook.llm.offline import FunctionModel, text

HARDWARE = GroundTruthInsight("Hardware incidents are significantly higher than others",
                              "Which category has most incidents?", ("Hardware", "335"))
PRINTER = GroundTruthInsight("Printer546 is causing the most issues", "", ("Printer546", "158"))
TASK = InsightTask("flag-x", "Find the imbalance", "Analyst", "", "",
                   (TaskTable("incident", Path("flag-x.csv")),), (HARDWARE, PRINTER))


def test_rouge1_recall_counts_content_words_of_the_insight() -> None:
    assert content_words("The incidents are higher") == ["incident", "higher"]
    assert rouge1_recall("hardware incidents higher", "Hardware incident counts higher") == 1
    assert rouge1_recall("hardware incidents higher others", "hardware is fine") == 0.25
    assert rouge1_recall("", "anything") == 0.0


def test_a_report_stating_one_of_two_insights_has_recall_one_half() -> None:
    report = ("## Findings\n\n- Hardware incidents are significantly higher than others: "
              "335 of 500 (67%).\n- Network incidents are rare.")
    score = asyncio.run(score_report(TASK, report))
    hardware, printer = (s.proxy for s in score.insights)
    assert hardware.rouge1_recall == 1.0
    assert hardware.best_sentence.startswith("- Hardware incidents")
    assert (hardware.values_found, hardware.values_total) == (2, 2)
    assert printer.rouge1_recall == 0.0 and printer.values_found == 0
    assert score.proxy_recall == 0.5
    assert score.numbers_rate == 0.5
    assert score.judge_recall is None and score.judge_model is None


def test_words_scattered_over_sentences_do_not_add_up() -> None:
    report = "Hardware is one category. Incidents were logged. Others exist. It is higher."
    # 4 of the 5 content words are in the text, but at most 1 in any one sentence.
    assert rouge1_recall(HARDWARE.text, report) == 0.8
    assert score_insight(HARDWARE, report).rouge1_recall == 0.2


def test_the_numbers_check_tolerates_rounding_and_percentages() -> None:
    assert value_stated("335", "about 335 incidents")
    assert value_stated("0.67", "67% of them")
    assert value_stated("1200.4", "1,200 dollars")
    assert not value_stated("335", "3350 incidents")
    assert value_stated("Hardware", "the hardware category")
    assert not value_stated("Hardware", "hardwareless")


def test_the_numbers_check_reads_no_false_numbers() -> None:
    # x100 only for a fraction and a percentage.
    assert value_stated("0.67", "67 % of them") and value_stated("0.67", "67 percent")
    assert not value_stated("0.67", "67 incidents")  # not a percentage
    assert not value_stated("5", "0.05% of them")  # 5 is no fraction
    assert not value_stated("67", "0.67 of them")
    # Dates and times are not numbers.
    for dated in ("on 2023-01-05", "on 01/05/2023", "at 10:30", "in 2023-05"):
        assert not value_stated("5", dated) and not value_stated("1", dated), dated
    assert value_stated("2023", "in 2023 the volume rose")
    # Only real thousands separators join digits.
    assert not value_stated("123", "groups 1,2,3")
    assert value_stated("2", "groups 1,2,3") and value_stated("1200", "1,200 dollars")
    assert not value_stated("12", "1,2000 items") and value_stated("2000", "1,2000 items")


def _judge_fn(answers: list[str], seen: list[ModelRequest]):
    def answer(request: ModelRequest):
        seen.append(request)
        return text(answers.pop(0) if answers else '{"score": 0, "reason": "none"}')
    return answer


def test_the_judge_prompt_carries_the_insight_and_the_report(tmp_path: Path) -> None:
    seen: list[ModelRequest] = []
    model = FunctionModel(_judge_fn(['{"score": 1, "reason": "stated", "contradictions": []}',
                                     '{"score": 0.5, "reason": "partly", "contradictions": '
                                     '["says Printer12 leads"]}'], seen), name="judge-fn")
    judge = InsightJudge(model, JudgeCache(tmp_path / "cache"))
    report = "Hardware leads with 335 incidents. Printer12 causes most issues."
    score = asyncio.run(score_report(TASK, report, judge=judge))
    assert len(seen) == 2
    prompts = [r.messages[0].text for r in seen]
    assert any(HARDWARE.text in p and report in p and HARDWARE.question in p for p in prompts)
    assert any(PRINTER.text in p and report in p for p in prompts)
    assert sorted(j.score for j in score.judgements) == [0.5, 1.0]
    assert score.judge_recall == 0.75 and score.contradictions == 1 and score.fully_judged
    assert score.to_dict()["judge_usage"]["calls"] == 2


def test_judgements_are_cached_by_insight_and_report(tmp_path: Path) -> None:
    seen: list[ModelRequest] = []
    model = FunctionModel(_judge_fn(['{"score": 1, "reason": "ok"}'] * 4, seen), name="j")
    judge = InsightJudge(model, JudgeCache(tmp_path / "cache"))
    first = asyncio.run(score_report(TASK, "Hardware leads.", judge=judge))
    again = asyncio.run(score_report(TASK, "Hardware leads.", judge=judge))
    assert len(seen) == 2  # the re-score cost nothing
    assert all(j.cached for j in again.judgements) and again.judge_recall == first.judge_recall
    assert again.to_dict()["judge_usage"] == {"calls": 0, "cached": 2, "input_tokens": 0,
                                              "output_tokens": 0, "cost_usd": 0.0}
    assert first.to_dict()["judge_usage"]["calls"] == 2
    asyncio.run(score_report(TASK, "Hardware leads!", judge=judge))  # another report
    assert len(seen) == 4
    stored = [json.loads(p.read_text()) for p in (tmp_path / "cache").glob("*.json")]
    assert len(stored) == 4 and all(s["transcript"][0]["prompt"] for s in stored)


def test_a_malformed_answer_is_retried_then_recorded_unscored(tmp_path: Path) -> None:
    seen: list[ModelRequest] = []
    answers = ["I think it is good.", '{"score": 1, "reason": "fine"}',  # 1st insight
               "{not json", '{"score": 2}', '{"score": "high"}']          # 2nd: never
    model = FunctionModel(_judge_fn(answers, seen), name="j")
    task = InsightTask("t", "g", "", "", "", TASK.tables, (HARDWARE,))
    first = asyncio.run(score_report(task, "report", judge=InsightJudge(model, retries=2)))
    assert first.judgements[0].score == 1.0 and first.judgements[0].attempts == 2
    retry_prompt = seen[1].messages[-1].text
    assert "holds no JSON object" in retry_prompt and "score" in retry_prompt
    second = asyncio.run(score_report(task, "report", judge=InsightJudge(model, retries=2)))
    unscored = second.judgements[0]
    assert unscored.score is None and unscored.attempts == 3
    assert "score 'high' is not a number" in unscored.error
    assert second.judge_recall is None and second.unscored == 1 and not second.fully_judged


def test_parse_judgement_names_what_is_wrong() -> None:
    assert parse_judgement('Sure: {"score": 0.5, "reason": "r", "contradictions": "x"}') == {
        "score": 0.5, "reason": "r", "contradictions": ["x"]}
    with pytest.raises(ValueError, match=r"not one of 1, 0\.5, 0"):
        parse_judgement('{"score": 0.7}')
    with pytest.raises(ValueError, match="does not parse"):
        parse_judgement('{"score": 1,}')
    # Decoded from the first "{": a second object or braces after it do no harm.
    assert parse_judgement('{"score": 1, "reason": "a"} Also {"score": 0}')["score"] == 1.0
    assert parse_judgement('{"score": 0, "reason": "uses {x}"} (done}')["reason"] == "uses {x}"
    for boolean in ("true", "false"):
        with pytest.raises(ValueError, match="is not a number"):
            parse_judgement(f'{{"score": {boolean}}}')


def test_an_edited_prompt_or_system_text_is_judged_afresh(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    from benchmark.insightbench import judge as judge_module

    seen: list[ModelRequest] = []
    model = FunctionModel(_judge_fn(['{"score": 1, "reason": "ok"}'] * 6, seen), name="j")
    judge = InsightJudge(model, JudgeCache(tmp_path / "cache"))
    asyncio.run(score_report(TASK, "Hardware leads.", judge=judge))
    assert len(seen) == 2
    monkeypatch.setattr(judge_module, "PROMPT", judge_module.PROMPT + "\nBe brief.")
    asyncio.run(score_report(TASK, "Hardware leads.", judge=judge))
    assert len(seen) == 4  # another prompt: not the cached judgements
    monkeypatch.setattr(judge_module, "SYSTEM", "Another grader.")
    asyncio.run(score_report(TASK, "Hardware leads.", judge=judge))
    assert len(seen) == 6


def test_a_failing_judge_model_raises_instead_of_scoring_zero() -> None:
    def broken(_: ModelRequest):
        raise ModelAPIError("server down")
    judge = InsightJudge(FunctionModel(broken, name="j"))
    with pytest.raises(ModelAPIError, match="server down"):
        asyncio.run(score_report(TASK, "r", judge=judge))
