"""The LLM judge: grades a report against each ground-truth insight (1 / 0.5 / 0).

One model call per (insight, report), through the model layer, with the prompt in
``judge_prompt.txt``. The judge answers one JSON object ``{"score", "reason",
"contradictions"}``. A malformed answer (no JSON, a score outside 1 / 0.5 / 0) is sent
back with the problem named, up to ``retries`` times; after that the insight is recorded
*unscored* (``score`` None, with the error) — never a crash, never a silent 0.

Every judgement is cached as one JSON file under the cache folder, keyed by the judge
model and the hash of what it is asked (the system text and the whole prompt: the
prompt template, the insight, its question and the report), with the prompt, every raw
answer, the tokens and the cost: re-scoring the same reports costs nothing, and an
edited prompt is judged afresh. A judgement read from the cache reports no new calls
and no new cost (its first cost is kept apart, as ``cached``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchmark.insightbench.tasks import GroundTruthInsight
from d2_notebook.llm import (
    AssistantMessage,
    Model,
    ModelRequest,
    ModelResponse,
    TextPart,
    UserMessage,
    cost_of,
)

PROMPT = (Path(__file__).with_name("judge_prompt.txt")).read_text(encoding="utf-8")
ALLOWED_SCORES = (0.0, 0.5, 1.0)
SYSTEM = "You are a strict, fair grader of data-analysis reports. You answer in JSON only."


@dataclass
class Judgement:
    """The judge's grade of one insight against one report.

    Attributes:
        insight: the ground-truth insight text.
        score: 1, 0.5 or 0; None when the judge never answered well-formed (unscored).
        reason: the judge's one-line reason.
        contradictions: report claims that contradict the insight.
        attempts: judge calls made (0 when taken from the cache).
        error: why the insight is unscored, else None.
        input_tokens, output_tokens, cost_usd: what its judge calls cost now (0 when
            taken from the cache: the cache file keeps the first cost).
        cached: True when read from the cache.
    """

    insight: str
    score: float | None
    reason: str = ""
    contradictions: list[str] = field(default_factory=list)
    attempts: int = 0
    error: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    cached: bool = False


def report_hash(report: str) -> str:
    """The SHA-256 of a report's text (the cache key's report part)."""
    return hashlib.sha256(report.encode("utf-8")).hexdigest()


def judge_prompt(insight: GroundTruthInsight, report: str) -> str:
    """The judge's prompt for one insight and one report."""
    return PROMPT.format(insight=insight.text, question=insight.question or "(not given)",
                         report=report.strip() or "(the report is empty)")


def parse_judgement(text: str) -> dict[str, Any]:
    """The judge's JSON answer, validated.

    The object is decoded from the first ``{`` of the answer (text before it and after
    the object's end is ignored, so a second object or a closing remark does no harm).

    Raises:
        ValueError: no JSON object, or a score that is not the number 1, 0.5 or 0 (a
            boolean is not a score); the message says what was wrong (it is sent back
            to the judge).
    """
    start = text.find("{")
    if start < 0:
        raise ValueError("the answer holds no JSON object")
    try:
        data, _ = json.JSONDecoder().raw_decode(text, start)
    except ValueError as exc:
        raise ValueError(f"the JSON does not parse ({exc})") from exc
    if not isinstance(data, dict):
        raise ValueError("the answer is not a JSON object")
    raw = data.get("score")
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        raise ValueError(f"score {raw!r} is not a number") from None
    score = float(raw)
    if score not in ALLOWED_SCORES:
        raise ValueError(f"score {score:g} is not one of 1, 0.5, 0")
    contradictions = data.get("contradictions") or []
    if not isinstance(contradictions, list):
        contradictions = [contradictions]
    return {"score": score, "reason": str(data.get("reason", "")).strip(),
            "contradictions": [str(c) for c in contradictions if str(c).strip()]}


def prompt_key(system: str, prompt: str) -> str:
    """The SHA-256 of what the judge is asked: system text and prompt (a cache key part)."""
    return hashlib.sha256(f"{system}\0{prompt}".encode()).hexdigest()


