"""What a PostgreSQL database runs unasked: the checks that hold for the whole database.

Some functions of the database's own run where no statement names them, and no reading
of the statement can tell where:

- an implicit or assignment cast: wherever the server converts one type to the other
  (a function's argument, a comparison);
- an operator: the server resolves ``=``, ``<>``, ``<=``, ``>=``, ``~~`` ... itself for
  ``IN``, ``NOT IN``, ``BETWEEN``, ``CASE x WHEN``, ``NULLIF``, ``IS DISTINCT FROM``,
  ``LIKE`` (and a search path may put a schema's operator before ``pg_catalog``'s);
  its function, and its selectivity estimators (``oprrest``, ``oprjoin``), run;
- an operator family's support function (``pg_amproc``): ``ORDER BY``, ``DISTINCT``,
  ``GROUP BY``, ``UNION``, window ordering, ``array_position``, ``GREATEST`` compare
  through the type's default operator class, with no operator written at all;
- a domain's constraint: every value coerced to the domain is checked, also where the
  statement writes no type (``age(years)`` for a domain ``age``, a polymorphic function
  over a ``domain[]`` column, ``jsonb_populate_record`` of a row with a domain column).

So :func:`check_database` refuses every statement while the database defines one of them
whose function is its own (:func:`user_function`). It is read in the statement's own
transaction, one query per statement and never cached: the database's owner may add one
between two statements. The catalog queries are d2's own, fully schema-qualified.
"""

from __future__ import annotations

from typing import Any, NoReturn

from d2_notebook.errors import UnsafeSQLError

__all__ = ["check_database", "user_function"]

_EQ = "OPERATOR(pg_catalog.=)"


def user_function(column: str) -> str:
    """SQL true when the function whose oid is ``column`` is the database's own: outside
    ``pg_catalog`` and ``information_schema``, and not an extension's compiled code (an
    extension member written in C or ``internal``, which only a superuser installs; a SQL
    or PL/pgSQL function added to an extension is the database's own)."""
    return (
        "EXISTS (SELECT 1 FROM pg_catalog.pg_proc uf "
        f"JOIN pg_catalog.pg_namespace ufn ON ufn.oid {_EQ} uf.pronamespace "
        f"JOIN pg_catalog.pg_language ufl ON ufl.oid {_EQ} uf.prolang "
        f"WHERE uf.oid {_EQ} {column} AND ufn.nspname "
        "OPERATOR(pg_catalog.<>) ALL(ARRAY['pg_catalog', 'information_schema']) "
        f"AND NOT (ufl.lanname {_EQ} ANY(ARRAY['c', 'internal']) "
        "AND EXISTS (SELECT 1 FROM pg_catalog.pg_depend ufe WHERE ufe.classid "
        f"{_EQ} 'pg_catalog.pg_proc'::pg_catalog.regclass AND ufe.objid "
        f"{_EQ} uf.oid AND ufe.deptype {_EQ} 'e')))"
    )


_FUNCTION = (f"JOIN pg_catalog.pg_proc p ON p.oid {_EQ} {{}} "
             f"JOIN pg_catalog.pg_namespace pn ON pn.oid {_EQ} p.pronamespace ")
