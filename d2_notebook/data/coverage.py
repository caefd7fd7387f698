"""The coverage map: which candidate dimensions the evidence has controlled or split by.

:func:`column_usage` reads one evidence SQL with DuckDB's parser into the catalog columns
it filters by (``WHERE``, ``HAVING``, ``IN``/``EXISTS`` subqueries), groups by (``GROUP BY``,
``GROUP BY ALL``, grouping sets, window ``PARTITION BY``) and joins on (``ON``, ``USING``).
Columns are traced through aliases, subqueries and CTEs to the tables they come from, so
``WITH r AS (SELECT a.severity AS s FROM admissions a) ... GROUP BY s`` groups by
``admissions.severity``; the analysis tools' generated SQL reads the same way.

A select list that compares strata inside an aggregate (conditional aggregation) splits
by them too: the columns of a ``CASE WHEN`` condition (of a CASE that picks rows: a NULL
or constant branch, not one that rewrites a value in every branch) or a ``FILTER (WHERE
...)`` clause inside an aggregate call
(``avg(CASE WHEN a.severity = 'critical' THEN o.died::INT END)``,
``count(*) FILTER (WHERE p.age >= 65)``) are :attr:`ColumnUsage.splits`, read with the
same grain rules as a ``WHERE``. What the aggregate aggregates stays measured: its value
column (``o.died``), a condition on that column itself, and, in an indicator that reads
no column as its value, a yes/no test of a column (``avg(CASE WHEN o.died THEN 1 ELSE 0
END)``, ``count(*) FILTER (WHERE x IS NULL)``: how a rate or a count of an outcome is
written). An indicator of a stratum (``sum(CASE WHEN a.ward = 'ICU' THEN 1 ELSE 0 END)``)
splits by it; text cannot tell it from the rate of a categorical outcome written the
same way (``CASE WHEN o.status = 'dead' ...``), which reads as a split as well. A ``CASE``
outside any aggregate is a per-row label: grouped by, it is a split like any grouped
expression; otherwise it controls nothing.

:func:`coverage_map` is pure: from the candidate dimensions and the ``(hypothesis id,
evidence SQL)`` pairs it says, per hypothesis, which dimensions its evidence controlled
or split by, and which dimensions no evidence on the board has touched. A dimension
counts as controlled only when the evidence filters, groups or stratifies by that
dimension itself: any use of a column counts for its values and bins, but a date part
counts only when the expression determines that part (``month(t.d)`` gives the month of
year; ``year(t.d) * 100 + month(t.d)``, ``date_trunc('month', t.d)`` or
``strftime(t.d, '%Y-%m')`` the month, and with it the quarter and year; the column
itself, or ``t.d::DATE``, every part), never by an expression that merely reads the
column (``date_diff('day', t.d, t.e)``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from d2_notebook.data.dimensions import Dimension
from d2_notebook.data.parse_tree import iter_nodes, outer_nodes, serialize
from d2_notebook.errors import SQLError

__all__ = ["ColumnRef", "ColumnUsage", "CoverageMap", "HypothesisCoverage", "column_usage",
           "coverage_map", "selected_columns"]


@dataclass(frozen=True, order=True)
class ColumnRef:
    """A catalog column: table as written in SQL (``TableInfo.name``), column lower-cased.

    Attributes:
        grain: How the statement uses it: ``""`` the column itself; else the date parts
            the expression over it determines, comma-separated (``"month_of_year"``,
            ``"month,month_of_year,quarter,year"``), or ``"-"`` for none (a duration,
            arithmetic on the column).
    """

    table: str
    column: str
    grain: str = ""

    def controls(self, dimension: Dimension) -> bool:
        """Whether this use holds ``dimension`` fixed or splits by it."""
        if (self.table, self.column) != (dimension.table, dimension.column.lower()):
            return False
        if dimension.part is None or self.grain == "":
            return True
        return dimension.part.value in self.grain.split(",")


@dataclass(frozen=True)
class ColumnUsage:
    """The catalog columns one statement filters, groups and joins by."""

    filters: frozenset[ColumnRef] = frozenset()
    groups: frozenset[ColumnRef] = frozenset()
    joins: frozenset[ColumnRef] = frozenset()
    tables: frozenset[str] = frozenset()
    """The catalog tables the statement reads."""
    measured: frozenset[ColumnRef] = frozenset()
    """Columns an aggregate of a select list aggregates (``avg(o.died)``): measured."""
    splits: frozenset[ColumnRef] = frozenset()
    """Columns whose strata an aggregate of a select list compares: the columns of a
    ``CASE WHEN`` condition or a ``FILTER`` clause inside it, but not the measured ones."""

    @property
    def controlled(self) -> frozenset[ColumnRef]:
        """Columns the statement holds fixed or splits by (filters, groups, splits)."""
        return self.filters | self.groups | self.splits


@dataclass(frozen=True)
class HypothesisCoverage:
    """The dimensions one hypothesis's evidence has controlled or split by."""

    hypothesis_id: str
    controlled: tuple[str, ...]
    untouched: tuple[str, ...]
    evidence_read: int


