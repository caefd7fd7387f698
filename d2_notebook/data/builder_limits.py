"""Static caps on the functions that build large values from small SQL.

``range(0, 300000000)`` as a list, ``repeat('x', 10^9)`` or ``list_resize(l, 10^9)``
allocate their whole result inside one function call: DuckDB's memory manager does not
bound that memory and the time limit cannot interrupt the call, so one short statement
could take gigabytes and minutes. Their size arguments are therefore read from the
parse tree before anything runs: they must be integer constants (possibly cast) within
:data:`BUILDER_LIMITS`, and a refusal names the limit. Because builders nest (a lambda
over ``range(n)`` returning ``range(m)``) and DuckDB evaluates 2,048 rows at a time, the
*product* of every builder's size in one statement is capped, not each alone. Table
functions (``FROM range(n)``) stream their rows and are interruptible, so they get a
separate, higher cap; temporal ranges (dates and timestamps with an interval step) are
allowed as tables only.

Two other shapes build a value quadratic in the data inside one call:

- a lambda that captures a value from outside it: ``list_transform(xs, lambda x: xs)``
  copies the whole list ``xs`` (say ``list(i)`` over the table) once per element. A
  lambda body may therefore reference only its own parameters and constants; an outer
  column cast to a fixed-width type (``n::DOUBLE``, ``d::DATE``) is allowed, since it
  cannot be a list or a long string. Its builders run once per element of a list as
  long as the data, so together they may make at most
  :attr:`BuilderLimits.lambda_elements` per element.
- the quadratic string distances (``levenshtein``, ``damerau_levenshtein``, ...), which
  take columns and short literals only, never a built string. A column is a built
  string when the query makes it (``string_agg`` or ``repeat`` in a CTE or a subquery,
  a select-list alias, a lambda parameter), so every source a distance can see must be
  plain (:func:`check_statement`, contract in :mod:`~d2_notebook.data.distance_inputs`):
  a table or view of the database (the user's data, trusted as such), a join of plain
  sources, or a CTE or FROM subquery that only passes columns through (a column, a cast,
  ``lower``/``trim`` ..., a short constant; no aggregate, window function, UNNEST,
  VALUES, table function, lambda or recursive CTE; set operations of plain branches).
  No alias that is not such a projection, and no lambda parameter, may be named like a
  column the distance compares.
"""

from __future__ import annotations

from dataclasses import dataclass

from d2_notebook.data.distance_inputs import (
    PLAIN_TEXT_FUNCTIONS,
    QUADRATIC_DISTANCES,
    find_built_input,
)
from d2_notebook.data.parse_tree import column_names

__all__ = ["BUILDER_LIMITS", "BuilderLimits", "builder_size", "check_builder",
           "check_statement"]


@dataclass(frozen=True)
class BuilderLimits:
    """The largest values the builders may make.

    Attributes:
        list_elements: Elements of a list built by ``range``/``generate_series`` (as a
            scalar), ``list_resize`` or ``repeat`` of a list; also the product of all
            builders' sizes in one statement.
        string_chars: Characters of a string built by ``repeat``, ``lpad`` or ``rpad``.
        table_rows: Rows of ``FROM range(...)`` / ``FROM generate_series(...)``.
        unknown_width: Assumed characters (or elements) of a non-constant value that
            ``repeat`` multiplies.
        distance_literal_chars: Longest literal a quadratic string distance compares.
        lambda_elements: Product of the builders' sizes in one lambda body (per element
            of the list the lambda runs over).
    """

    list_elements: int = 10_000
    string_chars: int = 10_000
    table_rows: int = 10_000_000
    unknown_width: int = 100
    distance_literal_chars: int = 1_000
    lambda_elements: int = 1_000


BUILDER_LIMITS = BuilderLimits()

