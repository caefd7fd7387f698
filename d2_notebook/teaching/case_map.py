"""What each node of a case's gold graph is about: the kind of source, its tables, its group.

A SQL City gold graph (``d2_notebook.datasets.sql_city.graph``) has context nodes (the
crime scene report, how to find each witness, each interview) and fact nodes (one
suspect's data against one clue, or an unreliable witness's whereabouts). Hints and
grades speak about them by their :class:`Source` — "a licence plate", "the
get_fit_now_member table" — never by the person or the rows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import Any

from d2_notebook.datasets.sql_city.gold import witness_sql
from d2_notebook.teaching.answer import gold_value


@dataclass(frozen=True)
class Guide:
    """How to reach one kind of source, from vague to specific (no case values).

    Attributes:
        kind: the kind of source, in words ("the car a witness saw").
        tables: the tables that hold it.
        how: which columns to read and how the tables join.
    """

    kind: str
    tables: tuple[str, ...]
    how: str


class Source(Enum):
    """The kind of source a gold node's fact comes from."""

    CRIME_REPORT = Guide(
        "the official record of the crime", ("crime_scene_report",),
        "filter crime_scene_report by the date, type and city of the case description and "
        "read its description column")
    WITNESS_BY_ADDRESS = Guide(
        "the people the crime scene report points to as witnesses", ("person",),
        "the report describes where a witness lives: match it against "
        "person.address_street_name and person.address_number (or the name it gives)")
    WITNESS_BY_CALL = Guide(
        "the calls made from the scene on the day of the crime", ("emergency_call",),
        "emergency_call.caller_id is the person id of whoever called; filter by the "
        "date and city of the case")
    INTERVIEW = Guide(
        "what a witness told the police", ("interview",),
        "interview.person_id is the witness's person.id; the transcript column holds "
        "their statement")
    APPEARANCE = Guide(
        "what the killer looked like", ("drivers_license", "person"),
        "join person.license_id to drivers_license.id and compare gender and hair_color "
        "with the statement")
    CAR = Guide(
        "the car a witness saw", ("drivers_license", "person"),
        "join person.license_id to drivers_license.id and compare car_make and car_color "
        "with the statement")
    PLATE = Guide(
        "a licence plate a witness saw part of", ("drivers_license", "person"),
        "join person.license_id to drivers_license.id and match plate_number with LIKE "
        "against the part the witness saw")
    GYM_MEMBERSHIP = Guide(
        "a gym membership", ("get_fit_now_member",),
        "get_fit_now_member.person_id is the person; compare the membership id's first "
        "characters and membership_status with the statement")
    GYM_VISIT = Guide(
        "a visit to the gym on a given day", ("get_fit_now_check_in", "get_fit_now_member"),
        "join get_fit_now_check_in.membership_id to get_fit_now_member.id, then "
        "person_id; filter check_in_date by the day the witness names")
    EVENT = Guide(
        "an event where a witness saw the killer", ("facebook_event_checkin",),
        "facebook_event_checkin.person_id is the person; filter event_name and date by "
        "the statement")
    PHONE = Guide(
        "phone calls to the victim", ("phone_call",),
        "phone_call.caller_id called phone_call.receiver_id (the victim's person id) on "
        "the date column")
    INCOME = Guide(
        "how much someone earns", ("income", "person"),
        "join person.ssn to income.ssn and compare annual_income with the statement")
    ADDRESS = Guide(
        "where someone lives", ("person",),
        "compare person.address_street_name with the statement")
    WHEREABOUTS = Guide(
        "whether a witness could have seen what they describe: where were they on the "
        "day of the crime?", ("facebook_event_checkin",),
        "facebook_event_checkin.person_id is the witness; its date and city columns show "
        "where they were that day")
    OTHER = Guide("a record of the case", (), "compare the tables the case description "
                                               "and the interviews point to")

    def __repr__(self) -> str:
        return f"Source.{self.name}"

    @property
    def guide(self) -> Guide:
        """Its :class:`Guide`."""
        return self.value

    @property
    def label(self) -> str:
        """A short name for tables and reports ("plate", "gym membership")."""
        return self.name.lower().replace("_", " ")


CLUE_SOURCES: dict[str, Source] = {
    "appearance": Source.APPEARANCE, "car": Source.CAR, "plate": Source.PLATE,
    "gym": Source.GYM_MEMBERSHIP, "checkin": Source.GYM_VISIT, "event": Source.EVENT,
    "phone": Source.PHONE, "income": Source.INCOME, "street": Source.ADDRESS,
}
"""The source of each clue kind of :mod:`d2_notebook.datasets.sql_city.clues`."""