@dataclass(frozen=True)
class CoverageMap:
    """Per hypothesis and for the whole board, which candidate dimensions were touched.

    Attributes:
        dimensions: Every candidate dimension's name, in the order given.
        hypotheses: One entry per hypothesis id seen, in order of first appearance.
        untouched: Dimensions that no evidence (of any hypothesis, or none) touched.
        unreadable: Evidence statements that are not a readable SELECT (SHOW, PRAGMA...).
    """

    dimensions: tuple[str, ...]
    hypotheses: tuple[HypothesisCoverage, ...]
    untouched: tuple[str, ...]
    unreadable: int = 0

    def describe(self) -> str:
        """Text for a digest: per hypothesis, then the board's untouched dimensions."""
        lines = ["Coverage of the candidate dimensions by the evidence:"]
        for entry in self.hypotheses:
            done = ", ".join(entry.controlled) or "none"
            lines.append(f"  {entry.hypothesis_id}: controlled or split by {done}")
        left = ", ".join(self.untouched) or "none"
        lines.append(f"  Untouched by any evidence: {left}")
        return "\n".join(lines)


def column_usage(sql: str, tables: Mapping[str, Iterable[str]]) -> ColumnUsage:
    """Read one SELECT into the catalog columns it filters, groups, splits and joins by.

    Args:
        sql: The statement (as stored on the board).
        tables: Table name (as written in SQL) -> its column names; references to other
            tables or unknown columns are ignored.

    Raises:
        QueryFailedError: The text is not one parseable statement.
    """
    catalog = {name.lower(): (name, {c.lower() for c in cols}) for name, cols in tables.items()}
    reader = _Reader(catalog)
    statement = serialize(sql)["statements"][0]["node"]
    reader.query(statement, [])
    return ColumnUsage(frozenset(reader.filters), frozenset(reader.groups),
                       frozenset(reader.joins), frozenset(reader.tables),
                       frozenset(reader.measured), frozenset(reader.splits))


def selected_columns(sql: str, tables: Mapping[str, Iterable[str]]) -> frozenset[ColumnRef]:
    """The catalog columns the select list of one SELECT reads (e.g. the columns a metric
    expression ``SELECT avg(o.died) FROM outcomes o`` is computed from).

    Raises:
        QueryFailedError: The text is not one parseable statement.
    """
    catalog = {name.lower(): (name, {c.lower() for c in cols}) for name, cols in tables.items()}
    statement = serialize(sql)["statements"][0]["node"]
    relation = _Reader(catalog).query(statement, [])
    return frozenset(ref for refs in relation.lineage.values() for ref in refs)


