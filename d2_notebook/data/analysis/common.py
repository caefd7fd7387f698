"""What the three tools share: reading inputs into a plan, running the pass, reading moments."""

from __future__ import annotations

import math
import re
import time
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import pandas as pd

from d2_notebook.data.analysis import inputs
from d2_notebook.data.analysis.inputs import Source
from d2_notebook.data.analysis.plan import (
    PACK,
    TOTAL,
    Plan,
    build_plan,
    pack_columns,
    scan_sql,
)
from d2_notebook.data.analysis.stats import (
    MIN_SUPPORT_CAP,
    MIN_SUPPORT_FLOOR,
    NUMERIC_COPY_CORRELATION,
    Moments,
    OutcomeValue,
    adaptive_min_support,
    explained_share,
    is_binary,
    is_set_by_outcome,
)
from d2_notebook.data.analysis.text import describe_value
from d2_notebook.data.dimensions import (
    Catalog,
    Dimension,
    DimensionKind,
    candidate_dimensions,
    read_catalog,
)
from d2_notebook.data.schema import quote_ident

if TYPE_CHECKING:
    from d2_notebook.data.guarded_sql import GuardedSQL

__all__ = ["DEFAULT_ALPHA", "Copies", "Pass", "Prepared", "Support", "check_settings",
           "column_copies", "definition_lines", "has_few_values", "prepare", "run_pass"]

_PASS_ROWS = 1_000_000
#: Default level of every tool's flags. One call runs tens to hundreds of tests and each
#: flag draws a model's attention, so pure noise should almost never raise one: at 0.001
#: about one call in a thousand on noise flags anything (q-values are in the rows, so
#: near misses stay visible).
DEFAULT_ALPHA = 0.001


@dataclass(frozen=True)
class Prepared:
    """Checked inputs and the dimension plan of one tool call."""

    catalog: Catalog
    source: Source
    value_sql: str
    where: str | None
    plan: Plan


@dataclass(frozen=True)
class Pass:
    """The moments returned by one pass, keyed by (dimension index, value, *by values)."""

    sql: str
    moments: dict[tuple, Moments]
    duration_s: float

    def total(self, *by: object) -> Moments:
        """The all-rows moments (for the given ``by`` values)."""
        return self.moments.get((TOTAL, None, *by), Moments(0, 0, 0))

    def split_by_flag(self) -> dict[int, dict[str, tuple[Moments, Moments]]]:
        """For a pass grouped by one yes/no column (the exposure, the later period):
        dimension index -> value as models read it -> (moments of the rows where it is 1,
        moments of the others); a side with no rows is empty moments."""
        zero = Moments(0, 0, 0)
        values: dict[int, dict[str, list[Moments]]] = {}
        for (index, value, flag), group in self.moments.items():
            if index >= 0:
                pair = values.setdefault(index, {}).setdefault(describe_value(value),
                                                               [zero, zero])
                pair[0 if flag == 1 else 1] = group
        return {index: {value: (pair[0], pair[1]) for value, pair in found.items()}
                for index, found in values.items()}


@dataclass(frozen=True)
class Support:
    """The minimum support of one call: the fewest rows a group needs to be tested.

    Given by the caller, or adapted to the data: 1% of the population's rows, between
    :data:`~d2_notebook.data.analysis.stats.MIN_SUPPORT_FLOOR` and
    :data:`~d2_notebook.data.analysis.stats.MIN_SUPPORT_CAP`; dimensions the caller named
    are tested down to the floor, so that the group a question names is examined.

    Attributes:
        rows: The minimum support.
        adapted: True when it was chosen from the data.
        named: True when the caller named the dimensions.
        population: Rows in the population.
    """

    rows: int
    adapted: bool
    named: bool
    population: int

    @classmethod
    def of(cls, given: int | None, population: float, *, named: bool) -> Support:
        """The support a call uses (``given`` None: adapted)."""
        if given is not None:
            return cls(given, False, named, int(population))
        rows = MIN_SUPPORT_FLOOR if named else adaptive_min_support(population)
        return cls(rows, True, named, int(population))

    def describe(self) -> str:
        """How it was chosen, for the summary."""
        if not self.adapted:
            return f"minimum support {self.rows} rows, as set"
        if self.named:
            return f"minimum support {self.rows} rows for the dimensions named"
        return (f"minimum support {self.rows} rows: 1% of the {self.population} rows, between "
                f"{MIN_SUPPORT_FLOOR} and {MIN_SUPPORT_CAP}")


