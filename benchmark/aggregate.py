"""Mean scores per tier, system or any other :class:`CaseScore` field, for the tables."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from d2_notebook.teaching.scoring import CaseScore

TIER_ORDER = ("easy", "medium", "hard", "very_hard")
METRICS = ("correctness", "completeness", "verifiability", "hypothesis_f1", "evidence_f1",
           "completeness_f1", "extra_suspects", "edge_precision", "edge_recall", "extra_edges")


def aggregate(scores: Iterable[CaseScore], by: str | Sequence[str] = "tier",
              total: bool = True) -> list[dict[str, Any]]:
    """Mean of each metric per group (``by`` = field name(s) of :class:`CaseScore`).

    Rows: ``{<by fields>, "n", <metric means>}``, tiers in difficulty order, else sorted;
    with ``total`` one more row whose ``by`` fields are ``"all"`` (per system if grouping
    by ``("system", ...)``, else overall). Example: ``aggregate(s, by=("system", "tier"))``.
    """
    keys = (by,) if isinstance(by, str) else tuple(by)
    scores = list(scores)
    groups: dict[tuple, list[CaseScore]] = {}
    for s in scores:
        groups.setdefault(tuple(getattr(s, k) for k in keys), []).append(s)
    if total:
        for s in scores:
            head = (s.system,) if keys[0] == "system" and len(keys) > 1 else ("all",)
            groups.setdefault(head + ("all",) * (len(keys) - len(head)), []).append(s)

    def order(key: tuple) -> tuple:
        return tuple((TIER_ORDER.index(v) if v in TIER_ORDER else 9 if v == "all" else -1,
                      str(v)) for v in key)

    out = []
    for key in sorted(groups, key=order):
        items = groups[key]
        row: dict[str, Any] = dict(zip(keys, key, strict=True)) | {"n": len(items)}
        row |= {m: sum(getattr(s, m) for s in items) / len(items) for m in METRICS}
        out.append(row)
    return out