def coverage_map(
    dimensions: Sequence[Dimension],
    evidence: Iterable[tuple[str | None, str]],
    tables: Mapping[str, Iterable[str]] | None = None,
) -> CoverageMap:
    """Which dimensions each hypothesis's evidence touched, and which none touched.

    Args:
        dimensions: The candidate dimensions (:func:`~d2_notebook.data.dimensions.
            candidate_dimensions`).
        evidence: ``(hypothesis id, SQL)`` pairs; ``None`` for evidence not linked to a
            hypothesis (it still counts for the board).
        tables: Table -> columns, to place unqualified columns; default the dimensions'
            own tables and columns.
    """
    if tables is None:
        found: dict[str, set[str]] = {}
        for dimension in dimensions:
            found.setdefault(dimension.table, set()).add(dimension.column)
        tables = found
    names = tuple(dict.fromkeys(d.name for d in dimensions))
    touched_by: dict[str, set[str]] = {}
    board: set[str] = set()
    read: dict[str, int] = {}
    unreadable = 0
    for hypothesis_id, sql in evidence:
        try:
            usage = column_usage(sql, tables)
        except SQLError:
            unreadable += 1
            continue
        hit = {d.name for d in dimensions if any(r.controls(d) for r in usage.controlled)}
        board |= hit
        if hypothesis_id is not None:
            touched_by.setdefault(hypothesis_id, set()).update(hit)
            read[hypothesis_id] = read.get(hypothesis_id, 0) + 1
    entries = tuple(
        HypothesisCoverage(h, tuple(n for n in names if n in hit),
                           tuple(n for n in names if n not in hit), read[h])
        for h, hit in touched_by.items()
    )
    return CoverageMap(names, entries, tuple(n for n in names if n not in board), unreadable)


@dataclass
class _Relation:
    """A FROM entry: a catalog table, or a derived one (subquery/CTE) with column lineage."""

    table: str | None = None
    columns: frozenset[str] = frozenset()
    lineage: dict[str, set[ColumnRef]] = field(default_factory=dict)
    star: list[dict[str, _Relation]] | None = None  # scope behind a SELECT *

    def resolve(self, column: str) -> set[ColumnRef] | None:
        if self.table is not None:
            return {ColumnRef(self.table, column)} if column in self.columns else None
        if column in self.lineage:
            return self.lineage[column]
        if self.star is not None:
            return _lookup(self.star, None, column)
        return None


def _lookup(scopes: list[dict[str, _Relation]], qualifier: str | None,
            column: str) -> set[ColumnRef] | None:
    for scope in reversed(scopes):
        if qualifier is not None:
            if qualifier in scope:
                return scope[qualifier].resolve(column) or set()
            continue
        for relation in scope.values():
            found = relation.resolve(column)
            if found is not None:
                return found
    return None


