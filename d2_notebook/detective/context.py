"""What the team shares while it works: the board, the data, the model and settings.

Roles never talk to each other; they read and write the board through their tools.
:class:`TeamContext` is the bundle the control loop hands to each role, and
:class:`QueryLog` is one agent's private record of the queries it ran (``Q1``, ``Q2``
...), from which evidence is recorded — so evidence rows are always the result the
guarded SQL returned, never text a model wrote.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from d2_notebook.board import Board, ToolCall
from d2_notebook.data import QueryResult, SQLSource, open_source
from d2_notebook.detective.coverage_view import NO_CANDIDATES, CandidateDimensions
from d2_notebook.detective.sequencer import WriteSequencer
from d2_notebook.detective.settings import InvestigationSettings
from d2_notebook.llm import Model

if TYPE_CHECKING:
    from d2_notebook.detective.follow_up import FollowUp


def _ignore(hypothesis_id: str) -> None:
    """The default hook: nobody listens for new hypotheses."""


def _nothing() -> None:
    """The default hook: nobody waits for the orchestrator's steering."""


@dataclass
class TeamContext:
    """Shared by every role of one investigation.

    Attributes:
        sql: the source every query goes through; a DuckDB connection or a
            :class:`~d2_notebook.data.GuardedSQL` given here is wrapped by
            :func:`~d2_notebook.data.open_source`.
        model: the default model; ``role_models`` overrides it for some roles.
        round: the generation of the hypothesis a branch works on (1 for the
            hypothesizer's), recorded on what the branch writes.
        on_new_hypothesis: called (synchronously, inside the writing tool's turn)
            with each hypothesis id a tool adds, so the loop can queue it at once.
        on_steered: called (synchronously, inside the orchestrator's tool turn) when
            the orchestrator has steered (carry on, ask for more, finish): its triage
            of the new hypotheses is done, so the loop may start more branches.
        candidates: the database's candidate dimensions, read once, for the coverage
            map (none: no map is shown and ``finish`` is not held back by it).
        follow_up: when this investigation follows up an earlier one: what of it the
            digest shows and which of its evidence a query may reuse.
    """

    board: Board
    sql: SQLSource
    model: Model
    investigation_id: str
    question: str
    schema_summary: str
    settings: InvestigationSettings
    sequencer: WriteSequencer = field(default_factory=WriteSequencer)
    round: int = 0
    role_models: Mapping[str, Model] = field(default_factory=dict)
    on_new_hypothesis: Callable[[str], None] = _ignore
    on_steered: Callable[[], None] = _nothing
    candidates: CandidateDimensions = NO_CANDIDATES
    follow_up: FollowUp | None = None

    def __post_init__(self) -> None:
        self.sql = open_source(self.sql)

    def model_for(self, role: str) -> Model:
        """The model that answers ``role``'s calls."""
        return self.role_models.get(role, self.model)


