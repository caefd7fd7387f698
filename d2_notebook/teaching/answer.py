"""What a board (or any system) puts forward about a case, in the terms the scores use.

A :class:`SystemAnswer` holds the accused, the suspects considered, and the audit graph
(hypotheses, evidence with its result rows, edges). :class:`People` resolves names or
ids to the gold's person ids; :func:`norm_cell` and :func:`norm_text` are the one
normalisation every comparison uses. A gold may be a ``Gold`` object or its JSON dict.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Hypothesis:
    """A hypothesis node; ``suspect`` is a person name or id when it names one."""

    id: str
    text: str
    suspect: str | None = None


@dataclass(frozen=True)
class Evidence:
    """An evidence node: the SQL that was run, its result rows and a description."""

    id: str
    sql: str = ""
    rows: Sequence[Sequence[Any]] = ()
    description: str = ""


@dataclass(frozen=True)
class Edge:
    """``evidence`` ``supports`` or ``contradicts`` ``hypothesis`` (ids)."""

    evidence: str
    hypothesis: str
    stance: str


@dataclass(frozen=True)
class ConsideredSuspect:
    """A suspect the system examined; it counts as analysed iff it has a verdict or evidence."""

    suspect: str
    verdict: str | None = None
    n_evidence: int = 0


@dataclass
class SystemAnswer:
    """What every system returns for one case (names or person ids are both accepted)."""

    accused: set[str] = field(default_factory=set)
    suspects_considered: list[ConsideredSuspect] = field(default_factory=list)
    hypotheses: list[Hypothesis] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)


def gold_value(gold: Any, key: str) -> Any:
    """``gold[key]`` of a gold JSON dict, or the attribute of a ``Gold`` object."""
    return gold[key] if isinstance(gold, Mapping) else getattr(gold, key)


def norm_text(value: Any) -> str:
    """Casefold and collapse whitespace."""
    return " ".join(str(value).casefold().split())


class People:
    """Resolves names (case/whitespace-insensitive) or ids to gold person ids."""

    def __init__(self, gold: Any) -> None:
        self.keys: dict[str, str] = {}
        for person in [*gold_value(gold, "suspects"), *gold_value(gold, "murderers")]:
            self.keys[norm_text(person["id"])] = str(person["id"])
            self.keys[norm_text(person["name"])] = str(person["id"])

    def resolve(self, who: Any) -> str:
        """The gold person id, or ``?<normalised text>`` for somebody not in the gold."""
        key = norm_text(who)
        return self.keys.get(key, "?" + key)


def tokens(text: str) -> set[str]:
    """Lower-case alphanumeric tokens."""
    return set(re.findall(r"[a-z0-9]+", text.casefold()))


def jaccard(a: set, b: set) -> float:
    """|a ∩ b| / |a ∪ b|; 0 when either set is empty."""
    return len(a & b) / len(a | b) if a and b else 0.0


def norm_cell(value: Any) -> str:
    """Canonical text of a result cell: numbers, dates, NULLs and strings normalised."""
    if value is None or type(value).__name__ in ("NAType", "NaTType"):
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value != value:  # NaN: a missing value
        return "null"
    if isinstance(value, int | float):
        return str(int(value)) if float(value).is_integer() else f"{float(value):.6g}"
    if isinstance(value, dt.datetime) and value.time() == dt.time(0):
        value = value.date()
    if isinstance(value, dt.date):
        return value.isoformat()
    return norm_text(value)


def hypothesis_similarity(sys: Hypothesis, gold: Hypothesis, people: People) -> float:
    """1/0 when both name a suspect (same/different person), else token-set Jaccard of text."""
    if sys.suspect and gold.suspect:
        return float(people.resolve(sys.suspect) == people.resolve(gold.suspect))
    return jaccard(tokens(sys.text), tokens(gold.text))


def gold_graph(gold: Any) -> tuple[list[Hypothesis], list[Evidence], list[Edge]]:
    """The gold graph as metric dataclasses."""
    g = gold_value(gold, "graph")
    return ([Hypothesis(h["id"], h["text"], h.get("suspect")) for h in g["hypotheses"]],
            [Evidence(e["id"], e["sql"], e["rows"], e["description"]) for e in g["evidence"]],
            [Edge(e["evidence"], e["hypothesis"], e["stance"]) for e in g["edges"]])


def oracle_answer(gold: Any) -> SystemAnswer:
    """The perfect answer, built straight from the gold file (scores 1/1/1)."""
    hyps, evs, edges = gold_graph(gold)
    counts: dict[str, int] = {}
    for e in edges:
        counts[e.hypothesis] = counts.get(e.hypothesis, 0) + 1
    guilty = {m["id"] for m in gold_value(gold, "murderers")}
    return SystemAnswer(
        accused={m["name"] for m in gold_value(gold, "murderers")},
        suspects_considered=[
            ConsideredSuspect(s["name"], "guilty" if s["id"] in guilty else "innocent",
                              counts.get(f"H{s['id']}", 0)) for s in gold_value(gold, "suspects")],
        hypotheses=hyps, evidence=evs, edges=edges)

