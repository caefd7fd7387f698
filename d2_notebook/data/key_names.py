"""References by name: a column named after another table points at that table's ``id``.

The usual naming of a foreign key (``orders.customer_id`` → ``customers.id``) shares no
column name with its parent, so :mod:`d2_notebook.data.keys` finds such candidates here
and checks them against the data like any inferred edge (same kind, ``id`` unique, every
value contained). A candidate is:

- a column whose name ends in ``_id`` or, in camel case, ``Id`` (``customer_id``,
  ``customerId``; not ``paid`` or ``valid``), that no declared edge already uses;
- pointing at the one table whose name is the column's stem, singular or plural
  (``customer`` → ``customers``, ``category`` → ``categories``); failing that, at the one
  table whose name *ends* in the stem after an underscore (``license_id`` →
  ``drivers_license``), unless that table itself holds references (a link table such as
  ``order_items``, whose dense surrogate ids contain any small code);
- not a column named after its own table (``customers.customer_id`` is its own key);
- and only when that table has an ``id`` column of the same kind and no column of the
  referring column's own name (then the shared-name rule decides).

A stem that names two tables equally well (``status_id``: ``order_status`` and
``ticket_status``) refers to neither.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from d2_notebook.data.schema import TableInfo

__all__ = ["named_references", "reference_stem", "table_forms"]

Kinds = Mapping[str, Mapping[str, tuple[str, str | None]]]
"""Per table name: lower-cased column name -> (its name as written, its key family)."""


def reference_stem(column: str) -> str | None:
    """The lower-cased table name a column's name refers to (``customer`` for
    ``customer_id`` or ``customerId``), or None for a name that is no reference."""
    if (found := re.fullmatch(r"(.+)_id", column, flags=re.IGNORECASE)) is not None:
        return found.group(1).lower()
    if (found := re.fullmatch(r"(.*[a-z0-9])Id", column)) is not None:
        return found.group(1).lower()
    return None


def table_forms(table: TableInfo) -> set[str]:
    """The lower-cased names a reference may use for ``table``: its name and its
    singulars (``customers`` -> ``customer``, ``categories`` -> ``category``)."""
    name = table.table.lower()
    forms = {name, name.removesuffix("s"), name.removesuffix("es")}
    if name.endswith("ies"):
        forms.add(name[:-3] + "y")
    return forms


def named_references(tables: list[TableInfo], kinds: Kinds, declaring: set[str],
                     taken: set[tuple[str, str]]) -> list[tuple[TableInfo, str, TableInfo]]:
    """(child, lower-cased column, parent) for every candidate reference (see the module).

    Args:
        tables: The readable tables and views.
        kinds: Their columns (see :data:`Kinds`).
        declaring: Tables in a declared or user edge: a pair of two is never inferred.
        taken: (table, lower-cased column) pairs a declared or user edge already uses.
    """
    exact: dict[str, list[TableInfo]] = {}
    last_word: dict[str, list[TableInfo]] = {}
    for table in tables:
        for form in table_forms(table):
            exact.setdefault(form, []).append(table)
            words = form.split("_")
            for start in range(1, len(words)):
                last_word.setdefault("_".join(words[start:]), []).append(table)
    found = []
    for child in tables:
        for name, (written, family) in kinds[child.name].items():
            stem = reference_stem(written)
            if family is None or stem is None or (child.name, name) in taken:
                continue
            if child in exact.get(stem, []):
                continue  # customers.customer_id: the table's own key, not a reference
            named = exact.get(stem, [])
            parent = _the_one(named, child) if named else _the_one(
                [t for t in last_word.get(stem, []) if not _holds_references(t, kinds)], child)
            if parent is None or (child.name in declaring and parent.name in declaring):
                continue
            target = kinds[parent.name].get("id")
            if target is not None and target[1] == family and name not in kinds[parent.name]:
                found.append((child, name, parent))
    return found


def _the_one(candidates: list[TableInfo], child: TableInfo) -> TableInfo | None:
    """The single distinct table among ``candidates`` other than ``child``, else None."""
    others = {t.name: t for t in candidates if t is not child}
    return next(iter(others.values())) if len(others) == 1 else None


def _holds_references(table: TableInfo, kinds: Kinds) -> bool:
    """Whether a table has a column named as a reference (a link or fact table)."""
    return any(reference_stem(written) is not None
               for written, _ in kinds[table.name].values())
