"""The recall-against-cost plot of an InsightBench run (a PNG beside the table)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmark.insightbench.tables import variant_means


def plot_recall_vs_cost(records: Sequence[dict[str, Any]],
                        path: str | os.PathLike[str]) -> Path | None:
    """Save mean insight recall (judge where judged, else proxy) against mean dollars
    per task, one labelled point per variant; returns the PNG's path (None: no data).

    Raises:
        ImportError: matplotlib is missing (install the ``benchmark`` extra).
    """
    import matplotlib

    matplotlib.use("Agg")  # files only: never a window, safe in workers and CI
    from matplotlib import pyplot as plt

    means = variant_means(records)
    if not means:
        return None
    judged = all(row["judge_recall"] is not None for row in means.values())
    key = "judge_recall" if judged else "proxy_recall"
    figure, axes = plt.subplots(figsize=(6.4, 4.4))
    try:
        for i, (variant, row) in enumerate(means.items()):
            x, y = row["cost_usd"] or 0.0, 100 * (row[key] or 0.0)
            axes.scatter([x], [y], s=60)
            # Staggered labels stay readable when variants land on the same point.
            axes.annotate(f"{variant} (n={row['n']})", (x, y), textcoords="offset points",
                          xytext=(6, 4 - 12 * i), fontsize=9)
        axes.set_xlabel("cost per task (USD)")
        axes.set_ylabel(f"insight recall, {'LLM judge' if judged else 'ROUGE-1 proxy'} (%)")
        axes.set_ylim(0, 105)
        axes.set_xlim(left=0)
        axes.set_title("InsightBench: recall against cost per variant")
        axes.grid(True, alpha=0.3)
        figure.tight_layout()
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(target, dpi=120)
    finally:
        plt.close(figure)
    return target