class _Reader:
    """Walks a parse tree, collecting usage; ``query`` returns a node's output lineage."""

    def __init__(self, catalog: dict[str, tuple[str, set[str]]]) -> None:
        self.catalog = catalog
        self.filters: set[ColumnRef] = set()
        self.groups: set[ColumnRef] = set()
        self.joins: set[ColumnRef] = set()
        self.tables: set[str] = set()
        self.measured: set[ColumnRef] = set()
        self.splits: set[ColumnRef] = set()
        self.ctes: list[dict[str, _Relation]] = []

    def query(self, node: dict, outer: list[dict[str, _Relation]]) -> _Relation:
        ctes = {}
        for entry in (node.get("cte_map") or {}).get("map", []):
            self.ctes.append(ctes)
            ctes[entry["key"].lower()] = self.query(entry["value"]["query_node"], outer)
            self.ctes.pop()
        self.ctes.append(ctes)
        try:
            if node.get("type") == "SET_OPERATION_NODE":
                children = [self.query(c, outer) for c in node.get("children") or []]
                lineage: dict[str, set[ColumnRef]] = {}
                for child in children:
                    for name, refs in child.lineage.items():
                        lineage.setdefault(name, set()).update(refs)
                return _Relation(lineage=lineage)
            if node.get("type") != "SELECT_NODE":
                return _Relation()
            return self._select(node, outer)
        finally:
            self.ctes.pop()

    def _select(self, node: dict, outer: list[dict[str, _Relation]]) -> _Relation:
        scope: dict[str, _Relation] = {}
        scopes = [*outer, scope]
        if node.get("from_table"):
            self._from(node["from_table"], scope, scopes)
        outputs: dict[str, set[ColumnRef]] = {}
        star = False
        select_list = node.get("select_list") or []
        for position, expression in enumerate(select_list):
            if expression.get("class") == "STAR":
                star = True
                continue
            refs = self._columns(expression, scopes)
            for aggregate in _aggregates(expression):
                splits, measured = self._aggregate(aggregate, scopes)
                self.splits |= splits
                if aggregate.get("class") == "FUNCTION":
                    self.measured |= measured
            name = expression.get("alias") or _default_name(expression) or f"#{position}"
            outputs[name.lower()] = refs
        for part in ("where_clause", "having", "qualify"):
            if node.get(part):
                self.filters |= self._columns(node[part], scopes)
        groups = node.get("group_expressions") or []
        for expression in groups:
            self.groups |= self._group_target(expression, select_list, outputs, scopes)
        if not groups and node.get("aggregate_handling") == "FORCE_AGGREGATES":  # GROUP BY ALL
            for expression in select_list:
                if not any(n.get("class") in ("FUNCTION", "WINDOW") and _is_aggregate(n)
                           for n in iter_nodes(expression)):
                    self.groups |= self._columns(expression, scopes)
        for inner in iter_nodes([select_list, node.get("qualify"), node.get("having")]):
            if inner.get("class") == "WINDOW":
                for partition in inner.get("partitions") or []:
                    self.groups |= self._columns(partition, scopes)
        return _Relation(lineage=outputs, star=scopes if star else None)

    def _from(self, ref: dict, scope: dict[str, _Relation], scopes: list) -> None:
        kind = ref.get("type")
        if kind == "BASE_TABLE":
            name = str(ref.get("table_name", "")).lower()
            alias = (ref.get("alias") or ref.get("table_name") or "").lower()
            cte = next((c[name] for c in reversed(self.ctes) if name in c), None)
            if cte is not None and not ref.get("schema_name"):
                scope[alias] = cte
            elif name in self.catalog:
                table, columns = self.catalog[name]
                scope[alias] = _Relation(table=table, columns=frozenset(columns))
                self.tables.add(table)
        elif kind == "SUBQUERY":
            relation = self.query(ref["subquery"]["node"], scopes[:-1])
            names = [str(n).lower() for n in ref.get("column_name_alias") or []]
            if names:
                relation = _Relation(lineage=dict(zip(names, relation.lineage.values(),
                                                      strict=False)))
            scope[(ref.get("alias") or f"#sub{len(scope)}").lower()] = relation
        elif kind == "JOIN":
            self._from(ref["left"], scope, scopes)
            self._from(ref["right"], scope, scopes)
            if ref.get("condition"):
                self.joins |= self._columns(ref["condition"], scopes)
            for column in ref.get("using_columns") or []:
                for relation in scope.values():
                    self.joins |= relation.resolve(str(column).lower()) or set()

    def _aggregate(self, call: dict, scopes: list) -> tuple[set[ColumnRef], set[ColumnRef]]:
        """What one aggregate call of a select list splits by, and what it measures.

        The columns of its conditions (:func:`_conditions`) are splits, but for the
        measured ones: the columns it aggregates as its value (everything outside the
        conditions; a window's arguments), and, when it reads no value, the columns its
        conditions test as a yes/no outcome (:func:`_outcome_tests`).
        """
        conditions = _conditions(call)
        value = self._columns(_pruned(call if call.get("class") == "FUNCTION"
                                      else call.get("arguments"), conditions), scopes)
        outcomes = [] if value else [t for c in conditions for t in _outcome_tests(c)]
        measured = value | self._columns(outcomes, scopes)
        read = {(ref.table, ref.column) for ref in measured}
        splits = {ref for condition in conditions
                  for ref in self._columns(_pruned(condition, outcomes), scopes)
                  if (ref.table, ref.column) not in read}
        return splits, measured

    def _columns(self, expression: object, scopes: list) -> set[ColumnRef]:
        """Catalog columns an expression reads, each with the date parts it determines
        (:attr:`ColumnRef.grain`); subqueries inside add their own usage."""
        return _combined(self._walk(expression, scopes, None))

    def _walk(self, item: object, scopes: list, wrap: dict | None) -> set[ColumnRef]:
        """Columns under ``item``; ``wrap`` is the nearest function call around it."""
        if isinstance(item, list):
            return set().union(*(self._walk(i, scopes, wrap) for i in item)) if item else set()
        if not isinstance(item, dict):
            return set()
        kind = item.get("class")
        if kind == "COLUMN_REF":
            names = [str(n).lower() for n in item.get("column_names") or []]
            if not names:
                return set()
            qualifier = names[-2] if len(names) >= 2 else None
            found = _lookup(scopes, qualifier, names[-1]) or set()
            return {_derived(ref, wrap) for ref in found}
        if kind == "SUBQUERY":
            inner = self.query(item["subquery"]["node"], scopes)
            found = {ref for refs in inner.lineage.values() for ref in refs}
            if item.get("child"):
                found |= self._walk(item["child"], scopes, wrap)
            return found
        if kind == "FUNCTION" or (kind == "CAST" and _cast_to_date(item)):
            return self._walk([v for k, v in item.items() if k != "class"], scopes, item)
        return self._walk(list(item.values()), scopes, wrap)

    def _group_target(self, expression: dict, select_list: list, outputs: dict,
                      scopes: list) -> set[ColumnRef]:
        """A GROUP BY item: a position, a select-list alias, or an expression."""
        literal = expression.get("literal") or {}
        if expression.get("class") == "CONSTANT" and literal.get("kind") in ("INTEGER",
                                                                               "BIGINT"):
            position = int(literal.get("text", "0")) - 1
            if 0 <= position < len(select_list):
                return self._columns(select_list[position], scopes)
        names = expression.get("column_names") or []
        if expression.get("class") == "COLUMN_REF" and len(names) == 1:
            found = _lookup(scopes, None, str(names[0]).lower())
            if found is None and str(names[0]).lower() in outputs:
                return outputs[str(names[0]).lower()]
        return self._columns(expression, scopes)


