"""Which strings a quadratic string distance may compare: never one the query built.

``levenshtein``, ``jaro_winkler_similarity`` and the other quadratic distances run in one
uninterruptible call whose time and memory grow with the product of their inputs'
lengths. Their arguments are columns, short literals, casts and the plain text functions
(``lower``, ``trim`` ...) of those (checked per call by
:func:`~d2_notebook.data.builder_limits.check_builder`); :func:`find_built_input` checks
that no such column can be a string the query built (``string_agg``, ``repeat``,
``list_aggregate`` ...). The contract, read from DuckDB's parse tree:

- **Plain sources.** Every source a distance can see must be plain: the sources of the
  FROM of its own query and of every query around it (correlation, LATERAL), except the
  FROM item the distance itself sits in; a CTE body does not see the FROM of the query
  that defines it. The ORDER BY of a set operation sees the set operation's output, which
  must then be plain too.
- A source is plain when it is a table or view of the database (the user's data), no FROM
  at all, a join of plain sources, or a CTE or FROM subquery whose query is plain.
- A query is plain when it is a SELECT whose every output is a column reference, a CAST,
  a COLLATE or a plain text function of plain outputs, or a constant of at most
  ``literal_chars`` characters (``SELECT *`` included; its REPLACE expressions must be
  plain), whose GROUP BY keys are plain, and whose FROM is plain; or a set operation
  whose branches are all plain. WHERE, HAVING, QUALIFY and subqueries in them produce no
  output column and are not read. Aggregates, window functions, UNNEST and every other
  function, subqueries in the select list, lambdas, ``COLUMNS`` with an expression,
  VALUES, table functions, recursive CTEs and anything not recognised are not plain
  (fail closed).
- **Names.** A table name resolves to every CTE of that name in the statement (scopes
  are not modelled): all of them must be plain. Inside a non-recursive CTE its own name
  means the table (or an outer CTE) of that name; any other cycle is not plain.
- **Aliases.** An expression alias anywhere in the statement that shares a name with a
  compared column must be a plain projection (DuckDB lets ``string_agg(x, '') AS s`` be
  referenced as ``s`` in the same SELECT, its WHERE or a subquery); the names a plain
  alias reads are then compared too (``string_agg(x, '') AS s, s AS name``). A lambda
  parameter may not share a name with a compared column.
"""

from __future__ import annotations

from d2_notebook.data.parse_tree import column_names, iter_nodes

__all__ = ["PLAIN_TEXT_FUNCTIONS", "QUADRATIC_DISTANCES", "find_built_input"]

QUADRATIC_DISTANCES = frozenset({
    "levenshtein", "editdist3", "damerau_levenshtein", "jaro_similarity",
    "jaro_winkler_similarity",
})  # fmt: skip
PLAIN_TEXT_FUNCTIONS = frozenset({"lower", "upper", "lcase", "ucase", "trim", "ltrim",
                                  "rtrim", "strip_accents", "nfc_normalize"})
# Table references a distance may sit inside (in a subquery of theirs); the scope of
# any other (PIVOT ...) is not modelled.
_PATH_REFS = frozenset({"SUBQUERY", "JOIN", "TABLE_FUNCTION", "EXPRESSION_LIST"})
_BRANCH_KEYS = frozenset({"children", "left", "right", "cte_map"})


def find_built_input(tree: object, *, literal_chars: int) -> tuple[str, str] | None:
    """``None`` when no quadratic distance of the statement can compare a string the
    query built, else ``(distance name, what may be built)`` (see the module docstring).

    Args:
        tree: The statement's JSON parse tree (``json_serialize_sql``), or any subtree.
        literal_chars: The longest constant a plain query may output.
    """
    parents: dict[int, tuple[dict, str]] = {}
    calls: list[dict] = []
    pending: list[tuple[object, dict | None, str]] = [(tree, None, "")]
    while pending:
        item, parent, key = pending.pop()
        if isinstance(item, list):
            pending.extend((value, parent, key) for value in item)
        elif isinstance(item, dict):
            if parent is not None:
                parents[id(item)] = (parent, key)
            if str(item.get("function_name", "")).lower() in QUADRATIC_DISTANCES:
                calls.append(item)
            pending.extend((v, item, k) for k, v in item.items() if isinstance(v, dict | list))
    calls = [call for call in calls if column_names(call.get("arguments"))]
    if not calls:
        return None
    compared: set[str] = set()
    sources = _Sources(tree, literal_chars)
    for call in calls:
        compared |= column_names(call.get("arguments"))
        name = str(call.get("function_name", "")).lower()
        try:
            problem = _scope_problem(call, parents, sources)
        except RecursionError:
            problem = "sources nested too deeply to check"
        if problem is not None:
            return name, f"it reads {problem}"
    name = str(calls[0].get("function_name", "")).lower()
    problem = _alias_problem(tree, compared, literal_chars)
    if problem is None and any(node.get("class") == "LAMBDA" and column_names(node.get("lhs"))
                               & compared for node in iter_nodes(tree)):
        problem = "a lambda parameter shares a name with a column it compares"
    return None if problem is None else (name, problem)


