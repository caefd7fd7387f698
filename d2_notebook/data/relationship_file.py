"""Reading a relationships file: join edges the user declares or vetoes, for
``d2 investigate --relationships FILE`` and ``%%investigate --relationships FILE``.

Two formats, chosen by the content (a file whose first character is ``[`` or ``{`` is
JSON):

Plain text, one relationship per line; blank lines and ``#`` comments are ignored::

    # declare a join the data does not show
    orders.customer_id -> customers.id
    # veto an inferred join (either spelling)
    !orders.id -> customers.id
    shipments.id -/> invoices.id
    # several columns
    lines.(order_id, line_no) -> order_lines.(order_id, line_no)

JSON, either a list of such lines, or an object with a ``declare`` and/or a ``veto``
list (veto entries written with ``->``)::

    {"declare": ["orders.customer_id -> customers.id"],
     "veto": ["orders.id -> customers.id"]}

Table and column names are checked against the database when the join graph is built
(:func:`~d2_notebook.data.keys.join_graph`), not here.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from d2_notebook.data.keys import Relationship
from d2_notebook.errors import D2Error

__all__ = ["RelationshipsFileError", "read_relationships_file"]

_FORMS = ("one 'table.column -> other_table.column' per line (prefix '!' or write '-/>' to "
          "veto), or JSON {\"declare\": [...], \"veto\": [...]}")


class RelationshipsFileError(D2Error, ValueError):
    """A relationships file that cannot be read or is not in either format."""


def read_relationships_file(path: str | os.PathLike[str]) -> tuple[Relationship, ...]:
    """The relationships the file at ``path`` declares and vetoes, in file order.

    Raises:
        RelationshipsFileError: the file is missing, unreadable, not UTF-8 text, empty of
            relationships, or has a line (or JSON item) that is not a relationship; the
            message names the file, the line or item, and the form that works.
    """
    where = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RelationshipsFileError(
            f"no relationships file at {where!r}; pass the path of a file with {_FORMS}"
        ) from None
    except IsADirectoryError:
        raise RelationshipsFileError(
            f"{where!r} is a folder; pass a relationships file ({_FORMS})") from None
    except UnicodeDecodeError:
        raise RelationshipsFileError(
            f"{where!r} is not UTF-8 text; a relationships file holds {_FORMS}") from None
    except OSError as exc:
        raise RelationshipsFileError(
            f"cannot read {where!r} ({exc.strerror}); check the path and its permissions"
        ) from None
    body = text.lstrip("\ufeff").strip()
    found = _from_json(body, where) if body[:1] in ("[", "{") else _from_lines(body, where)
    if not found:
        raise RelationshipsFileError(f"{where!r} holds no relationships; write {_FORMS}")
    return found


def _from_lines(body: str, where: str) -> tuple[Relationship, ...]:
    found = []
    for number, line in enumerate(body.splitlines(), start=1):
        content = line.split("#", 1)[0].strip()
        if content:
            found.append(_parse(content, f"{where}, line {number}"))
    return tuple(found)


def _from_json(body: str, where: str) -> tuple[Relationship, ...]:
    try:
        data: Any = json.loads(body)
    except ValueError as exc:
        raise RelationshipsFileError(
            f"{where!r} is not valid JSON ({exc}); write {_FORMS}") from None
    if isinstance(data, list):
        return tuple(_parse(_text(item, f"{where}, item {i}"), f"{where}, item {i}")
                     for i, item in enumerate(data, start=1))
    if not isinstance(data, dict):
        raise RelationshipsFileError(f"{where!r} must hold a JSON list or object; write {_FORMS}")
    unknown = sorted(set(data) - {"declare", "veto"})
    if unknown:
        raise RelationshipsFileError(
            f"{where!r}: unknown key(s) {', '.join(map(repr, unknown))}; use \"declare\" "
            "and \"veto\"")
    found = []
    for key in ("declare", "veto"):
        items = data.get(key, [])
        if not isinstance(items, list):
            raise RelationshipsFileError(
                f"{where!r}: {key!r} must be a list of 'table.column -> other.column' texts")
        for i, item in enumerate(items, start=1):
            label = f"{where}, {key} item {i}"
            parsed = _parse(_text(item, label), label)
            if key == "veto":
                parsed = replace(parsed, veto=True)
            elif parsed.veto:
                raise RelationshipsFileError(
                    f"{label}: {item!r} is a veto listed under 'declare'; move it to 'veto'")
            found.append(parsed)
    return tuple(found)


def _text(item: Any, label: str) -> str:
    if not isinstance(item, str):
        raise RelationshipsFileError(
            f"{label}: expected a text such as 'orders.customer_id -> customers.id', got "
            f"{json.dumps(item)}")
    return item


def _parse(text: str, label: str) -> Relationship:
    try:
        return Relationship.parse(text)
    except ValueError as exc:
        raise RelationshipsFileError(f"{label}: {exc}") from None
