"""The offline policies: deterministic Python "agents" that drive the real team with no
language model (through :class:`~d2_notebook.llm.offline.FunctionModel`).

- :mod:`.team_policy`: the base, :class:`TeamPolicy` (one method per role) and
  :class:`Turn` (what a role sees of its request).
- :mod:`.hospital`: :class:`HospitalWalkthrough`, the scripted investigation of the
  bundled hospital demo (``d2 demo``, the example notebook, tests).
- :mod:`.sql_city`: the SQL City policies of the benchmark (oracle, greedy) and the
  teaching walk-through of one case.
- :mod:`.naive`: :class:`NaivePolicy`, which knows no domain and acts only on what the
  analysis tools and the digest show (the check that breadth comes from the system).

Every query a policy asks for still runs through the guarded SQL and every write goes
through the team's tools, so a scripted run fills a real board.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from d2_notebook.errors import InvalidRecordError

if TYPE_CHECKING:
    from d2_notebook.detective.policies.team_policy import TeamPolicy

__all__ = ["OFFLINE_POLICIES", "offline_policy"]

OFFLINE_POLICIES = ("naive", "hospital")
"""Offline policies a user can name (``d2 board recheck --policy``, ``%investigate
--policy``): the naive one works on any database with a BOOLEAN outcome; ``hospital``
is the walk-through of the bundled hospital demo."""


def offline_policy(name: str, dialect: str = "duckdb") -> TeamPolicy:
    """The offline policy called ``name`` (see :data:`OFFLINE_POLICIES`).

    Raises:
        InvalidRecordError: no policy has that name (the message lists them).
    """
    if name == "naive":
        from d2_notebook.detective.policies.naive import NaivePolicy

        return NaivePolicy(dialect)
    if name == "hospital":
        from d2_notebook.detective.policies.hospital import HospitalWalkthrough

        return HospitalWalkthrough(dialect)
    raise InvalidRecordError(f"no offline policy {name!r}; pass one of "
                             f"{', '.join(OFFLINE_POLICIES)}")
