"""The random "SQL City" world: people, licences, gym, events, calls, crimes.

:func:`build_world` returns plain pandas DataFrames, one per table, created only from
the given :class:`random.Random`. Case planting (:mod:`.cases`) then edits the world
in an in-memory DuckDB database. Tables (all keys are integers unless noted):

- ``person(id, name, license_id, address_number, address_street_name, ssn)``
- ``drivers_license(id, age, height, eye_color, hair_color, gender, plate_number,
  car_make, car_model, car_color)``
- ``income(ssn, annual_income)``
- ``get_fit_now_member(id TEXT, person_id, name, membership_start_date, membership_status)``
- ``get_fit_now_check_in(membership_id TEXT, check_in_date, check_in_time, check_out_time)``
- ``facebook_event_checkin(person_id, event_id, event_name, date, city)``
- ``phone_call(caller_id, receiver_id, date, duration_sec)``
- ``emergency_call(caller_id, date, city, duration_sec)``
- ``crime_scene_report(date, type, description, city)``
- ``interview(person_id, transcript)``
"""

from __future__ import annotations

import datetime as dt
import random
import string

import pandas as pd

CITY = "SQL City"


def _words(*chunks: str, sep: str | None = None) -> list[str]:
    """Split the concatenated ``chunks`` into a list of words (or ``sep``-separated items)."""
    return "".join(chunks).split(sep)


MALE_FIRST = _words(
    "James John Robert Michael William David Richard Joseph Thomas Charles Daniel Matthew "
    "Anthony Mark Donald Steven Paul Andrew Joshua Kenneth Kevin Brian George Timothy Ronald "
    "Edward Jason Jeffrey Ryan Jacob Gary Nicholas Eric Jonathan Stephen Larry Justin Scott "
    "Brandon Benjamin Samuel Gregory Frank Alexander Raymond Patrick Jack Dennis Jerry Tyler "
    "Aaron Jose Adam Henry Nathan Douglas Zachary Peter Kyle Walter Ethan Jeremy Harold Carl"
)
FEMALE_FIRST = _words(
    "Mary Patricia Jennifer Linda Elizabeth Barbara Susan Jessica Sarah Karen Nancy Lisa "
    "Betty Margaret Sandra Ashley Kimberly Emily Donna Michelle Dorothy Carol Amanda Melissa "
    "Deborah Stephanie Rebecca Sharon Laura Cynthia Kathleen Amy Shirley Angela Helen Anna "
    "Brenda Pamela Nicole Emma Samantha Katherine Christine Debra Rachel Catherine Carolyn "
    "Janet Ruth Maria Heather Diane Virginia Julie Joyce Victoria Olivia Kelly Christina "
    "Lauren Joan Evelyn Judith Megan Cheryl Andrea Hannah Martha Annabel"
)
LAST = _words(
    "Smith Johnson Williams Brown Jones Garcia Miller Davis Rodriguez Martinez Hernandez "
    "Lopez Gonzalez Wilson Anderson Thomas Taylor Moore Jackson Martin Lee Perez Thompson "
    "White Harris Sanchez Clark Ramirez Lewis Robinson Walker Young Allen King Wright Scott "
    "Torres Nguyen Hill Flores Green Adams Nelson Baker Hall Rivera Campbell Mitchell Carter "
    "Roberts Gomez Phillips Evans Turner Diaz Parker Cruz Edwards Collins Reyes Stewart "
    "Morris Morales Murphy Cook Rogers Gutierrez Ortiz Morgan Cooper Peterson Bailey Reed "
    "Kelly Howard Ramos Kim Cox Ward Richardson Watson Brooks Chavez Wood James Bennett Gray "
    "Mendoza Ruiz Hughes Price Alvarez Castillo Sanders Patel Myers Long Ross Foster Jimenez "
    "Powell Jenkins Perry Russell Sullivan Bell Coleman Butler Henderson Barnes Gonzales "
    "Fisher Vasquez Simmons Romero Jordan Patterson Alexander Hamilton Graham Reynolds "
    "Griffin Wallace Moreno West Cole Hayes Bryant Herrera Gibson Ellis Tran Medina Aguilar "
    "Stevens Murray Ford Castro Marshall Owens Harrison Fernandez Mcdonald Woods Washington "
    "Kennedy Wells Vargas Henry Chen Freeman Webb Tucker Guzman Burns Crawford Olson Simpson "
    "Porter Hunter Gordon Mendez Silva Shaw Snyder Mason Dixon Munoz Hunt Hicks Holmes Palmer"
    " Wagner Black Robertson Boyd Rose Stone Salazar Fox Warren Mills Meyer Rice Schmidt "
    "Garza Daniels Ferguson Nichols Stephens Soto Weaver Ryan Gardner Payne Grant Dunn Kelley"
    " Spencer Hawkins"
)
STREETS = _words(
    "Northwestern Dr|Franklin Ave|Maple St|Oak Ave|Cedar Ln|Pine Rd|Elm St|"
    "Washington Blvd|Lake Shore Dr|Hillcrest Rd|River Rd|Sunset Blvd|Park Ave|"
    "Highland Ave|Church St|Mill Rd|Spring St|Ridge Rd|Meadow Ln|Forest Dr|Jefferson St|"
    "Madison Ave|Lincoln Way|Chestnut St|Walnut St|Birch Ln|Willow Way|Harbor Blvd|"
    "Summit Ave|Valley Rd|Bay St|Orchard Rd|Prospect Ave|Union St|Market St|Court St|"
    "Broad St|Grove St|Locust St|Railroad Ave|Canal St|Main St|Water St|Bridge St|"
    "College Ave|Garden St|Pleasant St|Liberty St|Center St|Vine St",
    sep="|",
)
OTHER_CITIES = _words(
    "Springfield Riverton Lakeview Fairview Greenville Bristol Clinton Salem Georgetown "
    "Madison Arlington Ashland Dover Milton Newport Oxford Burlington Franklin"
)
CARS = {
    "Toyota": ["Camry", "Corolla", "Prius", "RAV4"],
    "Honda": ["Civic", "Accord", "CR-V"],
    "Ford": ["F-150", "Focus", "Mustang", "Explorer"],
    "Chevrolet": ["Malibu", "Impala", "Silverado"],
    "Tesla": ["Model S", "Model 3", "Model X"],
    "Nissan": ["Altima", "Sentra", "Rogue"],
    "BMW": ["3 Series", "5 Series", "X5"],
    "Subaru": ["Outback", "Forester", "Impreza"],
    "Volkswagen": ["Golf", "Jetta", "Passat"],
    "Hyundai": ["Elantra", "Sonata", "Tucson"],
}
COLORS = ["black", "white", "silver", "gray", "red", "blue", "green", "brown", "yellow", "orange"]
HAIR = ["black", "brown", "blonde", "red", "gray", "white", "auburn"]
EYES = ["brown", "blue", "green", "hazel", "amber"]
STATUSES = ["regular", "silver", "gold"]
EVENT_NAMES = [
    "Metro Gala", "SQL Symphony Concert", "Jazz in the Park", "City Marathon",
    "Food Truck Friday", "Art Walk", "Tech Meetup", "Charity Ball", "Farmers Market",
    "Comedy Night", "Film Festival", "Book Fair",
]
CRIME_TYPES = ["murder", "theft", "robbery", "assault", "arson", "fraud", "burglary", "bribery"]
PLATE_CHARS = string.ascii_uppercase + string.digits


