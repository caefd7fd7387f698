"""Clue kinds: what a witness can say about a killer, as SQL over ``person p``.

Every clue kind knows how to
- ``choose`` clue parameters that are true for a given person (planting records if needed),
- write its ``predicate`` (a boolean SQL expression over the alias ``p`` of ``person``),
- write its witness ``statement`` and a ``show`` query (one person's relevant data),
- ``make_true`` / ``make_false`` for another person by editing the world.

The predicate is the single source of truth: planting, the suspect set and the
self-check all evaluate it with DuckDB.
"""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

import duckdb

from d2_notebook.datasets.sql_city import world as w

Params = dict[str, Any]
STRONG = ("plate", "gym", "car", "checkin", "event", "street", "phone")
WEAK = ("appearance", "income")
ATTRIBUTE_KINDS = ("appearance", "car", "street", "plate", "income")  # may be unreliable
RECORD_KINDS = ("checkin", "event", "phone")  # may have a missing record
OBJECT = {"he": "him", "she": "her"}
POSSESSIVE = {"he": "his", "she": "her"}


def lit(value: Any) -> str:
    """Render a Python value as a SQL literal (strings and dates quoted)."""
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return str(value)


def rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple]:
    """Run ``sql`` and return all rows."""
    return con.execute(sql).fetchall()


def one(con: duckdb.DuckDBPyConnection, sql: str) -> Any:
    """Run ``sql`` and return the first column of the first row (None if no rows)."""
    result = rows(con, sql)
    return result[0][0] if result else None


def satisfies(con: duckdb.DuckDBPyConnection, pid: int, predicate: str) -> bool:
    """Whether person ``pid`` satisfies the boolean SQL ``predicate``."""
    return bool(one(con, f"SELECT COALESCE(({predicate}), FALSE) FROM person p WHERE p.id = {pid}"))


def _licence(con: duckdb.DuckDBPyConnection, pid: int) -> dict[str, Any]:
    cur = con.execute(f"SELECT dl.* FROM drivers_license dl JOIN person p "
                      f"ON dl.id = p.license_id WHERE p.id = {pid}")
    names = [d[0] for d in cur.description]
    return dict(zip(names, cur.fetchall()[0], strict=True))


def _set_licence(con: duckdb.DuckDBPyConnection, pid: int, **values: Any) -> None:
    sets = ", ".join(f"{k} = {lit(v)}" for k, v in values.items())
    con.execute(f"UPDATE drivers_license SET {sets} "
                f"WHERE id = (SELECT license_id FROM person WHERE id = {pid})")


def ensure_membership(con: duckdb.DuckDBPyConnection, pid: int, rng: random.Random,
                      member_id: str | None = None, status: str | None = None) -> str:
    """Give ``pid`` a gym membership (keeping check-ins); optionally force id and status."""
    old = one(con, f"SELECT id FROM get_fit_now_member WHERE person_id = {pid}")
    if old is None:
        new = member_id or _fresh_member_id(con, rng)
        name = one(con, f"SELECT name FROM person WHERE id = {pid}")
        start = one(con, "SELECT min(check_in_date) FROM get_fit_now_check_in") - dt.timedelta(30)
        con.execute(f"INSERT INTO get_fit_now_member VALUES ({lit(new)}, {pid}, {lit(name)}, "
                    f"{lit(start)}, {lit(status or rng.choice(w.STATUSES))})")
        return new
    if member_id and member_id != old:
        con.execute(f"UPDATE get_fit_now_member SET id = {lit(member_id)} WHERE id = {lit(old)}")
        con.execute(f"UPDATE get_fit_now_check_in SET membership_id = {lit(member_id)} "
                    f"WHERE membership_id = {lit(old)}")
    if status:
        con.execute(f"UPDATE get_fit_now_member SET membership_status = {lit(status)} "
                    f"WHERE person_id = {pid}")
    return member_id or old


