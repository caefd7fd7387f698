"""Generate, write and batch SQL City cases (the public entry points live here)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import random
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa

from d2_notebook.datasets.sql_city import cases as cs
from d2_notebook.datasets.sql_city import clues as c
from d2_notebook.datasets.sql_city import difficulty as d
from d2_notebook.datasets.sql_city import world as w
from d2_notebook.datasets.sql_city.gold import Gold, jsonable
from d2_notebook.datasets.sql_city.graph import build_graph


@dataclass
class Case:
    """A generated case: its tables (sorted Arrow tables) and its gold truth."""

    tables: dict[str, pa.Table]
    gold: Gold

    @property
    def case_id(self) -> str:
        """The case id, e.g. ``sqlcity-s0-007``."""
        return self.gold.case_id


def case_description(date: dt.date, city: str = w.CITY) -> str:
    """The only text a system gets about the case (no names, no counts)."""
    return (f"A murder happened in {city} on {date.isoformat()}. Find the murderer(s). "
            f"The crime scene report in the database is a good place to start.")


def _report(con: duckdb.DuckDBPyConnection, planted: cs.Planted) -> str:
    name = c.one(con, f"SELECT name FROM person WHERE id = {planted.victim}")
    parts = [f"The victim, {name}, was found dead."]
    if len(planted.groups) > 1:
        parts.append(f"Security footage shows {len(planted.groups)} people leaving the scene.")
    n_hidden = sum(style == "hidden" for style in planted.witness_styles.values())
    for pid, style in planted.witness_styles.items():
        wname, number, street = c.rows(con, "SELECT name, address_number, address_street_name "
                                            f"FROM person WHERE id = {pid}")[0]
        parts.append({
            "direct": f"A witness, {wname}, lives at {number} {street}.",
            "last_house": f"A witness lives at the last house on \"{street}\".",
            "hidden": f"{n_hidden} witness(es) called the emergency line from the scene.",
        }[style])
    return " ".join(dict.fromkeys(parts))  # hidden witnesses share one sentence


def _interviews(con: duckdb.DuckDBPyConnection, rng: random.Random,
                groups: list[cs.Group]) -> None:
    by_witness: dict[int, list[str]] = {}
    for gr in groups:
        opening = "I saw the killer." if len(groups) == 1 else "I saw one of the killers."
        for clue in gr.clues:
            by_witness.setdefault(clue.witness_id, [opening]).append(clue.statement)
    for pid, sentences in sorted(by_witness.items()):
        head, rest = sentences[0], sentences[1:]
        rng.shuffle(rest)
        con.execute("INSERT INTO interview VALUES (?, ?)", [pid, " ".join([head, *rest])])
    others = c.rows(con, "SELECT id FROM person ORDER BY id")
    for (pid,) in rng.sample(others, 80):
        if pid not in by_witness:
            con.execute("INSERT INTO interview VALUES (?, ?)", [pid, rng.choice(
                ["I didn't see anything.", "I was asleep at the time.",
                 "I heard a noise but thought it was a car.", "I don't want to get involved."])])


def generate_case(seed: int, index: int, tier: str, n_people: int = cs.N_PEOPLE) -> Case:
    """Generate case ``index`` of the set ``seed`` at ``tier``.

    Deterministic: equal arguments give equal tables and a byte-identical gold JSON.
    Raises ``ValueError`` for an unknown tier.
    """
    d.spec(tier)
    rng = random.Random(f"sql-city/{seed}/{index}")
    date = dt.date(2018, 1, 1) + dt.timedelta(days=rng.randint(0, 364))
    con = duckdb.connect()
    for name, frame in w.build_world(rng, n_people, date).items():
        con.register("frame", frame)
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM frame")
        con.unregister("frame")
    events = c.rows(con, "SELECT DISTINCT event_id, event_name, date, city "
                         "FROM facebook_event_checkin ORDER BY ALL")
    victim = rng.choice([r[0] for r in c.rows(con, "SELECT id FROM person ORDER BY id")])
    reserved = {victim}
    ctx = {"date": date, "victim_id": victim, "events": events}
    groups = [cs.plant_group(con, rng, tier, g, ctx, reserved)
              for g in range(d.n_murderers(tier, index))]
    styles = cs.place_witnesses(con, rng, tier, groups, date)
    cs.clean_up(con, rng, groups, protected=set(styles) | {victim})
    cs.finalise_addresses(con, styles)
    planted = cs.Planted(date, victim, groups, styles, case_description(date))
    con.execute("INSERT INTO crime_scene_report VALUES (?, 'murder', ?, ?)",
                [date, _report(con, planted), w.CITY])
    _interviews(con, rng, groups)
    gold = _gold(con, seed, index, tier, planted)
    return Case(cs.to_arrow(con), gold)


def _person(con: duckdb.DuckDBPyConnection, pid: int, **extra: object) -> dict:
    return {"id": pid, "name": c.one(con, f"SELECT name FROM person WHERE id = {pid}"), **extra}


def _gold(con: duckdb.DuckDBPyConnection, seed: int, index: int, tier: str,
          planted: cs.Planted) -> Gold:
    groups = planted.groups
    roles = {}
    for gr in groups:
        roles.update({p: "lookalike" for p in gr.lookalikes} | {p: "decoy" for p in gr.decoys})
    roles.update({gr.murderer: "murderer" for gr in groups})
    suspects = [_person(con, pid, role=roles[pid]) for pid in sorted(roles)]
    clue_dicts = [dataclasses.asdict(k) for gr in groups for k in gr.clues]
    witnesses = []
    for pid, style in planted.witness_styles.items():
        gr = next(g for g in groups if pid in (g.witness, g.unreliable_witness))
        street = c.one(con, f"SELECT address_street_name FROM person WHERE id = {pid}")
        witnesses.append(_person(con, pid, style=style, street=street, group=groups.index(gr),
                                 reliable=pid == gr.witness))
    date = planted.date.isoformat()
    graph = build_graph(con, date, w.CITY, suspects, clue_dicts, witnesses)
    for k in clue_dicts:
        k["params"] = jsonable(k["params"])
    sp = d.spec(tier)
    missing = d.missing_clues(tier)
    dims = {"hints_per_murderer": sp.hints, "weak_hints": sp.weak_hints,
            "suspects": len(suspects), "murderers": len(groups), "missing_clues": missing,
            "unreliable_witnesses": sum(g.unreliable_witness is not None for g in groups),
            "lookalikes_per_murderer": sp.lookalikes}
    dims["score"] = d.score(sp.hints, len(suspects), len(groups), missing,
                            dims["unreliable_witnesses"])
    return Gold(
        case_id=f"sqlcity-s{seed}-{index:03d}", seed=seed, index=index, tier=tier,
        description=planted.description, date=date, city=w.CITY,
        victim=_person(con, planted.victim), dimensions=dims,
        murderers=[_person(con, gr.murderer, group=g) for g, gr in enumerate(groups)],
        suspects=suspects,
        clues=clue_dicts, witnesses=witnesses, graph=graph)


def write_case(case: Case, out_dir: str | Path,
               gold_path: str | Path | None = None) -> dict[str, Path]:
    """Write ``<case_id>.duckdb``, ``<case_id>.txt`` (the case description given to
    systems: date, city, what happened — nothing more) and ``<case_id>.json`` (the gold
    file, which repeats the description).

    ``gold_path`` writes the gold file there instead (e.g. outside a folder handed out
    to students); its folder is created if missing.

    Overwrites existing files. Returns ``{"db": path, "description": path, "gold": path}``.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    db_path = out / f"{case.case_id}.duckdb"
    gold_path = Path(gold_path) if gold_path is not None else out / f"{case.case_id}.json"
    gold_path.parent.mkdir(parents=True, exist_ok=True)
    db_path.unlink(missing_ok=True)
    con = duckdb.connect(str(db_path))
    try:
        for name, table in case.tables.items():
            con.register("src", table)
            con.execute(f"CREATE TABLE {name} AS SELECT * FROM src")
            con.unregister("src")
    finally:
        con.close()
    gold_path.write_text(case.gold.to_json(), encoding="utf-8")
    description_path = out / f"{case.case_id}.txt"
    description_path.write_text(case.gold.description + "\n", encoding="utf-8")
    return {"db": db_path, "description": description_path, "gold": gold_path}


def generate_standard_set(out_dir: str | Path, seed: int = 0, n: int = 50
                          ) -> list[dict[str, Path]]:
    """Generate and write ``n`` cases (tiers by :func:`difficulty.standard_tiers`)."""
    return [write_case(generate_case(seed, i, tier), out_dir)
            for i, tier in enumerate(d.standard_tiers(n))]