_AGGREGATE_HINTS = frozenset({
    "count", "count_star", "sum", "avg", "mean", "min", "max", "median", "mode", "stddev",
    "stddev_samp", "stddev_pop", "variance", "var_samp", "var_pop", "string_agg", "list",
    "array_agg", "first", "last", "any_value", "arg_max", "arg_min", "approx_count_distinct",
    "quantile", "quantile_cont", "quantile_disc", "bool_and", "bool_or", "corr", "covar_pop",
    "histogram", "product", "approx_quantile", "entropy", "kurtosis", "skewness",
})  # fmt: skip


def _is_aggregate(node: dict) -> bool:
    return node.get("class") == "WINDOW" or str(node.get("function_name", "")).lower() in \
        _AGGREGATE_HINTS


def _aggregates(expression: dict) -> list[dict]:
    """The aggregate calls (windows included) of one select-list expression, nested ones
    too, outside its subqueries."""
    return [n for n in outer_nodes(expression)
            if n.get("class") in ("FUNCTION", "WINDOW") and _is_aggregate(n)]


def _conditions(call: dict) -> list[dict]:
    """The conditions inside one aggregate call that choose the rows or values it
    aggregates: its ``FILTER`` clause and those of calls nested in it, and the ``WHEN``
    of every ``CASE`` in it that picks rows (:func:`_picks_rows`; outside its
    subqueries)."""
    found: list[dict] = []
    for node in outer_nodes(call):
        if node.get("class") in ("FUNCTION", "WINDOW"):
            found += [c for c in (node.get("filter"), node.get("filter_expr")) if c]
        if _picks_rows(node):
            found += [check["when_expr"] for check in node.get("case_checks") or []
                      if check.get("when_expr")]
    return found


