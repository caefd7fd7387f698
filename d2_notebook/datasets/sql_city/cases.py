"""Plant one murder case into a fresh SQL City world.

Recipe (all randomness from ``Random(f"sql-city/{seed}/{index}")``):

1. Build a world (:mod:`.world`), pick a victim and the murderer(s).
2. Per murderer ("group"): pick clue kinds by tier, make them true for the murderer
   (reliable clues), add a clue whose record is missing, and an unreliable clue
   (false for the murderer, from a witness who was in another city that day).
3. Plant look-alikes (fit all reliable clues but one) and decoys (fit the unreliable
   clue and all reliable clues but one).
4. Clean up: anybody else fitting >= n-1 of a group's n reliable clues loses one match.
5. Write witnesses' whereabouts, the crime scene report and the interviews.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa

from d2_notebook.datasets.sql_city import clues as c
from d2_notebook.datasets.sql_city import difficulty as d
from d2_notebook.datasets.sql_city import world as w

N_PEOPLE = 3000
EASY_STRONG = ("plate", "gym", "car", "street")
TABLE_ORDER = ("crime_scene_report", "interview", "person", "drivers_license", "income",
               "get_fit_now_member", "get_fit_now_check_in", "facebook_event_checkin",
               "phone_call", "emergency_call")


@dataclass
class Clue:
    """One witness statement about the killer of ``group``.

    ``status`` is ``reliable`` (true for the murderer), ``missing`` (its record is
    missing for the murderer) or ``unreliable`` (false; the witness was elsewhere).
    """

    id: str
    group: int
    witness_id: int
    kind: str
    params: dict[str, Any]
    predicate: str
    statement: str
    status: str = "reliable"


@dataclass
class Group:
    """One murderer with the clues about them and the people planted around them."""

    murderer: int
    witness: int
    clues: list[Clue] = field(default_factory=list)
    lookalikes: list[int] = field(default_factory=list)
    decoys: list[int] = field(default_factory=list)
    unreliable_witness: int | None = None

    def reliable(self) -> list[Clue]:
        """The clues that are true for the murderer."""
        return [k for k in self.clues if k.status == "reliable"]


@dataclass
class Planted:
    """Everything :mod:`.gold` needs besides the database."""

    date: dt.date
    victim: int
    groups: list[Group]
    witness_styles: dict[int, str]
    description: str


def pick_person(con: duckdb.DuckDBPyConnection, rng: random.Random, reserved: set[int],
                gender: str | None = None, first: str | None = None) -> int:
    """Pick a licensed person not in ``reserved`` (same gender / first name if possible)."""
    sql = ("SELECT p.id, p.name FROM person p JOIN drivers_license dl ON dl.id = p.license_id"
           + (f" WHERE dl.gender = {c.lit(gender)}" if gender else "") + " ORDER BY p.id")
    pool = [(pid, name) for pid, name in c.rows(con, sql) if pid not in reserved]
    same = [pid for pid, name in pool if first and name.split()[0] == first]
    pid = rng.choice(same) if same and rng.random() < 0.7 else rng.choice(pool)[0]
    reserved.add(pid)
    return pid


def _clue(cid: str, group: int, witness: int, kind: str, prm: dict, pronoun: str,
          status: str = "reliable") -> Clue:
    return Clue(cid, group, witness, kind, prm, c.predicate(kind, prm),
                c.statement(kind, prm, pronoun), status)


def _plant_near_miss(con: duckdb.DuckDBPyConnection, rng: random.Random, pid: int,
                     reliable: list[Clue], left_out: Clue) -> None:
    for k in reliable:
        if k is not left_out:
            c.make_true(k.kind, con, pid, k.params, rng)
    c.make_false(left_out.kind, con, pid, left_out.params, rng)


def plant_group(con: duckdb.DuckDBPyConnection, rng: random.Random, tier: str, g: int,
                ctx: dict, reserved: set[int]) -> Group:
    """Plant murderer ``g`` with its clues, look-alikes and decoys."""
    sp = d.spec(tier)
    murderer = pick_person(con, rng, reserved)
    gender = c.one(con, f"SELECT gender FROM drivers_license WHERE id = "
                        f"(SELECT license_id FROM person WHERE id = {murderer})")
    pronoun = "he" if gender == "male" else "she"
    first = c.one(con, f"SELECT name FROM person WHERE id = {murderer}").split()[0]
    group = Group(murderer, witness=pick_person(con, rng, reserved))
    u_kind = rng.choice(("car", "street", "plate")) if g < sp.unreliable else None
    miss_kind = rng.choice(c.RECORD_KINDS) if sp.missing_record and g == 0 else None
    if tier == "easy":
        kinds = rng.sample(EASY_STRONG, sp.hints)
    else:
        strong = [k for k in c.STRONG if k not in (u_kind, miss_kind)]
        kinds = rng.sample(c.WEAK, sp.weak_hints) + rng.sample(strong, sp.hints - sp.weak_hints)
    for kind in kinds:
        prm = c.choose(kind, con, murderer, ctx, rng)
        c.make_true(kind, con, murderer, prm, rng)
        group.clues.append(_clue(f"C{g + 1}.{len(group.clues) + 1}", g, group.witness,
                                 kind, prm, pronoun))
    if miss_kind:
        prm = c.choose(miss_kind, con, murderer, ctx, rng)
        c.make_false(miss_kind, con, murderer, prm, rng)
        group.clues.append(_clue(f"C{g + 1}.{len(group.clues) + 1}", g, group.witness,
                                 miss_kind, prm, pronoun, "missing"))
    reliable = group.reliable()
    for j in range(sp.lookalikes):
        pid = pick_person(con, rng, reserved, gender, first)
        _plant_near_miss(con, rng, pid, reliable, reliable[j % len(reliable)])
        if j == 0 and miss_kind:  # a trap: the look-alike fits the missing-record clue
            c.make_true(miss_kind, con, pid, group.clues[-1].params, rng)
        group.lookalikes.append(pid)
    if u_kind:
        _plant_unreliable(con, rng, group, u_kind, pronoun, ctx, reserved, sp.decoys)
    return group


def _plant_unreliable(con: duckdb.DuckDBPyConnection, rng: random.Random, group: Group,
                      kind: str, pronoun: str, ctx: dict, reserved: set[int],
                      n_decoys: int) -> None:
    """A false statement (fits decoys, not the murderer) by a witness who was away."""
    gender = "male" if pronoun == "he" else "female"
    decoy = pick_person(con, rng, reserved, gender)
    prm = c.choose(kind, con, decoy, ctx, rng)
    while c.satisfies(con, group.murderer, c.predicate(kind, prm)):
        prm = c.choose(kind, con, pick_person(con, rng, set(reserved), gender), ctx, rng)
    witness = pick_person(con, rng, reserved)
    group.unreliable_witness = witness
    g = group.clues[0].group
    group.clues.append(_clue(f"C{g + 1}.{len(group.clues) + 1}", g, witness, kind, prm,
                             pronoun, "unreliable"))
    reliable = group.reliable()
    for j in range(n_decoys):
        pid = decoy if j == 0 else pick_person(con, rng, reserved, gender)
        c.make_true(kind, con, pid, prm, rng)
        _plant_near_miss(con, rng, pid, reliable, reliable[(j + 1) % len(reliable)])
        group.decoys.append(pid)
    city = rng.choice(w.OTHER_CITIES)
    con.execute(f"INSERT INTO facebook_event_checkin VALUES ({witness}, {2001 + g}, "
                f"{c.lit(rng.choice(w.EVENT_NAMES))}, {c.lit(ctx['date'])}, {c.lit(city)})")


def match_counts(con: duckdb.DuckDBPyConnection, reliable: list[Clue],
                 at_least: int) -> dict[int, int]:
    """``{person id: number of clues fitted}`` for people fitting >= ``at_least`` clues."""
    total = " + ".join(f"COALESCE(({k.predicate}), FALSE)::INT" for k in reliable)
    sql = (f"SELECT id, n FROM (SELECT p.id, {total} AS n FROM person p) "
           f"WHERE n >= {at_least} ORDER BY id")
    return dict(c.rows(con, sql))


def clean_up(con: duckdb.DuckDBPyConnection, rng: random.Random, groups: list[Group],
             protected: set[int]) -> None:
    """Break accidental near-misses so the suspect set is exactly the planted one."""
    allowed = {p for gr in groups for p in (gr.murderer, *gr.lookalikes, *gr.decoys)}
    for _ in range(50):
        changed = False
        for gr in groups:
            reliable = gr.reliable()
            for pid in match_counts(con, reliable, len(reliable) - 1):
                if pid in allowed:
                    continue
                fits = [k for k in reliable if c.satisfies(con, pid, k.predicate)]
                if pid in protected and len(fits) > 1:
                    fits = [k for k in fits if k.kind != "street"] or fits
                k = fits[0]
                c.make_false(k.kind, con, pid, k.params, rng)
                changed = True
        if not changed:
            return
    raise RuntimeError("clean-up did not converge")


def place_witnesses(con: duckdb.DuckDBPyConnection, rng: random.Random, tier: str,
                    groups: list[Group], date: dt.date) -> dict[int, str]:
    """Decide how the report points at each witness; make that pointer unique in data."""
    styles: dict[int, str] = {}
    used_streets: set[str] = set()
    for gr in groups:
        for pid, hidable in ((gr.witness, True), (gr.unreliable_witness, False)):
            if pid is None:
                continue
            if tier == "easy":
                styles[pid] = "direct"
            elif hidable and d.spec(tier).hidden_witness:
                styles[pid] = "hidden"
                con.execute(f"INSERT INTO emergency_call VALUES ({pid}, {c.lit(date)}, "
                            f"{c.lit(w.CITY)}, {rng.randint(60, 400)})")
            else:
                styles[pid] = "last_house"
                street = rng.choice([s for s in w.STREETS if s not in used_streets])
                used_streets.add(street)
                con.execute(f"UPDATE person SET address_street_name = {c.lit(street)} "
                            f"WHERE id = {pid}")
    return styles


def finalise_addresses(con: duckdb.DuckDBPyConnection, styles: dict[int, str]) -> None:
    """Give every "last house" witness the highest number on their street."""
    for pid, style in sorted(styles.items()):
        if style == "last_house":
            con.execute(f"UPDATE person SET address_number = 1 + (SELECT max(address_number) "
                        f"FROM person q WHERE q.address_street_name = person.address_street_name)"
                        f" WHERE id = {pid}")


def to_arrow(con: duckdb.DuckDBPyConnection) -> dict[str, pa.Table]:
    """All case tables, each sorted by all columns (deterministic content)."""
    return {t: con.sql(f"SELECT * FROM {t} ORDER BY ALL").to_arrow_table() for t in TABLE_ORDER}
