"""Case files for a class: write a case for students, read a gold file, know the case's people.

A teacher writes a case with :func:`new_case` — the database and the description go to
the folder students get, the gold file (the answer) may go elsewhere — and grades the
boards students hand back against the gold file (:func:`read_gold`). Grading needs the
case's people to know whom a hypothesis names (:func:`case_people`): read from the
case database when it is at hand, else rebuilt from the gold's seed (cases are
deterministic), so a gold file kept apart from the database still grades exactly.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from d2_notebook.datasets.sql_city import TIERS, Gold, generate_case, write_case
from d2_notebook.errors import D2Error
from d2_notebook.teaching.board_answer import PeopleIndex

GoldLike = Gold | Mapping[str, Any] | str | os.PathLike[str]
"""A gold: a ``Gold`` object, its JSON dict, or the path of its JSON file."""

CaseDatabase = duckdb.DuckDBPyConnection | str | os.PathLike[str]
"""A case database: the path of its DuckDB file, or an open connection to it."""

_REQUIRED = tuple(f.name for f in dataclasses.fields(Gold)
                  if f.default is dataclasses.MISSING
                  and f.default_factory is dataclasses.MISSING)


class CaseFileError(D2Error, ValueError):
    """A gold file, case database or case folder that cannot be used as asked."""


@dataclass(frozen=True)
class CaseFiles:
    """What :func:`new_case` wrote.

    Attributes:
        case_id: e.g. ``sqlcity-s7-000``.
        database: the DuckDB file students query.
        description: the case description students start from (a text file).
        gold: the gold file: the answer and the graph grades are computed against.
    """

    case_id: str
    database: Path
    description: Path
    gold: Path

    def handout(self) -> tuple[Path, Path]:
        """The files to give students: the database and the description."""
        return self.database, self.description


def new_case(tier: str, seed: int, out: str | os.PathLike[str], *, index: int = 0,
             gold_out: str | os.PathLike[str] | None = None) -> CaseFiles:
    """Generate a case and write it for a class.

    Args:
        tier: ``easy``, ``medium``, ``hard`` or ``very_hard``.
        seed: any integer; the same seed, index and tier always give the same case.
        out: the folder to hand out: ``<case_id>.duckdb`` and ``<case_id>.txt``.
        index: the case number within the seed (several cases per seed).
        gold_out: where to write the gold file. Default: ``out/<case_id>.json`` (then do
            not hand out the whole folder). It may not lie inside ``out``.

    Raises:
        CaseFileError: an unknown tier, ``out`` is a file, or ``gold_out`` is inside
            ``out`` or is a folder.
    """
    if tier not in TIERS:
        raise CaseFileError(f"unknown tier {tier!r}; use one of: {', '.join(TIERS)}")
    if index < 0 or seed < 0:
        raise CaseFileError("seed and index must be 0 or more")
    folder = Path(out)
    if folder.exists() and not folder.is_dir():
        raise CaseFileError(f"{str(folder)!r} is a file; pass a folder for the case files")
    gold_path = None if gold_out is None else Path(gold_out)
    if gold_path is not None:
        if gold_path.is_dir():
            raise CaseFileError(f"{str(gold_path)!r} is a folder; pass a file path for the "
                                "gold file, e.g. answers/case.json")
        if gold_path.expanduser().resolve().is_relative_to(folder.expanduser().resolve()):
            raise CaseFileError(f"the gold file {str(gold_path)!r} would be inside "
                                f"{str(folder)!r}, the folder students get; pass a path "
                                "outside it")
    paths = write_case(generate_case(seed, index, tier), folder, gold_path=gold_path)
    gold = read_gold(paths["gold"])
    return CaseFiles(gold.case_id, paths["db"], paths["description"], paths["gold"])


def read_gold(gold: GoldLike) -> Gold:
    """A ``Gold`` from a ``Gold``, its JSON dict or its JSON file, checked.

    Raises:
        CaseFileError: no such file, not JSON, or not a SQL City gold (the message names
            what is missing and the file to pass instead).
    """
    if isinstance(gold, Gold):
        return gold
    if isinstance(gold, Mapping):
        return _gold_from_dict(gold, "this gold dict")
    path = Path(gold)
    if not path.is_file():
        where = "a folder" if path.is_dir() else "not found"
        raise CaseFileError(f"gold file {str(path)!r}: {where}; pass the <case>.json that "
                            "`d2 case new` wrote (its --gold-out path if you kept it apart)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CaseFileError(f"{str(path)!r} is not a gold file (not JSON: {exc}); pass the "
                            "<case>.json that `d2 case new` wrote") from None
    if not isinstance(data, Mapping):
        raise CaseFileError(f"{str(path)!r} is not a gold file (not a JSON object); pass "
                            "the <case>.json that `d2 case new` wrote")
    return _gold_from_dict(data, repr(str(path)))


def _gold_from_dict(data: Mapping[str, Any], what: str) -> Gold:
    missing = [key for key in _REQUIRED if key not in data]
    if missing or not isinstance(data.get("graph"), Mapping) or not all(
            key in data["graph"] for key in ("hypotheses", "evidence", "edges")):
        lacks = ", ".join(missing) if missing else "a graph of hypotheses, evidence and edges"
        raise CaseFileError(f"{what} is not a SQL City gold file (it lacks {lacks}); pass "
                            "the <case>.json that `d2 case new` wrote")
    known = {f.name for f in dataclasses.fields(Gold)}
    return Gold(**{key: value for key, value in data.items() if key in known})


def case_people(gold: Gold, database: CaseDatabase | None = None) -> PeopleIndex:
    """Everybody in the case's ``person`` table, to tell whom a hypothesis names.

    Read from ``database`` (a path or an open connection) when given; otherwise rebuilt
    from the gold's seed, index and tier (cases are deterministic). A file or a rebuilt
    case is read once (cached), so a class of boards pays for it once.

    Raises:
        CaseFileError: no database at the path, or the gold is not a standard generated
            case (then pass its database).
    """
    if isinstance(database, duckdb.DuckDBPyConnection):
        return PeopleIndex.from_database(database)
    if database is not None:
        path = Path(database)
        if not path.is_file():
            raise CaseFileError(f"no case database at {str(path)!r}; pass the "
                                "<case>.duckdb that `d2 case new` wrote")
        stat = path.stat()
        return _people_of_file(str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    return _regenerated_people(gold.seed, gold.index, gold.tier, _cast(gold))


def database_beside(gold: GoldLike) -> Path | None:
    """The ``<case>.duckdb`` next to a gold file, if there is one."""
    if isinstance(gold, Gold | Mapping):
        return None
    beside = Path(gold).with_suffix(".duckdb")
    return beside if beside.is_file() else None


def _cast(gold: Gold) -> tuple[tuple[int, str], ...]:
    """The gold's suspects and murderers as ``(id, name)``: what a rebuilt case must match."""
    return tuple(sorted({(int(p["id"]), str(p["name"]))
                         for p in [*gold.suspects, *gold.murderers]}))


@functools.lru_cache(maxsize=8)
def _people_of_file(path: str, mtime_ns: int, size: int) -> PeopleIndex:
    """The people of a database file, read once per version of the file."""
    return PeopleIndex.from_database(path)


@functools.lru_cache(maxsize=8)
def _regenerated_people(seed: int, index: int, tier: str,
                        cast: tuple[tuple[int, str], ...]) -> PeopleIndex:
    if tier not in TIERS:
        raise CaseFileError(f"the gold's tier {tier!r} is not one of {', '.join(TIERS)}; "
                            "pass the case database (database=..., --db)")
    case = generate_case(seed, index, tier)
    if _cast(case.gold) != cast:
        raise CaseFileError(f"the gold file does not match case {case.case_id} as generated "
                            "now (edited, or generated with other settings); pass the case "
                            "database (database=..., --db)")
    person = case.tables["person"]
    return PeopleIndex(zip(person.column("id").to_pylist(), person.column("name").to_pylist(),
                           strict=True))