_CLUE_CHECK = re.compile(r"^(\w+) of .+ vs\. clue (\S+): ", re.DOTALL)
_ALIBI = re.compile(r"clue (\S+) is unreliable\.$")
_INTERVIEW = re.compile(r"FROM interview WHERE person_id = (\d+)$")
_REPORT = "FROM crime_scene_report"


@dataclass(frozen=True)
class GoldNode:
    """One gold evidence node, classified.

    Attributes:
        id: its id in the gold graph (``E7``).
        source: the kind of source its fact comes from.
        witness: index into the gold's witnesses, for a witness search or an interview.
        group: the clue group (one per murderer) of a clue check or an alibi.
    """

    id: str
    source: Source
    witness: int | None = None
    group: int | None = None


@dataclass(frozen=True)
class CaseMap:
    """The gold graph's nodes classified, with the groups each gold hypothesis is near.

    Attributes:
        nodes: per gold evidence id, its :class:`GoldNode`.
        groups_of: per gold hypothesis id, the clue groups its facts come from.
        reliable_sources: per group, the sources of its reliable clues (in clue order).
        witnesses: per group, the indexes of its witnesses (reliable ones first).
    """

    nodes: dict[str, GoldNode]
    groups_of: dict[str, frozenset[int]]
    reliable_sources: dict[int, tuple[Source, ...]]
    witnesses: dict[int, tuple[int, ...]]

    def node(self, gold_evidence_id: str) -> GoldNode:
        """The node of a gold evidence id (``OTHER`` for one this map does not know)."""
        return self.nodes.get(gold_evidence_id, GoldNode(gold_evidence_id, Source.OTHER))


def case_map(gold: Any) -> CaseMap:
    """Classify a SQL City gold graph (a ``Gold`` object or its JSON dict)."""
    graph = gold_value(gold, "graph")
    witnesses = gold_value(gold, "witnesses")
    clues = {c["id"]: c for c in gold_value(gold, "clues")}
    date = gold_value(gold, "date")
    searches = {witness_sql(w["style"], w, date): i for i, w in enumerate(witnesses)}
    interviews = {str(w["id"]): i for i, w in enumerate(witnesses)}
    nodes: dict[str, GoldNode] = {}
    for ev in graph["evidence"]:
        nodes[ev["id"]] = _classify(ev, searches, interviews, witnesses, clues)
    groups_of: dict[str, set[int]] = {}
    for edge in graph["edges"]:
        group = nodes[edge["evidence"]].group
        if group is not None:
            groups_of.setdefault(edge["hypothesis"], set()).add(group)
    reliable: dict[int, list[Source]] = {}
    for clue in clues.values():
        if clue["status"] == "reliable":
            reliable.setdefault(clue["group"], []).append(
                CLUE_SOURCES.get(clue["kind"], Source.OTHER))
    by_group: dict[int, list[int]] = {}
    for i, w in sorted(enumerate(witnesses), key=lambda iw: (not iw[1].get("reliable"), iw[0])):
        by_group.setdefault(w["group"], []).append(i)
    return CaseMap(nodes, {h: frozenset(g) for h, g in groups_of.items()},
                   {g: tuple(s) for g, s in reliable.items()},
                   {g: tuple(ws) for g, ws in by_group.items()})


def _classify(ev: dict[str, Any], searches: dict[str, int], interviews: dict[str, int],
              witnesses: list[dict[str, Any]], clues: dict[str, dict[str, Any]]) -> GoldNode:
    """The :class:`GoldNode` of one gold evidence dict."""
    sql, description = ev["sql"], ev["description"]
    if _REPORT in sql:
        return GoldNode(ev["id"], Source.CRIME_REPORT)
    if sql in searches:
        witness = searches[sql]
        source = (Source.WITNESS_BY_CALL if witnesses[witness]["style"] == "hidden"
                  else Source.WITNESS_BY_ADDRESS)
        return GoldNode(ev["id"], source, witness=witness)
    interview = _INTERVIEW.search(sql)
    if interview and interview.group(1) in interviews:
        return GoldNode(ev["id"], Source.INTERVIEW, witness=interviews[interview.group(1)])
    check = _CLUE_CHECK.match(description)
    if check and check.group(2) in clues:
        return GoldNode(ev["id"], CLUE_SOURCES.get(check.group(1), Source.OTHER),
                        group=clues[check.group(2)]["group"])
    alibi = _ALIBI.search(description)
    if alibi and alibi.group(1) in clues:
        return GoldNode(ev["id"], Source.WHEREABOUTS, group=clues[alibi.group(1)]["group"])
    return GoldNode(ev["id"], Source.OTHER)
