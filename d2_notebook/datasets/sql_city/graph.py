"""Build the gold hypothesis–evidence graph of a case from the planted database.

- One hypothesis ``H<person id>`` per suspect: "<name> (person <id>) is a murderer."
- Per suspect and per reliable clue of each group the suspect is near (fits >= n-1
  clues): one evidence node = the clue kind's canonical ``show`` query for that person,
  linked ``supports`` if the person fits the clue, else ``contradicts``.
- Per unreliable clue: for each suspect who fits it, a ``supports`` evidence node, and
  one alibi evidence node (the witness was in another city) that ``contradicts`` them.
- Context evidence without edges: the crime scene report, how to find each witness,
  and each witness interview.
"""

from __future__ import annotations

from typing import Any

import duckdb

from d2_notebook.datasets.sql_city import clues as c
from d2_notebook.datasets.sql_city.gold import (
    alibi_sql,
    group_matches,
    run_rows,
    witness_sql,
)


class GraphBuilder:
    """Accumulates evidence nodes and edges with sequential ids ``E1, E2, ...``."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.evidence: list[dict[str, Any]] = []
        self.edges: list[dict[str, str]] = []

    def add(self, sql: str, description: str) -> str:
        """Add an evidence node (rows computed now) and return its id."""
        eid = f"E{len(self.evidence) + 1}"
        self.evidence.append({"id": eid, "sql": sql, "rows": run_rows(self.con, sql),
                              "description": description})
        return eid

    def link(self, eid: str, pid: int, stance: str) -> None:
        """Add an edge from evidence ``eid`` to the hypothesis of person ``pid``."""
        self.edges.append({"evidence": eid, "hypothesis": f"H{pid}", "stance": stance})


def build_graph(con: duckdb.DuckDBPyConnection, date: str, city: str,
                suspects: list[dict[str, Any]], clues: list[dict[str, Any]],
                witnesses: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Return ``{"hypotheses": [...], "evidence": [...], "edges": [...]}`` (see module doc)."""
    b = GraphBuilder(con)
    b.add(f"SELECT date, type, description, city FROM crime_scene_report WHERE "
          f"date = DATE '{date}' AND type = 'murder' AND city = '{city}'",
          f"Crime scene report of the murder in {city} on {date}.")
    for wit in witnesses:
        b.add(witness_sql(wit["style"], wit, date), f"Finding the witness {wit['name']}.")
        b.add(f"SELECT person_id, transcript FROM interview WHERE person_id = {wit['id']}",
              f"Interview of {wit['name']}.")
    names = {s["id"]: s["name"] for s in suspects}
    groups = sorted({k["group"] for k in clues})
    for g in groups:
        reliable = [k for k in clues if k["group"] == g and k["status"] == "reliable"]
        near = group_matches(con, [k["predicate"] for k in reliable], len(reliable) - 1)
        for pid in sorted(near):
            for k in reliable:
                eid = b.add(c.show_sql(k["kind"], k["params"], pid),
                            f"{k['kind']} of {names[pid]} vs. clue {k['id']}: {k['statement']}")
                fits = c.satisfies(con, pid, k["predicate"])
                b.link(eid, pid, "supports" if fits else "contradicts")
        for k in clues:
            if k["group"] != g or k["status"] != "unreliable":
                continue
            fitting = sorted(group_matches(con, [k["predicate"]], 1) & set(names))
            for pid in fitting:
                eid = b.add(c.show_sql(k["kind"], k["params"], pid),
                            f"{k['kind']} of {names[pid]} vs. clue {k['id']}: {k['statement']}")
                b.link(eid, pid, "supports")
            alibi = b.add(alibi_sql(k["witness_id"], date),
                          f"Witness {k['witness_id']} was in another city on {date}: "
                          f"clue {k['id']} is unreliable.")
            for pid in fitting:
                b.link(alibi, pid, "contradicts")
    hypotheses = [{"id": f"H{s['id']}", "text": f"{s['name']} (person {s['id']}) is a murderer.",
                   "suspect": str(s["id"])} for s in suspects]
    return {"hypotheses": hypotheses, "evidence": b.evidence, "edges": b.edges}
