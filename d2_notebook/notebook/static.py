"""Static renderings of a board: header, inline SVG of the graph, Markdown.

They are what a saved notebook shows where widgets do not run (GitHub, nbviewer,
nbconvert): the SVG is drawn from the same elements and positions as the live widget.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape

from d2_notebook.board import Board, HypothesisStatus
from d2_notebook.notebook import style
from d2_notebook.notebook.checks import CheckCounts, check_counts, verdict_checks
from d2_notebook.notebook.economy import SCRIPTED_LABEL, Economy, board_economy
from d2_notebook.notebook.graph import GraphModel, GraphNode, board_elements
from d2_notebook.safe_markdown import escape_markdown

MARGIN = 30.0

SCRIPTED_MODEL_NAMES = frozenset({"scripted", "function", "offline-policy"})
"""Names the offline models record on each call (``d2_notebook.llm.offline``:
:class:`ScriptedModel`, :class:`FunctionModel`, and the policies' ``model()``, e.g. the
demo's ``HospitalWalkthrough``). A replay keeps the name ``"replay"``: it re-answers a
recording, which may be a real model's."""


@dataclass(frozen=True)
class BoardSummary:
    """The numbers of the header line."""

    question: str
    state: str
    statuses: dict[str, int]
    evidence: int
    redundant: int
    model_calls: int
    tokens: int
    cost_usd: float
    elapsed_s: float | None
    scripted: bool = False
    """Every model call of the board came from an offline script (no language model)."""
    checks: CheckCounts | None = None
    """What the latest re-check found (None: never re-checked)."""
    economy: Economy | None = None
    """Calls, dollars and the cache-read share of input tokens (None: not read)."""


def summarize(board: Board) -> BoardSummary:
    """Read the header numbers from the board (the last investigation, all records).

    Tokens and dollars add up the ``model_call.recorded`` events, which carry the same
    numbers as :meth:`Board.list_model_calls` without loading every prompt.
    """
    investigations = board.list_investigations()
    latest = investigations[-1] if investigations else None
    counts = board.counts()
    calls = board.events(kinds=["model_call.recorded"])
    tokens = sum(int(e.payload.get("input_tokens") or 0) + int(e.payload.get("output_tokens")
                                                               or 0) for e in calls)
    cost = sum(float(e.payload.get("cost_usd") or 0.0) for e in calls)
    scripted = scripted_calls(e.payload.get("model") for e in calls)
    elapsed = None
    if latest is not None:
        start = datetime.fromisoformat(latest.created_at)
        end = (datetime.now(UTC) if latest.state.value == "running"
               else datetime.fromisoformat(latest.updated_at))
        elapsed = (end - start).total_seconds()
    return BoardSummary(
        question=latest.question if latest else "(no investigation yet)",
        state=latest.state.value if latest else "empty",
        statuses={s.value: counts[s.value] for s in HypothesisStatus if counts[s.value]},
        evidence=counts["evidence"], redundant=counts["redundant_evidence"],
        model_calls=counts["model_calls"], tokens=tokens, cost_usd=cost, elapsed_s=elapsed,
        scripted=scripted,
        checks=check_counts(verdict_checks(board)),
        economy=board_economy(board, scripted))


def scripted_calls(models: Iterable[object]) -> bool:
    """True when there is at least one model call and every one was answered by an
    offline script (:data:`SCRIPTED_MODEL_NAMES`), as recorded in the board's
    ``model_call.recorded`` events."""
    names = [str(model) for model in models]
    return bool(names) and all(name in SCRIPTED_MODEL_NAMES for name in names)


def board_is_scripted(board: Board) -> bool:
    """True when ``board``'s model calls all came from an offline script."""
    return scripted_calls(e.payload.get("model")
                          for e in board.events(kinds=["model_call.recorded"]))


def summary_line(summary: BoardSummary) -> str:
    """One plain-text line: hypotheses by status, evidence, calls, tokens, dollars, time."""
    statuses = ", ".join(f"{n} {s}" for s, n in summary.statuses.items()) or "none"
    elapsed = "" if summary.elapsed_s is None else (
        f" · {summary.elapsed_s:.1f} s" if summary.elapsed_s < 10 else
        f" · {summary.elapsed_s:.0f} s")
    scripted = f"{SCRIPTED_LABEL} · " if summary.scripted else ""
    checked = "" if summary.checks is None else f" · {summary.checks.line()}"
    economy = summary.economy
    if summary.scripted or economy is None:
        spent = f"{summary.model_calls} model calls"  # no model ran: nothing was spent
    else:
        spent = economy.phrase()
    return (f"{scripted}hypotheses: {statuses} · {summary.evidence} evidence "
            f"({summary.redundant} redundant) · {spent} · "
            f"{summary.tokens:,} tokens{elapsed}{checked}")


def header_text(board: Board) -> str:
    """The header as plain text (two lines): question and state, then the summary line."""
    summary = summarize(board)
    return f"{summary.question} [{summary.state}]\n{summary_line(summary)}"


def header_html(board: Board) -> str:
    """The header shown above the graph: question, state and the summary line."""
    summary = summarize(board)
    return (f"<div><b>{escape(summary.question)}</b> "
            f"<code>[{escape(summary.state)}]</code><br>"
            f"<span>{escape(summary_line(summary))}</span></div>")


def board_svg(board: Board, include_redundant: bool = False) -> str:
    """The audit graph as a self-contained inline SVG (no scripts, no external CSS)."""
    return model_svg(board_elements(board, include_redundant))


def model_svg(model: GraphModel) -> str:
    """Draw a :class:`GraphModel` at its computed positions, in the colours of
    ``look.json`` (the same the widget and the JupyterLab renderer use)."""
    if not model.nodes:
        return "<p><i>The board is empty.</i></p>"
    boxes = [_box(n) for n in model.nodes.values()]
    left = min(b[0] for b in boxes) - MARGIN
    top = min(b[1] for b in boxes) - MARGIN
    width = max(b[2] for b in boxes) - left + MARGIN
    height = max(b[3] for b in boxes) - top + MARGIN
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" '
             f'height="{height:.0f}" viewBox="{left:.0f} {top:.0f} {width:.0f} {height:.0f}" '
             'font-family="sans-serif">']
    for kind, color in style.EDGE_COLORS.items():
        parts.append(f'<marker id="arrow-{kind}" viewBox="0 0 10 10" refX="10" refY="5" '
                     'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
                     f'<path d="M 0 0 L 10 5 L 0 10 z" fill="{color}"/></marker>')
    for edge in model.edges.values():
        a = model.nodes[edge.source].position
        dash = {"refines": ' stroke-dasharray="5,3"', "motivates": ' stroke-dasharray="2,3"',
                "weak": ' stroke-dasharray="8,4"',
                "neutral": ' stroke-dasharray="1,3"'}.get(edge.kind, "")
        end = _border_point(model.nodes[edge.target], a)
        parts.append(f'<line x1="{a[0]:.0f}" y1="{a[1]:.0f}" x2="{end[0]:.0f}" '
                     f'y2="{end[1]:.0f}" stroke="{style.EDGE_COLORS[edge.kind]}" '
                     f'stroke-width="1.5"{dash} marker-end="url(#arrow-{edge.kind})">'
                     f'<title>{escape(str(edge.data.get("hover", edge.id)))}</title></line>')
    for node in model.nodes.values():
        parts.append(_node_svg(node))
    parts.append("</svg>")
    return "".join(parts)