def _picks_rows(case: dict) -> bool:
    """Whether a ``CASE`` picks rows, some branch giving NULL or a constant
    (``CASE WHEN severity = 'critical' THEN died END``, ``... THEN 1 ELSE 0 END``), rather
    than rewriting a value in every branch (``CASE WHEN status = 'refund' THEN -amount
    ELSE amount END`` compares no strata of status)."""
    checks = case.get("case_checks") or []
    if not checks:
        return False
    branches = [check.get("then_expr") for check in checks] + [case.get("else_expr")]
    return any(not isinstance(branch, dict) or branch.get("class") == "CONSTANT"
               for branch in branches)


_NULL_TESTS = frozenset({"OPERATOR_IS_NULL", "OPERATOR_IS_NOT_NULL"})
_EQUALITIES = frozenset({"COMPARE_EQUAL", "COMPARE_NOTEQUAL", "COMPARE_NOT_DISTINCT_FROM",
                         "COMPARE_DISTINCT_FROM"})


def _outcome_tests(condition: dict) -> list[dict]:
    """The columns a condition tests as a yes/no outcome rather than a stratum: a flag on
    its own, negated or cast (``o.died``, ``NOT o.died``, ``o.died IS TRUE``), compared
    with a truth value (``o.died = 1``, ``o.died <> false``), or tested for a value
    (``x IS NULL``); the parts of ``AND``/``OR`` each on their own. Returns the column
    (or cast) nodes, for :func:`_pruned`."""
    kind = condition.get("type")
    if condition.get("class") == "CONJUNCTION" or kind == "OPERATOR_NOT":
        return [t for child in condition.get("children") or [] for t in _outcome_tests(child)]
    if kind in _NULL_TESTS:
        return [c for c in condition.get("children") or [] if _is_column(c)]
    if kind in _EQUALITIES:
        sides = [condition.get("left") or {}, condition.get("right") or {}]
        if any(_is_truth_value(side) for side in sides):
            return [side for side in sides if _is_column(side)]
        return []
    return [condition] if _is_column(condition) else []


def _is_column(node: dict) -> bool:
    """A column reference, or a cast of one (``o.died::INTEGER``)."""
    if node.get("class") == "CAST":
        return _is_column(node.get("child") or {})
    return node.get("class") == "COLUMN_REF"


def _is_truth_value(node: dict) -> bool:
    """A constant ``true``/``false`` or ``1``/``0``."""
    literal = node.get("literal") or {}
    if node.get("class") != "CONSTANT":
        return False
    return literal.get("kind") == "BOOLEAN" or (
        literal.get("kind") in ("INTEGER", "BIGINT") and literal.get("text") in ("0", "1"))


def _pruned(item: object, drop: Iterable[dict]) -> object:
    """A copy of a parse (sub)tree without the nodes in ``drop`` (matched by identity)."""
    gone = {id(node) for node in drop}

    def copy(current: object) -> object:
        if isinstance(current, dict):
            return None if id(current) in gone else {k: copy(v) for k, v in current.items()}
        if isinstance(current, list):
            return [copy(i) for i in current]
        return current

    return copy(item)


_PART_FUNCTIONS = {
    "year": {"year"}, "isoyear": {"year"}, "month": {"month_of_year"},
    "monthname": {"month_of_year"}, "quarter": {"quarter_of_year"},
    "dayofweek": {"day_of_week"}, "isodow": {"day_of_week"}, "weekday": {"day_of_week"},
    "dayname": {"day_of_week"}, "hour": {"hour"},
}  # fmt: skip
_DAY = {"year", "quarter", "month", "month_of_year", "day_of_week"}
_TRUNCATED = {
    "year": {"year"}, "quarter": {"year", "quarter"},
    "month": {"year", "quarter", "month", "month_of_year"}, "day": _DAY,
    "hour": _DAY | {"hour"}, "minute": _DAY | {"hour"}, "second": _DAY | {"hour"},
}  # fmt: skip
_NAMED_PARTS = {"year": {"year"}, "month": {"month_of_year"}, "quarter": {"quarter_of_year"},
                "dow": {"day_of_week"}, "isodow": {"day_of_week"},
                "dayofweek": {"day_of_week"}, "weekday": {"day_of_week"}, "hour": {"hour"}}
