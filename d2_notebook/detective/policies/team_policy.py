"""Offline team policies: deterministic Python "agents" that drive the whole team.

A :class:`TeamPolicy` is the function behind a
:class:`~d2_notebook.llm.offline.FunctionModel`: for each request it looks at which
role and agent is asking and how far its turn has come, and answers with tool calls.
Tests, the scripted demo, example notebooks and the benchmark harness write their
policies as subclasses with one method per role; every query still runs through the
guarded SQL and every write still goes through the team's tools.

Each role method receives a :class:`Turn` and returns the tool calls to make, as
``[("run_sql", {"sql": ...}), ...]``, or a string for a plain text answer.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from d2_notebook.data import Dialect, transpile
from d2_notebook.llm import (
    AssistantMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolResult,
    UserMessage,
)
from d2_notebook.llm.offline import FunctionModel

Action = tuple[str, dict[str, Any]]
REJUDGE_AGENT = "rejudge-"
"""Agents that re-judge a stale verdict are named ``rejudge-H<n>`` (role ``judge``)."""

_RANKING = "FACTORS BY SIZE"
"""The reporter brief's heading of the factors ranked by size."""
_RANKED = re.compile(r"^  (H\d+): (.+)$", re.MULTILINE)
_HYPOTHESIS_LINE = re.compile(r"^(H\d+) \| (\w+) \| ([^|]+) \| (.*)$", re.MULTILINE)
_REFINES = re.compile(r" \(refines H\d+\)$")
_UNTOUCHED = re.compile(
    r"^CANDIDATE DIMENSIONS \(\d+\), \d+ of them untouched by any evidence: (.*)$", re.MULTILINE)
_EVIDENCE_REF = re.compile(r"^\s+(supports|contradicts|weak|neutral): (E\d+) ", re.MULTILINE)
_RECHECKED = re.compile(r"^EVIDENCE (E\d+) ([\w -]+?)(?: -> re-run (E\d+))? \| stance: (\w+)"
                        r"(?: \| (.*))?$", re.MULTILINE)
_READING = re.compile(r"^  reading (then|now): (.*)$", re.MULTILINE)
_EFFECT = re.compile(r"crude effect (-?[\d.e+-]+) \(95% CI (-?[\d.e+-]+) to (-?[\d.e+-]+)\)")
_EARLIER = re.compile(r"^YOUR EARLIER VERDICT: (\w+) \(confidence ([\d.]+)\)", re.MULTILINE)


@dataclass(frozen=True)
class BoardHypothesis:
    """A hypothesis as a policy reads it from the digest."""

    id: str
    status: str
    statement: str


@dataclass(frozen=True)
class RecheckedEvidence:
    """One ``EVIDENCE`` line of a re-judge's first message, as a policy reads it.

    Attributes:
        outcome: same, changed, fails (or "not re-checked").
        rerun: The re-run evidence id (changed evidence only).
        then, now: The readings (descriptions) of the old and the re-run evidence.
    """

    id: str
    outcome: str
    rerun: str | None
    stance: str
    detail: str
    then: str = ""
    now: str = ""