class JudgeCache:
    """Judgements on disk, one JSON file per (judge model, :func:`prompt_key`)."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        """Use (and create) ``folder``."""
        self.folder = Path(folder)

    def _path(self, judge: str, asked: str) -> Path:
        key = hashlib.sha256(f"{judge}\0{asked}".encode()).hexdigest()
        return self.folder / f"{key[:32]}.json"

    def get(self, judge: str, asked: str) -> Judgement | None:
        """The cached judgement, or None (absent, unreadable or unscored).

        A hit is marked ``cached`` with no calls and no cost: it costs nothing now.
        """
        try:
            data = json.loads(self._path(judge, asked).read_text("utf-8"))
            found = Judgement(**data["judgement"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if found.score is None:
            return None  # an unscored judgement is tried again on a re-score
        found.cached, found.attempts = True, 0
        found.input_tokens = found.output_tokens = 0
        found.cost_usd = 0.0
        return found

    def put(self, judge: str, asked: str, judgement: Judgement,
            transcript: list[dict[str, Any]], *, report_sha: str) -> None:
        """Store a judgement with its prompt and raw answers (written atomically)."""
        path = self._path(judge, asked)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"judge": judge, "prompt_sha256": asked,
                                   "insight": judgement.insight, "report_sha256": report_sha,
                                   "judgement": asdict(judgement),
                                   "transcript": transcript}, indent=1) + "\n", "utf-8")
        os.replace(tmp, path)


class InsightJudge:
    """Grades reports with a model, through the cache.

    Args:
        model: the judge model (any :class:`~d2_notebook.llm.Model`).
        cache: where judgements are cached (None: no cache).
        retries: extra calls after a malformed answer before recording it unscored.
        concurrency: judge calls in flight at once, over every report being scored
            (None: no limit beyond the model layer's).

    Attributes:
        in_flight, most_in_flight: judge calls in flight now, and the most at once.
    """

    def __init__(self, model: Model, cache: JudgeCache | None = None, *,
                 retries: int = 2, concurrency: int | None = None) -> None:
        """Keep the model, the cache, the retry count and the concurrency limit."""
        if concurrency is not None and concurrency < 1:
            raise ValueError(f"judge concurrency must be at least 1, not {concurrency}")
        self.model = model
        self.cache = cache
        self.retries = retries
        self.concurrency = concurrency
        self._limits: dict[asyncio.AbstractEventLoop, asyncio.Semaphore] = {}
        self.in_flight = 0
        self.most_in_flight = 0

    def _limit(self) -> asyncio.Semaphore | None:
        """The running event loop's semaphore (a judge may serve several loops)."""
        if self.concurrency is None:
            return None
        loop = asyncio.get_running_loop()
        if loop not in self._limits:
            self._limits = {loop: asyncio.Semaphore(self.concurrency)}
        return self._limits[loop]

    async def _request(self, request: ModelRequest) -> ModelResponse:
        """One judge call, within the concurrency limit."""
        limit = self._limit()
        if limit is not None:
            await limit.acquire()
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            return await self.model.request(request)
        finally:
            self.in_flight -= 1
            if limit is not None:
                limit.release()

    @property
    def name(self) -> str:
        """The judge model's name (part of the cache key)."""
        return self.model.name

    async def judge(self, insight: GroundTruthInsight, report: str) -> Judgement:
        """Grade ``report`` against one insight (cached; never raises on bad answers).

        Raises:
            ModelError: the judge model itself failed (not configured, API errors
                beyond its retries) — a run cannot be judged without its judge.
        """
        prompt = judge_prompt(insight, report)
        asked = prompt_key(SYSTEM, prompt)
        if self.cache is not None:
            hit = self.cache.get(self.name, asked)
            if hit is not None:
                return hit
        messages: list[Any] = [UserMessage(prompt)]
        result = Judgement(insight.text, None)
        transcript: list[dict[str, Any]] = [{"prompt": prompt}]
        for attempt in range(1, self.retries + 2):
            response = await self._request(ModelRequest(
                system=SYSTEM, messages=list(messages), max_tokens=1024,
                role="insight_judge", agent="insight-judge"))
            self._count(result, response)
            result.attempts = attempt
            transcript.append({"answer": response.text})
            try:
                parsed = parse_judgement(response.text)
            except ValueError as exc:
                result.error = f"malformed judge answer after {attempt} call(s): {exc}"
                messages += [AssistantMessage([TextPart(response.text or "(empty)")]),
                             UserMessage(f"That answer cannot be used: {exc}. Answer again "
                                         "with one JSON object: {\"score\": 1 | 0.5 | 0, "
                                         "\"reason\": \"...\", \"contradictions\": [...]}")]
                continue
            result.score, result.reason = parsed["score"], parsed["reason"]
            result.contradictions, result.error = parsed["contradictions"], None
            break
        if self.cache is not None:
            self.cache.put(self.name, asked, result, transcript, report_sha=report_hash(report))
        return result

    @staticmethod
    def _count(result: Judgement, response: ModelResponse) -> None:
        usage = response.usage
        result.input_tokens += usage.input_tokens
        result.output_tokens += usage.output_tokens
        result.cost_usd += cost_of(response.model, usage).usd if response.model else 0.0


def judge_recall(judgements: list[Judgement]) -> float | None:
    """Mean judge score over the *scored* insights; None when none was scored."""
    scored = [j.score for j in judgements if j.score is not None]
    return sum(scored) / len(scored) if scored else None
