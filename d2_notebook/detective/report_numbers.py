"""Numbers as a report writes them, and the values they may stand for.

The claim check (:mod:`.claim_check`) needs to read "23.7%", "1,234", "0.5x",
"1.2 million", "2020-03-01" and "2021" out of Markdown, and to tell a claim from a
label: evidence and hypothesis ids (``E4``, ``H3``, ``Q7``), codes that mix letters
and digits (``COVID-19``, ``A12B``), list numbering (``1.``), compound adjectives
(``30-day``), an interval's confidence level (the 95 of "95% CI") and code spans are not
claims.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

import numpy as np

_MULTIPLIERS = {"k": 1e3, "thousand": 1e3, "mn": 1e6, "million": 1e6,
                "bn": 1e9, "billion": 1e9}

_NUMBER = re.compile(
    r"""
    (?<![\w.,/:\-−+])                       # not inside a word, an id or another number
    (?P<sign>[-−+](?=\d|\.\d))?
    (?P<digits>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)
    (?P<unit>\s?%|\s?percent\b|\s?per\ cent\b|\s?pp\b|\s?(?:percentage\ )?points?\b
        |\s?pts\b|\s?(?:k|thousand|mn|million|bn|billion)\b|x(?![\w])|×)?
    (?![\w]|[-/:]\d|-[A-Za-z]|\.\d)          # not followed by a word, a code or a date part
    """,
    re.VERBOSE | re.IGNORECASE,
)
_DATE = re.compile(
    r"(?<![\w-])\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2})?)?(?![\w-])"
    r"|(?<![\w:])\d{1,2}:\d{2}(?::\d{2})?(?![\w:])"
)
_APPROXIMATELY = re.compile(
    r"(?:~|≈|\b(?:about|around|roughly|approximately|approx\.?|nearly|almost|some)\s+)\Z",
    re.IGNORECASE)
"""What marks a number written just before it as an approximation."""
_CODE = re.compile(r"```.*?```|`[^`\n]*`", re.DOTALL)
_LIST_MARKER = re.compile(r"^(\s*(?:#+\s*)?)\d+[.)](?=\s)", re.MULTILINE)
_CONFIDENCE_LEVEL = re.compile(
    r"(?<![\w.])(?:80|90|95|97\.5|99|99\.9)\s?%(?=[\s-]*(?:CIs?\b|C\.I\.|confidence|credible"
    r"|prediction|interval|uncertainty))", re.IGNORECASE)
"""The level of an interval ("95% CI", "a 90% confidence interval"): a label of the
interval that follows, not a value of the data."""
SMALL_COUNT = 10
"""Bare integers up to this are counting words ("3 hypotheses", "2 rounds"), not claims."""


class NumberKind(Enum):
    """How a number in a report is read and looked up."""

    QUANTITY = "quantity"  # compared numerically, with rounding and percent forms
    YEAR = "year"          # 1900-2100 written bare: a value or a date part
    DATE = "date"          # 2020-03-01, 14:30: looked up as written


@dataclass(frozen=True)
class ReportNumber:
    """One number in a report.

    Attributes:
        text: as written, with its unit ("23.7%").
        start, end: where it is in the report.
        kind: how it is looked up.
        value: the number (without percent scaling or sign); 0 for dates.
        decimals: digits after the decimal point as written (its precision).
        percent: written as a percentage ("%", "percent", "pp", "points").
        multiplier: 1, or 1e3/1e6/1e9 for "k", "million", "billion".
        approximate: see the field.
    """

    text: str
    start: int
    end: int
    kind: NumberKind
    value: float = 0.0
    decimals: int = 0
    percent: bool = False
    multiplier: float = 1.0
    approximate: bool = False
    """Written as an approximation ("~1,750", "about 5,900"): an integer's trailing zeros
    are not digits it states, so it stands for any value that rounds to it there."""
    small_count: bool = False
    """A bare integer up to :data:`SMALL_COUNT`: no claim of its own, found only when
    :func:`find_numbers` is asked for ``small`` ones (the cells a total lists)."""

    @property
    def significant_digits(self) -> int:
        """Digits that carry information (``0.05`` has 1, ``23.7`` has 3)."""
        digits = re.sub(r"\D", "", f"{self.value:.{self.decimals}f}")
        return len(digits.lstrip("0")) or 1


def blank_out(report: str) -> str:
    """``report`` with code spans, list numbering and intervals' confidence levels
    replaced by spaces (same length), so positions found in the result are positions in
    the report."""
    def spaces(match: re.Match[str]) -> str:
        return re.sub(r"\S", " ", match.group(0))

    text = _CONFIDENCE_LEVEL.sub(spaces, _CODE.sub(spaces, report))
    return _LIST_MARKER.sub(lambda m: m.group(1) + " " * (len(m.group(0)) - len(m.group(1))),
                           text)


def find_numbers(report: str, *, small: bool = False) -> list[ReportNumber]:
    """Every number in ``report`` that states a claim, in order of appearance.

    Skipped: code spans, list numbering, ids and codes, compound adjectives
    ("30-day"), the confidence level of an interval ("95% CI") and, unless ``small``,
    bare integers up to :data:`SMALL_COUNT` (with ``small``: the cells a total lists,
    "42 fewer: 23, 8, 6 and 5", which are no claims of their own but add up to one).
    """
    text = blank_out(report)
    found: list[ReportNumber] = []
    taken: list[tuple[int, int]] = []
    for match in _DATE.finditer(text):
        found.append(ReportNumber(match.group(0), match.start(), match.end(), NumberKind.DATE))
        taken.append((match.start(), match.end()))
    for match in _NUMBER.finditer(text):
        if any(start <= match.start() < end for start, end in taken):
            continue
        number = _parse(match, bool(_APPROXIMATELY.search(text[max(0, match.start() - 16):
                                                               match.start()])), small)
        if number is not None:
            found.append(number)
    return sorted(found, key=lambda n: n.start)


def _parse(match: re.Match[str], approximate: bool = False,
           small: bool = False) -> ReportNumber | None:
    digits = match.group("digits")
    unit = (match.group("unit") or "").strip().lower()
    value = float(digits.replace(",", ""))
    decimals = len(digits.split(".", 1)[1]) if "." in digits else 0
    percent = unit in {"%", "percent", "per cent", "pp", "point", "points", "pts",
                       "percentage point", "percentage points"}
    multiplier = _MULTIPLIERS.get(unit, 1.0)
    text = match.group(0).rstrip()
    bare_integer = decimals == 0 and not unit and "," not in digits
    if bare_integer and 1900 <= value <= 2100:
        return ReportNumber(text, match.start(), match.start() + len(text), NumberKind.YEAR,
                            value)
    small_count = bare_integer and value <= SMALL_COUNT
    if small_count and not small:
        return None
    return ReportNumber(text, match.start(), match.start() + len(text), NumberKind.QUANTITY,
                        value, decimals, percent, multiplier, approximate, small_count)


_SCIENTIFIC = re.compile(r"(?<![\w.])\d+(?:\.\d+)?[eE][-+]?\d+(?![\w.])")
"""A number in scientific notation, as the tools print very small or large figures
("95% CI -7.16e-05 to 0.018")."""


def numbers_in_text(text: str) -> list[float]:
    """The plain values of every number written in ``text`` (for evidence text cells,
    verdict texts and tool summaries: "the plate had 42 in it" gives 42.0), a number in
    scientific notation too ("-7.16e-05": a reporter's "-0.00007" copies it; it had been
    marked unverified)."""
    values = []
    for match in _NUMBER.finditer(text):
        digits = match.group("digits").replace(",", "")
        values.append(float(digits))
    values += [float(match.group(0)) for match in _SCIENTIFIC.finditer(text)]
    return values


_CELL_NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d,])|\d+(?:\.\d+)?|\.\d+")


def numbers_in_cells(text: str) -> list[float]:
    """The plain values of every number in result cells' text, however it is packed: a
    cell a query built with ``string_agg`` ("critical 16:0.188 vs 144:0.326") holds 16,
    0.188, 144 and 0.326, though a report would write "16:0.188" as no claim. Looser than
    :func:`numbers_in_text`: a value the rows hold is a source whatever is around it."""
    return [float(match.group(0).replace(",", "")) for match in _CELL_NUMBER.finditer(text)]


def matches_any(number: ReportNumber, values: np.ndarray) -> bool:
    """Whether any of ``values`` (stored result values) is what ``number`` reports
    (see :func:`match_mask`)."""
    return bool(match_mask(number, values).any())


def match_mask(number: ReportNumber, values: np.ndarray) -> np.ndarray:
    """Which of ``values`` (stored result values) are what ``number`` reports.

    Allowed: rounding or truncation to the precision the report wrote (an approximate
    integer of 100 or more is rounded at its last non-zero digit but never to fewer
    than two digits: "~5,900" for 5,880, "about 2,000" for 1,950 to 2,050), the sign left
    out ("fell by 0.12" for -0.12), percent forms (23.7% for 0.237 or for 23.7), a rate
    written as a fraction of a percentage column (0.237 for 23.7), and k/million/billion.
    """
    magnitudes = np.abs(np.asarray(values, dtype=float))
    found = np.zeros(magnitudes.shape, dtype=bool)
    forms = [magnitudes / number.multiplier]
    if number.percent:
        forms.append(magnitudes * 100)
    elif number.decimals and number.value < 1:
        forms.append(magnitudes / 100)
    unit = 10.0 ** -number.decimals
    approximate = number.approximate and number.decimals == 0 and number.value >= 100
    if approximate:  # "~5,900": to the hundred, but never looser than two digits
        whole = str(int(number.value))
        unit = 10.0 ** min(len(whole) - len(whole.rstrip("0")), len(whole) - 2)
    with np.errstate(invalid="ignore"):
        for form in forms:
            slack = 1e-9 * np.maximum(1.0, form)
            found |= np.abs(form - number.value) <= unit / 2 + slack
            if not approximate:  # a truncation is no approximation
                found |= np.abs(np.floor(form / unit + 1e-9) * unit - number.value) <= slack
    return found
