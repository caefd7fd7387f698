"""The gold file of a case (JSON) and the self-check that proves it against the database.

Contract of a gold file (see ``benchmark/README.md`` for an example):

- ``murderers``: exactly the people who fit *all reliable* clues of some clue group;
- ``suspects``: exactly the people who fit at least ``n - 1`` of the ``n`` reliable
  clues of some group (murderers, planted look-alikes and decoys);
- ``graph``: hypotheses (one per suspect), evidence (canonical SQL + expected rows) and
  edges ``supports`` / ``contradicts``; context evidence (report, interviews, how
  to find the witness) has no edges.

:func:`self_check` recomputes all of this from the database.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from d2_notebook.datasets.sql_city import clues as c
from d2_notebook.datasets.sql_city import world as w


@dataclass
class Gold:
    """Ground truth of one case; JSON-serialisable with :meth:`to_json`."""

    case_id: str
    seed: int
    index: int
    tier: str
    description: str
    date: str
    city: str
    victim: dict[str, Any]
    dimensions: dict[str, Any]
    murderers: list[dict[str, Any]]
    suspects: list[dict[str, Any]]
    clues: list[dict[str, Any]]
    witnesses: list[dict[str, Any]]
    graph: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def to_json(self) -> str:
        """Deterministic JSON text (same gold -> byte-identical text)."""
        return json.dumps(dataclasses.asdict(self), indent=1, ensure_ascii=False) + "\n"

    def murderer_ids(self) -> set[int]:
        """Person ids of the murderers."""
        return {m["id"] for m in self.murderers}

    def suspect_ids(self) -> set[int]:
        """Person ids of all suspects (murderers included)."""
        return {s["id"] for s in self.suspects}


def load_gold(path: str | Path) -> Gold:
    """Read a gold JSON file written by ``write_case``."""
    return Gold(**json.loads(Path(path).read_text(encoding="utf-8")))


def jsonable(value: Any) -> Any:
    """Convert a DuckDB value to its JSON form (dates as ISO strings)."""
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    return value


def run_rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[list[Any]]:
    """Run ``sql`` and return its rows in JSON form."""
    return [[jsonable(v) for v in row] for row in c.rows(con, sql)]


def group_matches(con: duckdb.DuckDBPyConnection, predicates: list[str],
                  at_least: int) -> set[int]:
    """Ids of people fitting at least ``at_least`` of the boolean SQL ``predicates``."""
    total = " + ".join(f"COALESCE(({p}), FALSE)::INT" for p in predicates)
    return {r[0] for r in c.rows(con, f"SELECT id FROM (SELECT p.id, {total} AS n "
                                      f"FROM person p) WHERE n >= {at_least}")}


def reliable_by_group(gold: Gold) -> dict[int, list[str]]:
    """``{group: [predicate of each reliable clue]}``."""
    out: dict[int, list[str]] = {}
    for clue in gold.clues:
        if clue["status"] == "reliable":
            out.setdefault(clue["group"], []).append(clue["predicate"])
    return out


def computed_sets(con: duckdb.DuckDBPyConnection, gold: Gold) -> tuple[set[int], set[int]]:
    """(murderers, suspects) as implied by the data and the reliable clues."""
    murderers: set[int] = set()
    suspects: set[int] = set()
    for preds in reliable_by_group(gold).values():
        murderers |= group_matches(con, preds, len(preds))
        suspects |= group_matches(con, preds, len(preds) - 1)
    return murderers, suspects


def alibi_sql(witness_id: int, date: str) -> str:
    """Canonical query showing where a witness was on the murder date."""
    return (f"SELECT person_id, event_name, date, city FROM facebook_event_checkin "
            f"WHERE person_id = {witness_id} AND date = DATE '{date}' ORDER BY ALL")


def witness_sql(style: str, witness: dict[str, Any], date: str) -> str:
    """Canonical query that finds a witness the way the crime scene report points at them."""
    if style == "hidden":
        return (f"SELECT caller_id, date, city FROM emergency_call WHERE date = DATE '{date}' "
                f"AND city = '{w.CITY}' ORDER BY ALL")
    if style == "last_house":
        return (f"SELECT id, name, address_number, address_street_name FROM person WHERE "
                f"address_street_name = {c.lit(witness['street'])} "
                f"ORDER BY address_number DESC LIMIT 1")
    return (f"SELECT id, name, address_number, address_street_name FROM person "
            f"WHERE id = {witness['id']}")


def self_check(db_path: str | Path, gold: Gold) -> list[str]:
    """Prove ``gold`` against the DuckDB file; return problems (empty list = passes).

    Checks: unique names; exactly one murder report for the case's date and city;
    every canonical query returns exactly its expected rows; the murderers are the only
    people consistent with all reliable clues of a group; the suspects are exactly the
    people fitting all but at most one reliable clue of a group; unreliable clues are
    false for their group's murderer and their witness was in another city; missing
    clues are false for their group's murderer; every witness pointer resolves to that witness.
    """
    problems: list[str] = []
    con = duckdb.connect(str(db_path), read_only=True)
    try:
        if c.one(con, "SELECT count(*) - count(DISTINCT name) FROM person") != 0:
            problems.append("person names are not unique")
        n = c.one(con, f"SELECT count(*) FROM crime_scene_report WHERE type = 'murder' AND "
                       f"city = '{gold.city}' AND date = DATE '{gold.date}'")
        if n != 1:
            problems.append(f"expected one murder report, found {n}")
        for ev in gold.graph["evidence"]:
            got = run_rows(con, ev["sql"])
            if got != ev["rows"]:
                problems.append(f"{ev['id']}: rows {got!r} != expected {ev['rows']!r}")
        murderers, suspects = computed_sets(con, gold)
        if murderers != gold.murderer_ids():
            problems.append(f"data implies murderers {sorted(murderers)}, "
                            f"gold has {sorted(gold.murderer_ids())}")
        if suspects != gold.suspect_ids():
            problems.append(f"data implies suspects {sorted(suspects)}, "
                            f"gold has {sorted(gold.suspect_ids())}")
        for clue in gold.clues:
            if clue["status"] == "reliable":
                continue
            own = {m["id"] for m in gold.murderers if m["group"] == clue["group"]}
            fits = group_matches(con, [clue["predicate"]], 1) & own
            if fits:
                problems.append(f"{clue['id']} ({clue['status']}) fits murderers {sorted(fits)}")
            if clue["status"] == "unreliable" and not c.one(
                    con, f"SELECT count(*) FROM facebook_event_checkin WHERE person_id = "
                         f"{clue['witness_id']} AND date = DATE '{gold.date}' "
                         f"AND city <> '{gold.city}'"):
                problems.append(f"{clue['id']}: witness has no alibi elsewhere")
        for wit in gold.witnesses:
            found = {r[0] for r in c.rows(con, witness_sql(wit["style"], wit, gold.date))}
            hidden = {x["id"] for x in gold.witnesses if x["style"] == "hidden"}
            expected = hidden if wit["style"] == "hidden" else {wit["id"]}
            if found != expected:
                problems.append(f"witness {wit['id']} ({wit['style']}) resolves to {found}")
    finally:
        con.close()
    return problems
