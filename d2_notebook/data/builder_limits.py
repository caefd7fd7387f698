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
allowed as tables only. The quadratic string distances (``levenshtein``,
``damerau_levenshtein``, ...) take columns and literals only, never a built string.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BUILDER_LIMITS", "BuilderLimits", "builder_size", "check_builder"]


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
    """

    list_elements: int = 10_000
    string_chars: int = 10_000
    table_rows: int = 10_000_000
    unknown_width: int = 100
    distance_literal_chars: int = 1_000


BUILDER_LIMITS = BuilderLimits()

_RANGES = frozenset({"range", "generate_series"})
_RESIZES = frozenset({"list_resize", "array_resize"})
_PADS = frozenset({"lpad", "rpad"})
_TEMPORAL = frozenset({"DATE", "TIMESTAMP", "TIMESTAMPTZ", "TIMESTAMP WITH TIME ZONE"})
_QUADRATIC_DISTANCES = frozenset({
    "levenshtein", "editdist3", "damerau_levenshtein", "jaro_similarity",
    "jaro_winkler_similarity",
})  # fmt: skip
_PLAIN_TEXT_FUNCTIONS = frozenset({"lower", "upper", "lcase", "ucase", "trim", "ltrim",
                                   "rtrim", "strip_accents", "nfc_normalize"})


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
    if name in _QUADRATIC_DISTANCES:
        return _check_distance(name, expressions, limits)
    if name == "repeat" and len(expressions) == 2:
        return _check_repeat(expressions, limits)
    if name in _RESIZES and len(expressions) >= 2:
        return _check_size(name, expressions[1], limits.list_elements, "elements")
    if name in _PADS and len(expressions) >= 2:
        return _check_size(name, expressions[1], limits.string_chars, "characters")
    return None


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
        elif kind == "FUNCTION" and item.get("function_name") in _PLAIN_TEXT_FUNCTIONS:
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
