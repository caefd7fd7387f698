"""``d2 board show --charts DIR``: every evidence's chart as an SVG or PNG file."""

from __future__ import annotations

from enum import Enum
from pathlib import Path

from d2_notebook.board import Board
from d2_notebook.charts import chart_for_evidence, chart_png, chart_svg

__all__ = ["ChartFormat", "write_chart_files"]


class ChartFormat(Enum):
    """The file format of the written charts."""

    SVG = "svg"
    PNG = "png"


def write_chart_files(board: Board, folder: Path, file_format: ChartFormat) -> list[Path]:
    """Write ``<evidence id>.<format>`` into ``folder`` for each evidence with a chart.

    The folder is created when missing; files of the same names are replaced. Returns
    the written paths in evidence order.
    """
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for evidence in board.list_evidence():
        chart = chart_for_evidence(board, evidence.id)
        if chart is None:
            continue
        target = folder / f"{evidence.id}.{file_format.value}"
        if file_format is ChartFormat.SVG:
            target.write_text(chart_svg(chart), encoding="utf-8")
        else:
            target.write_bytes(chart_png(chart))
        written.append(target)
    return written
