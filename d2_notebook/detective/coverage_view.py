"""The coverage map of a board, as the team reads it in the digest.

The candidate dimensions of the database (:func:`~d2_notebook.data.dimensions.
candidate_dimensions`) are read once per investigation (:func:`read_candidates`). Every
evidence's SQL is read with :func:`~d2_notebook.data.coverage.coverage_map` into the
candidate dimensions it filtered or grouped by; :func:`board_coverage` gathers them per
hypothesis (through the links) and for the whole board, and subtracts the dimensions the
orchestrator dismissed with a reason. The digest shows it compactly (it is in every
prompt); the orchestrator's ``finish`` is refused while :attr:`BoardCoverage.untouched`
is not empty.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache

from d2_notebook.board import Board, DimensionDismissal
from d2_notebook.data import GuardedSQL
from d2_notebook.data.coverage import coverage_map
from d2_notebook.data.dimensions import Dimension, candidate_dimensions, read_catalog
from d2_notebook.errors import D2Error


@dataclass(frozen=True)
class CandidateDimensions:
    """The database's candidate dimensions and its tables' columns (to place columns).

    Attributes:
        dimensions: Every candidate dimension, as the analysis tools name them.
        tables: ``(table, its columns)`` pairs.
    """

    dimensions: tuple[Dimension, ...] = ()
    tables: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def __hash__(self) -> int:
        """Hashed once: the value keys the per-statement cache of :func:`_touched`, looked
        up for every evidence each time a digest is drawn."""
        if "_hash" not in self.__dict__:
            self.__dict__["_hash"] = hash((self.dimensions, self.tables))
        return self.__dict__["_hash"]

    @cached_property
    def names(self) -> tuple[str, ...]:
        """The dimensions' names, in order, without repeats."""
        return tuple(dict.fromkeys(d.name for d in self.dimensions))


NO_CANDIDATES = CandidateDimensions()
"""For a database whose dimensions could not be read: no coverage map is shown."""


def read_candidates(sql: GuardedSQL) -> CandidateDimensions:
    """Profile the database once through the guard (one query per table).

    A database whose catalog cannot be profiled (the guard refuses a query, a table
    vanished) gives :data:`NO_CANDIDATES`: the investigation runs without a map.
    """
    try:
        catalog = read_catalog(sql)
        dimensions = candidate_dimensions(sql, catalog=catalog)
    except (D2Error, ValueError):
        return NO_CANDIDATES
    tables = tuple((t.name, tuple(c.name for c in t.columns)) for t in catalog.tables)
    return CandidateDimensions(tuple(dimensions), tables)


@dataclass(frozen=True)
class BoardCoverage:
    """Which candidate dimensions the board's evidence touched.

    Attributes:
        names: Every candidate dimension.
        by_hypothesis: Hypothesis id -> the dimensions its linked evidence controlled or
            split by (only hypotheses with linked evidence).
        touched: Dimensions some evidence on the board touched.
        dismissed: The dismissals recorded for this investigation.
    """

    names: tuple[str, ...]
    by_hypothesis: dict[str, tuple[str, ...]]
    touched: frozenset[str]
    dismissed: tuple[DimensionDismissal, ...]

    @property
    def untouched(self) -> tuple[str, ...]:
        """Dimensions no evidence touched and nobody dismissed, in candidate order."""
        gone = {d.dimension for d in self.dismissed}
        return tuple(n for n in self.names if n not in self.touched and n not in gone)

    def hypothesis_line(self, hypothesis_id: str) -> str | None:
        """``controls or splits by: ...`` for one hypothesis, compact (None: no evidence)."""
        done = self.by_hypothesis.get(hypothesis_id)
        if done is None:
            return None
        missing = [n for n in self.names if n not in done]
        if not done:
            return "dimensions controlled or split by: none yet"
        if not missing:
            return "dimensions controlled or split by: every candidate dimension"
        if len(missing) < len(done):
            return f"dimensions controlled or split by: all but {', '.join(missing)}"
        return f"dimensions controlled or split by: {', '.join(done)}"

    def board_lines(self) -> list[str]:
        """The board-wide part of the map: untouched dimensions, then dismissals."""
        left = self.untouched
        lines = [f"CANDIDATE DIMENSIONS ({len(self.names)}), {len(left)} of them untouched by "
                 "any evidence: " + (", ".join(left) if left else "none")]
        if self.dismissed:
            lines.append("DISMISSED DIMENSIONS: " + "; ".join(
                f"{d.dimension} ({d.reason})" for d in self.dismissed))
        return lines


def board_coverage(board: Board, candidates: CandidateDimensions,
                   investigation_id: str | None) -> BoardCoverage | None:
    """The coverage map of one investigation's evidence (None without candidates)."""
    if not candidates.dimensions:
        return None
    evidence = board.list_evidence(investigation_id=investigation_id)
    touched_by = {e.id: _touched(candidates, e.sql) for e in evidence}
    by_hypothesis: dict[str, set[str]] = {}
    for link in board.list_links():
        if link.evidence_id in touched_by:
            by_hypothesis.setdefault(link.hypothesis_id, set()).update(
                touched_by[link.evidence_id])
    names = candidates.names
    ordered = {h: tuple(n for n in names if n in hit) for h, hit in by_hypothesis.items()}
    touched = frozenset().union(*touched_by.values()) if touched_by else frozenset()
    dismissed = tuple(board.list_dimension_dismissals(investigation_id=investigation_id))
    return BoardCoverage(names, ordered, touched, dismissed)


@lru_cache(maxsize=4096)
def _touched(candidates: CandidateDimensions, sql: str) -> frozenset[str]:
    """The candidate dimensions one statement filters or groups by (parsed once)."""
    found = coverage_map(candidates.dimensions, [(None, sql)], dict(candidates.tables))
    return frozenset(found.dimensions) - frozenset(found.untouched)
