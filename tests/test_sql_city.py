"""SQL City case generator: self-check, determinism, tier dimensions, planted traps."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import duckdb
import pytest

from benchmark.__main__ import main
from d2_notebook.datasets.sql_city import (
    TIERS,
    Case,
    generate_case,
    load_gold,
    self_check,
    standard_tiers,
    write_case,
)

SEED = 7


@pytest.fixture(scope="module")
def small_set(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Case, dict[str, Path]]]:
    out = tmp_path_factory.mktemp("sql_city")
    # index 1 for hard gives two murderers (hard alternates 1/2 by index parity).
    cases = [generate_case(SEED, i, tier) for i, tier in enumerate(TIERS)]
    return [(case, write_case(case, out)) for case in cases]


def table_contents(path: Path) -> dict[str, list[tuple]]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        names = [r[0] for r in con.execute("SHOW TABLES").fetchall()]
        return {n: con.execute(f"SELECT * FROM {n} ORDER BY ALL").fetchall() for n in names}
    finally:
        con.close()


def test_small_set_passes_self_check(small_set) -> None:
    for case, paths in small_set:
        gold = load_gold(paths["gold"])
        assert gold == case.gold
        assert self_check(paths["db"], gold) == [], case.case_id


def test_generation_is_deterministic(small_set, tmp_path: Path) -> None:
    case, paths = small_set[2]
    again = write_case(generate_case(SEED, 2, "hard"), tmp_path)
    assert again["gold"].read_bytes() == paths["gold"].read_bytes()
    assert table_contents(again["db"]) == table_contents(paths["db"])
    assert generate_case(SEED + 1, 2, "hard").gold.to_json() != case.gold.to_json()


def test_tiers_differ_in_documented_dimensions(small_set) -> None:
    dims = [case.gold.dimensions for case, _ in small_set]
    for easier, harder in itertools.pairwise(dims):
        assert harder["score"] > easier["score"]
        assert harder["hints_per_murderer"] >= easier["hints_per_murderer"]
        assert harder["suspects"] >= easier["suspects"]
    assert [d["missing_clues"] for d in dims] == [0, 1, 1, 2]
    assert [d["unreliable_witnesses"] for d in dims] == [0, 0, 1, 1]
    assert dims[0]["murderers"] == 1 and dims[3]["murderers"] == 2


def test_unreliable_witness_is_contradicted_by_data(small_set) -> None:
    case, paths = small_set[2]
    gold = case.gold
    unreliable = [k for k in gold.clues if k["status"] == "unreliable"]
    assert unreliable
    con = duckdb.connect(str(paths["db"]), read_only=True)
    for clue in unreliable:
        fits = {r[0] for r in con.execute(
            f"SELECT p.id FROM person p WHERE {clue['predicate']}").fetchall()}
        assert not fits & gold.murderer_ids()  # the statement is false for the murderer
        assert fits & {s["id"] for s in gold.suspects if s["role"] == "decoy"}
        away = con.execute("SELECT city FROM facebook_event_checkin WHERE person_id = ? AND "
                           "date = ?", [clue["witness_id"], gold.date]).fetchall()
        assert away and all(city != gold.city for (city,) in away)
    con.close()


def test_missing_record_clue_is_false_for_murderer(small_set) -> None:
    case, paths = small_set[3]
    missing = [k for k in case.gold.clues if k["status"] == "missing"]
    assert missing
    con = duckdb.connect(str(paths["db"]), read_only=True)
    for clue in missing:
        fits = {r[0] for r in con.execute(
            f"SELECT p.id FROM person p WHERE {clue['predicate']}").fetchall()}
        assert not fits & case.gold.murderer_ids()
    con.close()


def test_multiple_murderers_in_hard_tiers() -> None:
    assert len(generate_case(SEED, 1, "hard").gold.murderers) == 2
    assert len(generate_case(SEED, 0, "hard").gold.murderers) == 1


def test_names_unique(small_set) -> None:
    for _, paths in small_set:
        con = duckdb.connect(str(paths["db"]), read_only=True)
        assert con.execute("SELECT count(*) = count(DISTINCT name) FROM person").fetchall() == [
            (True,)]
        con.close()


def test_description_leaks_no_answer(small_set) -> None:
    for case, _ in small_set:
        gold = case.gold
        text = gold.description
        assert gold.date in text and gold.city in text
        people = [*gold.suspects, *gold.witnesses, gold.victim]
        for person in people:
            assert person["name"] not in text and str(person["id"]) not in text
        assert not re.search(r"\b(two|2|both|several)\b", text)


def test_standard_tiers_split() -> None:
    tiers = standard_tiers(50)
    assert [tiers.count(t) for t in TIERS] == [12, 13, 13, 12]
    assert standard_tiers(4) == list(TIERS)


def test_standard_set_generates_and_self_checks(tmp_path: Path, capsys) -> None:
    assert main(["generate", "--out", str(tmp_path), "--cases", "50", "--jobs", "2"]) == 0
    assert len(list(tmp_path.glob("*.duckdb"))) == 50
    assert "50 cases" in capsys.readouterr().out


def test_each_case_has_a_description_file_that_leaks_no_answer(tmp_path):
    case = generate_case(11, 2, "medium")
    paths = write_case(case, tmp_path)
    description = paths["description"].read_text(encoding="utf-8").strip()
    assert description == case.gold.description
    assert "SQL City" in description
    for person in (*case.gold.murderers, *case.gold.suspects):
        assert person["name"] not in description
