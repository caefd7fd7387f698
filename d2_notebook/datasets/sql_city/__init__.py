"""Generated "SQL City" murder cases for the data-investigation benchmark.

Each case is its own world (a DuckDB database of ~3,000 people with licences, gym
memberships, events, calls, crime reports and interviews) with one or more planted
murderers, witnesses, clues, look-alikes and decoys, plus a gold file (:class:`Gold`)
that the :func:`self_check` proves against the database.

Typical use::

    case = generate_case(seed=0, index=3, tier="hard")
    paths = write_case(case, "out/")
    assert self_check(paths["db"], load_gold(paths["gold"])) == []
"""

from d2_notebook.datasets.sql_city.difficulty import TIERS, standard_tiers
from d2_notebook.datasets.sql_city.generate import (
    Case,
    case_description,
    generate_case,
    generate_standard_set,
    write_case,
)
from d2_notebook.datasets.sql_city.gold import Gold, load_gold, self_check

__all__ = [
    "TIERS",
    "Case",
    "Gold",
    "case_description",
    "generate_case",
    "generate_standard_set",
    "load_gold",
    "self_check",
    "standard_tiers",
    "write_case",
]
