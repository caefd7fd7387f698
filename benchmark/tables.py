"""PAPER's tables from result records: Table 1 (by difficulty) and Table 2 (ablations).

Values are percentages (mean over cases). Completeness is recall over the gold suspects;
Table 2 also gives the paper's completeness F1 and the mean count of extra suspects
analysed. Cost and wall time are means per case.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from benchmark.aggregate import TIER_ORDER, aggregate
from d2_notebook.detective import VARIANTS
from d2_notebook.teaching.scoring import CaseScore

TABLE1_TITLE = "Table 1. Correctness / Completeness / Verifiability ease (%) by difficulty"
TABLE2_TITLE = "Table 2. Ablation study (mean over all cases)"
TABLE2_HEADER = ("variant", "n", "correctness", "completeness", "compl. F1", "extra susp.",
                 "verifiability", "hyp F1", "ev F1", "$/case", "s/case")


def _pct(value: float) -> str:
    return f"{100 * value:.0f}"


def _variants(records: Sequence[dict[str, Any]]) -> list[str]:
    present = {r["variant"] for r in records}
    return [v for v in VARIANTS if v in present] + sorted(present - set(VARIANTS))


def _complete(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r.get("complete")]


def table1(records: Sequence[dict[str, Any]]) -> str:
    """Correctness/completeness/verifiability per tier (rows) and variant (columns)."""
    records = _complete(records)
    variants = _variants(records)
    scores = [CaseScore(**r["scores"]) for r in records]
    cells = {(row["system"], row["tier"]): row
             for row in aggregate(scores, by=("system", "tier"))}
    tiers = [t for t in TIER_ORDER if any(s.tier == t for s in scores)] + ["all"]
    width = max([20, *(len(v) + 2 for v in variants)])  # cells read "100/100/100 (n=12)"
    lines = [TABLE1_TITLE, f"{'tier':<10}" + "".join(f"{v:>{width}}" for v in variants)]
    for tier in tiers:
        line = f"{tier:<10}"
        for variant in variants:
            row = cells.get((variant, tier))
            text = "-" if row is None else "/".join(
                _pct(row[m]) for m in ("correctness", "completeness", "verifiability"))
            text = text if row is None else f"{text} (n={row['n']})"
            line += f"{text:>{width}}"
        lines.append(line)
    return "\n".join(lines)


def table2(records: Sequence[dict[str, Any]]) -> str:
    """Mean metrics, cost and wall time per variant over all cases."""
    records = _complete(records)
    lines = [TABLE2_TITLE, f"{TABLE2_HEADER[0]:<20}" + "".join(f"{h:>14}" for h in
                                                                TABLE2_HEADER[1:])]
    for variant in _variants(records):
        mine = [r for r in records if r["variant"] == variant]
        scores = [CaseScore(**r["scores"]) for r in mine]
        row = aggregate(scores, by="system", total=False)[0]
        cost = sum(r["usage"]["cost_usd"] for r in mine) / len(mine)
        seconds = sum(r["seconds"] for r in mine) / len(mine)
        values = [str(row["n"]), _pct(row["correctness"]), _pct(row["completeness"]),
                  _pct(row["completeness_f1"]), f"{row['extra_suspects']:.1f}",
                  *(_pct(row[m]) for m in ("verifiability", "hypothesis_f1", "evidence_f1")),
                  f"{cost:.3f}", f"{seconds:.1f}"]
        lines.append(f"{variant:<20}" + "".join(f"{v:>14}" for v in values))
    return "\n".join(lines)


ROLE_TABLE_TITLE = "Model use per role: mean calls / thousand tokens / dollars per case"


def role_table(records: Sequence[dict[str, Any]]) -> str:
    """Mean calls, tokens and cost of each role, per variant (records written before
    the per-role breakdown are left out)."""
    records = [r for r in _complete(records) if "by_role" in r["usage"]]
    if not records:
        return ROLE_TABLE_TITLE + "\n(no per-role figures in these results)"
    variants = _variants(records)
    roles = list(dict.fromkeys(role for r in records for role in r["usage"]["by_role"]))
    lines = [ROLE_TABLE_TITLE,
             f"{'role':<14}" + "".join(f"{v:>22}" for v in variants)]
    for role in roles:
        line = f"{role:<14}"
        for variant in variants:
            mine = [r for r in records if r["variant"] == variant]
            used = [r["usage"]["by_role"].get(role) for r in mine]
            if not any(used):
                line += f"{'-':>22}"
                continue
            calls, tokens, cost = (sum((u or {}).get(k, 0) for u in used) / len(mine)
                                   for k in ("calls", "tokens", "cost_usd"))
            line += f"{f'{calls:.1f} / {tokens / 1000:.1f}k / {cost:.3f}':>22}"
        lines.append(line)
    return "\n".join(lines)


def render(records: Sequence[dict[str, Any]]) -> str:
    """The tables, separated by blank lines."""
    if not _complete(records):
        return "no complete results yet"
    return table1(records) + "\n\n" + table2(records) + "\n\n" + role_table(records)
