"""The InsightBench table: per variant, recall, contradictions, claim check and cost.

Recall and rates are percentages (means over tasks; a task without a figure — not
judged, no number checked — is left out of that column's mean). Calls, tokens, dollars
and seconds are means per task (investigation only; the judge's cost is its own
column). The second table divides each figure by ``react_sql``'s, both means taken over
the tasks *both* variants completed (its ``paired n`` column), so a variant that failed
on the hard tasks is not compared on the easy ones only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from d2_notebook.detective import VARIANTS

BASELINE = "react_sql"
TITLE = "InsightBench: insight recall and cost per variant (mean over tasks)"
RATIO_TITLE = f"Ratio to {BASELINE} (variant / {BASELINE})"


@dataclass(frozen=True)
class Column:
    """One column: its header, how to read it from a record, and how to print it."""

    header: str
    key: str
    percent: bool


COLUMNS = (
    Column("judge recall", "judge_recall", True),
    Column("proxy recall", "proxy_recall", True),
    Column("numbers", "numbers_rate", True),
    Column("contradict.", "contradictions", False),
    Column("unverified", "claim_unverified_rate", True),
    Column("calls", "calls", False),
    Column("tokens", "tokens", False),
    Column("$/task", "cost_usd", False),
    Column("s/task", "seconds", False),
    Column("judge $", "judge_cost_usd", False),
)


def record_figures(record: dict[str, Any]) -> dict[str, float | None]:
    """The figures of one complete record, by column key."""
    scores, usage = record["scores"], record["usage"]
    check = scores.get("claim_check") or {}
    return {"judge_recall": scores.get("judge_recall"),
            "proxy_recall": scores.get("proxy_recall"),
            "numbers_rate": scores.get("numbers_rate"),
            "contradictions": scores.get("contradictions") if scores.get("judge_model")
            else None,
            "claim_unverified_rate": check.get("unverified_rate"),
            "calls": usage.get("calls"),
            "tokens": usage.get("input_tokens", 0) + usage.get("output_tokens", 0),
            "cost_usd": usage.get("cost_usd"),
            "seconds": record.get("seconds"),
            "judge_cost_usd": (scores.get("judge_usage") or {}).get("cost_usd")
            if scores.get("judge_model") else None}


def _mean(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def variant_means(records: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per variant (known variants first, in their order): ``n`` and each column's mean."""
    complete = [r for r in records if r.get("complete")]
    present = {r["variant"] for r in complete}
    order = [v for v in VARIANTS if v in present] + sorted(present - set(VARIANTS))
    means: dict[str, dict[str, Any]] = {}
    for variant in order:
        mine = [record_figures(r) for r in complete if r["variant"] == variant]
        means[variant] = {"n": len(mine), **{c.key: _mean([f[c.key] for f in mine])
                                             for c in COLUMNS}}
    return means


def _cell(value: float | None, column: Column) -> str:
    if value is None:
        return "-"
    if column.percent:
        return f"{100 * value:.1f}"
    if column.key in ("cost_usd", "judge_cost_usd"):
        return f"{value:.3f}"
    return f"{value:.1f}" if value < 1000 else f"{value:,.0f}"


def _line(first: str, cells: Sequence[str]) -> str:
    return f"{first:<20}" + "".join(f"{c:>14}" for c in cells)


def table(records: Sequence[dict[str, Any]]) -> str:
    """The per-variant table and, when ``react_sql`` ran, the ratio table."""
    means = variant_means(records)
    if not means:
        return "no complete results yet"
    lines = [TITLE, _line("variant", ["n", *(c.header for c in COLUMNS)])]
    lines += [_line(v, [str(row["n"]), *(_cell(row[c.key], c) for c in COLUMNS)])
              for v, row in means.items()]
    if BASELINE not in means:
        return "\n".join([*lines, "", f"(no {BASELINE} results: no ratio table)"])
    lines += ["", RATIO_TITLE + ", over the tasks both completed",
              _line("variant", ["paired n", *(c.header for c in COLUMNS)])]
    for variant, (n, ratios) in ratios_to_baseline(records).items():
        lines.append(_line(variant, [str(n), *("-" if r is None else f"{r:.2f}x"
                                               for r in ratios.values())]))
    return "\n".join(lines)


def ratios_to_baseline(records: Sequence[dict[str, Any]]
                       ) -> dict[str, tuple[int, dict[str, float | None]]]:
    """Per variant: (paired n, each column's mean / ``react_sql``'s mean).

    Both means are over the tasks both the variant and ``react_sql`` completed (the
    paired n); a ratio is None when either mean is missing or the baseline's is 0.
    """
    complete = [r for r in records if r.get("complete")]
    base_tasks = {r["task_id"] for r in complete if r["variant"] == BASELINE}
    out: dict[str, tuple[int, dict[str, float | None]]] = {}
    for variant in variant_means(records):
        paired = {r["task_id"] for r in complete if r["variant"] == variant} & base_tasks
        mine = variant_means([r for r in complete if r["variant"] == variant
                              and r["task_id"] in paired]).get(variant, {})
        theirs = variant_means([r for r in complete if r["variant"] == BASELINE
                                and r["task_id"] in paired]).get(BASELINE, {})
        ratios: dict[str, float | None] = {}
        for column in COLUMNS:
            a, b = mine.get(column.key), theirs.get(column.key)
            ratios[column.key] = None if a is None or not b else a / b
        out[variant] = (len(paired), ratios)
    return out
