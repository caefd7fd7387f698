"""A board whose every text field is hostile, for the output-escaping tests.

Each field carries the attacks that could act through one surface or another: raw HTML
(``<img onerror>``, ``<script>``, ``<iframe>``, ``<svg onload>``, ``<style @import>``),
Markdown images and reference images pointing at a local server, ``javascript:`` and
entity-spelled links, math, and terminal sequences of every kind (CSI clear screen,
OSC 0 window title, OSC 8 hidden hyperlink, OSC 52 clipboard write, DCS, 8-bit CSI,
bidi override, carriage return).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from d2_notebook.board import Board

TERMINAL_ATTACKS = (
    "\x1b[2J\x1b[H",                        # CSI: clear screen, cursor home
    "\x1b]0;pwned title\x07",               # OSC 0: window title (BEL)
    "\x1b]8;;http://127.0.0.1:1/osc8\x1b\\hidden link\x1b]8;;\x1b\\",  # OSC 8 hyperlink
    "\x1b]52;c;cm0gLXJmIH4=\x07",           # OSC 52: clipboard write
    "\x1bP+q544e\x1b\\",                    # DCS: terminfo query
    "\x9b31m",                              # 8-bit CSI
    "\u202eevil\u202c",                     # bidi override
    "over\rwrite",                          # carriage return
    "\x1b(0",                               # charset switch (plain ESC sequence)
    "\x07\x08\x7f",                         # bell, backspace, delete
)
"""Terminal control of each kind, as a data value might carry it."""


def html_attacks(base: str, tag: str) -> str:
    """HTML and Markdown that would load ``base`` or run script if rendered as such."""
    return (f"<img src={base}/{tag}-img.png onerror=alert('{tag}')> "
            f"<script>fetch('{base}/{tag}-script')</script> "
            f"<iframe src={base}/{tag}-iframe></iframe> <svg onload=alert('{tag}-svg')> "
            f"<style>@import url({base}/{tag}-css);</style> "
            f"![{tag}]({base}/{tag}-md.png) [{tag} link](javascript:alert('{tag}-js')) "
            f"[{tag} entity](&#106;avascript:alert('{tag}-ent')) "
            f"$\\href{{javascript:alert(1)}}{{{tag}}}$ | cell | breaker")


def hostile_report(base: str) -> str:
    """A model-written report: real structure (headings, list, table, code) plus every
    way Markdown can load or run something."""
    return "\n".join([
        "# Findings", "",
        "## Answer", "",
        f"- **H1** works ![leak]({base}/leak.png) [ref image][img] ![ref][img]",
        "- see [the docs](https://example.org/docs) and [run](javascript:alert('report'))",
        f"- [![nested]({base}/nested.png)](https://example.org)",
        "- <javascript:alert('autolink')> [data](data:text/html;base64,PHNjcmlwdD4=) "
        "[spaced](<  javascript:alert('spaced')>) [tab](java\tscript:alert('tab'))",
        f"- [titled](https://example.org \"<img src={base}/title.png onerror=alert(1)>\")",
        "",
        "| dimension | table | reason |", "|---|---|---|",
        f"| <img src={base}/table.png onerror=alert('table')> | t | not split |", "",
        f"<div><img src={base}/block.png onerror=alert('block')></div>", "",
        f"<script>fetch('{base}/report-script')</script>", "",
        f"<a href=\"javascript:alert('anchor')\">anchor</a> <video poster={base}/poster>",
        "",
        "```html",
        f"<img src={base}/code.png>",
        "```", "",
        f"[img]: {base}/ref.png", "",
        *TERMINAL_ATTACKS,
    ])


def build_hostile_board(path: Path, base: str) -> None:
    """A board at ``path`` with hostile text in every field a display shows."""
    terminal = " ".join(TERMINAL_ATTACKS)
    with Board.open(path) as board:
        inv = board.start_investigation(f"Which drug? {html_attacks(base, 'question')} "
                                        f"{terminal}")
        board.add_hypothesis(f"Drug A works {html_attacks(base, 'statement')} {terminal}",
                             rationale=html_attacks(base, "rationale"),
                             investigation_id=inv.id)
        frame = pd.DataFrame({
            f"<img src={base}/column.png onerror=alert('column')>": [
                f"![cell]({base}/cell.png)", f"<img src={base}/cell2.png onerror=alert(2)>",
                terminal],
            "n": [1, 2, 3]})
        evidence = board.add_evidence(
            "SELECT 1 -- <script>alert('sql')</script>", frame,
            description=f"Deaths by drug {html_attacks(base, 'description')} {terminal}")
        board.link(evidence.id, "H1", "supports",
                   f"lower {html_attacks(base, 'link')} {terminal}", actor="collector")
        board.add_verdict("H1", "supported", 0.8,
                          f"clear {html_attacks(base, 'verdict')} {terminal}", [evidence.id],
                          author="judge")
        board.set_investigation_state(inv.id, "finished", actor="reporter",
                                      report=hostile_report(base))