_CALENDAR_SQL = re.compile(r"^\s*(month|quarter)\s*\(", re.IGNORECASE)


def _read_by_inputs(plan: Plan, parsed: Source, candidates: list[Dimension],
                    defining: set[tuple[str, str]],
                    exclude: dict[str, str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The requested dimensions left out only because another input (the exposure, the
    period) reads their column, with those inputs: a real-model collector read "part of
    the metric's definition" for a year its exposure, not its metric, read."""
    by_name = {d.name: d for d in candidates}
    found = []
    for name, expression in plan.definitional:
        if expression is not None:
            columns = inputs.metric_columns(expression, parsed)
        else:
            dimension = by_name.get(name.removeprefix("has "))
            columns = {(dimension.table, dimension.column.lower())} if dimension else set()
        readers = tuple(input_name for input_name, sql in exclude.items()
                        if columns & inputs.metric_columns(sql, parsed))
        if columns and readers and not columns & defining:
            found.append((name, readers))
    return tuple(found)


def definition_lines(plan: Plan) -> list[str]:
    """The summary lines for requested dimensions the metric's definition reads, for the
    dimensions the default scan leaves out because only the filter reads them, and for
    requested SQL ``month(...)`` / ``quarter(...)`` expressions, which SQL reads as the
    month or quarter *of the year* (every year together), unlike the tools' dimensions
    of the same name, which carry the year."""
    lines = []
    by_inputs = dict(plan.definitional_inputs)
    defining = [name for name, _ in plan.definitional if name not in by_inputs]
    if defining:
        lines.append(f"Not split by {', '.join(defining)}: part of the metric's definition "
                     "(the metric or the source's join condition reads it), so it would "
                     "explain the metric trivially.")
    for name, readers in by_inputs.items():
        lines.append(f"Not split by {name}: the {' and the '.join(readers)} reads its column, "
                     "and no tool splits by its own inputs' columns; to hold it fixed, run the "
                     "tool once per value with a where filter.")
    if plan.filter_left_out:
        lines.append(f"Left out of this scan: {', '.join(plan.filter_left_out)}, which the "
                     "where filter reads (it may leave them a single value); to split the "
                     "filtered rows by one, name it in dimensions.")
    calendar = [p.name for p in plan.dimensions
                if p.dimension is None and _CALENDAR_SQL.match(p.name)]
    if calendar:
        lines.append(f"Read as SQL: {', '.join(calendar)} — the month or quarter of the year "
                     "(1–12 or 1–4, all years together). For calendar months or quarters with "
                     "their year, name the dimension as the tools list it, with the table: "
                     "month(<table>.<column>), quarter(<table>.<column>).")
    return lines


def check_settings(min_support: int | None, alpha: float) -> None:
    """Refuse settings the statistics cannot honour (a clear message naming the fix).

    ``min_support`` None means "adapt to the population" (see
    :func:`~d2_notebook.data.analysis.stats.adaptive_min_support`).
    """
    if min_support is not None and (isinstance(min_support, bool) or not isinstance(
            min_support, int) or min_support < 2):
        raise ValueError(f"min_support must be an integer >= 2 (or omitted to adapt it to "
                         f"the data), got {min_support!r}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1 (e.g. 0.01), got {alpha!r}")


def prepare(
    sql: GuardedSQL,
    *,
    source: str,
    metric: str,
    where: str | None,
    dimensions: list[str] | None,
    exclude: dict[str, str] | None = None,
    max_levels: int = 30,
    with_dimensions: bool = True,
) -> Prepared:
    """Check the inputs, find the candidate dimensions and plan the pass.

    Args:
        exclude: Further inputs, ``{input name: SQL expression over the source}``
            (the exposure, the time column), bound like the metric; their columns are
            not used as dimensions. Nor are the columns the metric and the source's join
            conditions read (the metric's definition). The columns only the ``where``
            filter reads are left out of the default scan (named in the summary) and
            split when requested.
        with_dimensions: False for tools that split by no dimension (``trend``).

    Raises:
        ValueError, UnsafeSQLError, QueryFailedError: Bad input (the message names it).
    """
    if dimensions is not None and (isinstance(dimensions, str) or not isinstance(
            dimensions, list | tuple)):
        raise ValueError("dimensions must be a list of column expressions or dimension names")
    catalog = read_catalog(sql)
    parsed = inputs.parse_source(source, catalog)
    value_sql = inputs.metric_value(metric)
    condition = inputs.optional_where(where)
    metric_columns = inputs.metric_columns(value_sql, parsed)
    metric_tables = frozenset(t for t, _ in metric_columns)
    excluded_inputs: set[tuple[str, str]] = set()
    for expression in (exclude or {}).values():
        excluded_inputs |= inputs.metric_columns(expression, parsed)
    filtered = inputs.metric_columns(condition, parsed) if condition else set()
    joined = inputs.join_columns(parsed)
    excluded = metric_columns | excluded_inputs | joined | filtered
    candidates = candidate_dimensions(sql, max_levels=max_levels, catalog=catalog) \
        if with_dimensions else []
    requested = list(dimensions) if dimensions is not None else None
    tables = {table for _, table in parsed.aliases}
    outcome_tables = frozenset(  # a 1:1 satellite of another source table: its outcomes
        e.child for e in catalog.graph.edges
        if e.one_to_one and e.child in metric_tables and e.parent in tables - {e.child})
    # a time window in the filter restricts the population without defining the metric:
    # the date parts of its column stay candidates (time can confound like any dimension)
    filter_only = frozenset(filtered - metric_columns - excluded_inputs - joined)
    time_window = frozenset(
        (d.table, d.column.lower()) for d in candidates if d.kind is DimensionKind.DATE_PART
        and (d.table, d.column.lower()) in filter_only)
    metric_times = _complete_time_columns(sql, parsed, condition, candidates,
                                          metric_columns - excluded_inputs) | time_window
    keys_only = frozenset(inputs.key_columns(parsed) - metric_columns - excluded_inputs)
    plan = build_plan(catalog, parsed, candidates, requested if with_dimensions else [],
                      excluded, outcome_tables, metric_times, filter_only, keys_only)
    plan = replace(plan, definitional_inputs=_read_by_inputs(
        plan, parsed, candidates, metric_columns | (joined - keys_only), exclude or {}))
    pieces = {"metric": value_sql, **(exclude or {})}
    pieces.update({f"dimension {e!r}": e for e, a in plan.row_columns
                   if a.startswith("__d") and plan.dimensions[int(a[3:])].dimension is None})
    pieces.update({f"dimension {e!r}": e for _, e in plan.definitional if e is not None})
    hints = {name: _dimension_hint(expression, catalog, parsed, candidates)
             for name, expression in pieces.items() if name.startswith("dimension ")}
    inputs.require_binds(sql, parsed, condition, pieces,
                         {name: hint for name, hint in hints.items() if hint})
    return Prepared(catalog, parsed, value_sql, condition, plan)


def _dimension_hint(text: str, catalog: Catalog, source: Source,
                    candidates: list[Dimension]) -> str | None:
    """A spelling that works for a requested dimension naming a table outside the source:
    its candidate dimensions when a key path reaches it (``table.column`` for an N:1 or
    1:1 table, ``has table.column`` for a 1:N one), else how to join it into the source."""
    qualifier = text.strip().removeprefix("has ").split("(")[-1].split(".")[0].strip()
    table = catalog.table(qualifier) if qualifier else None
    if table is None or source.table_of(qualifier) is not None:
        return None
    plan = build_plan(catalog, source, [d for d in candidates if d.table == table.name],
                      None, set())
    names = [p.name for p in plan.dimensions]
    if names:
        shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
        return (f"{table.name} is not in the source, but a key reaches it: name one of its "
                f"dimensions as the tools write them: {shown}.")
    joins = [e for e in catalog.graph.edges if table.name in (e.child, e.parent)
             and ({e.child, e.parent} - {table.name}) & {t for _, t in source.aliases}]
    if joins:
        edge = joins[0]
        other = edge.parent if edge.child == table.name else edge.child
        alias = source.alias_of(other)
        mine, theirs = ((edge.child_columns, edge.parent_columns) if edge.child == table.name
                        else (edge.parent_columns, edge.child_columns))
        on = " AND ".join(f"x.{quote_ident(m)} = {alias}.{quote_ident(t)}"
                          for m, t in zip(mine, theirs, strict=True))
        return (f"{table.name} is not in the source and has no candidate dimension there; "
                f"join it in the source ('{source.sql} LEFT JOIN {table.name} x ON {on}') "
                "and name x.<column>.")
    return (f"no key joins {table.name} to the source's tables: join it in the source with an "
            f"explicit condition ('{source.sql} LEFT JOIN {table.name} x ON ...') and name "
            "x.<column>, or declare the key with relationships=.")


def _complete_time_columns(sql: GuardedSQL, source: Source, where: str | None,
                           candidates: list[Dimension],
                           columns: set[tuple[str, str]]) -> frozenset[tuple[str, str]]:
    """The metric's date or timestamp column whose date parts stay candidate dimensions:
    when the metric reads more than one column (a duration between two times), the
    column with no NULL in the population that starts earliest (its start; the start
    month is a real dimension of a duration).

    Left out: the time column of a metric that reads nothing else (``avg(t.day >= d)`` is
    a function of it, so its parts would "explain" the metric trivially), a column with
    NULLs (they usually encode the outcome: an end time missing while a case is open), and
    the later time of a duration: its year is the start's plus the duration, so a real
    model read "year(warranty_expiration) = 2029" as a segment of long warranties and
    holding it fixed as confounding of every warranty length.
    """
    if len(columns) < 2:
        return frozenset()
    timed = sorted({(d.table, d.column) for d in candidates if d.kind is DimensionKind.DATE_PART
                    and (d.table, d.column.lower()) in columns})
    condition = f" WHERE ({where})" if where else ""
    starts: dict[tuple[str, str], pd.Timestamp] = {}
    for table, column in timed:
        refs = [f"{alias}.{quote_ident(column)}" for alias, name in source.aliases
                if name == table]
        missing = ", ".join(f"count(*) - count({ref})" for ref in refs)
        earliest = ", ".join(f"min({ref})" for ref in refs)
        found = sql.run(f"SELECT {missing}, {earliest} FROM {source.sql}{condition}",
                        max_rows=1).frame.iloc[0].tolist()
        if all(int(n) == 0 for n in found[:len(refs)]):
            starts[(table, column.lower())] = min(pd.Timestamp(v) for v in found[len(refs):])
    if not starts:
        return frozenset()
    first = min(starts.values())
    return frozenset(key for key, start in starts.items() if start == first)


@dataclass(frozen=True)
class Copies:
    """The binned numeric columns of the source tables that restate the metric
    (:func:`column_copies`).

    Attributes:
        numeric: Name -> the share of the metric's variance the column explains linearly
            (``r²``), for ``|r|`` at least :data:`NUMERIC_COPY_CORRELATION`.
        set_by_outcome: Name -> the value every row of one outcome has, for the columns
            the outcome sets (:func:`~d2_notebook.data.analysis.stats.is_set_by_outcome`).
    """

    numeric: dict[str, float] = field(default_factory=dict)
    set_by_outcome: dict[str, OutcomeValue] = field(default_factory=dict)

    @property
    def names(self) -> set[str]:
        """Every column named, of both kinds."""
        return {*self.numeric, *self.set_by_outcome}


def column_copies(sql: GuardedSQL, prepared: Prepared, total: Moments, *, requested: bool,
                  known: Collection[str] = ()) -> Copies:
    """The binned numeric columns of the source tables that restate the metric over the
    tool's rows (``total``: their moments, from the pass): those that copy it (``|r|`` at
    least :data:`NUMERIC_COPY_CORRELATION`), and, for a 0/1 metric, those the outcome sets
    (every row of one outcome has one value of the column, rare among the other rows:
    :func:`~d2_notebook.data.analysis.stats.is_set_by_outcome`), which their bins hide
    (net revenue 0 on every returned order sits in the lowest bin with the cheap orders
    kept). One aggregate query finds both; a second counts the other outcome's rows at
    the shared value, only when some column has one. The dimensions a tool already set
    aside (``known``) are not tested again; a column empty (NULL) on every row of one
    outcome counts too (its bins' NULL stratum also shows it).

    Only for the default scan: dimensions named by the caller (``requested``) are split
    as asked (a price can copy the metric over single-item orders and still be a cause
    worth splitting by), so none is returned."""
    binned = [(index, raw) for index, raw in prepared.plan.binned
              if prepared.plan.dimensions[index].name not in known]
    if not binned or requested:
        return Copies()
    columns = ", ".join(f"({raw})::DOUBLE AS __x{i}" for i, (_, raw) in enumerate(binned))
    rows = (f"(SELECT ({prepared.value_sql})::DOUBLE AS __v, {columns} FROM "
            f"{prepared.source.sql}" + (f" WHERE ({prepared.where})" if prepared.where else "")
            + ") AS __t")
    names = [prepared.plan.dimensions[index].name for index, _ in binned]
    if is_binary(total):
        shifts = [prepared.plan.dimensions[index].dimension.edges for index, _ in binned]
        found = _by_outcome(sql, rows, names, [e[len(e) // 2] if e else 0.0 for e in shifts])
        if found is not None:
            return found
    correlations = sql.run(f"SELECT {', '.join(f'corr(__v, __x{i})' for i in range(len(names)))}"
                           f" FROM {rows}", max_rows=1).frame.iloc[0].tolist()
    return Copies({name: float(r) ** 2 for name, r in zip(names, correlations, strict=True)
                   if r is not None and not pd.isna(r)
                   and abs(float(r)) >= NUMERIC_COPY_CORRELATION})


FEW_VALUES = 12
"""A metric with at most this many distinct values (a rating, a small count) has moments
that are little more than counts: equal moments do not show equal rows."""


def has_few_values(sql: GuardedSQL, prepared: Prepared) -> bool:
    """Whether the metric takes at most :data:`FEW_VALUES` distinct values over the
    population (one guarded query)."""
    rows = (f"(SELECT ({prepared.value_sql}) AS __v FROM {prepared.source.sql}"
            + (f" WHERE ({prepared.where})" if prepared.where else "") + ") AS __t")
    count = sql.run(f"SELECT count(DISTINCT __v) FROM {rows}", max_rows=1).frame.iat[0, 0]
    return int(count) <= FEW_VALUES


def _by_outcome(sql: GuardedSQL, rows: str, names: list[str],
                shifts: list[float]) -> Copies | None:
    """:func:`column_copies` for a 0/1 metric, from one query grouped by the outcome:
    per column, its count, sum and sum of squares (less ``shifts``, a middle bin edge, so
    the sums keep their precision) and its smallest and largest value. Its correlation
    with the metric is the point-biserial one (``r²``: the share of the column's variance
    between the two outcomes); its single value on one outcome's rows comes from the
    smallest and largest. Grouped, these aggregates cost what one ``corr`` per column does
    over all rows (FILTER clauses cost three times as much). None when the metric is not
    0/1 after all (a value other than 0 and 1)."""
    aggregates = ["count(*)"]
    for i, shift in enumerate(shifts):
        centred = f"(__x{i} - ({float(shift)!r}))"
        aggregates += [f"count(__x{i})", f"sum({centred})", f"sum({centred} * {centred})",
                       f"min(__x{i})", f"max(__x{i})"]
    frame = sql.run(f"SELECT CASE WHEN __v IN (0, 1) THEN __v ELSE -1 END AS __o, "
                    f"{', '.join(aggregates)} FROM {rows} WHERE __v IS NOT NULL GROUP BY __o",
                    max_rows=3).frame
    groups = {int(row[0]): row[1:] for row in frame.itertuples(index=False)}
    if set(groups) != {0, 1}:
        return None
    size = {y: int(groups[y][0]) for y in (0, 1)}
    numeric: dict[str, float] = {}
    shared: list[tuple[int, str, int, float | None]] = []  # (column, name, outcome, value)
    for i, name in enumerate(names):
        cells = {y: groups[y][1 + 5 * i: 6 + 5 * i] for y in (0, 1)}
        moments = [Moments(float(c[0] or 0), float(c[1] or 0.0), float(c[2] or 0.0))
                   for c in cells.values()]
        r_squared = explained_share(moments, moments[0] + moments[1])  # both outcomes' rows
        if r_squared >= NUMERIC_COPY_CORRELATION ** 2:
            numeric[name] = r_squared
        elif (one := _one_value(cells, size)) is not None:
            shared.append((i, name, *one))
    if not shared:
        return Copies(numeric)
    # how many rows of the other outcome have the shared value too: only now is it known
    counts = ", ".join(f"count(*) FILTER (WHERE __v = {1 - y} AND __x{i} "
                       + ("IS NULL)" if value is None else f"= {value!r})")
                       for i, _, y, value in shared)
    others_with = sql.run(f"SELECT {counts} FROM {rows}", max_rows=1).frame.iloc[0].tolist()
    set_by_outcome = {}
    for (_, name, y, value), m in zip(shared, others_with, strict=True):
        outcome = OutcomeValue(y, value, size[y], size[1 - y], int(m or 0))
        if is_set_by_outcome(outcome):
            set_by_outcome[name] = outcome
    return Copies(numeric, set_by_outcome)


def _one_value(cells: dict[int, tuple], size: dict[int, int]) -> tuple[int, float | None] | None:
    """The outcome (1 or 0) whose rows, :data:`MIN_SUPPORT_FLOOR` or more, all have one
    value of a column, and that value (None: all empty), from the column's count, smallest
    and largest value over each outcome's rows (``cells``); None if neither has one."""
    for y in (1, 0):
        filled, _, _, low, high = cells[y]
        if size[y] < MIN_SUPPORT_FLOOR:
            continue
        if int(filled or 0) == 0:
            return (y, None)
        if (int(filled) == size[y] and not pd.isna(low) and float(low) == float(high)
                and math.isfinite(float(low))):
            return (y, float(low))
    return None


def run_pass(
    sql: GuardedSQL,
    prepared: Prepared,
    *,
    extra: tuple[tuple[str, str], ...] = (),
    by: tuple[str, ...] = (),
) -> Pass:
    """Run the one-pass statement through the guard and key its rows."""
    statement = scan_sql(prepared.plan, prepared.value_sql, prepared.source, prepared.where,
                         extra, by)
    start = time.perf_counter()
    result = sql.run(statement, max_rows=_PASS_ROWS)
    if result.truncated:  # moments from a cut-off set of groups would be wrong, not short
        raise ValueError(f"the pass gives more than {_PASS_ROWS:,} groups: name fewer "
                         "dimensions, or expressions with fewer distinct values")
    frame = result.frame
    packs = pack_columns(prepared.plan)
    return Pass(statement, _moments(frame, len(by), packs), time.perf_counter() - start)


def _moments(frame: pd.DataFrame, n_by: int, packs: list[list[int]]) -> dict[tuple, Moments]:
    """Moments keyed by (dimension, value, *by); packs' joint cells summed to marginals,
    and the first pack's also to the total (a pass with packs has no total branch)."""
    width = max([1, *(len(p) for p in packs)])
    found: dict[tuple, Moments] = {}
    # NULLs (NaN, NA) become None once, column by column, not cell by cell
    cells = frame.astype(object).where(frame.notna(), None).to_numpy().tolist()
    # DuckDB returns the groups in any order (threads): sorted, the moments' order and the
    # order their float sums are added in are the same on every run, so are the results
    keyed = 1 + width + n_by
    cells.sort(key=lambda row: tuple((v is None, str(v)) for v in row[:keyed]))
    for row in cells:
        dim, values = int(row[0]), row[1: 1 + width]
        keys = tuple(row[1 + width: 1 + width + n_by])
        n, s1, s2 = row[1 + width + n_by:]
        # SQL's sum over no non-NULL value is NULL: 0 here, so that one such cell never
        # poisons the marginals summed from its pack
        moments = Moments(float(n or 0), float(s1 or 0.0), float(s2 or 0.0))
        labels = [None if v is None else str(v) for v in values]
        if dim <= PACK:
            targets = list(zip(packs[PACK - dim], labels, strict=False))
            if dim == PACK:
                targets.append((TOTAL, None))
        else:
            targets = [(dim, labels[0])]
        for index, label in targets:
            key = (index, label, *keys)
            found[key] = found[key] + moments if key in found else moments
    return found
