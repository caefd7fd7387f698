"""The one SQL pass behind every analysis tool: which dimensions, reached how, in one query.

From the source's tables the plan follows the join graph: along N:1 (and 1:1) edges to
parent tables, whose columns become attributes of each source row (``LEFT JOIN`` on a
unique key never duplicates rows), and from every reached table to its 1:N child tables,
whose values become membership flags ("has comorbidities.condition = asthma"). The
query is::

    WITH __rows AS NOT MATERIALIZED (SELECT <value> AS __v, <dims> AS __dN, <keys> AS __kN,
                                     <extra> FROM <source> WHERE <where>),
         __keyed AS MATERIALIZED (SELECT <keys>, <by>, count(__v), sum(__v), sum(__v*__v)
                                  FROM __rows GROUP BY <keys>, <by>),
         __base AS (SELECT __keyed.*, <parent attributes> FROM __keyed LEFT JOIN <parent> ...)
    SELECT <pack> AS __dim, <label of __dA>, <label of __dB>, ..., <by>, count(__v), sum(__v),
           sum(__v*__v) FROM __rows GROUP BY __dA, __dB, ..., <by>
    UNION ALL ...  -- one branch per pack of source dimensions (joint cells, see
                   -- pack_columns), one per parent attribute, one per 1:N attribute,
                   -- and one for the total when there is no pack (else the total is
                   -- the sum of the first pack's cells: every row is in one of them)

The moments (n, Σv, Σv²) are additive, so parent attributes and memberships are read
from ``__keyed`` (the rows summed per join key: as many rows as distinct keys, not as
source rows) and the source is scanned by column, never copied. A group's complement is
the total minus the group.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from d2_notebook.data.analysis.inputs import Source, metric_columns
from d2_notebook.data.dimensions import Catalog, Dimension, DimensionKind
from d2_notebook.data.keys import JoinEdge
from d2_notebook.data.schema import quote_ident
from d2_notebook.errors import SQLError

__all__ = ["PACK", "TOTAL", "Plan", "PlannedDimension", "build_plan", "pack_columns", "scan_sql"]

TOTAL = -1
PACK = -100  # __dim of the n-th pack of source dimensions is PACK - n
PACK_CELLS = 2048


@dataclass(frozen=True)
class PlannedDimension:
    """A dimension as one analysis reaches it.

    Attributes:
        name: The name shown to models (``patients.sex``; ``has comorbidities.condition``
            for a 1:N attribute; the expression itself for a requested expression).
        dimension: The catalog dimension, or None for a requested SQL expression.
        membership: True for a 1:N attribute: each value is a flag "has <value>".
    """

    name: str
    dimension: Dimension | None
    membership: bool = False

    def label(self, key: str) -> str:
        """SQL turning the grouped value ``key`` into the text models read."""
        return self.dimension.label(key) if self.dimension else f"{key}::VARCHAR"


@dataclass(frozen=True)
class Plan:
    """Dimensions and the SQL pieces that compute them (see the module docstring)."""

    dimensions: tuple[PlannedDimension, ...]
    row_columns: tuple[tuple[str, str], ...]  # (expression over the source, __alias)
    base_columns: tuple[tuple[str, str], ...]  # (expression over __rows / __rN, __alias)
    joins: tuple[str, ...]
    branches: tuple[tuple[int, str, str], ...]  # (dimension index, kind, SQL piece)
    definitional: tuple[tuple[str, str | None], ...] = ()
    """Requested dimensions left out because the metric's definition reads their column:
    (name, the SQL expression when it is one, to bind it all the same)."""
    binned: tuple[tuple[int, str], ...] = ()
    """The source table's numeric columns cut into bins: (dimension index, the column as
    SQL over the source), so a tool can test whether a column is the outcome again."""
    filter_left_out: tuple[str, ...] = ()
    """Dimensions the default scan leaves out because only the ``where`` filter reads
    their column (a request may still name them)."""
    definitional_inputs: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """Of :attr:`definitional`, those only another input reads (not the metric nor the
    join condition): (name, the inputs reading its column, e.g. ``("exposure",)``)."""


def build_plan(
    catalog: Catalog,
    source: Source,
    candidates: list[Dimension],
    requested: list[str] | None,
    excluded: set[tuple[str, str]],
    outcome_tables: frozenset[str] = frozenset(),
    date_parts_kept: frozenset[tuple[str, str]] = frozenset(),
    filter_only: frozenset[tuple[str, str]] = frozenset(),
    keys_only: frozenset[tuple[str, str]] = frozenset(),
) -> Plan:
    """Plan the candidate dimensions reachable from ``source`` (or the requested ones).

    Args:
        catalog: Tables and join graph.
        source: The parsed FROM clause.
        candidates: The database's candidate dimensions.
        requested: Dimension names (as listed by the candidates, ``has ...`` for 1:N
            attributes, or the spellings :func:`_spellings` accepts: a source alias for
            the table, a bare column) or SQL expressions over the source; None means
            every candidate but the date parts of a column that copies another
            (:attr:`~d2_notebook.data.dimensions.Dimension.copy_of`). A name is planned
            once however often it is requested.
        excluded: ``(table, lower-cased column)`` pairs left out of the default scan
            (the columns the metric, its filter and the source's join conditions read,
            the exposure); requested, they are answered "part of the metric's
            definition" (:attr:`Plan.definitional`), except those in ``filter_only``.
        outcome_tables: Tables whose columns are left out of the default scan: tables
            the metric reads that hold one row per row of another source table (1:1, as
            an outcomes table beside admissions); their other columns are recorded with
            the outcome (a discharge date beside a death) and "explain" it trivially.
            Requested dimensions may still name them.
        date_parts_kept: ``excluded`` columns whose date parts are still planned (the
            metric's complete time columns, the start of a duration; the date columns of
            the filter, a time window).
        filter_only: ``excluded`` columns only the ``where`` filter reads (not the metric,
            the ``exclude`` inputs nor a join condition). The default scan leaves them out
            (a filter often leaves a column one value, ``status = 'closed'``), except the
            date parts in ``date_parts_kept`` and a 1:N attribute's values (a filter that
            picks patients with asthma leaves "has diabetes" split; a real-model
            collector had to name it), and :attr:`Plan.filter_left_out` names them; a
            requested name or SQL expression over them (and other columns not excluded)
            is planned: the filter restricts the rows, it does not define the
            metric (``month(o.order_date)`` under ``o.order_date >= DATE '2024-02-01'``,
            ``p.age`` under ``p.age >= 65``). One over the metric's own columns stays
            part of its definition (``datediff('day', t.opened_at, t.closed_at) > 2``
            beside ``avg(datediff('day', t.opened_at, t.closed_at))``).
        keys_only: ``excluded`` columns that only match the source's tables' keys (a
            ``USING`` column or a column = column ``ON`` term; not the metric's nor an
            ``exclude`` input's). A requested SQL expression may read them:
            a correlated ``EXISTS`` over a 1:N table (``CASE WHEN EXISTS (SELECT 1 FROM
            comorbidities c WHERE c.patient_id = p.patient_id AND ...)``) correlates on
            the key, which defines no metric (a real-model collector's diabetes split was
            refused as "part of the metric's definition").
    """
    builder = _Builder(catalog, source)
    reachable = builder.reach()
    by_table: dict[str, list[Dimension]] = {}
    for dimension in candidates:
        by_table.setdefault(dimension.table, []).append(dimension)
    offered: list[tuple[PlannedDimension, str, str]] = []  # (planned, table, alias or key)
    for table, (how, ref) in reachable.items():
        for dimension in by_table.get(table, []):
            name = f"has {dimension.name}" if how == "member" else dimension.name
            offered.append((PlannedDimension(name, dimension, how == "member"), how, ref))
    if requested is None:
        chosen = []
        for planned, how, ref in offered:
            dimension = planned.dimension
            if dimension is not None and dimension.copy_of is not None:
                continue  # the same rows as its column's: asked for by name only
            if _by_default(dimension, excluded, outcome_tables, date_parts_kept) or (
                    planned.membership and _by_default(dimension, excluded - filter_only,
                                                       outcome_tables, date_parts_kept)):
                chosen.append((planned, how, ref))
            elif (dimension is not None and dimension.table not in outcome_tables
                  and (dimension.table, dimension.column.lower()) in filter_only):
                builder.filter_left_out.append(planned.name)
    else:  # an explicit request is honoured, even for a column the default leaves out
        columns = {t.name.lower(): {c.name.lower() for c in t.columns} for t in catalog.tables}
        names = {planned.name.lower(): (planned, how, ref) for planned, how, ref in offered}
        names.update({p.dimension.name.lower(): (p, h, r) for p, h, r in offered if p.dimension})
        chosen = []
        for text in requested:
            if not isinstance(text, str) or not text.strip():
                raise ValueError("dimensions must be a list of non-empty strings")
            key = text.strip().lower()
            # A level as the tools print it ("has t.c = v", "t.c = v") names its dimension.
            hit = next((names[k] for k in _spellings(key, source, columns) if k in names), None)
            if hit is not None and not _by_default(hit[0].dimension, excluded - filter_only,
                                                   frozenset(), date_parts_kept):
                builder.definitional.append((hit[0].name, None))
                continue
            # an expression over the filter's time window splits it like one of its date
            # parts; one over the metric's own columns (the start of a duration too,
            # whose date parts are kept) restates the metric
            if hit is None and _reads_any(text.strip(), source,
                                          excluded - filter_only - keys_only):
                builder.definitional.append((text.strip(), text.strip()))
                continue
            chosen.append(hit or (PlannedDimension(text.strip(), None), "expr", text.strip()))
    seen: set[str] = set()
    for planned, how, ref in chosen:
        if planned.name.lower() in seen:  # two spellings of one dimension: split once
            continue
        seen.add(planned.name.lower())
        builder.add(planned, how, ref)
    return builder.plan()


def scan_sql(plan: Plan, value_sql: str, source: Source, where: str | None,
             extra: tuple[tuple[str, str], ...] = (), by: tuple[str, ...] = ()) -> str:
    """The whole one-pass statement.

    The all-rows moments (grouped by ``by`` only) have a branch of their own when there is
    no pack of source dimensions; else they are the sum of the first pack's cells (one
    per combination of its values, NULL included, so every row is in one), which saves a
    scan of the source.

    Args:
        extra: ``(expression over the source, alias)`` columns carried to every branch.
        by: Aliases of ``extra`` columns every branch also groups by.
    """
    packs = pack_columns(plan)
    width = max([1, *(len(p) for p in packs)])
    rows = [f"({value_sql})::DOUBLE AS __v", *(f"{e} AS {a}" for e, a in plan.row_columns),
            *(f"{e} AS {a}" for e, a in extra)]
    condition = f"\n  WHERE ({where})" if where else ""
    group_by = "".join(f", {b}" for b in by)
    moments = "count(__v) AS n, sum(__v) AS s1, sum(__v * __v) AS s2"
    summed = "sum(__n) AS n, sum(__s1) AS s1, sum(__s2) AS s2"

    def values(*labels: str) -> str:
        padded = [*labels, *["NULL::VARCHAR"] * (width - len(labels))]
        return ", ".join(f"{v} AS __value{i}" for i, v in enumerate(padded))

    ctes = [f"__rows AS NOT MATERIALIZED (\n  SELECT {', '.join(rows)}\n  FROM {source.sql}"
            f"{condition}\n)"]
    branches = []
    if not packs:
        grouped = f" GROUP BY {', '.join(by)}" if by else ""
        branches.append(f"SELECT {TOTAL} AS __dim, {values()}{group_by}, {moments}"
                        f" FROM __rows{grouped}")
    pieces = {index: piece for index, _, piece in plan.branches}
    for number, pack in enumerate(packs):
        labels = [plan.dimensions[i].label(pieces[i]) for i in pack]
        keys = ", ".join(pieces[i] for i in pack)
        branches.append(f"SELECT {PACK - number} AS __dim, {values(*labels)}{group_by}, "
                        f"{moments} FROM __rows GROUP BY {keys}{group_by}")
    if any(kind != "column" for _, kind, _ in plan.branches):
        keys = [a for _, a in plan.row_columns if a.startswith("__k")]
        carried = [*keys, *by]
        ctes.append(
            f"__keyed AS MATERIALIZED (\n  SELECT {', '.join(carried)}, count(__v) AS __n, "
            f"sum(__v) AS __s1, sum(__v * __v) AS __s2\n  FROM __rows GROUP BY "
            f"{', '.join(carried)}\n)")
        keep = [*(f"__keyed.{a}" for a in carried), "__keyed.__n", "__keyed.__s1",
                "__keyed.__s2", *(f"{e} AS {a}" for e, a in plan.base_columns)]
        joins = "".join(f"\n  {j}" for j in plan.joins)
        ctes.append(f"__base AS NOT MATERIALIZED (\n  SELECT {', '.join(keep)}\n  FROM __keyed"
                    f"{joins}\n)")
    for index, kind, piece in plan.branches:
        label = plan.dimensions[index].label
        if kind == "parent":
            branches.append(f"SELECT {index} AS __dim, {values(label(piece))}{group_by}, "
                            f"{summed} FROM __base GROUP BY {piece}{group_by}")
        elif kind == "member":
            value = label(f"__m{index}.__a")
            branches.append(f"SELECT {index} AS __dim, {values(value)}{group_by}, {summed} "
                            f"FROM __base JOIN {piece} GROUP BY __m{index}.__a{group_by}")
    return "WITH " + ",\n".join(ctes) + "\n" + "\nUNION ALL\n".join(branches)


def _by_default(dimension: Dimension, excluded: set[tuple[str, str]],
                outcome_tables: frozenset[str],
                date_parts_kept: frozenset[tuple[str, str]]) -> bool:
    """Whether the default scan (no ``dimensions`` requested) uses ``dimension``."""
    if dimension.table in outcome_tables:
        return False
    key = (dimension.table, dimension.column.lower())
    return key not in excluded or (dimension.kind is DimensionKind.DATE_PART
                                   and key in date_parts_kept)


def _reads_any(expression: str, source: Source, columns: set[tuple[str, str]]) -> bool:
    """Whether a requested SQL expression reads one of ``columns`` (False if it does not
    parse: binding it reports the error)."""
    try:
        return bool(metric_columns(expression, source) & columns)
    except (SQLError, ValueError):
        return False


_NAMED = re.compile(r"^(?:(?P<part>[a-z_]+)\()?(?P<ref>[^()=\s]+)\)?$")
#: Date parts whose names are no DuckDB function: ``part(alias.column)`` can only mean the
#: dimension. (``month(o.c)`` and ``quarter(o.c)`` are SQL, month and quarter of the year,
#: unlike the dimensions ``month(t.c)`` and ``quarter(t.c)``, which carry the year; and
#: ``year(o.c)``, ``hour(o.c)`` give the same groups as SQL.)
_PART_ONLY_NAMES = frozenset({"month_of_year", "day_of_week"})


def _spellings(key: str, source: Source, columns: dict[str, set[str]]) -> list[str]:
    """Lower-cased names ``key`` may stand for, tried in order.

    As written; then, for a name as the tools print it, without a printed level
    (``t.c = v``, ``has t.c = v``); then with the source's alias written as its table
    (``e.col``, ``month_of_year(e.col)``, ``has e.col``), when the alias is the table's only
    one in the source (a self-join's second alias is another role of the table: its
    expression stays SQL); then a bare column (``col``) as the one source table that has
    it. An alias expression with a level (``o.channel = 'web'``) stays SQL: a yes/no split.

    Args:
        columns: Lower-cased table name -> its lower-cased column names.
    """
    spellings = [key, key.split(" = ", 1)[0].strip()]
    prefix = "has " if key.startswith("has ") else ""
    match = _NAMED.match(key.removeprefix(prefix))
    if match is None:
        return spellings
    part, ref = match.group("part"), match.group("ref")
    if part is not None and part not in _PART_ONLY_NAMES:
        return spellings
    qualifier, _, column = ref.rpartition(".")
    if qualifier:
        table = source.table_of(qualifier)
        roles = sum(name == table for _, name in source.aliases)
        tables = [table] if table is not None and roles == 1 else []
    else:
        having = {name for _, name in source.aliases if column in columns.get(name.lower(), ())}
        tables = list(having) if len(having) == 1 else []
    for table in tables:
        column_name = f"{table.lower()}.{column}"
        spellings.append(prefix + (f"{part}({column_name})" if part else column_name))
    return spellings


def pack_columns(plan: Plan) -> list[list[int]]:
    """Source-level dimensions grouped together in one GROUP BY each (joint cells).

    Grouping by several low-cardinality columns at once reads the rows once for all of
    them; the marginals are sums of the joint cells (moments add up). A pack holds
    dimensions whose level counts (plus one for NULL) multiply to at most
    :data:`PACK_CELLS`; a requested expression, of unknown cardinality, stays alone.
    """
    packs: list[list[int]] = []
    cells: list[int] = []
    for index, kind, _ in plan.branches:
        if kind != "column":
            continue
        dimension = plan.dimensions[index].dimension
        levels = dimension.levels + 1 if dimension is not None else PACK_CELLS
        for number, size in enumerate(cells):
            if size * levels <= PACK_CELLS:
                packs[number].append(index)
                cells[number] *= levels
                break
        else:
            packs.append([index])
            cells.append(levels)
    return packs


class _Builder:
    """Accumulates the pieces of a plan while dimensions are added."""

    def __init__(self, catalog: Catalog, source: Source) -> None:
        self._catalog, self._source = catalog, source
        self._dimensions: list[PlannedDimension] = []
        self._rows: list[tuple[str, str]] = []
        self._base: list[tuple[str, str]] = []
        self._joins: list[str] = []
        self._branches: list[tuple[int, str, str]] = []
        self._ref: dict[str, str] = {}  # reached table -> how to write its columns in __base
        self._paths: dict[str, tuple[JoinEdge, str]] = {}  # parent -> (edge, child table)
        self._members: dict[str, tuple[JoinEdge, str]] = {}  # 1:N child -> (edge, parent)
        self._joined: set[str] = set()
        self._keys: dict[str, str] = {}
        self.definitional: list[tuple[str, str | None]] = []
        self.filter_left_out: list[str] = []
        self._binned: list[tuple[int, str]] = []

    def reach(self) -> dict[str, tuple[str, str]]:
        """Table -> ("source" | "parent" | "member", its alias) for every reachable table."""
        reached: dict[str, tuple[str, str]] = {}
        for alias, table in self._source.aliases:
            reached.setdefault(table, ("source", alias))
        queue = list(reached)
        while queue:
            table = queue.pop(0)
            for edge in self._catalog.graph.edges:
                if edge.child == table and edge.parent not in reached:
                    reached[edge.parent] = ("parent", f"__r{len(self._paths)}")
                    self._paths[edge.parent] = (edge, table)
                    queue.append(edge.parent)
                elif edge.parent == table and edge.child not in reached and edge.one_to_one:
                    reached[edge.child] = ("parent", f"__r{len(self._paths)}")
                    self._paths[edge.child] = (edge, table)
                    queue.append(edge.child)
        for table in list(reached):
            for edge in self._catalog.graph.edges:
                if edge.parent == table and edge.child not in reached and not edge.one_to_one:
                    reached[edge.child] = ("member", edge.child)
                    self._members.setdefault(edge.child, (edge, table))
        for table, (how, alias) in reached.items():
            if how != "member":
                self._ref[table] = alias
        self._how = reached
        return reached

    def add(self, planned: PlannedDimension, how: str, ref: str) -> None:
        index = len(self._dimensions)
        self._dimensions.append(planned)
        alias = f"__d{index}"
        if how == "expr":
            self._rows.append((ref, alias))
            self._branches.append((index, "column", alias))
        elif how == "source":
            self._rows.append((planned.dimension.expression(ref), alias))
            self._branches.append((index, "column", alias))
            if planned.dimension.kind is DimensionKind.BINS:
                self._binned.append((index, f"{ref}.{quote_ident(planned.dimension.column)}"))
        elif how == "parent":
            self._join(planned.dimension.table)
            self._base.append((planned.dimension.expression(ref), alias))
            self._branches.append((index, "parent", alias))
        else:
            edge, parent = self._members[planned.dimension.table]
            keys = [self._key(parent, c) for c in edge.parent_columns]
            child = "__c"
            pairs = [f"__m{index}.{quote_ident(c)} = __base.{k}"
                     for c, k in zip(edge.child_columns, keys, strict=True)]
            columns = ", ".join(f"{child}.{quote_ident(c)}" for c in edge.child_columns)
            info = self._catalog.table(planned.dimension.table)
            piece = (f"(SELECT DISTINCT {columns}, {planned.dimension.expression(child)} AS __a "
                     f"FROM {info.ref} AS {child}) AS __m{index} ON {' AND '.join(pairs)}")
            self._branches.append((index, "member", piece))

    def plan(self) -> Plan:
        return Plan(tuple(self._dimensions), tuple(self._rows), tuple(self._base),
                    tuple(self._joins), tuple(self._branches),
                    tuple(dict.fromkeys(self.definitional)), tuple(self._binned),
                    tuple(dict.fromkeys(self.filter_left_out)))

    def _join(self, table: str) -> None:
        """LEFT JOIN ``table`` (and the parents on its path) into ``__base``."""
        if table in self._joined or self._how[table][0] == "source":
            return
        edge, via = self._paths[table]
        self._join(via)
        if edge.parent == table:  # N:1 from the table we came from
            mine, theirs = edge.parent_columns, edge.child_columns
        else:  # 1:1 child reached from its parent
            mine, theirs = edge.child_columns, edge.parent_columns
        pairs = [f"{self._ref[table]}.{quote_ident(m)} = {self._column(via, t)}"
                 for m, t in zip(mine, theirs, strict=True)]
        info = self._catalog.table(table)
        self._joins.append(f"LEFT JOIN {info.ref} AS {self._ref[table]} ON {' AND '.join(pairs)}")
        self._joined.add(table)

    def _column(self, table: str, column: str) -> str:
        """How ``__base``'s FROM clause reads ``table.column`` (a carried key or a join)."""
        if self._how[table][0] == "source":
            return f"__keyed.{self._key(table, column)}"
        return f"{self._ref[table]}.{quote_ident(column)}"

    def _key(self, table: str, column: str) -> str:
        """An alias for ``table.column`` in ``__base`` (carried from the source or joined)."""
        wanted = (table, column.lower())
        name = self._keys.get(f"{wanted}")
        if name:
            return name
        name = f"__k{len(self._keys)}"
        self._keys[f"{wanted}"] = name
        if self._how[table][0] == "source":
            self._rows.append((f"{self._ref[table]}.{quote_ident(column)}", name))
        else:
            self._join(table)
            self._base.append((f"{self._ref[table]}.{quote_ident(column)}", name))
        return name