def random_plate(rng: random.Random) -> str:
    """Return a random 6-character licence plate."""
    return "".join(rng.choice(PLATE_CHARS) for _ in range(6))


def random_member_id(rng: random.Random, prefix: str | None = None) -> str:
    """Return a 5-character gym membership id (e.g. ``48Z7A``), optionally with a prefix."""
    if prefix is None:
        prefix = f"{rng.randint(10, 99)}{rng.choice(string.ascii_uppercase)}"
    return prefix + "".join(rng.choice(PLATE_CHARS) for _ in range(5 - len(prefix)))


def _unique_ints(rng: random.Random, n: int, low: int, high: int) -> list[int]:
    return rng.sample(range(low, high), n)


def build_world(rng: random.Random, n_people: int, murder_date: dt.date) -> dict[str, pd.DataFrame]:
    """Build a random world around ``murder_date``.

    Args:
        rng: The only source of randomness; equal states give equal worlds.
        n_people: Number of people (full names are unique).
        murder_date: Noise dates (check-ins, events, calls, crimes) cluster around it.

    Returns:
        One DataFrame per table listed in the module docstring (no case planted yet;
        ``interview`` is empty).
    """
    day = dt.timedelta(days=1)
    males = [(f, last) for f in MALE_FIRST for last in LAST]
    females = [(f, last) for f in FEMALE_FIRST for last in LAST]
    n_male = n_people // 2
    names = rng.sample(males, n_male) + rng.sample(females, n_people - n_male)
    person_ids = _unique_ints(rng, n_people, 10000, 99999)
    license_ids = _unique_ints(rng, n_people, 100000, 999999)
    ssns = _unique_ints(rng, n_people, 100000000, 999999999)
    people, licences, incomes = [], [], []
    for i, (first, last) in enumerate(names):
        has_licence = rng.random() < 0.85
        people.append({
            "id": person_ids[i], "name": f"{first} {last}",
            "license_id": license_ids[i] if has_licence else None,
            "address_number": rng.randint(1, 4999),
            "address_street_name": rng.choice(STREETS), "ssn": ssns[i],
        })
        if has_licence:
            make = rng.choice(sorted(CARS))
            licences.append({
                "id": license_ids[i], "age": rng.randint(18, 85), "height": rng.randint(58, 80),
                "eye_color": rng.choice(EYES), "hair_color": rng.choice(HAIR),
                "gender": "male" if i < n_male else "female", "plate_number": random_plate(rng),
                "car_make": make, "car_model": rng.choice(CARS[make]),
                "car_color": rng.choice(COLORS),
            })
        if rng.random() < 0.9:
            incomes.append({"ssn": ssns[i], "annual_income": int(rng.lognormvariate(10.9, 0.5))})
    members, check_ins, used_ids = [], [], set()
    for i in rng.sample(range(n_people), n_people * 15 // 100):
        mid = random_member_id(rng)
        while mid in used_ids:
            mid = random_member_id(rng)
        used_ids.add(mid)
        start = murder_date - day * rng.randint(60, 2000)
        members.append({"id": mid, "person_id": person_ids[i], "name": people[i]["name"],
                        "membership_start_date": start,
                        "membership_status": rng.choice(STATUSES)})
        for _ in range(rng.randint(0, 5)):
            t_in = rng.randint(6, 20) * 100 + rng.randint(0, 59)
            check_ins.append({"membership_id": mid,
                              "check_in_date": murder_date - day * rng.randint(-5, 45),
                              "check_in_time": t_in, "check_out_time": t_in + rng.randint(30, 150)})
    events = world_events(rng, murder_date)
    event_rows = []
    for event_id, name, date, city in events:
        for i in rng.sample(range(n_people), rng.randint(20, 80)):
            event_rows.append({"person_id": person_ids[i], "event_id": event_id,
                               "event_name": name, "date": date, "city": city})
    calls = [{"caller_id": rng.choice(person_ids), "receiver_id": rng.choice(person_ids),
              "date": murder_date - day * rng.randint(-5, 40),
              "duration_sec": rng.randint(5, 3600)} for _ in range(n_people)]
    emergency = []
    for _ in range(150):
        date = murder_date - day * rng.randint(-30, 300)
        city = rng.choice([*OTHER_CITIES, CITY])
        if date == murder_date and city == CITY:
            continue
        emergency.append({"caller_id": rng.choice(person_ids), "date": date, "city": city,
                          "duration_sec": rng.randint(20, 900)})
    return {
        "person": pd.DataFrame(people).astype({"license_id": "Int64"}),
        "drivers_license": pd.DataFrame(licences), "income": pd.DataFrame(incomes),
        "get_fit_now_member": pd.DataFrame(members),
        "get_fit_now_check_in": pd.DataFrame(check_ins),
        "facebook_event_checkin": pd.DataFrame(event_rows),
        "phone_call": pd.DataFrame(calls), "emergency_call": pd.DataFrame(emergency),
        "crime_scene_report": pd.DataFrame(noise_reports(rng, murder_date)),
        "interview": pd.DataFrame({"person_id": pd.Series([], dtype="int64"),
                                   "transcript": pd.Series([], dtype="str")}),
    }


def world_events(rng: random.Random, murder_date: dt.date) -> list[tuple[int, str, dt.date, str]]:
    """Return ``(event_id, name, date, city)`` for ~30 events around ``murder_date``."""
    out = []
    for event_id in range(1001, 1031):
        city = CITY if event_id % 2 else rng.choice(OTHER_CITIES)
        date = murder_date - dt.timedelta(days=rng.randint(1, 60))
        out.append((event_id, rng.choice(EVENT_NAMES), date, city))
    return out


def noise_reports(rng: random.Random, murder_date: dt.date) -> list[dict]:
    """Crimes on other dates or in other cities (never a murder in SQL City that day)."""
    rows = []
    for _ in range(400):
        date = murder_date - dt.timedelta(days=rng.randint(-60, 400))
        city = rng.choice([*OTHER_CITIES, CITY])
        kind = rng.choice(CRIME_TYPES)
        if date == murder_date and city == CITY:
            date -= dt.timedelta(days=1)  # keep the case's own report unique
        outcome = rng.choice(["No witnesses.", "Police are investigating.",
                              "A suspect was arrested.", "Security footage is being reviewed."])
        rows.append({"date": date, "type": kind,
                     "description": f"A {kind} was reported. {outcome}", "city": city})
    return rows
