"""Candidate dimensions: the columns of a database worth splitting a metric by.

A candidate dimension is a non-key column with few distinct values (``VALUES``), a
numeric column with many, cut into quantile bins (``BINS``), or a part of a date or
timestamp column (``DATE_PART``: year, quarter, month, month of year, day of week, hour).
The analysis tools scan every candidate reachable from their source; the coverage map
says which of them the evidence on a board has controlled or split by.

Profiling costs one query per table; tables above :data:`PROFILE_ROWS` rows are profiled
on a system sample of about that many rows (counts of distinct values near
``max_levels`` are approximate, which only decides whether a column is scanned).

Two date columns of a table that hold the same value on every profiled row (a record's
``closed_at`` and its ``sys_updated_on``, written together) give their date parts once:
every split by the one would be the same rows as by the other, and real-model scans
listed each segment twice. The column kept is the one not named like bookkeeping
(``sys_``, ``updated``, ``modified``, ``changed``), else the first; the other's date
parts carry :attr:`Dimension.copy_of`, are left out of default scans and of the
coverage map, and still answer a tool's ``dimensions`` naming them.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import Enum
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from d2_notebook.data.catalog_access import dialect_sql
from d2_notebook.data.keys import JoinGraph, join_graph
from d2_notebook.data.schema import ColumnInfo, TableInfo, quote_ident
from d2_notebook.errors import D2Error

if TYPE_CHECKING:
    from d2_notebook.data.guarded_sql import GuardedSQL

__all__ = [
    "PROFILE_ROWS",
    "Catalog",
    "ColumnProfile",
    "DatePart",
    "Dimension",
    "DimensionKind",
    "EntityColumn",
    "candidate_dimensions",
    "profile_columns",
    "read_catalog",
]

PROFILE_ROWS = 200_000
_BIN_QUANTILES = (0.2, 0.4, 0.6, 0.8)
_NUMERIC = re.compile(r"(TINY|SMALL|BIG|HUGE|U)?INT(EGER)?|DOUBLE|FLOAT|REAL|DECIMAL.*|UTINYINT"
                      r"|USMALLINT|UINTEGER|UBIGINT")
_TEXTLIKE = re.compile(r"VARCHAR|BOOLEAN|ENUM.*|CHAR.*")
_TIMESTAMP = re.compile(r"TIMESTAMP.*")
_DAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


class DimensionKind(Enum):
    """How a column becomes a dimension."""

    VALUES = "values"
    BINS = "bins"
    DATE_PART = "date part"


class DatePart(Enum):
    """A calendar part of a date or timestamp column, with the SQL that computes it."""

    YEAR = "year"
    QUARTER = "quarter"
    MONTH = "month"
    MONTH_OF_YEAR = "month_of_year"
    DAY_OF_WEEK = "day_of_week"
    HOUR = "hour"

    def sql(self, ref: str) -> str:
        """The part of the column reference ``ref`` as a number (cheap to group by)."""
        return {
            DatePart.YEAR: f"year({ref})",
            DatePart.QUARTER: f"year({ref}) * 10 + quarter({ref})",
            DatePart.MONTH: f"year({ref}) * 100 + month({ref})",
            DatePart.MONTH_OF_YEAR: f"month({ref})",
            DatePart.DAY_OF_WEEK: f"isodow({ref})",
            DatePart.HOUR: f"hour({ref})",
        }[self]

    def label(self, key: str) -> str:
        """SQL turning a grouped :meth:`sql` value into its label (``2021-Q3``, ``1-Monday``)."""
        days = ", ".join(f"'{d}'" for d in _DAY_NAMES)
        return {
            DatePart.QUARTER: f"({key} // 10)::VARCHAR || '-Q' || ({key} % 10)::VARCHAR",
            DatePart.MONTH: f"({key} // 100)::VARCHAR || '-' || lpad(({key} % 100)::VARCHAR, 2,"
                            " '0')",
            DatePart.DAY_OF_WEEK: f"{key}::VARCHAR || '-' || [{days}][{key}]",
        }.get(self, f"{key}::VARCHAR")


@dataclass(frozen=True)
class Dimension:
    """One candidate dimension of the database.

    Attributes:
        table: The table, as written in SQL (``TableInfo.name``).
        column: The column name.
        kind: Values, bins or a date part.
        levels: Number of distinct values (approximate for sampled tables).
        part: The date part, for ``DATE_PART`` dimensions.
        edges: Bin edges (ascending), for ``BINS`` dimensions.
        copy_of: For a date part of a column that holds the same value as another date
            column of its table on every profiled row, that column (``table.column``):
            the dimension is left out of default scans and of the coverage map (it would
            split the same rows as the other's), and still answers a request naming it.
    """

    table: str
    column: str
    kind: DimensionKind
    levels: int
    part: DatePart | None = None
    edges: tuple[float, ...] = ()
    copy_of: str | None = None

    @property
    def column_name(self) -> str:
        """``table.column``: the column this dimension reads."""
        return f"{self.table}.{quote_ident(self.column)}"

    @property
    def name(self) -> str:
        """How tools and models name it: ``patients.sex``, ``month_of_year(a.admitted_on)``."""
        if self.part is not None:
            return f"{self.part.value}({self.column_name})"
        return self.column_name

    def expression(self, alias: str) -> str:
        """The dimension as SQL over ``alias``, the table's alias in a query.

        Date parts and bins are numbers (cheap to group by); :meth:`label` turns a
        grouped value into the text models read.
        """
        ref = f"{alias}.{quote_ident(self.column)}"
        if self.part is not None:
            return self.part.sql(ref)
        if self.kind is DimensionKind.BINS:
            whens = " ".join(f"WHEN {ref} < {edge!r} THEN {i}" for i, edge in enumerate(self.edges))
            return f"CASE WHEN {ref} IS NULL THEN NULL {whens} ELSE {len(self.edges)} END"
        return ref

    def label(self, key: str) -> str:
        """SQL turning a grouped :meth:`expression` value into its label text."""
        if self.part is not None:
            return self.part.label(key)
        if self.kind is DimensionKind.BINS:
            texts = [f"{e:g}" for e in self.edges]
            labels = [f"< {texts[0]}", *(f"[{a}, {b})" for a, b in itertools.pairwise(texts)),
                      f">= {texts[-1]}"]
            return f"[{', '.join(repr(x) for x in labels)}][{key} + 1]"
        return f"{key}::VARCHAR"


@dataclass(frozen=True)
class Catalog:
    """The described tables of a database and its join graph (read once per tool call)."""

    tables: tuple[TableInfo, ...]
    graph: JoinGraph

    def table(self, name: str) -> TableInfo | None:
        """The table whose SQL name or bare name is ``name`` (case-insensitive)."""
        wanted = name.lower()
        for info in self.tables:
            if wanted in (info.name.lower(), info.table.lower()):
                return info
        return None


def read_catalog(sql: GuardedSQL) -> Catalog:
    """Tables (with columns and row counts) and the join graph, read through the source's
    own catalog API and its guard (any source: see :mod:`~d2_notebook.data.catalog_access`),
    with the relationships the user declared or vetoed on it, if any."""
    access = dialect_sql(sql)
    tables = access.tables()
    keys = [key.as_row() for key in access.key_constraints()]
    return Catalog(tuple(tables), join_graph(_query(access), tables,
                                             getattr(sql, "relationships", ()),
                                             constraints=keys))


MAX_ENTITY_VALUES = 1000
"""Most distinct values a text column may have to be an :class:`EntityColumn`."""


@dataclass(frozen=True)
class EntityColumn:
    """A text column with too many values to split by (more than ``max_levels``), each
    value repeated over rows: a user, a caller, a customer. No analysis tool scans it, but
    who leads or how much the entities vary is a question a GROUP BY answers (an
    orchestrator on an InsightBench task saw "0 untouched" and no trace of ``user``,
    whose spread was a reference insight).

    Attributes:
        table: The table, as written in SQL.
        column: The column name.
        values: Its number of distinct values.
        exact: Whether ``values`` was counted (a table of at most :data:`PROFILE_ROWS`
            rows), not estimated from a sample.
    """

    table: str
    column: str
    values: int
    exact: bool = True

    @property
    def name(self) -> str:
        """``table.column``, as the coverage map names it (quoted where SQL needs it)."""
        return f"{self.table}.{quote_ident(self.column)}"


@dataclass(frozen=True)
class ColumnProfile:
    """What one profiling pass over the tables found: the candidate dimensions and the
    entity columns."""

    dimensions: tuple[Dimension, ...]
    entities: tuple[EntityColumn, ...]


def candidate_dimensions(
    sql: GuardedSQL, *, max_levels: int = 30, catalog: Catalog | None = None
) -> list[Dimension]:
    """Every candidate dimension of the database, ordered by table then column.

    Args:
        sql: The guarded connection (all profiling runs through its checker and limits).
        max_levels: Most distinct values a column may have to be a ``VALUES`` dimension
            (>= 2); numeric columns with more are cut into five quantile bins.
        catalog: A catalog already read with :func:`read_catalog`, to save the queries.

    Raises:
        ValueError: ``max_levels`` < 2.
    """
    return list(profile_columns(sql, max_levels=max_levels, catalog=catalog,
                                entities=False).dimensions)


def profile_columns(
    sql: GuardedSQL, *, max_levels: int = 30, catalog: Catalog | None = None,
    entities: bool = True,
) -> ColumnProfile:
    """The candidate dimensions (as :func:`candidate_dimensions`) and, with ``entities``,
    the entity columns of the database, from one profiling query per table (and one
    exact count per table of at most :data:`PROFILE_ROWS` rows that has entity columns;
    if that count fails, the estimates stand, marked not exact).

    Raises:
        ValueError: ``max_levels`` < 2.
    """
    if max_levels < 2:
        raise ValueError(f"max_levels must be >= 2, got {max_levels!r}")
    sql = dialect_sql(sql)
    catalog = catalog or read_catalog(sql)
    dimensions: list[Dimension] = []
    found_entities: list[EntityColumn] = []
    for table in catalog.tables:
        found, named = _profile(sql, table, catalog.graph, max_levels, entities)
        dimensions.extend(found)
        found_entities.extend(named)
    return ColumnProfile(tuple(dimensions), tuple(found_entities))


def _query(sql: GuardedSQL) -> Callable[[str], pd.DataFrame]:
    def run(text: str) -> pd.DataFrame:
        return sql.run(text, max_rows=1_000_000).frame

    return run


def _profile(
    sql: GuardedSQL, table: TableInfo, graph: JoinGraph, max_levels: int,
    entities: bool = False,
) -> tuple[list[Dimension], list[EntityColumn]]:
    """The dimensions of one table, from one profiling query, and with ``entities`` its
    entity columns."""
    keys = graph.key_columns(table.name)
    single_keys = {cols[0].lower() for t, cols in graph.unique if t == table.name
                   and len(cols) == 1}
    plans: list[tuple[ColumnInfo, str, list[str]]] = []
    for column in table.columns:
        ref, kind = quote_ident(column.name), column.type.upper()
        if column.name.lower() in single_keys:
            continue
        if kind == "DATE" or _TIMESTAMP.fullmatch(kind):
            hours = [f"approx_count_distinct(hour({ref}))"] if kind != "DATE" else []
            plans.append((column, "date", [f"min({ref})", f"max({ref})", *hours]))
        elif _NUMERIC.fullmatch(kind):
            binnable = not _names_a_key(column.name, keys)
            quantiles = ", ".join(str(q) for q in _BIN_QUANTILES)
            extra = [f"approx_quantile({ref}, [{quantiles}])"] if binnable else []
            plans.append((column, "number", [f"approx_count_distinct({ref})", *extra]))
        elif _TEXTLIKE.fullmatch(kind):
            filled = [f"count({ref})"] if entities else []  # rows an entity's values fill
            plans.append((column, "text", [f"approx_count_distinct({ref})", *filled]))
    if not plans:
        return [], []
    rows = table.row_count or 0
    sample = ""
    if rows > PROFILE_ROWS:
        sample = f" USING SAMPLE {max(0.1, 100.0 * PROFILE_ROWS / rows):.3f}% (system)"
    pairs = list(itertools.combinations(
        [column for column, family, _ in plans if family == "date"], 2))[:_MAX_DATE_PAIRS]
    parts = [part for _, _, columns in plans for part in columns]
    parts += [f"sum(CASE WHEN {quote_ident(a.name)} IS DISTINCT FROM {quote_ident(b.name)} "
              "THEN 1 ELSE 0 END)" for a, b in pairs]
    values = sql.run(f"SELECT {', '.join(parts)} FROM {table.ref}{sample}").frame.iloc[0].tolist()
    differing = values[len(values) - len(pairs):]
    copies: dict[str, str] = {}  # the column left out -> the column kept
    for (a, b), differ in zip(pairs, differing, strict=True):
        if differ is not None and not pd.isna(differ) and int(differ) == 0:
            left_out, kept = _copy_of_pair(a, b)
            copies.setdefault(left_out, kept)
    dimensions: list[Dimension] = []
    named: list[tuple[EntityColumn, int]] = []  # (entity, its non-null rows)
    for column, family, columns in plans:
        found, values = values[: len(columns)], values[len(columns):]
        made = _dimensions(table.name, column, family, found, max_levels)
        if column.name in copies:
            kept = f"{table.name}.{quote_ident(copies[column.name])}"
            made = [replace(dimension, copy_of=kept) for dimension in made]
        dimensions.extend(made)
        if entities and family == "text" and not _names_a_key(column.name, keys):
            distinct, filled = (0 if v is None or pd.isna(v) else int(v) for v in found[:2])
            if _is_entity(distinct, filled, max_levels):
                named.append((EntityColumn(table.name, column.name, distinct,
                                           exact=not sample), filled))
    return dimensions, _counted(sql, table, named, max_levels) if not sample else [
        e for e, _ in named]


def _is_entity(distinct: int, filled: int, max_levels: int) -> bool:
    """More values than a dimension may have, few enough to list, each over two or more
    of the rows the column fills (not free text that is mostly NULL)."""
    return max_levels < distinct <= MAX_ENTITY_VALUES and 2 * distinct <= filled


def _counted(sql: GuardedSQL, table: TableInfo, named: list[tuple[EntityColumn, int]],
             max_levels: int) -> list[EntityColumn]:
    """The entities of an unsampled table with their values counted exactly (the
    estimate read "about 51 values" beside a query's 50 users, and an answerer copied
    it), those the count leaves outside the bounds dropped; if the count fails, the
    estimates, marked not exact (the map is never lost for it)."""
    if not named:
        return []
    try:
        counts = sql.run("SELECT " + ", ".join(f"count(DISTINCT {quote_ident(e.column)})"
                                               for e, _ in named)
                         + f" FROM {table.ref}").frame.iloc[0].tolist()
    except D2Error:
        return [replace(e, exact=False) for e, _ in named]
    return [replace(e, values=int(n)) for (e, filled), n in zip(named, counts, strict=True)
            if _is_entity(int(n), filled, max_levels)]


_MAX_DATE_PAIRS = 28
"""Most pairs of date columns of one table compared (all pairs of eight columns)."""
_AUDIT = re.compile(r"(^sys_|updated|modified|changed)", re.IGNORECASE)
"""Names of columns that record a row's bookkeeping, not an event of its own."""


def _copy_of_pair(first: ColumnInfo, second: ColumnInfo) -> tuple[str, str]:
    """Of two date columns equal on every profiled row, (the one whose date parts are
    left out, the one kept): the second in table order is left out, unless only the
    first names a bookkeeping time (``sys_updated_on`` beside ``closed_at``: the event
    keeps its name)."""
    if _AUDIT.search(first.name) and not _AUDIT.search(second.name):
        return first.name, second.name
    return second.name, first.name


def _dimensions(
    table: str, column: ColumnInfo, family: str, found: list, max_levels: int
) -> list[Dimension]:
    if family == "date":
        if found[0] is None or pd.isna(found[0]):
            return []
        first, last = pd.Timestamp(found[0]), pd.Timestamp(found[1])
        months = (last.year - first.year) * 12 + last.month - first.month + 1
        levels = {
            DatePart.YEAR: last.year - first.year + 1,
            DatePart.QUARTER: (months + 2) // 3 + 1,
            DatePart.MONTH: months,
            DatePart.MONTH_OF_YEAR: min(12, months),
            DatePart.DAY_OF_WEEK: min(7, (last - first).days + 1),
            DatePart.HOUR: int(found[2]) if len(found) > 2 and found[2] else 1,
        }
        return [Dimension(table, column.name, DimensionKind.DATE_PART, n, part)
                for part, n in levels.items() if 2 <= n <= max_levels]
    distinct = int(found[0] or 0)
    if 2 <= distinct <= max_levels:
        return [Dimension(table, column.name, DimensionKind.VALUES, distinct)]
    quantiles = found[1] if len(found) > 1 else None
    if family == "number" and isinstance(quantiles, list | tuple | np.ndarray):
        # an empty table's approx_quantile is NULL (read as NA, not a list): no bins
        edges = tuple(sorted({float(e) for e in quantiles if e is not None and not pd.isna(e)}))
        if edges:
            return [Dimension(table, column.name, DimensionKind.BINS, len(edges) + 1,
                              edges=edges)]
    return []


def _names_a_key(name: str, keys: frozenset[str]) -> bool:
    """Whether a column is a key of the join graph (``keys``, lower-cased) or is named like
    an id: its values name rows, so it is neither binned nor an entity column."""
    return name.lower() in keys or _looks_like_id(name)


def _looks_like_id(name: str) -> bool:
    lowered = name.lower()
    return lowered == "id" or lowered.endswith(("_id", "-id", " id"))
