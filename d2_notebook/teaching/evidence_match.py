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
  rows); an empty system result establishes only the gold rows that record a missing
  record (all fact cells NULL), and only when its SQL or description names the row's
  anchor (the person's id or name); an evidence without SQL
  (a text) shows no absence.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment

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


def names_anchor(text: str, anchors: frozenset[str]) -> bool:
    """Whether ``text`` (a query or a description) names one of the anchors (id or name).

    Matched case-insensitively as a whole word or number (``17707`` not in ``177071``).
    """
    folded = " ".join(text.casefold().split())
    return any(re.search(rf"(?<![\w.]){re.escape(a)}(?![\w.])", folded)
               for a in anchors if a and a != "null")


def _absence_shown(gold_row: Sequence[str], anchors: frozenset[str], mentions: str) -> bool:
    """A gold row that records a missing record, shown by an empty result about its person."""
    facts = [c for c in gold_row if c not in anchors]
    return (bool(facts) and all(c == "null" for c in facts)
            and any(c in anchors for c in gold_row) and names_anchor(mentions, anchors))


def absence_mentions(sql: str, description: str) -> str:
    """The text an empty result is read by: its SQL and description, or "" without SQL.

    Only a query that ran and returned nothing shows a record is missing; a text
    without a query (a report, a note) shows nothing.
    """
    return f"{sql}\n{description}" if sql.strip() else ""


def coverage(gold_rows: Sequence[Sequence[str]], system_rows: Iterable[Sequence[str]],
             anchors: frozenset[str] = frozenset(), mentions: str = "") -> float:
    """Mean over the gold rows of the best system row's :func:`row_score` (0..1).

    An empty system result establishes the gold rows whose fact cells are all NULL (a
    missing record: no gym membership, no call) when ``mentions`` (the system
    evidence's SQL and description) names the row's anchor — the query looked for that
    person's record and found none. Any other gold row earns nothing from an empty
    result. Build ``mentions`` with :func:`absence_mentions`.
    """
    if not gold_rows:
        return 0.0
    have = [Counter(row) for row in system_rows]
    if not have:
        found = sum(_absence_shown(g, anchors, mentions) for g in gold_rows)
        return found / len(gold_rows)
    return sum(max(row_score(g, h, anchors) for h in have) for g in gold_rows) / len(gold_rows)


def soft_prf(credit: Sequence[Sequence[float]], n_gold: int) -> tuple[float, float, float]:
    """(precision, recall, F1) from a system × gold credit matrix (values 0..1), one to one.

    ``credit`` has one row per system item and ``n_gold`` columns. System and gold items
    are paired one to one by the assignment of greatest total credit (the Hungarian
    method, ``scipy.optimize.linear_sum_assignment``): a system item earns credit for at
    most one gold item and a gold item is earned at most once, so one item that matches
    everything, or ten copies of one item, cannot collect more than one item's credit.
    Recall = total assigned credit / ``n_gold``; precision = the same / system items.
    Both empty -> (1, 1, 1); exactly one empty -> (0, 0, 0).
    """
    n_sys = len(credit)
    if n_sys == 0 and n_gold == 0:
        return 1.0, 1.0, 1.0
    if n_sys == 0 or n_gold == 0:
        return 0.0, 0.0, 0.0
    matrix, rows, cols = _assignment(credit, n_gold)
    total = float(matrix[rows, cols].sum())
    precision, recall = total / n_sys, total / n_gold
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def one_to_one(credit: Sequence[Sequence[float]], n_gold: int) -> list[tuple[int, int, float]]:
    """The pairs :func:`soft_prf` credits: ``(system index, gold index, credit)``.

    Only pairs with credit above 0, in system order; empty when either side is empty.
    """
    if not credit or n_gold == 0:
        return []
    matrix, rows, cols = _assignment(credit, n_gold)
    return [(int(r), int(c), float(matrix[r, c])) for r, c in zip(rows, cols, strict=True)
            if matrix[r, c] > 0]


def _assignment(credit: Sequence[Sequence[float]], n_gold: int
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The credit matrix and the rows and columns of its greatest-total assignment."""
    matrix = np.asarray(credit, dtype=float).reshape(len(credit), n_gold)
    rows, cols = linear_sum_assignment(matrix, maximize=True)
    return matrix, rows, cols


def normalised_rows(rows: Iterable[Sequence[Any]], norm: Any) -> list[tuple[str, ...]]:
    """Rows as tuples of normalised cells (``norm`` is the cell normaliser)."""
    return [tuple(norm(v) for v in row) for row in rows]