def _scope_problem(call: dict, parents: dict[int, tuple[dict, str]],
                   sources: _Sources) -> str | None:
    """What the distance ``call`` can see that is not plain, from the root down to it."""
    path: list[tuple[dict, str]] = []
    child = call
    while id(child) in parents:
        path.append(parents[id(child)])
        child = path[-1][0]
    on_path = {id(call)} | {id(parent) for parent, _ in path}
    sources.outside = set()
    for parent, key in reversed(path):
        if "class" in parent:
            continue
        kind = str(parent.get("type"))
        if "materialized" in parent and key in ("query_node", "query"):  # a CTE's body
            if str((_cte_node(parent) or {}).get("type")) != "RECURSIVE_CTE_NODE":
                sources.outside.add(id(parent))  # its name inside it means the table
            continue
        if "modifiers" not in parent or "cte_map" not in parent:  # not a query node
            if "alias" in parent and "sample" in parent and kind not in _PATH_REFS:
                return f"a {kind.lower().replace('_', ' ')} in FROM around the call"
            continue
        if kind == "SELECT_NODE":
            if key == "cte_map":
                continue  # a CTE body does not see the FROM of the query defining it
            for leaf in _leaves(parent.get("from_table")):
                if key != "from_table" or id(leaf) not in on_path:
                    problem = sources.source(leaf)
                    if problem is not None:
                        return problem
        elif kind not in ("SET_OPERATION_NODE", "RECURSIVE_CTE_NODE"):
            return f"a {kind.lower().replace('_', ' ')} around the call"
        elif key not in _BRANCH_KEYS:  # e.g. the ORDER BY of a UNION sees its output
            problem = sources.query(parent)
            if problem is not None:
                what = kind.lower().removesuffix("_node").replace("_", " ")
                return f"the result of a {what} {problem}"
    return None


def _cte_node(value: dict) -> object:
    """The query node of a CTE's ``cte_map`` value."""
    return value.get("query_node") or (value.get("query") or {}).get("node")


def _leaves(ref: object) -> list[dict]:
    """The table references a FROM clause joins (JOINs taken apart, subqueries whole)."""
    leaves, pending = [], [ref]
    while pending:
        item = pending.pop()
        if isinstance(item, dict) and item.get("type") == "JOIN":
            pending.extend((item.get("right"), item.get("left")))
        elif isinstance(item, dict):
            leaves.append(item)
    return leaves


class _Sources:
    """Whether FROM sources and queries are plain; each problem is a phrase naming the
    first output or source that is not."""

    def __init__(self, tree: object, literal_chars: int) -> None:
        self.literal_chars = literal_chars
        self.ctes: dict[str, list[dict]] = {}
        for node in iter_nodes(tree):
            for entry in (node.get("cte_map") or {}).get("map") or []:
                if isinstance(entry, dict) and isinstance(entry.get("value"), dict):
                    self.ctes.setdefault(str(entry.get("key", "")).casefold(),
                                         []).append(entry["value"])
        self.known: dict[int, str | None] = {}  # id of a CTE's value -> its problem
        self.active: list[int] = []  # CTEs being read, innermost last
        # Non-recursive CTEs being read from inside: there, their name is not theirs.
        self.outside: set[int] = set()

    def source(self, ref: dict) -> str | None:
        kind = ref.get("type")
        if kind == "BASE_TABLE":
            name = str(ref.get("table_name", ""))
            for value in self.ctes.get(name.casefold(), []):
                if id(value) in self.outside:
                    continue  # its own name inside a non-recursive CTE: the table
                problem = self._cte(value)
                if problem is not None:
                    return f"a CTE {name} {problem}"
            return None
        if kind == "JOIN":
            return self.source(ref.get("left") or {}) or self.source(ref.get("right") or {})
        if kind == "SUBQUERY":
            problem = self.query((ref.get("subquery") or {}).get("node"))
            return None if problem is None else f"a subquery in FROM {problem}"
        if kind == "EMPTY":
            return None
        if kind == "TABLE_FUNCTION":
            function = (ref.get("function") or {}).get("function_name")
            return f"the table function {function}() in FROM"
        if kind == "EXPRESSION_LIST":
            return "VALUES in FROM"
        return f"a {str(kind).lower().replace('_', ' ')} in FROM"

    def _cte(self, value: dict) -> str | None:
        key = id(value)
        if key in self.active:
            return "that reads itself through another CTE"
        if key not in self.known:
            self.active.append(key)
            outside, self.outside = self.outside, {key}
            try:
                self.known[key] = self.query(_cte_node(value))
            finally:
                self.outside = outside
                self.active.pop()
        return self.known[key]

    def query(self, node: object) -> str | None:
        if not isinstance(node, dict):
            return "that cannot be read"
        kind = str(node.get("type"))
        if kind == "SELECT_NODE":
            for number, expression in enumerate(node.get("select_list") or [], 1):
                what = _expression_problem(expression, self.literal_chars)
                if what is not None:
                    column = (expression.get("alias") if isinstance(expression, dict)
                              else None) or f"#{number}"
                    return f"whose column {column} is {what}"
            for expression in node.get("group_expressions") or []:
                what = _expression_problem(expression, self.literal_chars)
                if what is not None:
                    return f"that groups by {what}"
            problem = self.source(node.get("from_table") or {})
            return None if problem is None else f"that reads {problem}"
        if kind == "SET_OPERATION_NODE":
            operation = str(node.get("setop_type", "set operation")).replace("_", " ")
            branches = node.get("children") or [node.get("left"), node.get("right")]
            for number, branch in enumerate(branches, 1):
                problem = self.query(branch)
                if problem is not None:
                    return f"whose {operation} branch {number} is a query {problem}"
            return None
        if kind == "RECURSIVE_CTE_NODE":
            return "that is recursive"
        return f"that is a {kind.lower().replace('_', ' ')}"


