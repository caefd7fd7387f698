"""Which dimensions of an analysis result a text names.

An analysis tool labels its dimensions as columns (``admissions.severity``), date parts
of a column (``year(admissions.admitted_on)``, ``day_of_week(...)``) or values of a 1:N
attribute (``has comorbidities.condition = diabetes``). Agents write of them in their own
words ("severity", "a.severity", "year", "day of week", "diabetes"): the reporter's brief
(:mod:`.reporter_brief`) shows the rows of the dimensions a reading names, not rows of
another dimension that happen to carry the same number.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import pandas as pd

_WEEKDAY = ("day of week", "day of the week", "weekday", "dow")
_DATE_PARTS = {
    "year": (), "quarter": (), "month": (), "hour": ("hour of day", "hour of the day"),
    "month_of_year": ("month of year", "month of the year"),
    "monthname": ("month", "month of year", "month of the year"),
    "day_of_week": _WEEKDAY, "dayofweek": _WEEKDAY, "isodow": _WEEKDAY, "dow": _WEEKDAY,
    "dayname": _WEEKDAY,
}
"""Date-part functions (as the tools label them, or as a collector may ask for one) and
how a text may name them besides the function's name: ``day_of_week`` is also "day of
week", "day-of-week", "weekday", "dow"."""
_CALL = re.compile(r"(\w+)\s*\((.*)\)", re.S)
_COLUMN = re.compile(r'(?:(?:"(?:[^"]|"")+"|\w+)\.)*("(?:[^"]|"")+"|\w+)')
_REFERENCE = re.compile(r'[\w"]+\.("(?:[^"]|"")+"|[^\W\d]\w*)')


def named_dimensions(labels: Iterable[str], texts: Iterable[str]) -> set[str]:
    """The dimension labels (as an analysis tool writes them) that ``texts`` name.

    A text names a dimension by its label or by a name of it: its column
    (``admissions.severity`` is "severity", "a.severity"; ``severity_score`` also
    "severity score"), a date part with its column or alone (``year(admissions.admitted_on)``
    is "year(admitted_on)", "year(a.admitted_on)", "year"; ``day_of_week(...)`` also "day of
    week", "dow"), or an attribute value's value (``has comorbidities.condition =
    diabetes`` is "diabetes"). Case, and ``_``, ``-`` or spaces between words, do not
    matter. The longest names are read first and a stretch of text names once, so
    "month of year" names ``month_of_year(...)``, not also ``month(...)`` and ``year(...)``.
    """
    forms: dict[str, tuple[re.Pattern[str], set[str]]] = {}
    for label in labels:
        for key, pattern in _label_forms(label):
            forms.setdefault(key, (pattern, set()))[1].add(label)
    text = "\n".join(texts).lower()
    taken: list[tuple[int, int]] = []
    named: set[str] = set()
    for key in sorted(forms, key=len, reverse=True):
        pattern, dimensions = forms[key]
        for match in pattern.finditer(text):
            if not any(match.start() < end and start < match.end() for start, end in taken):
                taken.append(match.span())
                named |= dimensions
    return named


def named_dimension_rows(frame: pd.DataFrame, texts: Iterable[str]) -> list[int]:
    """Positions of the rows of an analysis result's dimensions that ``texts`` name
    (:func:`named_dimensions`), in the result's order; none without a ``dimension``
    column."""
    if "dimension" not in frame.columns:
        return []
    labels = frame["dimension"].astype(str)
    named = named_dimensions(labels.unique(), texts)
    return [p for p, label in enumerate(labels) if label in named]


def _label_forms(label: str) -> list[tuple[str, re.Pattern[str]]]:
    """The names of one dimension label, each as (a key, its pattern in lower-case text);
    none for a whole-population row (``(overall)``)."""
    text = " ".join(label.lower().split())
    if not text or text.startswith("("):
        return []
    forms = [_form(text)]
    if text.startswith("has ") and " = " in text:  # a 1:N attribute value: its value
        value = text.partition(" = ")[2].strip().strip("'\"")
        return forms + ([_form(value)] if re.search(r"[^\W\d_]", value) else [])
    body = text.removeprefix("has ")
    call = _CALL.fullmatch(body)
    column = _COLUMN.fullmatch(call.group(2).strip()) if call is not None else None
    if call is not None and call.group(1) in _DATE_PARTS and column is not None:
        part, name = call.group(1), _unquote(column.group(1))
        with_column = (_words(part) + r"\s*\(\s*(?:[\w\"]+\.)*\"?" + _words(name)
                       + r"\"?\s*\)")
        return forms + [(f"{part}({name})", _bounded(with_column))] + [
            _form(spoken) for spoken in (part, *_DATE_PARTS[part])]
    column = _COLUMN.fullmatch(body)
    if column is not None:  # a column: its name
        return [*forms, _form(_unquote(column.group(1)))]
    return forms + [_form(_unquote(name)) for name in _REFERENCE.findall(body)]


def _unquote(name: str) -> str:
    return name[1:-1].replace('""', '"') if name.startswith('"') else name


def _form(name: str) -> tuple[str, re.Pattern[str]]:
    return name, _bounded(_words(name))


def _words(name: str) -> str:
    """``name`` as a pattern whose words may be parted by spaces, ``_`` or ``-``."""
    return r"[\s_-]+".join(re.escape(word) for word in re.split(r"[\s_-]+", name.strip())
                           if word)


def _bounded(pattern: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){pattern}(?!\w)")
