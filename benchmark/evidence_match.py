"""Evidence matched by the fact it establishes: gold key values among a system's rows.

A gold evidence node is the canonical query of one fact ("Ann Lee's plate is 0H42W2":
one row ``[1, "Ann Lee", "0H42W2"]``). A system establishes that fact when one of its
result rows holds the same values — whatever its SQL, column order, extra columns or
extra rows. So the similarity of a system evidence to a gold one is *soft coverage*:

- per gold row, the best system row's share of the gold row's cells (cells compared
  normalised, as a multiset: ``1`` = ``1.0``, dates ISO, strings casefolded);
- a gold NULL (a missing record, e.g. no gym membership) is found by a NULL, ``0``,
  ``false`` or empty cell of the system row;
- when the gold row names the suspect the gold links it to (the person's id or name),
  those *anchor* cells only say whose data it is: the row must hold at least one of
  them, and the score is the share of the other (*fact*) cells it holds — a row with
  only the right name scores 0, not one half;
- coverage = mean over the gold rows of those per-row scores (0 when the gold has no
  rows: an empty result establishes nothing checkable).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

NULLISH = frozenset({"null", "0", "false", ""})
"""System cells that stand for a gold NULL (a record that does not exist)."""


def _contained(wanted: Sequence[str], have: Counter[str]) -> int:
    """How many of ``wanted`` cells ``have`` holds (multiset; NULL found by NULLISH)."""
    pool = Counter(have)
    found = 0
    for cell in sorted(wanted, key=lambda c: c == "null"):  # exact cells first
        if pool[cell] > 0:
            pool[cell] -= 1
            found += 1
        elif cell == "null":
            spare = next((c for c in NULLISH if pool[c] > 0), None)
            if spare is not None:
                pool[spare] -= 1
                found += 1
    return found


def row_score(gold_row: Sequence[str], system_row: Counter[str],
              anchors: frozenset[str] = frozenset()) -> float:
    """How much of one gold row (normalised cells) one system row establishes (0..1)."""
    if not gold_row:
        return 0.0
    anchor_cells = [c for c in gold_row if c in anchors]
    facts = [c for c in gold_row if c not in anchors]
    if anchor_cells:
        if _contained(anchor_cells, system_row) == 0:
            return 0.0
        if not facts:
            return 1.0
    return _contained(facts, system_row) / len(facts)


def coverage(gold_rows: Sequence[Sequence[str]], system_rows: Iterable[Sequence[str]],
             anchors: frozenset[str] = frozenset()) -> float:
    """Mean over the gold rows of the best system row's :func:`row_score` (0..1)."""
    if not gold_rows:
        return 0.0
    have = [Counter(row) for row in system_rows]
    if not have:
        return 0.0
    return sum(max(row_score(g, h, anchors) for h in have) for g in gold_rows) / len(gold_rows)


def soft_prf(credit: Sequence[Sequence[float]], n_gold: int) -> tuple[float, float, float]:
    """(precision, recall, F1) from a system × gold credit matrix (values 0..1).

    ``credit`` has one row per system item and ``n_gold`` columns. Recall = mean over
    gold items of their best credit; precision = mean over system items of theirs.
    Both empty -> (1, 1, 1); exactly one empty -> (0, 0, 0).
    """
    n_sys = len(credit)
    if n_sys == 0 and n_gold == 0:
        return 1.0, 1.0, 1.0
    if n_sys == 0 or n_gold == 0:
        return 0.0, 0.0, 0.0
    precision = sum(max(row) for row in credit) / n_sys
    recall = sum(max(credit[i][j] for i in range(n_sys)) for j in range(n_gold)) / n_gold
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def normalised_rows(rows: Iterable[Sequence[Any]], norm: Any) -> list[tuple[str, ...]]:
    """Rows as tuples of normalised cells (``norm`` is the cell normaliser)."""
    return [tuple(norm(v) for v in row) for row in rows]