_RANGES = frozenset({"range", "generate_series"})
_RESIZES = frozenset({"list_resize", "array_resize"})
_PADS = frozenset({"lpad", "rpad"})
_TEMPORAL = frozenset({"DATE", "TIMESTAMP", "TIMESTAMPTZ", "TIMESTAMP WITH TIME ZONE"})
# Types a captured outer column may be cast to in a lambda: fixed width, never a list or
# a long string.
_FIXED_WIDTH_TYPES = frozenset({
    "BOOLEAN", "BOOL", "TINYINT", "SMALLINT", "INTEGER", "INT", "INT4", "BIGINT", "INT8",
    "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT", "FLOAT", "REAL",
    "FLOAT4", "DOUBLE", "FLOAT8", "DECIMAL", "NUMERIC", "DATE", "TIME", "TIMESTAMP",
    "TIMESTAMPTZ", "TIMESTAMP WITH TIME ZONE", "INTERVAL", "UUID",
})  # fmt: skip


def builder_size(name: str, arguments: list, *, table: bool,
                 limits: BuilderLimits = BUILDER_LIMITS) -> int:
    """Elements or characters the call builds (1 for anything that is not a builder, and
    for table functions, which are capped on their own). Call after
    :func:`check_builder` passed."""
    if table:
        return 1
    expressions = [a.get("expression") if isinstance(a, dict) else None for a in arguments]
    if name in _RANGES:
        numbers = [_integer(e) for e in expressions]
        if expressions and all(n is not None for n in numbers):
            return max(1, _range_count(numbers, inclusive=name == "generate_series"))  # type: ignore[arg-type]
        return 1
    if name == "repeat" and len(expressions) == 2:
        width = _constant_width(expressions[0])
        times = _integer(expressions[1]) or 0
        return max(1, times * (limits.unknown_width if width is None else max(width, 1)))
    if (name in _RESIZES or name in _PADS) and len(expressions) >= 2:
        return max(1, _integer(expressions[1]) or 0)
    return 1


def check_builder(name: str, arguments: list, *, table: bool,
                  limits: BuilderLimits = BUILDER_LIMITS) -> tuple[str, str] | None:
    """``None`` when the call builds a bounded value, else ``(reason, fix)``.

    Args:
        name: The lower-cased function name.
        arguments: The call's ``arguments`` from DuckDB's JSON parse tree.
        table: True for a table function in FROM.
    """
    expressions = [a.get("expression") if isinstance(a, dict) else None for a in arguments]
    if name in _RANGES:
        return _check_range(name, expressions, table, limits)
    if table:
        return None
    for expression in expressions:
        if isinstance(expression, dict) and expression.get("class") == "LAMBDA":
            problem = _check_lambda(name, expression, limits)
            if problem is not None:
                return problem
    if name in QUADRATIC_DISTANCES:
        return _check_distance(name, expressions, limits)
    if name == "repeat" and len(expressions) == 2:
        return _check_repeat(expressions, limits)
    if name in _RESIZES and len(expressions) >= 2:
        return _check_size(name, expressions[1], limits.list_elements, "elements")
    if name in _PADS and len(expressions) >= 2:
        return _check_size(name, expressions[1], limits.string_chars, "characters")
    return None


def check_statement(tree: object, limits: BuilderLimits = BUILDER_LIMITS
                    ) -> tuple[str, str] | None:
    """``None`` when no quadratic string distance of the statement can compare a string
    the query built, else ``(reason, fix)``.

    Args:
        tree: The statement's JSON parse tree (``json_serialize_sql``), or any subtree.
        limits: ``distance_literal_chars`` bounds the constants a CTE may pass through.

    Every source a distance can see must be plain: a table or view of the database, or a
    CTE or FROM subquery that only passes columns through; no alias that is not such a
    projection, nor a lambda parameter, may share a name with a compared column (see
    :func:`~d2_notebook.data.distance_inputs.find_built_input`, which fails closed).
    """
    found = find_built_input(tree, literal_chars=limits.distance_literal_chars)
    if found is None:
        return None
    name, built = found
    return (f"{name}() takes time and memory that grow with the product of its inputs' "
            f"lengths, and {built}, so a column it compares may be a string the query "
            "built (string_agg, repeat ...)",
            f"call {name}() on columns of the database's tables, or of CTEs and FROM "
            "subqueries that only pass columns through (a column, CAST, lower()/trim(), a "
            "short literal; no aggregate, window function, UNNEST, VALUES, table function "
            "or recursive CTE), e.g. WITH s AS (SELECT id, name FROM people WHERE ...) "
            f"SELECT {name}(lower(s.name), 'smith') FROM s (aggregate in a separate query)")