_KEEPS_COLUMN = frozenset({"coalesce", "ifnull", "nullif", "greatest", "least", "trim",
                           "lower", "upper", "lcase", "ucase"})


def _derived(ref: ColumnRef, wrap: dict | None) -> ColumnRef:
    """``ref`` as seen through ``wrap``, the nearest function call around it (a use
    already derived in a subquery keeps what it determined)."""
    if wrap is None or ref.grain != "":
        return ref
    if wrap.get("class") == "CAST":
        return ColumnRef(ref.table, ref.column, _grain(_DAY))
    name = str(wrap.get("function_name", "")).lower()
    if name in _KEEPS_COLUMN:
        return ref
    parts = _parts_of_call(name, wrap)
    return ColumnRef(ref.table, ref.column, "-" if parts is None else _grain(parts))


def _parts_of_call(name: str, call: dict) -> set[str] | None:
    """The date parts a call over a date column determines (None: not a date function)."""
    if name in _PART_FUNCTIONS:
        return set(_PART_FUNCTIONS[name])
    text = _first_literal(call)
    if name in ("date_trunc", "datetrunc", "time_bucket"):
        return set(_TRUNCATED.get((text or "").lower(), set()))
    if name in ("date_part", "datepart", "extract"):
        return set(_NAMED_PARTS.get((text or "").lower(), set()))
    if name in ("strftime", "date_format"):
        return _format_parts(text or "")
    return None


def _format_parts(fmt: str) -> set[str]:
    """Date parts a strftime format determines (``%Y-%m`` the month and its year...)."""
    codes = set(re.findall(r"%([a-zA-Z])", fmt))
    parts: set[str] = set()
    if codes & {"Y", "G", "y"}:
        parts.add("year")
    if codes & {"m", "b", "B"}:
        parts.add("month_of_year")
    if codes & {"a", "A", "w", "u"}:
        parts.add("day_of_week")
    if codes & {"d", "j"} and {"year", "month_of_year"} <= parts | {"month_of_year"}:
        parts |= _DAY if "year" in parts else set()
    if codes & {"H", "I"}:
        parts.add("hour")
    return parts


def _first_literal(call: dict) -> str | None:
    """The first string constant among a call's arguments (a unit, a part, a format)."""
    for argument in call.get("arguments") or []:
        expression = argument.get("expression", argument) if isinstance(argument, dict) else {}
        literal = expression.get("literal") or {}
        if expression.get("class") == "CONSTANT" and literal.get("kind") == "STRING":
            return str(literal.get("text", ""))
    return None


def _cast_to_date(node: dict) -> bool:
    return str((node.get("type_expr") or {}).get("type_name", "")).upper() == "DATE"


def _grain(parts: set[str]) -> str:
    """Parts as :attr:`ColumnRef.grain`, with what they imply together (a year and a month
    of year give the month and its quarter)."""
    parts = set(parts)
    if {"year", "month_of_year"} <= parts:
        parts |= {"month", "quarter"}
    if {"year", "quarter_of_year"} <= parts:
        parts.add("quarter")
    return ",".join(sorted(parts)) or "-"


def _combined(refs: set[ColumnRef]) -> set[ColumnRef]:
    """One expression's uses of a column merged: ``year(d) * 100 + month(d)`` is the month."""
    by_column: dict[tuple[str, str], list[ColumnRef]] = {}
    for ref in refs:
        by_column.setdefault((ref.table, ref.column), []).append(ref)
    merged: set[ColumnRef] = set()
    for (table, column), uses in by_column.items():
        grains = {u.grain for u in uses}
        if "" in grains:
            merged.add(ColumnRef(table, column))
            continue
        parts = {p for g in grains for p in g.split(",") if p not in ("-", "")}
        merged.add(ColumnRef(table, column, _grain(parts)))
    return merged


def _default_name(expression: dict) -> str:
    names = expression.get("column_names") or []
    return str(names[-1]) if expression.get("class") == "COLUMN_REF" and names else ""