def board_html(board: Board, include_redundant: bool = False) -> str:
    """Header, graph and legend as one HTML fragment."""
    return (f"{header_html(board)}<div style='overflow:auto;max-height:640px'>"
            f"{board_svg(board, include_redundant)}</div>{legend_html()}")


def legend_html() -> str:
    """The legend: hypothesis fill by status, evidence fill by stance, edge kinds."""
    def swatch(fill: str, border: str, text: str) -> str:
        return (f'<span style="background:{fill};border:1.5px solid {border};'
                f'padding:0 6px;margin-right:4px">{escape(text)}</span>')

    statuses = "".join(swatch(style.STATUS_COLORS[s], style.STATUS_BORDERS[s], s)
                       for s in style.STATUS_COLORS)
    names = style.LOOK["legend"]
    stances = "".join(swatch(style.EVIDENCE_COLORS[k], style.EVIDENCE_BORDERS[k], names[k])
                      for k in ("supports", "contradicts", "weak", "neutral", "context"))
    return (f"<div style='font-size:12px;line-height:1.9'>hypotheses: {statuses}<br>"
            f"evidence: {stances}</div>")


def board_markdown(board: Board) -> str:
    """The board as Markdown: question, summary line and a table of hypotheses. Board
    text is escaped (:func:`~d2_notebook.safe_markdown.escape_markdown`): it reads as
    written and never becomes HTML, an image or a link."""
    summary = summarize(board)
    lines = [f"**{escape_markdown(summary.question)}** `[{summary.state}]`", "",
             escape_markdown(summary_line(summary)), "",
             "| id | status | confidence | statement | evidence |", "|---|---|---|---|---|"]
    for hyp in board.list_hypotheses():
        links = board.list_links(hypothesis_id=hyp.id)
        cited = ", ".join(f"{lk.evidence_id} {lk.stance.value}" for lk in links)
        confidence = "" if hyp.confidence is None else f"{hyp.confidence:.0%}"
        lines.append(f"| {escape_markdown(hyp.id)} | {hyp.status.value} | {confidence} | "
                     f"{escape_markdown(hyp.statement)} | {escape_markdown(cited)} |")
    return "\n".join(lines)