def _check_lambda(name: str, node: dict, limits: BuilderLimits) -> tuple[str, str] | None:
    """A lambda body references only its own parameters, constants and outer columns
    cast to a fixed-width type, and builds at most ``lambda_elements`` per element.

    Nested lambdas are skipped: each is checked as an argument of its own call (so it
    may not capture the enclosing lambda's parameters either).
    """
    parameters = _lambda_parameters(node)
    built = 1
    pending: list[object] = [node.get("expr")]
    while pending:
        item = pending.pop()
        if isinstance(item, list):
            pending.extend(item)
            continue
        if not isinstance(item, dict) or item.get("class") == "LAMBDA":
            continue
        kind = item.get("class")
        if kind == "COLUMN_REF":
            names = item.get("column_names") or [""]
            if str(names[0]).casefold() not in parameters:
                column = ".".join(str(n) for n in names)
                return (f"the lambda of {name}() uses {column}, which is not its own "
                        "parameter: a lambda runs once per list element, so a captured list "
                        "or string is copied once per element (quadratic memory in one call)",
                        "use only the lambda's parameters and constants in its body; cast "
                        f"an outer number or date to its type ({column}::DOUBLE), or "
                        "unnest the list and combine the columns per row")
            continue
        if kind == "CAST" and _fixed_width_cast(item):
            continue
        if kind == "FUNCTION":
            built *= builder_size(str(item.get("function_name", "")).lower(),
                                  item.get("arguments") or [], table=False, limits=limits)
            if built > limits.lambda_elements:
                return (f"the lambda of {name}() builds about {built:,} elements or "
                        "characters per list element (range, repeat, lpad, ...) and the "
                        f"limit is {limits.lambda_elements:,}: the list it runs over may be "
                        "as long as the data", "use smaller sizes inside the lambda")
        pending.extend(v for v in item.values() if isinstance(v, dict | list))
    return None


def _lambda_parameters(node: dict) -> set[str]:
    """The case-folded parameter names of a LAMBDA node (``x`` or ``(a, b)``)."""
    return column_names(node.get("lhs"))


def _fixed_width_cast(node: dict) -> bool:
    """A cast of a plain column to a built-in fixed-width type (``n::DOUBLE``)."""
    type_expr = node.get("type_expr") or {}
    return ((node.get("child") or {}).get("class") == "COLUMN_REF"
            and not type_expr.get("catalog") and not type_expr.get("schema")
            and str(type_expr.get("type_name", "")).upper() in _FIXED_WIDTH_TYPES
            and all(child.get("class") == "CONSTANT" for child in type_expr.get("children") or []
                    if isinstance(child, dict)))


def _check_range(name: str, expressions: list, table: bool,
                 limits: BuilderLimits) -> tuple[str, str] | None:
    numbers = [_integer(e) for e in expressions]
    cap = limits.table_rows if table else limits.list_elements
    if expressions and all(n is not None for n in numbers):
        count = _range_count(numbers, inclusive=name == "generate_series")  # type: ignore[arg-type]
        if count > cap:
            return (f"{name}() would make {count:,} {'rows' if table else 'elements'} and the "
                    f"limit is {cap:,}", "narrow the bounds")
        return None
    if table and _temporal_bounds(expressions):
        return None
    where = "FROM " if table else ""
    return (f"the bounds of {where}{name}() must be integer constants (at most {cap:,} "
            f"{'rows' if table else 'elements'})" + ("" if table else
            " or dates/timestamps in FROM"),
            f"write constant bounds, e.g. {where}{name}(0, 100)" +
            ("" if table else f", or use FROM {name}(DATE '...', DATE '...', INTERVAL 1 DAY)"))


def _range_count(numbers: list[int], *, inclusive: bool) -> int:
    """Values of ``range`` (stop excluded) or ``generate_series`` (stop included)."""
    start, stop, step = 0, 0, 1
    if len(numbers) == 1:
        stop = numbers[0]
    elif len(numbers) >= 2:
        start, stop = numbers[0], numbers[1]
        step = numbers[2] if len(numbers) >= 3 else 1
    if step == 0 or (stop - start) * step < 0:
        return 0
    span, step = abs(stop - start), abs(step)
    return span // step + 1 if inclusive else -(-span // step)


