"""Charts of evidence: a Vega-Lite chart for every stored result whose shape calls for one.

A chart is derived, never stored: :func:`chart_for_evidence` reads an evidence's stored
rows from the board and builds the chart its shape calls for (:mod:`.shapes` states the
rules), so the same board always gives the same chart and a replayed board draws what the
original did. Every surface renders the same spec: JupyterLab's Vega-Lite renderer (the
chart's ``_repr_mimebundle_``), an SVG rendered in Python for static HTML and the CLI
(:func:`chart_svg`, via vl-convert), and PNG files (:func:`chart_png`).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import pandas as pd

from d2_notebook.board import Board
from d2_notebook.charts.shapes import ChartHint, ChartKind, shape_of
from d2_notebook.charts.specs import build_spec

__all__ = ["VEGA_LITE_MIME", "ChartHint", "ChartKind", "EvidenceChart", "chart_for_evidence",
           "chart_for_frame", "chart_png", "chart_svg"]

VEGA_LITE_MIME = "application/vnd.vegalite.v6+json"
"""The MIME type of a Vega-Lite 6 spec (what Altair writes). JupyterLab 4 renders only
Vega-Lite up to 5 natively, so displays also carry the SVG."""
_TITLE_CHARS = 90


@dataclass(frozen=True)
class EvidenceChart:
    """The chart of one stored result.

    Attributes:
        kind: Which chart it is.
        spec: The Vega-Lite spec (JSON-ready; data inline).
    """

    kind: ChartKind
    spec: dict[str, Any]

    def to_json(self) -> str:
        """The spec as JSON text with sorted keys (byte-identical for the same rows)."""
        return json.dumps(self.spec, sort_keys=True, default=str)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return {VEGA_LITE_MIME: self.spec, "image/svg+xml": chart_svg(self),
                "text/plain": f"<{self.kind.value} chart>"}


def chart_for_frame(frame: pd.DataFrame, *, title: str = "", row_count: int | None = None,
                    hint: ChartHint | None = None) -> EvidenceChart | None:
    """The chart of a result, or None where no chart helps (see :mod:`.shapes`).

    Args:
        frame: The stored rows.
        title: The chart's title (cut to 90 characters).
        row_count: The query's true row count; when more than the stored rows, the chart
            says it shows only the stored ones.
        hint: Columns a collector asked for.
    """
    shape = shape_of(frame, hint)
    if shape is None:
        return None
    short = title if len(title) <= _TITLE_CHARS else title[:_TITLE_CHARS - 1] + "…"
    note = (f"first {len(frame):,} of {row_count:,} rows"
            if row_count is not None and row_count > len(frame) else "")
    return EvidenceChart(shape.kind, build_spec(frame, shape, short, note))


def chart_for_evidence(board: Board, evidence_id: str) -> EvidenceChart | None:
    """The chart of evidence ``evidence_id`` from its stored rows (with the columns its
    collector asked for, if any), or None.

    Stored results never change, so a chart is built once per result (keyed by the
    result's hash, the title and the row count) and reused by later displays.
    """
    evidence = board.get_evidence(evidence_id)
    title = f"{evidence.id}: {evidence.description}"
    request = board.chart_request_of(evidence_id)
    hint = ChartHint(request.x, request.y, request.color) if request is not None else None
    key = (evidence.result_hash, title, evidence.row_count, hint)
    if key in _BUILT:
        _BUILT.move_to_end(key)
        return _BUILT[key]
    chart = chart_for_frame(board.evidence_frame(evidence_id), title=title,
                            row_count=evidence.row_count, hint=hint)
    _BUILT[key] = chart
    while len(_BUILT) > _BUILT_SIZE:
        _BUILT.popitem(last=False)
    return chart


_BUILT_SIZE = 512
_BUILT: OrderedDict[tuple[str, str, int, ChartHint | None], EvidenceChart | None] = (
    OrderedDict())


def chart_svg(chart: EvidenceChart) -> str:
    """The chart as a standalone SVG document (rendered in Python by vl-convert).

    Data values are drawn as SVG text, escaped: no value becomes markup.
    """
    import vl_convert

    return vl_convert.vegalite_to_svg(chart.spec)


def chart_png(chart: EvidenceChart, scale: float = 2.0) -> bytes:
    """The chart as PNG bytes (vl-convert), ``scale`` times its CSS pixel size."""
    import vl_convert

    return vl_convert.vegalite_to_png(chart.spec, scale=scale)
