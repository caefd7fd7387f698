"""No role prompt carries wording from the bundled datasets (PROMPTS.md, issue 13 item 5).

A prompt tuned to the demo data inflates every score measured on it. The vocabularies
are derived from the datasets' own code and data (table and column names, drugs,
conditions, clue kinds, crime types, events, cars, streets, people's names), plus a
hand list of words their stories use. Words of ordinary analysis English that happen
to be column names (``date``, ``name``, ``description``) are allowed, each listed here.
"""

from __future__ import annotations

import datetime as dt
import random
import re
from functools import cache
from importlib import resources

import duckdb
import pytest

from d2_notebook.board import Board
from d2_notebook.data import open_source
from d2_notebook.datasets import hospital
from d2_notebook.datasets.sql_city import clues, world
from d2_notebook.detective.analysis_tools import analysis_tools
from d2_notebook.detective.context import QueryLog, TeamContext
from d2_notebook.detective.decisions import (
    CollectorDecision,
    HypothesizerDecision,
    JudgeDecision,
    OrchestratorDecision,
    ReactAnswer,
    ReportDecision,
)
from d2_notebook.detective.settings import InvestigationSettings
from d2_notebook.detective.sql_tools import sql_tools
from d2_notebook.detective.team_tools import (
    abandon_tool,
    evidence_tools,
    final_answer_tool,
    hypothesis_tools,
    orchestrator_tools,
    reporter_tools,
    submit_tool,
)
from d2_notebook.detective.verdict_tools import verdict_tools
from d2_notebook.llm.offline import FunctionModel, text

HAND_LIST = {
    "hospital story": ["covid", "mortality", "hospital", "comorbidity", "comorbidities",
                       "death", "deaths", "dose", "medication", "older", "clinical"],
    "sql city story": ["killer", "murderer", "culprit", "suspect", "witness", "clue",
                       "alibi", "crime", "gym", "plate", "licence", "license", "jane",
                       "interview"],
}
GENERIC = {
    # ordinary analysis English that is also a column or table name of a dataset
    "the", "for", "which", "most", "sql", "call", "check", "date", "description", "number",
    "name", "time", "status", "report", "make", "type", "start", "score", "days", "broad",
    "event", "member", "started", "recovered", "now", "out", "get",
    # kinds of stored text PROMPTS.md names in its untrusted-data rule
    "transcript", "notes",
}


def _words(*terms: object) -> set[str]:
    parts = (p for t in terms for p in re.split(r"[\s_\-]+", str(t)))
    return {p.lower() for p in parts if len(p) >= 3 and p.isalpha()}


@cache
def vocabularies() -> dict[str, set[str]]:
    """Dataset vocabulary by source, lower case (people's names are kept capitalised)."""
    city = world.build_world(random.Random(0), 300, dt.date(2018, 3, 1))
    derived = {
        "hospital drugs": _words(*hospital.DRUGS),
        "hospital conditions": _words(*hospital.CONDITIONS),
        "hospital severities": _words(*hospital.SEVERITIES),
        "hospital tables and columns": _words(*hospital.TABLES, *re.findall(
            r"\b([a-z_]+) (?:INTEGER|VARCHAR|DATE|DECIMAL|BOOLEAN)", hospital._SCHEMA)),
        "hospital question": _words(*hospital.QUESTION.split()),
        "sql city tables and columns": _words(*city, *(c for f in city.values()
                                                       for c in f.columns)),
        "sql city clues": _words(*clues.STRONG, *clues.WEAK),
        "sql city crimes": _words(*world.CRIME_TYPES),
        "sql city other cities": _words(*world.OTHER_CITIES),
        "sql city cars": _words(*world.CARS, *(m for ms in world.CARS.values() for m in ms)),
        "sql city looks": _words(*world.HAIR, *world.EYES) - _words(*world.COLORS),
    }
    derived |= {source: set(words) for source, words in HAND_LIST.items()}
    found = {source: words - GENERIC for source, words in derived.items()}
    found["sql city people (capitalised)"] = set(
        world.MALE_FIRST + world.FEMALE_FIRST + world.LAST)
    found["sql city events, streets and city (phrases)"] = {
        p.lower() for p in [*world.EVENT_NAMES, *world.STREETS, world.CITY]}
    return found


