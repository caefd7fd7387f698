"""The coverage map of a board, as the team reads it in the digest.

The candidate dimensions of the database (:func:`~d2_notebook.data.dimensions.
candidate_dimensions`) are read once per investigation (:func:`read_candidates`). Every
evidence's SQL is read with :func:`~d2_notebook.data.coverage.column_usage` into the
candidate dimensions it filtered or grouped by; :func:`board_coverage` gathers them per
hypothesis (through the links) and for the whole board, and subtracts the dimensions the
orchestrator dismissed with a reason. The digest shows it compactly (it is in every
prompt); the orchestrator's ``finish`` is refused while :attr:`BoardCoverage.untouched`
is not empty. Dimensions of tables no key path joins to the tables the evidence reads
are not untouched but *unreachable*: listed once, by table, and never blocking ``finish``
(no analysis of the evidence's population can split by them).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache

import pandas as pd

from d2_notebook.board import Board, DimensionDismissal, ToolCall
from d2_notebook.data import GuardedSQL
from d2_notebook.data.coverage import ColumnUsage, column_usage, selected_columns
from d2_notebook.data.dimensions import Dimension, EntityColumn, profile_columns, read_catalog
from d2_notebook.errors import D2Error, SQLError


@dataclass(frozen=True)
class CandidateDimensions:
    """The database's candidate dimensions and its tables' columns (to place columns).

    Attributes:
        dimensions: Every candidate dimension, as the analysis tools name them.
        tables: ``(table, its columns)`` pairs.
        joins: ``(child, parent)`` table pairs of the join graph's edges.
        entities: Text columns with too many values to be dimensions, each value over
            several rows (a user, a caller): named in the map, never blocking ``finish``.
    """

    dimensions: tuple[Dimension, ...] = ()
    tables: tuple[tuple[str, tuple[str, ...]], ...] = ()
    joins: tuple[tuple[str, str], ...] = ()
    entities: tuple[EntityColumn, ...] = ()

    def __hash__(self) -> int:
        """Hashed once: the value keys the per-statement cache of :func:`_touched`, looked
        up for every evidence each time a digest is drawn."""
        if "_hash" not in self.__dict__:
            self.__dict__["_hash"] = hash((self.dimensions, self.tables, self.joins,
                                           self.entities))
        return self.__dict__["_hash"]

    def reachable_from(self, tables: frozenset[str]) -> frozenset[str]:
        """The tables a key path joins to any of ``tables`` (themselves included)."""
        reached, queue = set(tables), list(tables)
        while queue:
            table = queue.pop()
            for child, parent in self.joins:
                for here, there in ((child, parent), (parent, child)):
                    if here == table and there not in reached:
                        reached.add(there)
                        queue.append(there)
        return frozenset(reached)

    @cached_property
    def names(self) -> tuple[str, ...]:
        """The dimensions' names, in order, without repeats."""
        return tuple(dict.fromkeys(d.name for d in self.dimensions))


_ENTITIES_SHOWN = 8
"""Most entity columns the map names (those no evidence grouped by first)."""

NO_CANDIDATES = CandidateDimensions()
"""For a database whose dimensions could not be read: no coverage map is shown."""


def read_candidates(sql: GuardedSQL) -> CandidateDimensions:
    """Profile the database once through the guard (one query per table).

    A database whose catalog cannot be profiled (the guard refuses a query, a table
    vanished) gives :data:`NO_CANDIDATES`: the investigation runs without a map.
    """
    try:
        catalog = read_catalog(sql)
        profile = profile_columns(sql, catalog=catalog)
    except (D2Error, ValueError):
        return NO_CANDIDATES
    dimensions = [d for d in profile.dimensions
                  if d.copy_of is None]  # a copy splits the rows its column does
    tables = tuple((t.name, tuple(c.name for c in t.columns)) for t in catalog.tables)
    joins = tuple(dict.fromkeys((e.child, e.parent) for e in catalog.graph.edges))
    return CandidateDimensions(tuple(dimensions), tables, joins, profile.entities)


