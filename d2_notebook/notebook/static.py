"""Static renderings of a board: header, inline SVG of the graph, Markdown.

They are what a saved notebook shows where widgets do not run (GitHub, nbviewer,
nbconvert): the SVG is drawn from the same elements and positions as the live widget.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape

from d2_notebook.board import Board, HypothesisStatus
from d2_notebook.board.scopes import investigation_scope
from d2_notebook.notebook import style
from d2_notebook.notebook.checks import CheckCounts, check_counts
from d2_notebook.notebook.economy import SCRIPTED_LABEL, Economy, board_economy
from d2_notebook.notebook.graph import GraphModel, GraphNode, board_elements, scope_checks
from d2_notebook.safe_markdown import escape_markdown

MARGIN = 30.0

SCRIPTED_MODEL_NAMES = frozenset({"scripted", "function", "offline-policy"})
"""Names the offline models record on each call (``d2_notebook.llm.offline``:
:class:`ScriptedModel`, :class:`FunctionModel`, and the policies' ``model()``, e.g. the
demo's ``HospitalWalkthrough``). A replay keeps the name ``"replay"``: it re-answers a
recording, which may be a real model's."""


@dataclass(frozen=True)
class OtherInvestigation:
    """Another investigation on the board than the one a view shows."""

    id: str
    question: str
    state: str

    def label(self, chars: int = 60) -> str:
        """``"I1 · Why did readmissions rise? · finished"`` (the question cut to
        ``chars``)."""
        return f"{self.id} · {_shorten(self.question, chars)} · {self.state}"


@dataclass(frozen=True)
class BoardSummary:
    """The numbers of the header line: of the investigation shown (the whole board's
    when it holds one investigation)."""

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
    """Every model call counted came from an offline script (no language model)."""
    checks: CheckCounts | None = None
    """What the latest re-check found (None: never re-checked)."""
    economy: Economy | None = None
    """Calls, dollars and the cache-read share of input tokens (None: not read)."""
    investigation_id: str | None = None
    """The investigation shown (None: the board holds none)."""
    others: tuple[OtherInvestigation, ...] = ()
    """The board's other investigations, oldest first."""


def summarize(board: Board, investigation_id: str | None = None) -> BoardSummary:
    """Read the header numbers of one investigation (None: the newest) from the board.

    With one investigation on the board, every record counts; with several, only the
    investigation's own (:func:`~d2_notebook.board.scopes.investigation_scope`): its
    hypotheses, the evidence it shows, its model calls and re-check. Tokens and dollars
    add up the ``model_call.recorded`` events, which carry the same numbers as
    :meth:`Board.list_model_calls` without loading every prompt.

    Raises:
        NotFoundError: ``investigation_id`` is not on the board.
    """
    scope = investigation_scope(board, investigation_id)
    shown = scope.investigation
    calls = board.events(kinds=["model_call.recorded"])
    if not scope.whole_board:
        calls = [e for e in calls if e.investigation_id == scope.investigation_id]
    tokens = sum(int(e.payload.get("input_tokens") or 0) + int(e.payload.get("output_tokens")
                                                               or 0) for e in calls)
    cost = sum(float(e.payload.get("cost_usd") or 0.0) for e in calls)
    scripted = scripted_calls(e.payload.get("model") for e in calls)
    economy = board_economy(board, scripted,
                            None if scope.whole_board else scope.investigation_id)
    statuses = Counter(hyp.status.value for hyp in scope.hypotheses)
    elapsed = None
    if shown is not None:
        start = datetime.fromisoformat(shown.created_at)
        end = (datetime.now(UTC) if shown.state.value == "running"
               else datetime.fromisoformat(shown.updated_at))
        elapsed = (end - start).total_seconds()
    model_calls = board.counts()["model_calls"] if scope.whole_board else economy.calls
    return BoardSummary(
        question=shown.question if shown else "(no investigation yet)",
        state=shown.state.value if shown else "empty",
        statuses={s.value: statuses[s.value] for s in HypothesisStatus if statuses[s.value]},
        evidence=len(scope.evidence),
        redundant=sum(1 for item in scope.evidence if item.redundant),
        model_calls=model_calls, tokens=tokens, cost_usd=cost, elapsed_s=elapsed,
        scripted=scripted,
        checks=check_counts(scope_checks(board, scope)),
        economy=economy, investigation_id=scope.investigation_id,
        others=tuple(OtherInvestigation(inv.id, inv.question, inv.state.value)
                     for inv in scope.others))


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


def also_line(summary: BoardSummary) -> str | None:
    """The one line naming the board's other investigations and how to show each:
    ``"also on this board: I1 · <question> · finished — show(board,
    investigation='I1')"`` (None: the board holds no other)."""
    if not summary.others:
        return None
    return "also on this board: " + "; ".join(
        f"{other.label()} — show(board, investigation={other.id!r})"
        for other in summary.others)


def header_title(summary: BoardSummary) -> str:
    """The header's first line: the question (after the investigation's id when the
    board holds several, so the reader knows which one is shown)."""
    if summary.others and summary.investigation_id is not None:
        return f"{summary.investigation_id} · {summary.question}"
    return summary.question


def header_text(board: Board, investigation_id: str | None = None) -> str:
    """The header as plain text: question and state, the summary line, and the line
    naming the other investigations when there are some."""
    summary = summarize(board, investigation_id)
    also = also_line(summary)
    return (f"{header_title(summary)} [{summary.state}]\n{summary_line(summary)}"
            + (f"\n{also}" if also else ""))


def header_html(board: Board, investigation_id: str | None = None) -> str:
    """The header shown above the graph: question, state, the summary line, and the
    line naming the other investigations when there are some."""
    summary = summarize(board, investigation_id)
    also = also_line(summary)
    return (f"<div><b>{escape(header_title(summary))}</b> "
            f"<code>[{escape(summary.state)}]</code><br>"
            f"<span>{escape(summary_line(summary))}</span>"
            + (f"<br><span class='d2-also' style='color:#616161'>{escape(also)}</span>"
               if also else "") + "</div>")


def board_svg(board: Board, include_redundant: bool = False,
              investigation_id: str | None = None) -> str:
    """The audit graph of one investigation (None: the newest) as a self-contained
    inline SVG (no scripts, no external CSS)."""
    return model_svg(board_elements(board, include_redundant,
                                    investigation_id=investigation_id))


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


def board_html(board: Board, include_redundant: bool = False,
               investigation_id: str | None = None) -> str:
    """Header, graph and legend of one investigation (None: the newest) as one HTML
    fragment."""
    return (f"{header_html(board, investigation_id)}"
            "<div style='overflow:auto;max-height:640px'>"
            f"{board_svg(board, include_redundant, investigation_id)}</div>{legend_html()}")


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


def board_markdown(board: Board, investigation_id: str | None = None) -> str:
    """One investigation (None: the newest) as Markdown: question, summary line, the
    other investigations, and a table of its hypotheses. Board text is escaped
    (:func:`~d2_notebook.safe_markdown.escape_markdown`): it reads as written and never
    becomes HTML, an image or a link."""
    summary = summarize(board, investigation_id)
    also = also_line(summary)
    lines = [f"**{escape_markdown(header_title(summary))}** `[{summary.state}]`", "",
             escape_markdown(summary_line(summary)), "",
             *([escape_markdown(also), ""] if also else []),
             "| id | status | confidence | statement | evidence |", "|---|---|---|---|---|"]
    scope = investigation_scope(board, investigation_id)
    for hyp in scope.hypotheses:
        cited = ", ".join(f"{lk.evidence_id} {lk.stance.value}" for lk in scope.links
                          if lk.hypothesis_id == hyp.id)
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


def _shorten(text: str, chars: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= chars else text[: chars - 1].rstrip() + "…"