@dataclass
class QueryLog:
    """The queries one agent ran in one turn, by query id, and which became evidence."""

    results: dict[str, QueryResult] = field(default_factory=dict)
    by_sql: dict[str, str] = field(default_factory=dict)
    evidence_ids: dict[str, str] = field(default_factory=dict)
    purposes: dict[str, str] = field(default_factory=dict)
    calls: dict[str, ToolCall] = field(default_factory=dict)
    """The analysis-tool call behind each query id that came from one (for re-checks)."""
    reused: dict[str, str] = field(default_factory=dict)
    """Query ids answered from an earlier investigation's evidence (its id), not run."""
    repeats: int = 0
    _last: asyncio.Future[None] | None = field(default=None, repr=False)

    def next_in_order(self) -> tuple[asyncio.Future[None] | None, asyncio.Future[None]]:
        """For a query of a batch run at the same time: the future of the query before
        it (None for the first) and its own, to set once it is registered, so query
        ids are given in the order of the calls whatever order the results come in."""
        previous, mine = self._last, asyncio.get_running_loop().create_future()
        self._last = mine
        return previous, mine

    def add(self, sql: str, result: QueryResult, purpose: str = "") -> str:
        """Keep ``result`` (and what it is for) under a new query id and return the id."""
        query_id = f"Q{len(self.results) + 1}"
        self.results[query_id] = result
        if purpose:
            self.purposes[query_id] = purpose
        self.by_sql[normalize_sql(sql)] = query_id
        return query_id

    def previous(self, sql: str) -> str | None:
        """The id of an earlier run of the same query, if any."""
        return self.by_sql.get(normalize_sql(sql))

    def with_board_ids(self, text: str) -> str:
        """``text`` with each of this turn's query ids that became evidence replaced by
        its evidence id, where it is cited: inside brackets or parentheses that hold only
        ids and row numbers ("(Q6)", "[Q2, E4 row 3]" -> "(E17)", "[E9, E4 row 3]"), or
        as the label that opens a clause ("...; Q5: returned orders ..." -> "...; E21:
        returned orders ..."). Query ids mean nothing outside the turn; a "Q4" elsewhere
        in running text may be a quarter, and is left alone."""
        text = self._in_citations(text, ("[", "("))
        return _LABEL.sub(lambda m: m.group(1) + self._board_id(m.group(2)), text)

    def with_board_ids_in_brackets(self, text: str) -> str:
        """``text`` with this turn's query ids that became evidence replaced by their
        evidence ids only inside square brackets that hold only ids and row numbers
        ("[Q6, E4 row 3]" -> "[E17, E4 row 3]"). For a report, where "(Q1)" and "- Q3:
        revenue fell" are as often quarters as citations."""
        return self._in_citations(text, ("[",))

    def _in_citations(self, text: str, openers: tuple[str, ...]) -> str:
        """``text`` with the query ids replaced (:meth:`_board_id`) inside the citations
        (:data:`_CITATION`) that open with one of ``openers``."""
        def board_ids(citation: re.Match[str]) -> str:
            if not citation.group(0).startswith(openers):
                return citation.group(0)
            return _QUERY_ID.sub(lambda m: self._board_id(m.group(0)), citation.group(0))

        return _CITATION.sub(board_ids, text) if self.evidence_ids else text

    def _board_id(self, query_id: str) -> str:
        """The evidence id ``query_id`` became, or ``query_id`` itself."""
        return self.evidence_ids.get(query_id, query_id)

    def cited_queries(self, text: str) -> list[str]:
        """This turn's query ids that ``text`` cites where :meth:`with_board_ids` would
        replace them (in brackets holding only ids and row numbers, or as a clause's
        label), in order of first citation; ids the turn never returned are left out."""
        cited = [q for found in _CITATION.finditer(text)
                 for q in _QUERY_ID.findall(found.group(0))]
        cited += [found.group(2) for found in _LABEL.finditer(text)]
        return [q for q in dict.fromkeys(cited) if q in self.results]

    def stuck(self, max_repeats: int = 3) -> str | None:
        """A reason to stop the agent when it keeps repeating queries."""
        if self.repeats >= max_repeats:
            return f"stopped: repeated the same query {self.repeats} times"
        return None


_QUERY_ID = re.compile(r"(?<!\w)(?<!(?:19|20)\d\d[-/ ])(?<!FY\d\d[-/ ])Q\d+\b"
                       r"(?![-/ ]?(?:19|20)\d\d\b)")
"""A query id: not a quarter beside its year ("2024-Q1", "2024 Q1", "FY24-Q1", "Q1 2024";
a judge read "0.456 (2024-E16)" where the row said 2024-Q1)."""
_LABEL = re.compile(r"(^|[;.]\s+|\n\s*(?:[-*•]\s*|\d+[.)]\s*)?)(Q\d+)"
                    r"(?=:(?!\s*[\d$€£+\-]))")
"""A query id labelling the clause or list item it opens ("Q5: returned orders carry
..."); not one followed by a figure ("Q1: $102" is a quarter's value)."""
_CITATION = re.compile(r"[\[(]\s*(?:(?:[EQ]\d+|rows?|and|\d+)\s*[,;:\-–]?\s*)+[\])]")
"""Brackets or parentheses holding only evidence or query ids and row numbers."""


def normalize_sql(sql: str) -> str:
    """Whitespace-insensitive form of a statement, for spotting repeats."""
    return " ".join(sql.replace(";", " ").split())