def _check_repeat(expressions: list, limits: BuilderLimits) -> tuple[str, str] | None:
    times = _integer(expressions[1])
    if times is None:
        return ("the count of repeat() must be an integer constant",
                "write repeat(value, 10) with a constant count")
    width = _constant_width(expressions[0])
    size = max(times, 0) * (limits.unknown_width if width is None else max(width, 1))
    if size > limits.string_chars:
        return (f"repeat() would make about {size:,} characters or elements and the limit is "
                f"{limits.string_chars:,}", "use a smaller count")
    return None


def _check_size(name: str, expression: object, cap: int, unit: str) -> tuple[str, str] | None:
    size = _integer(expression)
    if size is None:
        return (f"the size given to {name}() must be an integer constant",
                f"write {name}(value, 10) with a constant size")
    if size > cap:
        return (f"{name}() would make {size:,} {unit} and the limit is {cap:,}",
                "use a smaller size")
    return None


def _check_distance(name: str, expressions: list,
                    limits: BuilderLimits) -> tuple[str, str] | None:
    """Columns, short literals, casts and case/trim functions of those only."""
    pending = list(expressions)
    while pending:
        item = pending.pop()
        if not isinstance(item, dict):
            continue
        kind = item.get("class")
        if kind == "COLUMN_REF":
            continue
        if kind == "CONSTANT":
            text = str((item.get("literal") or {}).get("text", ""))
            if len(text) <= limits.distance_literal_chars:
                continue
        elif kind == "CAST":
            pending.append(item.get("child"))
            continue
        elif kind == "FUNCTION" and item.get("function_name") in PLAIN_TEXT_FUNCTIONS:
            pending.extend(a.get("expression") for a in item.get("arguments") or []
                           if isinstance(a, dict))
            continue
        return (f"{name}() takes time and memory that grow with the product of its inputs' "
                f"lengths; it may compare columns and literals of at most "
                f"{limits.distance_literal_chars:,} characters only",
                f"call {name}() on columns (optionally lower()/trim()) or short literals")
    return None


def _integer(expression: object) -> int | None:
    """The value of an integer constant, possibly cast or negated; else ``None``."""
    while isinstance(expression, dict) and expression.get("class") == "CAST":
        expression = expression.get("child")
    if not isinstance(expression, dict) or expression.get("class") != "CONSTANT":
        return None
    literal = expression.get("literal") or {}
    if literal.get("kind") not in ("INTEGER", "BIGINT", "HUGEINT", "UBIGINT", "UHUGEINT"):
        return None
    try:
        return int(str(literal.get("text", "")).replace("_", ""))
    except ValueError:
        return None


def _constant_width(expression: object) -> int | None:
    if not isinstance(expression, dict):
        return None
    if expression.get("class") == "CONSTANT":
        literal = expression.get("literal") or {}
        return len(str(literal.get("text", "")))
    if expression.get("class") == "FUNCTION" and expression.get("function_name") == "list_value":
        return len(expression.get("arguments") or [])
    return None


def _temporal_bounds(expressions: list) -> bool:
    """Two date/timestamp constants (typed literals or casts) and a constant step."""
    if len(expressions) != 3:
        return False
    bounds = expressions[:2]
    for bound in bounds:
        if not (isinstance(bound, dict) and bound.get("class") == "CAST"
                and str((bound.get("type_expr") or {}).get("type_name", "")).upper() in _TEMPORAL
                and (bound.get("child") or {}).get("class") == "CONSTANT"):
            return False
    step = expressions[2]
    while isinstance(step, dict) and step.get("class") == "CAST":
        step = step.get("child")
    return isinstance(step, dict) and step.get("class") in ("CONSTANT", "FUNCTION") and (
        step.get("class") == "CONSTANT" or step.get("function_name") in ("to_days", "to_hours",
                                                                        "to_months", "to_years",
                                                                        "to_weeks"))