def _fresh_member_id(con: duckdb.DuckDBPyConnection, rng: random.Random,
                     prefix: str | None = None) -> str:
    while True:
        mid = w.random_member_id(rng, prefix)
        if one(con, f"SELECT count(*) FROM get_fit_now_member WHERE id = {lit(mid)}") == 0:
            return mid


def choose(kind: str, con: duckdb.DuckDBPyConnection, pid: int, ctx: Params,
           rng: random.Random) -> Params:
    """Pick parameters of a ``kind`` clue that describe person ``pid``.

    Record kinds (check-in, event, phone) only pick the date/event; call
    :func:`make_true` to plant the record. ``ctx`` holds ``date``, ``victim_id``, ``events``.
    """
    date: dt.date = ctx["date"]
    if kind in ("appearance", "car", "plate"):
        lic = _licence(con, pid)
        if kind == "appearance":
            return {"gender": lic["gender"], "hair": lic["hair_color"]}
        if kind == "car":
            return {"make": lic["car_make"], "color": lic["car_color"]}
        start = rng.randint(0, 2)
        return {"fragment": lic["plate_number"][start:start + rng.choice((3, 4))]}
    if kind == "gym":
        member_id = ensure_membership(con, pid, rng)
        status = one(con, f"SELECT membership_status FROM get_fit_now_member WHERE person_id={pid}")
        return {"prefix": member_id[:3], "status": status}
    if kind == "checkin":
        return {"date": date - dt.timedelta(days=rng.randint(1, 10))}
    if kind == "event":
        sql_city = [e for e in ctx["events"] if e[3] == w.CITY]
        event_id, name, event_date, _ = rng.choice(sql_city)
        return {"event_id": event_id, "event": name, "date": event_date}
    if kind == "phone":
        return {"victim_id": ctx["victim_id"], "date": date - dt.timedelta(days=1)}
    if kind == "income":
        income = one(con, f"SELECT annual_income FROM income i JOIN person p ON i.ssn = p.ssn "
                          f"WHERE p.id = {pid}")
        if income is None or income < 120000:
            income = rng.randint(120000, 400000)
            make_true("income", con, pid, {"threshold": income}, rng)
        return {"threshold": income // 10000 * 10000}
    if kind == "street":
        return {"street": one(con, f"SELECT address_street_name FROM person WHERE id = {pid}")}
    raise ValueError(f"unknown clue kind {kind!r}")


def predicate(kind: str, prm: Params) -> str:
    """Boolean SQL over ``person p`` that is true when the clue fits the person."""
    lic = "p.license_id IN (SELECT id FROM drivers_license WHERE {})"
    if kind == "appearance":
        return lic.format(f"gender = {lit(prm['gender'])} AND hair_color = {lit(prm['hair'])}")
    if kind == "car":
        return lic.format(f"car_make = {lit(prm['make'])} AND car_color = {lit(prm['color'])}")
    if kind == "plate":
        return lic.format(f"plate_number LIKE {lit('%' + prm['fragment'] + '%')}")
    if kind == "gym":
        return (f"p.id IN (SELECT person_id FROM get_fit_now_member WHERE id LIKE "
                f"{lit(prm['prefix'] + '%')} AND membership_status = {lit(prm['status'])})")
    if kind == "checkin":
        return ("p.id IN (SELECT m.person_id FROM get_fit_now_member m JOIN get_fit_now_check_in"
                f" c ON c.membership_id = m.id WHERE c.check_in_date = {lit(prm['date'])})")
    if kind == "event":
        return (f"p.id IN (SELECT person_id FROM facebook_event_checkin WHERE event_name = "
                f"{lit(prm['event'])} AND date = {lit(prm['date'])})")
    if kind == "phone":
        return (f"p.id IN (SELECT caller_id FROM phone_call WHERE receiver_id = "
                f"{prm['victim_id']} AND date = {lit(prm['date'])})")
    if kind == "income":
        return f"p.ssn IN (SELECT ssn FROM income WHERE annual_income >= {prm['threshold']})"
    if kind == "street":
        return f"p.address_street_name = {lit(prm['street'])}"
    raise ValueError(f"unknown clue kind {kind!r}")


def statement(kind: str, prm: Params, pronoun: str) -> str:
    """What a witness says, e.g. ``He drove a blue Toyota.`` (``pronoun`` is he/she)."""
    p, obj, pos = pronoun.capitalize(), OBJECT[pronoun], POSSESSIVE[pronoun]
    day = prm.get("date").strftime("%B %-d") if "date" in prm else ""
    return {
        "appearance": f"It was a {'man' if prm.get('gender') == 'male' else 'woman'} "
                      f"with {prm.get('hair')} hair.",
        "car": f"{p} got into a {prm.get('color')} {prm.get('make')}.",
        "plate": f"The plate of {pos} car "
                 f"included \"{prm.get('fragment')}\".",
        "gym": f"{p} had a Get Fit Now Gym bag. The membership number on the bag started "
               f"with \"{prm.get('prefix')}\". Only {prm.get('status')} members have those bags.",
        "checkin": f"I had seen {obj} "
                   f"at the gym on {day}.",
        "event": f"I recognised {obj} "
                 f"from the {prm.get('event')} on {day}.",
        "phone": f"{p} had phoned the victim on {day}, the day before.",
        "income": f"{p} looked rich, surely earning at least ${prm.get('threshold', 0):,} a year.",
        "street": f"I think {pronoun} lives on {prm.get('street')}.",
    }[kind]


def show_sql(kind: str, prm: Params, pid: int) -> str:
    """Canonical evidence query: person ``pid``'s data relevant to the clue (>= 1 row)."""
    base = "SELECT p.id, p.name, {cols} FROM person p {joins} WHERE p.id = {pid} ORDER BY ALL"
    dl = "LEFT JOIN drivers_license dl ON dl.id = p.license_id"
    gym = "LEFT JOIN get_fit_now_member m ON m.person_id = p.id"
    spec = {
        "appearance": ("dl.gender, dl.hair_color", dl),
        "car": ("dl.car_make, dl.car_model, dl.car_color", dl),
        "plate": ("dl.plate_number", dl),
        "gym": ("m.id AS membership_id, m.membership_status", gym),
        "checkin": ("c.check_in_date, c.check_in_time, c.check_out_time",
                    f"{gym} LEFT JOIN get_fit_now_check_in c ON c.membership_id = m.id "
                    f"AND c.check_in_date = {lit(prm.get('date'))}"),
        "event": ("e.event_name, e.date, e.city",
                  f"LEFT JOIN facebook_event_checkin e ON e.person_id = p.id AND e.event_name = "
                  f"{lit(prm.get('event', ''))} AND e.date = {lit(prm.get('date'))}"),
        "phone": ("c.receiver_id, c.date, c.duration_sec",
                  f"LEFT JOIN phone_call c ON c.caller_id = p.id AND c.receiver_id = "
                  f"{prm.get('victim_id')} AND c.date = {lit(prm.get('date'))}"),
        "income": ("i.annual_income", "LEFT JOIN income i ON i.ssn = p.ssn"),
        "street": ("p.address_number, p.address_street_name", ""),
    }
    cols, joins = spec[kind]
    return base.format(cols=cols, joins=joins, pid=pid)


def make_true(kind: str, con: duckdb.DuckDBPyConnection, pid: int, prm: Params,
              rng: random.Random) -> None:
    """Edit the world so that person ``pid`` (who has a licence) fits the clue."""
    if satisfies(con, pid, predicate(kind, prm)):
        return
    if kind == "appearance":
        _set_licence(con, pid, gender=prm["gender"], hair_color=prm["hair"])
    elif kind == "car":
        _set_licence(con, pid, car_make=prm["make"], car_color=prm["color"],
                     car_model=rng.choice(w.CARS[prm["make"]]))
    elif kind == "plate":
        plate, frag = w.random_plate(rng), prm["fragment"]
        at = rng.randint(0, len(plate) - len(frag))
        _set_licence(con, pid, plate_number=plate[:at] + frag + plate[at + len(frag):])
    elif kind == "gym":
        ensure_membership(con, pid, rng, _fresh_member_id(con, rng, prm["prefix"]), prm["status"])
    elif kind == "checkin":
        mid = ensure_membership(con, pid, rng)
        t_in = rng.randint(6, 20) * 100 + rng.randint(0, 59)
        con.execute(f"INSERT INTO get_fit_now_check_in VALUES ({lit(mid)}, {lit(prm['date'])}, "
                    f"{t_in}, {t_in + rng.randint(30, 150)})")
    elif kind == "event":
        city = w.CITY
        con.execute(f"INSERT INTO facebook_event_checkin VALUES ({pid}, {prm['event_id']}, "
                    f"{lit(prm['event'])}, {lit(prm['date'])}, {lit(city)})")
    elif kind == "phone":
        con.execute(f"INSERT INTO phone_call VALUES ({pid}, {prm['victim_id']}, "
                    f"{lit(prm['date'])}, {rng.randint(30, 600)})")
    elif kind == "income":
        con.execute(f"DELETE FROM income WHERE ssn = (SELECT ssn FROM person WHERE id = {pid})")
        con.execute(f"INSERT INTO income SELECT ssn, {prm['threshold'] + rng.randint(0, 90000)} "
                    f"FROM person WHERE id = {pid}")
    elif kind == "street":
        con.execute(f"UPDATE person SET address_street_name = {lit(prm['street'])}, "
                    f"address_number = {rng.randint(1, 4999)} WHERE id = {pid}")


def make_false(kind: str, con: duckdb.DuckDBPyConnection, pid: int, prm: Params,
               rng: random.Random) -> None:
    """Edit the world so that person ``pid`` no longer fits the clue (near-miss values)."""
    if not satisfies(con, pid, predicate(kind, prm)):
        return
    if kind == "appearance":
        _set_licence(con, pid, hair_color=rng.choice([h for h in w.HAIR if h != prm["hair"]]))
    elif kind == "car":
        _set_licence(con, pid, car_color=rng.choice([c for c in w.COLORS if c != prm["color"]]))
    elif kind == "plate":
        plate = _licence(con, pid)["plate_number"]
        frag = prm["fragment"]
        near = frag[:-1] + rng.choice([c for c in w.PLATE_CHARS if c != frag[-1]])
        _set_licence(con, pid, plate_number=plate.replace(frag, near))
    elif kind == "gym":
        other = rng.choice([s for s in w.STATUSES if s != prm["status"]])
        ensure_membership(con, pid, rng, status=other)
    elif kind == "checkin":
        con.execute("DELETE FROM get_fit_now_check_in WHERE check_in_date = "
                    f"{lit(prm['date'])} AND membership_id IN "
                    f"(SELECT id FROM get_fit_now_member WHERE person_id = {pid})")
    elif kind == "event":
        con.execute(f"DELETE FROM facebook_event_checkin WHERE person_id = {pid} AND "
                    f"event_name = {lit(prm['event'])} AND date = {lit(prm['date'])}")
    elif kind == "phone":
        con.execute(f"DELETE FROM phone_call WHERE caller_id = {pid} AND receiver_id = "
                    f"{prm['victim_id']} AND date = {lit(prm['date'])}")
    elif kind == "income":
        lower = prm["threshold"] - rng.randint(1000, 40000)
        con.execute(f"UPDATE income SET annual_income = {lower} "
                    f"WHERE ssn = (SELECT ssn FROM person WHERE id = {pid})")
    elif kind == "street":
        street = rng.choice([s for s in w.STREETS if s != prm["street"]])
        con.execute(f"UPDATE person SET address_street_name = {lit(street)} WHERE id = {pid}")