def dataset_words(text: str) -> list[tuple[str, str]]:
    """(word, vocabulary) for every dataset word in ``text`` (plural forms too)."""
    hits = []
    names = vocabularies()["sql city people (capitalised)"]
    for word in sorted(set(re.findall(r"[A-Za-z]+", text))):
        lower = word.lower()
        stems = {lower, lower[:-1] if lower.endswith("s") else lower,
                 lower[:-2] if lower.endswith("es") else lower}
        for source, words in vocabularies().items():
            if source.endswith("(capitalised)"):
                if word in names and not _sentence_start(text, word):
                    hits.append((word, source))
            elif not source.endswith("(phrases)") and stems & words:
                hits.append((word, source))
    phrases = vocabularies()["sql city events, streets and city (phrases)"]
    lowered = " ".join(text.lower().split())
    hits += [(p, "sql city events, streets and city (phrases)") for p in sorted(phrases)
             if re.search(rf"\b{re.escape(p)}\b", lowered)]
    return hits


def _sentence_start(text: str, word: str) -> bool:
    """Whether every use of a capitalised name is only a capitalised English word
    opening a sentence or list item ("Long results ...")."""
    return all(re.search(r"(?:\A|\n|[.!?:]\s+|-\s+)\Z", text[: m.start()])
               for m in re.finditer(rf"\b{word}\b", text))


def prompt_files() -> dict[str, str]:
    folder = resources.files("d2_notebook.detective.roles")
    return {p.name: p.read_text(encoding="utf-8") for p in folder.iterdir()
            if p.name.endswith(".txt")}


def tool_texts() -> dict[str, str]:
    """The descriptions and schemas of every tool a role is offered."""
    board = Board.open(":memory:")
    investigation = board.start_investigation("q")
    ctx = TeamContext(board=board, sql=open_source(duckdb.connect()),
                      model=FunctionModel(lambda r: text("")),
                      investigation_id=investigation.id, question="q", schema_summary="",
                      settings=InvestigationSettings())
    log = QueryLog()
    tools = [*sql_tools(ctx, log), *analysis_tools(ctx, log),
             *hypothesis_tools(ctx, log, "a", "hypothesizer", HypothesizerDecision()),
             *orchestrator_tools(ctx, "a", OrchestratorDecision(), can_ask_for_more=True),
             *evidence_tools(ctx, log, "a", "collector", None),
             submit_tool(CollectorDecision(), ctx, "H1"),
             *verdict_tools(ctx, "a", JudgeDecision(), "H1", can_send_back=True,
                            can_refine=True),
             *reporter_tools(ctx, "a", ReportDecision()), abandon_tool(ctx, "a"),
             final_answer_tool(ReactAnswer(), log)]
    return {f"tool {t.name}": "\n".join(_strings(t.spec.to_dict())) for t in tools}


def _strings(value: object) -> list[str]:
    """Every string in a JSON value (names, descriptions, enums), one per line."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for key, item in value.items() for s in [key, *_strings(item)]]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def test_the_vocabularies_are_derived_and_catch_dataset_wording() -> None:
    every = set().union(*vocabularies().values())
    assert {"virexa", "asthma", "comorbidities", "murder", "gym", "plate", "killer",
            "murderer", "mustang", "checkin", "severity"} <= every
    assert len(every) > 400
    assert dataset_words("Drug Virexa helps patients with asthma; Jane is the killer")
    assert ("Sarah", "sql city people (capitalised)") in dataset_words("ask Sarah first")
    assert {("main st", "sql city events, streets and city (phrases)"),
            ("sql city", "sql city events, streets and city (phrases)")} <= set(
        dataset_words("the party on Main St in SQL City"))
    assert dataset_words("Long results are summarised. Mark each one.") == []


@pytest.mark.parametrize("name", sorted(prompt_files()))
def test_no_prompt_file_carries_dataset_wording(name: str) -> None:
    assert dataset_words(prompt_files()[name]) == [], f"{name} names the bundled datasets"


def test_no_tool_description_carries_dataset_wording() -> None:
    for name, spec in tool_texts().items():
        assert dataset_words(spec) == [], f"{name} names the bundled datasets"