@dataclass(frozen=True)
class BoardCoverage:
    """Which candidate dimensions the board's evidence touched.

    Attributes:
        names: Every candidate dimension.
        by_hypothesis: Hypothesis id -> the dimensions its linked evidence controlled or
            split by (only hypotheses with linked evidence).
        touched: Dimensions some evidence on the board touched.
        dismissed: The dismissals recorded for this investigation (each exempts its
            dimension from the checks, whatever evidence did later).
        unreachable: ``(table, its dimensions)`` for tables no key path joins to the
            tables the evidence reads (empty until some evidence reads a table).
        measured: Dimensions of the columns the evidence measures and never splits by —
            an analysis call's metric, or a column only ever aggregated (``avg(o.died)``):
            the outcome itself, never a dimension left untouched.
    """

    names: tuple[str, ...]
    by_hypothesis: dict[str, tuple[str, ...]]
    touched: frozenset[str]
    dismissed: tuple[DimensionDismissal, ...]
    unreachable: tuple[tuple[str, tuple[str, ...]], ...] = ()
    measured: tuple[str, ...] = ()
    entities: tuple[EntityColumn, ...] = ()
    """The database's entity columns (:class:`~d2_notebook.data.dimensions.EntityColumn`)."""
    grouped_entities: frozenset[str] = frozenset()
    """The names of those some evidence groups or splits by."""

    @property
    def unreachable_names(self) -> frozenset[str]:
        """Every dimension of an unreachable table."""
        return frozenset(n for _, names in self.unreachable for n in names)

    @property
    def unexamined_dismissals(self) -> tuple[DimensionDismissal, ...]:
        """The dismissals of dimensions no evidence touched: what the report lists as
        not examined (a dimension dismissed early and split by later was examined after
        all; a report that listed it understated what was done)."""
        return tuple(d for d in self.dismissed if d.dimension not in self.touched)

    @property
    def untouched(self) -> tuple[str, ...]:
        """Reachable dimensions no evidence touched and nobody dismissed, in order."""
        gone = ({d.dimension for d in self.dismissed} | self.unreachable_names
                | set(self.measured))
        return tuple(n for n in self.names if n not in self.touched and n not in gone)

    def hypothesis_line(self, hypothesis_id: str) -> str | None:
        """``controls or splits by: ...`` for one hypothesis, compact (None: no evidence)."""
        done = self.by_hypothesis.get(hypothesis_id)
        if done is None:
            return None
        away = self.unreachable_names | set(self.measured)
        missing = [n for n in self.names if n not in done and n not in away]
        if not done:
            return "dimensions controlled or split by: none yet"
        if not missing:
            return "dimensions controlled or split by: every candidate dimension"
        if len(missing) < len(done):
            return f"dimensions controlled or split by: all but {', '.join(missing)}"
        return f"dimensions controlled or split by: {', '.join(done)}"

    def board_lines(self) -> list[str]:
        """The board-wide part of the map: untouched dimensions, those evidence touched,
        then unreachable ones, the metric's own columns, the entity columns and
        dismissals."""
        left = self.untouched
        lines = [f"CANDIDATE DIMENSIONS ({len(self.names)}), {len(left)} of them untouched by "
                 "any evidence: " + (", ".join(left) if left else "none")]
        touched = [n for n in self.names if n in self.touched]
        if touched:  # the count's other part: an orchestrator could not tell where one was
            lines.append(f"TOUCHED BY EVIDENCE ({len(touched)}): " + ", ".join(touched))
        if self.unreachable:
            tables = ", ".join(f"{t} ({len(n)})" for t, n in self.unreachable)
            lines.append(f"UNREACHABLE DIMENSIONS (no key joins their table to the tables the "
                         f"evidence reads; they do not block finishing): {tables}")
        if self.measured:
            lines.append("THE METRIC'S OWN COLUMNS (the outcome the analysis calls measure; "
                         "not dimensions to split by): " + ", ".join(self.measured))
        if self.entities:
            ordered = sorted(self.entities,  # ungrouped first
                             key=lambda e: e.name in self.grouped_entities)
            shown = ", ".join(
                f"{e.name} ({'' if e.exact else 'about '}{e.values} values; "
                + ("grouped by evidence" if e.name in self.grouped_entities
                   else "no evidence groups by it") + ")"
                for e in ordered[:_ENTITIES_SHOWN])
            more = (f", and {len(ordered) - _ENTITIES_SHOWN} more"
                    if len(ordered) > _ENTITIES_SHOWN else "")
            lines.append(
                "ENTITY COLUMNS (too many values to be dimensions, so no analysis tool "
                "splits by them; who leads, and how much the entities vary, is a GROUP BY "
                f"question; they do not block finishing): {shown}{more}")
        if self.dismissed:
            lines.append("DISMISSED DIMENSIONS: " + "; ".join(
                f"{d.dimension} ({d.reason})" for d in self.dismissed))
        return lines