@dataclass
class Turn:
    """One request, seen from the policy: who asks, and what happened so far."""

    request: ModelRequest

    @property
    def role(self) -> str:
        """The asking agent's role (hypothesizer, orchestrator, collector, ...)."""
        return self.request.role

    @property
    def agent(self) -> str:
        """The asking agent's name (``collector-H3``, ``judge-H3`` ...)."""
        return self.request.agent

    @property
    def hypothesis_id(self) -> str | None:
        """The hypothesis a collector or judge works on."""
        match = re.search(r"-(H\d+)$", self.agent)
        return match.group(1) if match else None

    @property
    def step(self) -> int:
        """How many model answers this turn already has (0 for the first request)."""
        return sum(isinstance(m, AssistantMessage) for m in self.request.messages)

    @property
    def first_message(self) -> str:
        """The text that opened the turn (the board digest and the task)."""
        first = self.request.messages[0]
        return first.text if isinstance(first, UserMessage) else ""

    @property
    def results(self) -> list[ToolResult]:
        """Every tool result of this turn so far, in order."""
        return [m for m in self.request.messages if isinstance(m, ToolResult)]

    def query_ids(self) -> list[str]:
        """Query ids (``Q1``...) that ``run_sql`` returned in this turn, in order."""
        ids = []
        for result in self.results:
            match = re.match(r"(Q\d+): ", result.content)
            if match and not result.is_error:
                ids.append(match.group(1))
        return ids

    def found(self, pattern: str) -> list[str]:
        """First groups of ``pattern`` in this turn's successful tool results, in order
        (e.g. ``r"added (H\\d+)"`` gives the ids of hypotheses this turn added)."""
        return [m.group(1) for r in self.results if not r.is_error
                for m in re.finditer(pattern, r.content)]

    def hypotheses(self) -> list[BoardHypothesis]:
        """The hypotheses listed in the digest that opened the turn."""
        return [BoardHypothesis(m.group(1), m.group(2),
                                _REFINES.sub("", m.group(4)).strip())
                for m in _HYPOTHESIS_LINE.finditer(self.first_message)]

    def linked_evidence(self, hypothesis_id: str | None = None) -> list[tuple[str, str]]:
        """``(stance, evidence id)`` pairs the digest lists under one hypothesis (default:
        the turn's own)."""
        wanted = hypothesis_id or self.hypothesis_id
        section, current = [], None
        for line in self.first_message.splitlines():
            header = _HYPOTHESIS_LINE.match(line)
            if header:
                current = header.group(1)
            elif current == wanted:
                section.append(line)
        return [(m.group(1), m.group(2)) for m in _EVIDENCE_REF.finditer("\n".join(section))]

    def motivating_evidence(self) -> list[str]:
        """Exploration evidence ids the digest lists as having motivated hypotheses."""
        ids: list[str] = []
        for line in self.first_message.splitlines():
            if line.strip().startswith("motivated by"):
                ids += [e for e in re.findall(r"\bE\d+\b", line) if e not in ids]
        return sorted(ids, key=lambda e: int(e[1:]))

    def untouched_dimensions(self) -> list[str]:
        """Candidate dimensions the digest lists as untouched by any evidence."""
        found = _UNTOUCHED.search(self.first_message)
        if found is None or found.group(1).strip() == "none":
            return []
        return [name.strip() for name in found.group(1).split(", ")]

    def rechecked_evidence(self) -> list[RecheckedEvidence]:
        """The evidence lines of a re-judge's first message (empty for any other turn)."""
        found: list[RecheckedEvidence] = []
        readings: dict[str, dict[str, str]] = {}
        current = None
        for line in self.first_message.splitlines():
            if (head := _RECHECKED.match(line)) is not None:
                current = head.group(1)
                found.append(RecheckedEvidence(current, head.group(2), head.group(3),
                                               head.group(4), head.group(5) or ""))
            elif current is not None and (reading := _READING.match(line)) is not None:
                readings.setdefault(current, {})[reading.group(1)] = reading.group(2)
            elif not line.strip():
                current = None
        return [RecheckedEvidence(e.id, e.outcome, e.rerun, e.stance, e.detail,
                                  readings.get(e.id, {}).get("then", ""),
                                  readings.get(e.id, {}).get("now", "")) for e in found]

    def evidence_line(self, evidence_id: str) -> str:
        """The digest line that lists ``evidence_id`` (with its reading), or ""."""
        marker = f": {evidence_id} ("
        return next((line for line in self.first_message.splitlines() if marker in line), "")


