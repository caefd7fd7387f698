"""The offline proxy score of a report against ground-truth insights (no model).

In the spirit of InsightBench's ROUGE fallback, two signals per insight:

- **ROUGE-1 recall**: the share of the insight's content words found in the best
  matching *sentence* of the report (so a report that merely uses many words cannot
  collect words from all over the text). Words are lower-case ``[a-z0-9]+`` tokens,
  English stop words dropped, a plural ``s`` stripped (``incidents`` = ``incident``).
- **Numbers check**: the share of the insight's key values (its ``insight_value``:
  numbers such as ``335`` and short labels such as ``Hardware``) that the report states
  anywhere. A number matches a report number within 1 %, and a fraction (``|v| <= 1``)
  also matches a report *percentage* (``0.67`` = ``67%``, not ``67``); dates and
  times in the report (``2023-01-05``, ``10:30``) are not read as numbers, and only
  real thousands separators join digits (``1,200`` is 1200; ``1,2,3`` is 1, 2 and 3).
  A label matches as a whole-word, case-insensitive phrase.

The proxy recall of a report is the mean ROUGE-1 recall over the insights.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from benchmark.insightbench.tasks import GroundTruthInsight

_STOP_WORDS_TEXT = """
a an the and or but if then than of to in on at by for with from into over under about
as is are was were be been being has have had do does did it its this that these those
there their they them he she his her we our you your i me my not no nor so such very can
could should would may might will shall also more most less least much many some any all
each other which who whom whose what when where why how while per across among between
"""
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())
_WORD = re.compile(r"[a-z0-9]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_NUMBER = re.compile(r"(?<![\w.])(?P<number>[-+]?(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?)"
                     r"(?![\w.]\d)(?P<percent>\s*(?:%|percent\b))?", re.IGNORECASE)
_DATE_OR_TIME = re.compile(
    r"(?<![\w.])(?:\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}"
    r"|(?:19|20)\d{2}-(?:0[1-9]|1[0-2])|\d{1,2}:\d{2}(?::\d{2})?)(?![\w.]?\d)")


@dataclass(frozen=True)
class ProxyInsightScore:
    """The proxy's reading of one insight.

    Attributes:
        insight: the ground-truth insight text.
        rouge1_recall: best ROUGE-1 recall over the report's sentences (0..1).
        best_sentence: the sentence that gave it ("" when the report is empty).
        values_found: key values of the insight the report states.
        values_total: key values the insight has (0: no numbers check).
    """

    insight: str
    rouge1_recall: float
    best_sentence: str
    values_found: int
    values_total: int

    @property
    def numbers_rate(self) -> float | None:
        """Share of the insight's key values in the report, None if it has none."""
        return self.values_found / self.values_total if self.values_total else None


def content_words(text: str) -> list[str]:
    """The words ROUGE-1 counts: lower-case tokens, no stop words, plural ``s`` off."""
    words = []
    for word in _WORD.findall(text.casefold()):
        if word in STOP_WORDS:
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        words.append(word)
    return words


def sentences(report: str) -> list[str]:
    """The report split into sentences and lines (Markdown bullets are lines)."""
    return [s.strip() for s in _SENTENCE_END.split(report) if s and s.strip()]


def rouge1_recall(reference: str, candidate: str) -> float:
    """ROUGE-1 recall: clipped unigram overlap / unigrams of ``reference``."""
    wanted = content_words(reference)
    if not wanted:
        return 0.0
    have: dict[str, int] = {}
    for word in content_words(candidate):
        have[word] = have.get(word, 0) + 1
    hits = 0
    for word in wanted:
        if have.get(word, 0) > 0:
            have[word] -= 1
            hits += 1
    return hits / len(wanted)


@dataclass(frozen=True)
class ReportNumber:
    """A number written in a report; ``percent`` when it is written as a percentage."""

    value: float
    percent: bool


def report_numbers(report: str) -> list[ReportNumber]:
    """Every number written in the report, dates and times left out.

    ``1,200`` is one number (a thousands separator); ``1,2,3`` is three; ``45 %``,
    ``45%`` and ``45 percent`` are percentages.
    """
    text = _DATE_OR_TIME.sub(" ", report)
    return [ReportNumber(float(m["number"].replace(",", "")), bool(m["percent"]))
            for m in _NUMBER.finditer(text)]


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= max(0.01 * max(abs(a), abs(b)), 1e-9)


def number_matches(target: float, number: ReportNumber) -> bool:
    """Whether a report number states ``target``: within 1 %, or as its percentage.

    The ×100 reading applies only to a fraction target (``|target| <= 1``) and a
    number written with ``%``: ``0.67`` is stated by ``67%``, not by ``67``.
    """
    if _close(target, number.value):
        return True
    return abs(target) <= 1 and number.percent and _close(100 * target, number.value)


def value_stated(value: str, report: str, numbers: list[ReportNumber] | None = None) -> bool:
    """Whether ``report`` states ``value`` (a number, see :func:`number_matches`, or a
    whole-word label)."""
    target = _number(value)
    if target is not None:
        found = report_numbers(report) if numbers is None else numbers
        return any(number_matches(target, n) for n in found)
    words = r"\s+".join(re.escape(w) for w in value.split())
    return re.search(rf"(?<!\w){words}(?!\w)", report, re.IGNORECASE) is not None


def score_insight(insight: GroundTruthInsight, report: str) -> ProxyInsightScore:
    """The proxy score of one insight against one report."""
    best, best_sentence = 0.0, ""
    for sentence in sentences(report):
        recall = rouge1_recall(insight.text, sentence)
        if recall > best:
            best, best_sentence = recall, sentence
    numbers = report_numbers(report)
    found = sum(value_stated(v, report, numbers) for v in insight.values)
    return ProxyInsightScore(insight.text, round(best, 4), best_sentence, found,
                             len(insight.values))


def proxy_recall(scores: list[ProxyInsightScore]) -> float:
    """Mean ROUGE-1 recall over the insights (0 when there are none)."""
    return sum(s.rouge1_recall for s in scores) / len(scores) if scores else 0.0
