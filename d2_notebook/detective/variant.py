"""Which roles run and which tools each role gets: the team's configurations.

The full team and its ablations (PAPER §4.2) are six values of one type,
:class:`Variant`. A variant names its roles and, for each role, its tools by tool
name; the control loop asks a variant what runs (``variant.runs(Role.JUDGE)``) and
the roles build exactly the tools it names. :func:`parse_variant` is the one place a
variant's name is read (settings stored on a board, the CLI, the benchmark).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum, StrEnum
from types import MappingProxyType

from d2_notebook.errors import InvalidRecordError


class Role(StrEnum):
    """A member of the team (or a variant's merged member); the value is the name
    recorded on the board's model calls."""

    HYPOTHESIZER = "hypothesizer"
    ORCHESTRATOR = "orchestrator"
    COLLECTOR = "collector"
    JUDGE = "judge"
    REPORTER = "reporter"
    PLANNER = "planner"
    DETECTIVE = "detective"
    REACT = "react"


class Shape(Enum):
    """How the control loop drives a variant's roles."""

    TEAM = "team"
    """A queue of hypotheses, each examined by a branch (collect → judge)."""
    ALONE = "alone"
    """One agent does every job on the board in one turn."""
    REACT = "react"
    """One ReAct agent with the SQL tool only, no board."""


_SQL = ("run_sql", "describe_table")
_ANALYSIS = ("segment_scan", "compare_within", "trend", "decompose")
"""The analysis tools (:mod:`d2_notebook.data.analysis`), offered with the SQL tools."""
_QUERYING = (*_SQL, *_ANALYSIS)
_POINT_TO_SCAN = ("compare_within", "decompose")
"""Analysis tools whose descriptions say "as in segment_scan" (it is offered with them)."""


@dataclass(frozen=True)
class Variant:
    """One configuration of the team.

    Attributes:
        name: how settings, the CLI and the benchmark name it.
        shape: how the loop drives it.
        tools: the roles that run, each with its tools by name, in prompt order.
        description: one line, for help texts and tables.
    """

    name: str
    shape: Shape
    tools: Mapping[Role, tuple[str, ...]] = field(default_factory=dict)
    description: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "tools", MappingProxyType(dict(self.tools)))
        for role, names in self.tools.items():
            pointing = [n for n in _POINT_TO_SCAN if n in names]
            if pointing and "segment_scan" not in names:
                raise InvalidRecordError(
                    f"variant {self.name!r} offers {role.value} {', '.join(pointing)} without "
                    "segment_scan, whose description states the candidate dimensions theirs "
                    "point to: offer segment_scan too")

    @property
    def roles(self) -> tuple[Role, ...]:
        """The roles that run, in the order of :attr:`tools`."""
        return tuple(self.tools)

    def runs(self, role: Role) -> bool:
        """True if ``role`` takes part in this variant."""
        return role in self.tools

    def tools_of(self, role: Role) -> tuple[str, ...]:
        """The tool names ``role`` gets (empty if it does not run)."""
        return self.tools.get(role, ())

    def __str__(self) -> str:
        return self.name


_COLLECTOR = (*_QUERYING, "record_evidence", "link_evidence", "read_evidence",
              "submit_for_judgement")
_JUDGE = ("give_verdict", "request_more_evidence", "refine", "link_evidence", "read_evidence")
_HYPOTHESIZER = (*_QUERYING, "add_hypothesis", "done")
_ORCHESTRATOR = ("abandon", "request_hypotheses", "carry_on", "dismiss_dimension", "finish")
_REPORTER = ("mark_redundant", "write_report")

FULL = Variant("full", Shape.TEAM, {
    Role.HYPOTHESIZER: _HYPOTHESIZER, Role.ORCHESTRATOR: _ORCHESTRATOR,
    Role.COLLECTOR: _COLLECTOR, Role.JUDGE: _JUDGE, Role.REPORTER: _REPORTER,
}, "the whole team: hypothesizer, orchestrator, collectors, judges, reporter")
NO_REPORTER = Variant("no_reporter", Shape.TEAM, {
    Role.HYPOTHESIZER: _HYPOTHESIZER, Role.ORCHESTRATOR: _ORCHESTRATOR,
    Role.COLLECTOR: _COLLECTOR, Role.JUDGE: _JUDGE,
}, "the team without the reporter: the report is built from the board")
NO_JUDGE = Variant("no_judge", Shape.TEAM, {
    Role.HYPOTHESIZER: _HYPOTHESIZER, Role.ORCHESTRATOR: _ORCHESTRATOR,
    Role.COLLECTOR: (*_QUERYING, "record_evidence", "link_evidence", "read_evidence",
                     "give_verdict"),
    Role.REPORTER: _REPORTER,
}, "collectors give their own verdicts")
MERGED_PLANNER = Variant("merged_planner", Shape.TEAM, {
    Role.PLANNER: (*_QUERYING, "add_hypothesis", "abandon", "carry_on",
                   "dismiss_dimension", "finish"),
    Role.COLLECTOR: _COLLECTOR, Role.JUDGE: _JUDGE, Role.REPORTER: _REPORTER,
}, "one planner is both hypothesizer and orchestrator")
SINGLE_AGENT_BOARD = Variant("single_agent_board", Shape.ALONE, {
    Role.DETECTIVE: (*_QUERYING, "add_hypothesis", "record_evidence", "link_evidence",
                     "give_verdict", "abandon", "mark_redundant", "write_report"),
}, "one agent does every job, on the board")
REACT_SQL = Variant("react_sql", Shape.REACT, {
    Role.REACT: ("run_sql", "final_answer"),
}, "one ReAct agent with the SQL tool, no board")

ALL_VARIANTS: tuple[Variant, ...] = (FULL, NO_REPORTER, NO_JUDGE, MERGED_PLANNER,
                                     SINGLE_AGENT_BOARD, REACT_SQL)
"""Every variant, the full team first."""

VARIANTS: tuple[str, ...] = tuple(v.name for v in ALL_VARIANTS)
"""Their names (for command-line choices)."""

_BY_NAME = {v.name: v for v in ALL_VARIANTS}


def parse_variant(value: Variant | str) -> Variant:
    """The variant named ``value`` (a :class:`Variant` is returned as is).

    Raises:
        InvalidRecordError: no variant has that name (the message lists them).
    """
    if isinstance(value, Variant):
        return value
    found = _BY_NAME.get(str(value).strip())
    if found is None:
        raise InvalidRecordError(f"unknown variant {value!r}; use one of: {', '.join(VARIANTS)}")
    return found