def board_coverage(board: Board, candidates: CandidateDimensions,
                   investigation_id: str | None) -> BoardCoverage | None:
    """The coverage map of one investigation's evidence (None without candidates)."""
    if not candidates.dimensions:
        return None
    evidence = board.list_evidence(investigation_id=investigation_id, include_reused=True)
    calls = {e.id: board.tool_call_of(e.id) for e in evidence}
    read = {e.id: _touched(candidates, e.sql) for e in evidence}
    for evidence_id, call in calls.items():  # what compare_within could not hold fixed
        if call is not None and call.tool == "compare_within":
            controlled, tables, aggregated = read[evidence_id]
            read[evidence_id] = (
                controlled - _not_held_fixed(board.evidence_frame(evidence_id)),
                tables, aggregated)
    touched_by = {key: found for key, (found, _, _) in read.items()}
    tables_read = frozenset().union(*(tables for _, tables, _ in read.values())) if read \
        else frozenset()
    by_hypothesis: dict[str, set[str]] = {}
    for link in board.list_links():
        if link.evidence_id in touched_by:
            by_hypothesis.setdefault(link.hypothesis_id, set()).update(
                touched_by[link.evidence_id])
    names = candidates.names
    ordered = {h: tuple(n for n in names if n in hit) for h, hit in by_hypothesis.items()}
    touched = frozenset().union(*touched_by.values()) if touched_by else frozenset()
    dismissed = tuple(board.list_dimension_dismissals(investigation_id=investigation_id))
    unreachable: dict[str, list[str]] = {}
    if tables_read:
        reachable = candidates.reachable_from(tables_read)
        for dimension in candidates.dimensions:
            if dimension.table not in reachable and dimension.name not in touched:
                unreachable.setdefault(dimension.table, []).append(dimension.name)
    aggregated = frozenset().union(*(m for _, _, m in read.values())) if read else frozenset()
    measured = (_measured(candidates, calls) | aggregated) - touched
    grouped = frozenset().union(*(_entities_grouped(candidates, e.sql) for e in evidence)) \
        if candidates.entities else frozenset()
    return BoardCoverage(names, ordered, touched, dismissed,
                         tuple((t, tuple(dict.fromkeys(n))) for t, n in unreachable.items()),
                         tuple(n for n in names if n in measured), candidates.entities,
                         grouped)


@lru_cache(maxsize=4096)
def _usage(candidates: CandidateDimensions, sql: str) -> ColumnUsage | None:
    """How one statement uses the catalog's columns (None: it does not parse), parsed once
    for :func:`_touched` and :func:`_entities_grouped` alike."""
    try:
        return column_usage(sql, dict(candidates.tables))
    except SQLError:
        return None


@lru_cache(maxsize=4096)
def _entities_grouped(candidates: CandidateDimensions, sql: str) -> frozenset[str]:
    """The entity columns one statement groups or splits by (parsed once); a filter
    (``WHERE user = 'u7'``) looks at one entity, not at how they vary."""
    usage = _usage(candidates, sql)
    if usage is None:
        return frozenset()
    used = {(ref.table, ref.column) for ref in usage.groups | usage.splits}
    return frozenset(c.name for c in candidates.entities
                     if (c.table, c.column.lower()) in used)


def _measured(candidates: CandidateDimensions,
              calls: dict[str, ToolCall | None]) -> frozenset[str]:
    """The dimensions of the columns the analysis calls' metrics are computed from
    (``calls``: each evidence's analysis-tool call, None for a plain query)."""
    found: set[str] = set()
    for call in calls.values():
        if call is None or not call.args.get("metric") or not call.args.get("source"):
            continue
        found |= _metric_dimensions(candidates, str(call.args["metric"]),
                                    str(call.args["source"]))
    return frozenset(found)


def _not_held_fixed(frame: pd.DataFrame) -> frozenset[str]:
    """The dimensions of a ``compare_within`` result with no confounding test on any row:
    its SQL splits by them, but fewer than two of their strata held both arms, so the
    effect was never standardised over them (a real judge read "every candidate
    dimension" controlled while the one that mattered had not been)."""
    if not {"dimension", "confounding_q"} <= set(frame.columns):
        return frozenset()
    tested = frame.groupby("dimension", sort=False)["confounding_q"].apply(
        lambda q: bool(q.notna().any()))
    return frozenset(str(name) for name, ok in tested.items()
                     if not ok and not str(name).startswith("("))


@lru_cache(maxsize=1024)
def _metric_dimensions(candidates: CandidateDimensions, metric: str,
                       source: str) -> frozenset[str]:
    try:
        columns = selected_columns(f"SELECT {metric} FROM {source}", dict(candidates.tables))
    except SQLError:
        return frozenset()
    read = {(c.table, c.column) for c in columns}
    return frozenset(d.name for d in candidates.dimensions
                     if (d.table, d.column.lower()) in read)


@lru_cache(maxsize=4096)
def _touched(candidates: CandidateDimensions,
             sql: str) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """The candidate dimensions one statement filters, groups or splits by, the catalog tables it
    reads, and the dimensions of the columns it aggregates (parsed once)."""
    usage = _usage(candidates, sql)
    if usage is None:
        return frozenset(), frozenset(), frozenset()
    aggregated = {(c.table, c.column) for c in usage.measured}
    measured = frozenset(d.name for d in candidates.dimensions
                         if (d.table, d.column.lower()) in aggregated)
    controlled = frozenset(d.name for d in candidates.dimensions
                           if any(ref.controls(d) for ref in usage.controlled))
    return controlled, usage.tables, measured