def _expression_problem(expression: object, literal_chars: int) -> str | None:
    """``None`` for a plain projection (a column, a short constant, a CAST, COLLATE or
    plain text function of those, ``*``), else a phrase naming what is computed."""
    pending = [expression]
    while pending:
        item = pending.pop()
        if not isinstance(item, dict):
            return "an unreadable expression"
        kind = item.get("class")
        if kind == "COLUMN_REF":
            continue
        if kind == "CONSTANT":
            text = str((item.get("literal") or {}).get("text") or "")
            if len(text) <= literal_chars:
                continue
            return f"a literal of {len(text):,} characters"
        if kind in ("CAST", "COLLATE"):
            pending.append(item.get("child"))
            continue
        name = str(item.get("function_name", "")).lower()
        if (kind == "FUNCTION" and name in PLAIN_TEXT_FUNCTIONS
                and not item.get("catalog") and not item.get("schema")):
            pending.extend(a.get("expression") for a in item.get("arguments") or []
                           if isinstance(a, dict))
            continue
        if kind == "STAR" and _plain_star(item):
            pending.extend(entry.get("value") for entry in item.get("replace_list") or []
                           if isinstance(entry, dict))
            continue
        return _describe(item)
    return None


def _plain_star(node: dict) -> bool:
    """``*`` or ``COLUMNS(*)`` / ``COLUMNS('regex')`` / ``COLUMNS(['a', 'b'])``."""
    chosen = node.get("expr")
    if chosen is None or (isinstance(chosen, dict) and chosen.get("class") == "CONSTANT"):
        return True
    return (isinstance(chosen, dict) and chosen.get("function_name") == "list_value"
            and all(isinstance(a, dict) and (a.get("expression") or {}).get("class")
                    == "CONSTANT" for a in chosen.get("arguments") or []))


def _describe(node: dict) -> str:
    kind = str(node.get("class"))
    name = node.get("function_name")
    if kind == "FUNCTION" and node.get("is_operator"):
        return f"the operator {name}"
    if kind == "FUNCTION":
        return f"{name}()"
    if kind == "WINDOW":
        return f"the window function {name}()"
    if kind == "STAR":
        return "COLUMNS(...) with an expression"
    article = "an" if kind[:1] in "AEIOU" else "a"
    return f"{article} {kind.lower().replace('_', ' ')} expression"


def _alias_problem(tree: object, compared: set[str], literal_chars: int) -> str | None:
    """An expression alias named like a compared column that is not a plain projection;
    a plain one adds the names it reads to ``compared`` (updated in place)."""
    aliased = [node for node in iter_nodes(tree) if "class" in node and node.get("alias")]
    grown = True
    while grown:
        grown = False
        for node in aliased:
            if str(node["alias"]).casefold() not in compared:
                continue
            what = _expression_problem(node, literal_chars)
            if what is not None:
                return f"the alias {node['alias']} names {what}"
            names = column_names(node) - compared
            if names:
                compared |= names
                grown = True
    return None
