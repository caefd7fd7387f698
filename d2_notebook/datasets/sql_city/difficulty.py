"""Difficulty tiers of SQL City cases and the combined difficulty score.

A tier fixes the difficulty dimensions of a case:

- ``hints``: reliable clues per murderer (more, weaker clues = longer evidence chains);
- ``weak_hints``: how many of those are weak (e.g. "a man with red hair"; the rest are
  strong, e.g. a plate fragment);
- ``lookalikes``: planted people per murderer who fit all reliable clues but one;
- ``hidden_witness``: the crime report does not name the witness (missing clue; the
  witness must be found via ``emergency_call``); otherwise the report names the witness
  (easy) or says "the last house on <street>";
- ``missing_record``: a witness clue whose record is missing for the murderer (e.g. no
  gym check-in that day), so the other clues must be used;
- ``unreliable``: witnesses whose statement is false and contradicted by hard data
  (they were in another city that day); each comes with ``decoys`` people fitting it;
- ``murderers``: number of murderers (per case index, see :func:`n_murderers`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

TIERS = ("easy", "medium", "hard", "very_hard")


@dataclass(frozen=True)
class TierSpec:
    """Difficulty dimensions of one tier (see module docstring)."""

    hints: int
    weak_hints: int
    lookalikes: int
    hidden_witness: bool
    missing_record: bool
    unreliable: int
    decoys: int
    max_murderers: int


SPECS = {
    "easy": TierSpec(3, 0, 2, False, False, 0, 0, 1),
    "medium": TierSpec(3, 1, 3, True, False, 0, 0, 1),
    "hard": TierSpec(4, 1, 3, False, True, 1, 1, 2),
    "very_hard": TierSpec(5, 2, 3, True, True, 1, 2, 2),
}


def spec(tier: str) -> TierSpec:
    """Return the :class:`TierSpec` of ``tier`` (one of :data:`TIERS`)."""
    if tier not in SPECS:
        raise ValueError(f"unknown tier {tier!r}; expected one of {TIERS}")
    return SPECS[tier]


def n_murderers(tier: str, index: int) -> int:
    """Murderers in case ``index``: hard alternates 1/2, very hard always has 2."""
    top = spec(tier).max_murderers
    if tier == "hard":
        return 1 + index % 2
    return top


def missing_clues(tier: str) -> int:
    """Number of missing clues (hidden witness + missing record) in a case of ``tier``."""
    s = spec(tier)
    return int(s.hidden_witness) + int(s.missing_record)


def score(hints: int, suspects: int, murderers: int, missing: int, unreliable: int) -> float:
    """Combined difficulty: hints/murderer + suspects/4 + missing + unreliable + extra murderers.

    Suspects are normalised by 4 (a typical easy case has 3-4 suspects), so every
    dimension contributes on a comparable scale. Higher is harder.
    """
    return round(hints + suspects / 4 + missing + unreliable + (murderers - 1), 2)


def standard_tiers(n: int = 50) -> list[str]:
    """Tier of each case index of a standard set of ``n`` cases.

    Tiers get ``n // 4`` cases each; the remainder goes to medium, hard, easy in that
    order (50 -> 12/13/13/12; 4 -> one per tier).
    """
    counts = dict.fromkeys(TIERS, n // 4)
    for t in ("medium", "hard", "easy")[: n % 4]:
        counts[t] += 1
    return [t for t in TIERS for _ in range(counts[t])]


def describe(tier: str) -> dict:
    """The tier's dimensions as a plain dict (for docs and gold files)."""
    return {"tier": tier, **asdict(spec(tier))}