class TeamPolicy:
    """Base class: route each request to the method named after its role.

    Subclasses implement ``hypothesizer``, ``orchestrator``, ``collector``, ``judge``,
    ``reporter`` (and ``planner``, ``detective``, ``react`` for the variants) as
    ``(turn) -> list[Action] | str``. The defaults give a sensible generic team.
    """

    label = "offline policy"
    dismissal = "the offline policy examines only the dimensions its hypotheses need"
    """The reason the default orchestrator gives when it dismisses untouched dimensions."""

    def __init__(self, dialect: Dialect | str = Dialect.DUCKDB) -> None:
        """Start the call-id counter (ids are deterministic per policy).

        Args:
            dialect: The source's SQL dialect. Policies write their SQL in DuckDB's;
                every ``run_sql`` they send is transpiled to ``dialect`` first, so the
                same policy investigates PostgreSQL or Spark unchanged.
        """
        self._ids = itertools.count(1)
        self.dialect = Dialect(dialect)

    def model(self, name: str = "offline-policy", **options: Any) -> FunctionModel:
        """A FunctionModel driven by this policy."""
        return FunctionModel(self, name=name, **options)

    def __call__(self, request: ModelRequest) -> ModelResponse:
        """Answer one request (the FunctionModel's function)."""
        turn = Turn(request)
        name = "rejudge" if turn.agent.startswith(REJUDGE_AGENT) else turn.role
        handler: Callable[[Turn], list[Action] | str] | None = getattr(self, name, None)
        if handler is None:
            return ModelResponse(parts=[TextPart(f"{self.label}: no policy for {turn.role}")])
        actions = handler(turn)
        if isinstance(actions, str):
            return ModelResponse(parts=[TextPart(actions)], stop_reason="end_turn")
        parts = [ToolCallPart(f"call_{turn.agent}_{turn.step}_{i}", name, self._speak(name, args))
                 for i, (name, args) in enumerate(actions)]
        return ModelResponse(parts=parts, stop_reason="tool_use")

    def _speak(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        """The tool call's arguments, with a ``run_sql`` statement in the source's dialect."""
        if name != "run_sql" or self.dialect is Dialect.DUCKDB or "sql" not in args:
            return dict(args)
        return {**args, "sql": transpile(args["sql"], self.dialect)}

    # --- generic behaviour, overridable --------------------------------------------------

    def orchestrator(self, turn: Turn, *, abandon: tuple[str, ...] = (),
                     reason: str = "") -> list[Action] | str:
        """Abandon ``abandon`` (with ``reason``); then carry on while a hypothesis is
        open, else finish."""
        actions: list[Action] = [("abandon", {"hypothesis_id": h, "reason": reason})
                                 for h in abandon]
        still_open = [h.id for h in turn.hypotheses() if h.status in ("proposed",
                                                                      "investigating")
                      and h.id not in abandon]
        if still_open:
            return [*actions, ("carry_on", {})]
        if any(spec.name == "dismiss_dimension" for spec in turn.request.tools):
            actions += [("dismiss_dimension", {"dimension": name, "reason": self.dismissal})
                        for name in turn.untouched_dimensions()]
        return [*actions, ("finish", {"reason": "every hypothesis has a verdict"})]

    def reporter(self, turn: Turn) -> list[Action] | str:
        """Write the report from the digest: the answer (every supported hypothesis with
        the evidence its verdict cites), then each hypothesis with its verdict."""
        hypotheses = turn.hypotheses()
        verdicts = {h.id: self._verdict_line(turn, h.id) for h in hypotheses}
        sizes = self._ranked_sizes(turn)
        supported = [h for h in hypotheses if h.status == "supported"]
        order = list(sizes)
        supported.sort(key=lambda h: order.index(h.id) if h.id in order else len(order))
        lines = ["## Answer", ""]
        lines += [f"- **{h.id}** {h.statement}"
                  + (f" ({sizes[h.id].removeprefix('supported as a ')})" if h.id in sizes
                     and sizes[h.id] != "supported" else "")
                  + f" [{self._cited(verdicts[h.id])}]"
                  for h in supported] or ["No hypothesis was supported by the evidence."]
        lines += ["", "## Hypotheses", ""]
        for hyp in hypotheses:
            lines.append(f"- **{hyp.id}** ({hyp.status}) {hyp.statement}"
                         + (f" — {verdicts[hyp.id]}" if verdicts[hyp.id] else ""))
        return [("write_report", {"markdown": "\n".join(lines)})]

    def rejudge(self, turn: Turn) -> list[Action] | str:
        """Re-judge a stale verdict the way an analyst reads an effect: evidence that
        fails makes it inconclusive; a changed result whose crude effect (the analysis
        tools' reading) still points the same way with its interval clear of zero,
        or still holds zero, leaves it as it was (confirmed); one that moved across zero
        flips its stance, and the verdict follows the stances (all supporting: supported,
        none: contradicted, mixed: inconclusive); one that still holds but
        reversed its direction keeps the status with less confidence; a change this
        policy cannot read (no effect in either reading) makes it inconclusive."""
        earlier = _EARLIER.search(turn.first_message)
        status = earlier.group(1) if earlier else "inconclusive"
        rows = turn.rechecked_evidence()
        reruns = [e.rerun for e in rows if e.rerun]
        kept = [e.rerun or e.id for e in rows if e.outcome != "fails"]
        failing = [e for e in rows if e.outcome == "fails"]
        if failing:
            return [("give_verdict", {
                "status": "inconclusive", "confidence": 0.2, "evidence_ids": kept,
                "rationale": f"{', '.join(e.id for e in failing)} no longer runs "
                             f"({failing[0].detail}); the verdict cannot rest on it"})]
        stances: dict[str, str] = {}
        unread: list[RecheckedEvidence] = []
        turned: list[RecheckedEvidence] = []  # still an effect, the other way round
        for item in rows:
            if item.outcome != "changed":
                stances[item.id] = item.stance
                continue
            then, now = _effect_reading(item.then), _effect_reading(item.now)
            if then is None or now is None:
                unread.append(item)
                continue
            flipped = (then == "none") != (now == "none")
            if then != now and not flipped:
                turned.append(item)
            stances[item.rerun or item.id] = (_flip(item.stance) if flipped else item.stance)
        if unread:
            return [("give_verdict", {
                "status": "inconclusive", "confidence": 0.3, "evidence_ids": kept,
                "rationale": "; ".join(f"{e.id} changed ({e.detail}), re-run as {e.rerun}"
                                       for e in unread)
                             + ": the numbers it rests on moved; collect again to decide"})]
        flipped_any = any(stances.get(e.rerun or e.id) != e.stance for e in rows)
        supports = sum(1 for s in stances.values() if s == "supports")
        new_status = status if not flipped_any else (
            "supported" if supports == len(stances) else "contradicted" if not supports
            else "inconclusive")
        if new_status == status and turned:
            return [("give_verdict", {
                "status": status, "confidence": 0.5, "evidence_ids": kept,
                "rationale": "; ".join(f"{e.rerun}: {_effect_change(e)}" for e in turned)
                             + " — the effect reversed its direction"})]
        if new_status == status:
            return [("confirm_verdict", {"rationale": f"{', '.join(reruns)}: the effect "
                                         "points the same way on the new data"})]
        changed = [e for e in rows if e.outcome == "changed"]
        return [("give_verdict", {
            "status": new_status, "evidence_ids": kept,
            "confidence": 0.4 if new_status == "inconclusive" else 0.7,
            "rationale": "; ".join(f"{e.rerun}: {_effect_change(e)}" for e in changed)
                         + f" — the finding reversed, so {status} -> {new_status}"})]

    @staticmethod
    def _ranked_sizes(turn: Turn) -> dict[str, str]:
        """``{hypothesis id: its size}`` in the order the brief ranks the supported
        factors (empty when no verdict gives a size)."""
        if _RANKING not in turn.first_message:
            return {}
        block = []
        for line in turn.first_message.split(_RANKING, 1)[1].splitlines()[1:]:
            if not _RANKED.match(line):
                break
            block.append(line)
        return dict(_RANKED.findall("\n".join(block)))

    @staticmethod
    def _verdict_line(turn: Turn, hypothesis_id: str) -> str:
        """The digest's verdict (or note) line under one hypothesis, without its label."""
        current = None
        for line in turn.first_message.splitlines():
            header = _HYPOTHESIS_LINE.match(line)
            if header:
                current = header.group(1)
            elif current == hypothesis_id and line.strip().startswith(("verdict", "note:")):
                return line.split(": ", 1)[1] if ": " in line else line.strip()
        return ""

    @staticmethod
    def _cited(verdict_line: str) -> str:
        return ", ".join(re.findall(r"\bE\d+\b", verdict_line)) or "no evidence cited"


def _effect_reading(text: str) -> str | None:
    """"up", "down" or "none" (interval holds zero) for the first crude effect in a
    reading; None when it states none."""
    found = _EFFECT.search(text)
    if found is None:
        return None
    low, high = float(found.group(2)), float(found.group(3))
    if low <= 0 <= high:
        return "none"
    return "up" if float(found.group(1)) > 0 else "down"


def _effect_change(item: RecheckedEvidence) -> str:
    """``crude effect ... -> crude effect ...`` (the readings whole when they state none)."""
    then, now = _EFFECT.search(item.then), _EFFECT.search(item.now)
    if then is None or now is None:
        return f"was {item.then}; now {item.now}"
    return f"{then.group(0)} -> {now.group(0)}"


def _flip(stance: str) -> str:
    return "contradicts" if stance == "supports" else "supports"