def _box(node: GraphNode) -> tuple[float, float, float, float]:
    """``(left, top, right, bottom)`` of a node's rectangle."""
    x, y = node.position
    w, h = float(node.data["width"]), float(node.data["height"])
    return x - w / 2, y - h / 2, x + w / 2, y + h / 2


def _node_svg(node: GraphNode) -> str:
    left, top, right, bottom = _box(node)
    x = (left + right) / 2
    title = f"<title>{escape(str(node.data.get('hover', node.id)))}</title>"
    evidence = node.kind == "evidence"
    chars, font = (34, 11) if evidence else (40, 12)
    head, _, body = node.label.partition("\n")
    lines = [head, *textwrap.wrap(body, chars)][: 3 if evidence else 4]
    first = (top + bottom) / 2 - (len(lines) - 1) * (font + 2) / 2 + font / 3
    bold = ' font-weight="bold"'
    text = "".join(f'<tspan x="{x:.0f}" y="{first + i * (font + 2):.0f}"'
                   f'{bold if i == 0 else ""}>{escape(line)}</tspan>'
                   for i, line in enumerate(lines))
    classes = node.classes.split()
    dash = ' stroke-dasharray="4,3"' if "abandoned" in classes else ""
    stroke, width = node.data["border"], 1.5
    if "reused" in classes:  # look.json's node.reused: a dotted purple border
        dash, stroke, width = ' stroke-dasharray="2,2"', style.REUSED_BORDER, 3
    opacity = (f' opacity="{style.REDUNDANT_OPACITY}"' if "redundant" in classes else "")
    return (f'<g{opacity}><rect x="{left:.0f}" y="{top:.0f}" width="{right - left:.0f}" '
            f'height="{bottom - top:.0f}" rx="6" fill="{node.data["color"]}" '
            f'stroke="{stroke}" stroke-width="{width}"{dash}>{title}</rect>'
            f'<text font-size="{font}" text-anchor="middle" fill="#212121">{text}</text></g>')


def _border_point(node: GraphNode, origin: tuple[float, float]) -> tuple[float, float]:
    """Where the line from ``origin`` to ``node``'s centre meets its rectangle."""
    x, y = node.position
    dx, dy = x - origin[0], y - origin[1]
    if dx == 0 and dy == 0:
        return x, y
    half_w, half_h = float(node.data["width"]) / 2, float(node.data["height"]) / 2
    scale = min(half_w / abs(dx) if dx else float("inf"),
                half_h / abs(dy) if dy else float("inf"))
    return x - dx * min(scale, 1.0), y - dy * min(scale, 1.0)