_IMPLICIT_SQL = (
    # each row: kind, the object as SQL names it, its detail, the function's schema, name
    "SELECT * FROM ("
    "SELECT 1 AS rank, CASE k.castcontext WHEN 'i' THEN 'implicit cast' "
    "ELSE 'assignment cast' END AS kind, pg_catalog.format_type(k.castsource, NULL) AS what, "
    "pg_catalog.format_type(k.casttarget, NULL) AS detail, pn.nspname, p.proname "
    f"FROM pg_catalog.pg_cast k {_FUNCTION.format('k.castfunc')}"
    f"WHERE k.castcontext OPERATOR(pg_catalog.<>) 'e' AND {user_function('k.castfunc')} "
    "UNION ALL SELECT 2, 'operator', pg_catalog.quote_ident(n.nspname) "
    "OPERATOR(pg_catalog.||) '.' OPERATOR(pg_catalog.||) o.oprname, "
    "pg_catalog.concat(pg_catalog.format_type(NULLIF(o.oprleft, 0), NULL), ', ', "
    "pg_catalog.format_type(NULLIF(o.oprright, 0), NULL)), pn.nspname, p.proname "
    "FROM pg_catalog.pg_operator o "
    f"JOIN pg_catalog.pg_namespace n ON n.oid {_EQ} o.oprnamespace "
    + _FUNCTION.format("ANY(ARRAY[o.oprcode::pg_catalog.oid, o.oprrest::pg_catalog.oid, "
                       "o.oprjoin::pg_catalog.oid])")
    + f"WHERE {user_function('p.oid')} "
    "UNION ALL SELECT 3, 'operator family', pg_catalog.quote_ident(n.nspname) "
    "OPERATOR(pg_catalog.||) '.' OPERATOR(pg_catalog.||) pg_catalog.quote_ident(f.opfname), "
    "a.amname::pg_catalog.text, pn.nspname, p.proname "
    "FROM pg_catalog.pg_amproc ap "
    f"JOIN pg_catalog.pg_opfamily f ON f.oid {_EQ} ap.amprocfamily "
    f"JOIN pg_catalog.pg_namespace n ON n.oid {_EQ} f.opfnamespace "
    f"JOIN pg_catalog.pg_am a ON a.oid {_EQ} f.opfmethod "
    f"{_FUNCTION.format('ap.amproc')}WHERE {user_function('p.oid')} "
    "UNION ALL SELECT 4, 'domain', pg_catalog.format_type(t.oid, NULL), "
    "c.conname::pg_catalog.text, pn.nspname, p.proname "
    "FROM pg_catalog.pg_constraint c "
    f"JOIN pg_catalog.pg_type t ON t.oid {_EQ} c.contypid "
    f"JOIN pg_catalog.pg_depend d ON d.classid {_EQ} "
    "'pg_catalog.pg_constraint'::pg_catalog.regclass "
    f"AND d.objid {_EQ} c.oid AND d.refclassid {_EQ} 'pg_catalog.pg_proc'::pg_catalog.regclass "
    f"{_FUNCTION.format('d.refobjid')}WHERE {user_function('p.oid')}"
    ") AS found ORDER BY 1, 3, 4, 5, 6 LIMIT 1"
)


def check_database(connection: Any) -> None:
    """Refuse every statement while the database defines a cast, operator, operator
    family or domain constraint that runs a function of its own unasked (see the module
    docstring).

    Args:
        connection: A SQLAlchemy connection inside the transaction the statement will
            run in (``exec_driver_sql``).

    Raises:
        UnsafeSQLError: The first such object, named with its function and the fix (its
            owner drops it or rewrites it with built-in functions).
    """
    row = connection.exec_driver_sql(_IMPLICIT_SQL).fetchone()
    if row is None:
        return
    _, kind, what, detail, schema, name = row
    function = f"function {schema}.{name}(), which the guard does not check,"
    unasked = "no statement runs on this database while it exists"
    if kind.endswith("cast"):
        _refuse(f"the database defines an {kind} from {what} to {detail} that runs "
                f"{function} wherever the server converts {what} to {detail} unasked; "
                f"{unasked}", f"ask its owner to drop it (DROP CAST ({what} AS {detail})) "
                "or make it explicit-only")
    if kind == "operator":
        _refuse(f"the database defines operator {what} ({detail}) that runs {function} "
                "wherever the server resolves the operator itself (IN, BETWEEN, CASE, "
                f"NULLIF, LIKE, comparisons); {unasked}",
                f"ask its owner to drop it (DROP OPERATOR {what} ({detail})) or to "
                "implement it with a built-in function")
    if kind == "operator family":
        _refuse(f"the database defines operator family {what} (USING {detail}) whose "
                f"support {function} runs wherever values of its type are sorted, "
                f"grouped or compared (ORDER BY, DISTINCT, GROUP BY, UNION); {unasked}",
                f"ask its owner to drop it (DROP OPERATOR FAMILY {what} USING {detail})")
    _refuse(f"the database defines domain {what} whose constraint {detail} runs "
            f"{function} wherever a value is converted to {what}, also where no "
            f"statement writes the type (a function-style cast {what}(x), a polymorphic "
            f"function over a column of the domain); {unasked}",
            f"ask its owner to drop the constraint (ALTER DOMAIN {what} DROP CONSTRAINT "
            f"{detail}) or rewrite it with built-in functions")


def _refuse(reason: str, fix: str) -> NoReturn:
    raise UnsafeSQLError(f"SQL refused: {reason}. The SQL tool runs only one read-only query "
                         f"per call over the tables already in the database; {fix}.")
