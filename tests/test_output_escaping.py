"""Output that cannot act: hostile board text through every surface.

The board of :mod:`tests.hostile_board` carries raw HTML, Markdown images, ``javascript:``
links, math and terminal sequences in every field. Every HTML a user can open — the
report and board displays (text/html), their text/markdown rendered by nbconvert, the
static HTML, the widget's details panels — is opened in headless Chromium beside a local
HTTP server that must receive no request, and no script, ``onerror`` or dialog may run.
Every terminal output (``d2 board show`` piped and under a pty, export, progress, error
lines) must carry no control byte from the board.
"""

from __future__ import annotations

import contextlib
import html.parser
import http.server
import json
import os
import pty
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import click
import nbformat
import pandas as pd
import pytest
from click.testing import CliRunner

from d2_notebook.board import Board, Contribution, ContributionRole
from d2_notebook.board.records import Event
from d2_notebook.cli import main
from d2_notebook.cli.commands import friendly_errors
from d2_notebook.cli.progress import ProgressState
from d2_notebook.detective.investigate import InvestigationResult
from d2_notebook.detective.report import board_sections, fallback_report
from d2_notebook.errors import BoardError
from d2_notebook.notebook.details import node_details_html
from d2_notebook.notebook.static import board_html, board_markdown
from d2_notebook.notebook.views import BoardView, InvestigationView
from d2_notebook.safe_markdown import escape_markdown, markdown_html, safe_markdown
from d2_notebook.terminal_text import json_terminal_safe, terminal_safe
from tests.hostile_board import TERMINAL_ATTACKS, build_hostile_board, hostile_report

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync",
                 "--disable-quic"]
CONTROL_BYTES = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
LOADING_ATTRIBUTES = {"src", "srcset", "poster", "data", "background", "formaction"}


@contextlib.contextmanager
def listening_server() -> Iterator[tuple[str, list[str]]]:
    """A local HTTP server that records the path of every request it receives."""
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            self.send_response(404)
            self.end_headers()

        do_POST = do_GET

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", hits
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def hostile(tmp_path: Path) -> Iterator[tuple[Board, str, list[str]]]:
    """The hostile board (read-only), the server's base URL and its request log."""
    with listening_server() as (base, hits):
        path = tmp_path / "hostile.d2board"
        build_hostile_board(path, base)
        with Board.open(path, read_only=True) as board:
            yield board, base, hits


def result_of(board: Board) -> Any:
    """The fields InvestigationView reads, as investigate() returns them."""
    investigation = board.list_investigations()[-1]
    return SimpleNamespace(investigation_id=investigation.id, state="finished", board=board,
                           report=investigation.report,
                           stop_reason="budget <img src=x onerror=alert('stop')> spent")


# --- the rule on the parsed HTML ------------------------------------------------------


class _Elements(html.parser.HTMLParser):
    """Every start tag with its attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def assert_inert_html(document: str) -> None:
    """No element that runs script or loads anything; links only to http(s)/mailto."""
    parser = _Elements()
    parser.feed(document)
    for tag, attrs in parser.tags:
        assert tag not in {"script", "img", "iframe", "object", "embed", "style", "link",
                           "video", "audio", "source", "base", "form", "meta"}, (tag, attrs)
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name, value)
            assert name not in LOADING_ATTRIBUTES, (tag, name, value)
            if name == "href" and tag == "a":
                assert re.match(r"(https?|mailto):|#", value or ""), value  # "#": anchor


def test_report_html_shows_images_as_text_and_keeps_its_structure(hostile) -> None:
    _, base, _ = hostile
    html = markdown_html(safe_markdown(hostile_report(base)))
    assert_inert_html(html)
    assert "<h2>Answer</h2>" in html and "<table>" in html and "<strong>H1</strong>" in html
    assert f"[image: leak — {base}/leak.png]" in html          # the data image, as text
    assert f"[image: ref — {base}/ref.png]" in html            # a reference image, too
    assert '<a href="https://example.org/docs" rel="noopener noreferrer nofollow">' in html
    assert "run (javascript:alert(%27report%27))" in html  # the link, as text
    assert "&lt;script&gt;" in html and "&lt;img src=" in html


def test_every_html_surface_is_inert(hostile) -> None:
    board, _, _ = hostile
    result = result_of(board)
    bundles = [BoardView(board)._repr_mimebundle_(),
               InvestigationView(result)._repr_mimebundle_(),
               InvestigationView(result, show_graph=False)._repr_mimebundle_()]
    documents = [b["text/html"] for b in bundles]
    documents += [board_html(board, include_redundant=True), node_details_html(board, "H1"),
                  node_details_html(board, "E1"), markdown_html(board_markdown(board))]
    for document in documents:
        assert_inert_html(document)


def test_every_markdown_surface_escapes_board_text(hostile) -> None:
    board, base, _ = hostile
    result = result_of(board)
    markdowns = [BoardView(board)._repr_mimebundle_()["text/markdown"],
                 BoardView(board)._repr_markdown_(),
                 InvestigationView(result)._repr_mimebundle_()["text/markdown"],
                 InvestigationResult._repr_markdown_(result)]
    for markdown in markdowns:
        code = re.compile(r"^```.*?^```", re.S | re.M)       # a code block shows as code
        unescaped = re.sub(r"\\.", "", code.sub("", markdown))  # what is left as markup
        assert "<img" not in unescaped and "<script" not in unescaped
        assert "![" not in unescaped and f"]: {base}" not in unescaped  # no image left
        assert "](javascript:" not in unescaped
        # nbconvert's own Markdown renderer (raw HTML passes through it) finds nothing.
        from nbconvert.filters.markdown_mistune import markdown2html_mistune

        assert_inert_html(markdown2html_mistune(markdown))
    table = board_markdown(board).splitlines()[-1]
    assert table.count(" | ") == 4  # a "|" in the statement cannot add a column


def test_escape_markdown_reads_back_as_the_text() -> None:
    text = "a|b *c* _d_ `e` [f](g) ![h](i) <j> &amp; $k$ ~l~ \\m\nn"
    rendered = markdown_html(escape_markdown(text))
    assert rendered == "<p>a|b *c* _d_ `e` [f](g) ![h](i) &lt;j&gt; &amp;amp; $k$ ~l~ \\m n</p>\n"


def test_fallback_report_keeps_board_text_on_its_line(hostile, tmp_path: Path) -> None:
    board, _, _ = hostile
    assert_inert_html(markdown_html(safe_markdown(fallback_report(
        board, board.list_investigations()[-1].id))))
    with Board.open(tmp_path / "lines.d2board") as lines:
        inv = lines.start_investigation("Why?\n# Injected heading")
        lines.add_hypothesis("Drug A\n\n## Injected section\n- injected item",
                             investigation_id=inv.id)
        report = fallback_report(lines, inv.id)
    headings = [line for line in report.splitlines() if line.startswith("#")]
    assert headings == ["# Why? # Injected heading", "## Answer", "## Hypotheses",
                        "### H1 — proposed: Drug A ## Injected section - injected item"]


def test_a_size_s_measure_stays_on_its_report_line(tmp_path: Path) -> None:
    """A judge writes a size's measure: a line break in it cannot start a heading in the
    board-built report nor in the verdict lines appended to a written one."""
    with Board.open(tmp_path / "size.d2board") as board:
        inv = board.start_investigation("Why?")
        hyp = board.add_hypothesis("Drug A helps", investigation_id=inv.id)
        evidence = board.add_evidence("SELECT 1", pd.DataFrame({"effect": [0.2]}),
                                      description="d", investigation_id=inv.id)
        size = Contribution(role=ContributionRole.MAJOR, evidence_id=evidence.id,
                            measure="rate\n## Injected section\n- injected item",
                            effect=0.2, ci_low=0.1, ci_high=0.3)
        board.add_verdict(hyp.id, "supported", 0.8, "r", [evidence.id], author="judge",
                          contribution=size)
        for report in (fallback_report(board, inv.id),
                       board_sections(board, inv.id, "## Answer\n\nIt holds [E1].\n")):
            assert "## Injected" not in [line[:11] for line in report.splitlines()]
            assert "rate ## Injected section - injected item: 0.2" in report


# --- in a real browser, beside a server that must hear nothing ---------------------------


def _require_chromium() -> None:
    if not Path(CHROMIUM).is_file():
        if os.environ.get("D2_SKIP_BROWSER") == "1":
            pytest.skip("D2_SKIP_BROWSER=1: no chromium")
        pytest.fail(f"{CHROMIUM} is missing: apt-get install chromium "
                    "(set D2_SKIP_BROWSER=1 to skip the browser tests explicitly)")


def hostile_notebook(board: Board) -> nbformat.NotebookNode:
    """A saved notebook holding every display of the board: full bundles, and each
    text/markdown alone (what nbconvert renders when there is no text/html)."""
    result = result_of(board)
    bundles = [BoardView(board)._repr_mimebundle_(),
               InvestigationView(result)._repr_mimebundle_()]
    outputs = []
    for bundle in bundles:
        data = {k: v for k, v in bundle.items() if k.startswith("text/")}
        outputs.append(nbformat.v4.new_output("display_data", data=data))
        outputs.append(nbformat.v4.new_output(
            "display_data", data={"text/markdown": bundle["text/markdown"]}))
    outputs.append(nbformat.v4.new_output(
        "display_data", data={"text/markdown": InvestigationResult._repr_markdown_(result)}))
    cell = nbformat.v4.new_code_cell("%%investigate", outputs=outputs)
    return nbformat.v4.new_notebook(cells=[cell])


def test_html_opened_in_chromium_loads_and_runs_nothing(hostile, tmp_path: Path) -> None:
    _require_chromium()
    from nbconvert import HTMLExporter
    from playwright.sync_api import sync_playwright

    board, base, hits = hostile
    result = result_of(board)
    pages = {
        "report.html": InvestigationView(result)._repr_mimebundle_()["text/html"],
        "board.html": BoardView(board)._repr_mimebundle_()["text/html"],
        "details.html": node_details_html(board, "H1") + node_details_html(board, "E1"),
        "nbconvert.html": HTMLExporter().from_notebook_node(hostile_notebook(board))[0],
    }
    dialogs: list[str] = []
    requests: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.on("dialog", lambda dialog: (dialogs.append(dialog.message),
                                              dialog.dismiss()))
            page.on("request", lambda request: requests.append(request.url))
            # nbconvert's page asks CDNs for require.js and MathJax: refused offline.
            page.route(re.compile(r"^https?://(?!127\.0\.0\.1)"), lambda route: route.abort())
            for name, document in pages.items():
                path = tmp_path / name
                path.write_text(f"<!doctype html><meta charset=utf-8>{document}"
                                if not document.lstrip().startswith("<!DOCTYPE")
                                else document, encoding="utf-8")
                page.goto(path.as_uri())
                page.wait_for_load_state("load")
                page.wait_for_timeout(500)
                text = page.inner_text("body")
                if name == "report.html":
                    assert f"[image: leak — {base}/leak.png]" in text
                assert "Drug A works" in text or name == "details.html" or "Findings" in text
        finally:
            browser.close()
    assert hits == [], hits
    assert dialogs == [], dialogs
    assert [url for url in requests if url.startswith(base)] == []


EXTENSION_DETAILS = Path(__file__).resolve().parent.parent / "extension" / "lib" / "details.js"


def hand_made_report_html(base: str) -> str:
    """What a crafted notebook could put in a snapshot's ``report_html``."""
    return (f"<h2>Answer</h2><p>kept <strong>bold</strong> "
            f"<a href='https://example.org/x' onclick='alert(1)'>safe link</a> "
            f"<a href='javascript:alert(2)'>js link</a> "
            f"<a href=' JaVaScRiPt:alert(3)'>spaced js</a> <a href='{base}/a'>server link</a>"
            f"<img src={base}/img.png onerror=alert(4)><svg onload=alert(5)></svg>"
            f"<iframe src={base}/frame></iframe><script>fetch('{base}/script')</script>"
            f"<style>@import url({base}/css);</style><video poster={base}/poster></video>"
            f"<span style=\"background:url({base}/bg.png)\">styled</span>"
            f"<table><tr><td style='text-align:right;background:url({base}/td.png)'>1</td>"
            f"</tr></table><object data={base}/object></object>"
            f"<form action={base}/form><button>go</button></form></p>")


def test_extension_report_panel_renders_html_that_loads_nothing(hostile, tmp_path) -> None:
    """The JupyterLab extension's "report" button: the report rendered as HTML, copied
    through an allowlist, so even a hand-made snapshot loads and runs nothing."""
    _require_chromium()
    if not EXTENSION_DETAILS.is_file():
        pytest.fail(f"{EXTENSION_DETAILS} is missing: cd extension && jlpm build")
    from playwright.sync_api import sync_playwright

    from d2_notebook.notebook.snapshot import board_snapshot

    board, base, hits = hostile
    snapshots = [board_snapshot(board),
                 {"report": "x", "report_html": hand_made_report_html(base)},
                 {"report": "# old snapshot <img src=x>", "report_html": None}]
    script = EXTENSION_DETAILS.read_text(encoding="utf-8") + """
        window.renderReports = (snapshots) => snapshots.map((snapshot) => {
          const panel = reportPanel(snapshot);
          document.body.appendChild(panel);
          return {text: panel.innerText, html: panel.innerHTML};
        });
        window.ready = true;"""
    (tmp_path / "panel.html").write_text("<!doctype html><meta charset=utf-8><body></body>",
                                         encoding="utf-8")
    dialogs: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.on("dialog", lambda dialog: (dialogs.append(dialog.message),
                                              dialog.dismiss()))
            page.goto((tmp_path / "panel.html").as_uri())
            page.add_script_tag(content=script, type="module")
            page.wait_for_function("window.ready === true")
            rendered = page.evaluate("(s) => window.renderReports(s)", snapshots)
            page.wait_for_timeout(500)
            links = page.eval_on_selector_all(
                "a", "(links) => links.map((a) => [a.textContent, a.getAttribute('href'), "
                     "a.getAttributeNames().sort().join(' ')])")
        finally:
            browser.close()
    assert hits == [] and dialogs == [], (hits, dialogs)
    from_board, hand_made, old = rendered
    assert f"[image: leak — {base}/leak.png]" in from_board["text"]
    assert "<h2>Answer</h2>" in from_board["html"] and "<table>" in from_board["html"]
    for panel in (from_board, hand_made):
        assert_inert_html(panel["html"])
        assert "style=" not in panel["html"].replace('style="text-align: right;"', "")
    assert "kept bold safe link js link spaced js server link" in hand_made["text"]
    assert ["safe link", "https://example.org/x", "href rel target"] in links
    assert ["server link", f"{base}/a", "href rel target"] in links  # a link: loads nothing
    assert not any(href.lower().lstrip().startswith("javascript") for _, href, _ in links)
    assert "<pre" in old["html"] and "# old snapshot <img src=x>" in old["text"]


# --- terminal ---------------------------------------------------------------------------


def assert_no_control(text: str) -> None:
    found = sorted({f"U+{ord(c):04X}" for c in CONTROL_BYTES.findall(text)})
    assert found == [], found


def test_terminal_safe_removes_every_sequence_kind() -> None:
    for attack in TERMINAL_ATTACKS:
        assert_no_control(terminal_safe(f"before {attack} after"))
    assert terminal_safe("\x1b]8;;http://x/\x1b\\label\x1b]8;;\x1b\\") == "label"
    assert terminal_safe("\x1b[31mred\x1b[0m") == "red"
    assert terminal_safe("a\r\nb\tc") == "a\nb\tc"
    assert terminal_safe("value \x1b]0;never terminated") == "value 0;never terminated"
    assert terminal_safe("a\nb", keep_newlines=False) == "a b"
    assert terminal_safe("über — 日本") == "über — 日本"


def test_json_terminal_safe_is_the_same_json() -> None:
    value = {"v": "\x9b31m \u202e x \x7f \x1b[2J"}
    document = json.dumps(value, ensure_ascii=False)
    safe = json_terminal_safe(document)
    assert json.loads(safe) == value
    assert_no_control(safe)


def test_board_show_prints_no_control_bytes(hostile) -> None:
    board, _, _ = hostile
    result = CliRunner().invoke(main, ["board", "show", str(board.path)])
    assert result.exit_code == 0, result.output
    assert_no_control(result.output.replace("\n", ""))
    assert "Drug A works" in result.output and "hidden link" in result.output


def test_board_show_piped_and_under_a_pty(hostile) -> None:
    board, _, _ = hostile
    command = [sys.executable, "-m", "d2_notebook", "board", "show", str(board.path)]
    piped = subprocess.run(command, capture_output=True, check=True, timeout=60)
    assert b"\x1b" not in piped.stdout and b"\x07" not in piped.stdout
    assert_no_control(piped.stdout.decode().replace("\n", ""))
    leader, follower = pty.openpty()
    try:
        process = subprocess.Popen(command, stdout=follower, stderr=follower)
        os.close(follower)
        output = b""
        with contextlib.suppress(OSError):  # EIO once the child has exited
            while chunk := os.read(leader, 65536):
                output += chunk
        assert process.wait(timeout=60) == 0
    finally:
        os.close(leader)
    assert b"Drug A works" in output
    assert_no_control(output.decode().replace("\r\n", "").replace("\n", ""))


def test_board_export_to_stdout_escapes_what_json_leaves_raw(hostile) -> None:
    board, _, _ = hostile
    result = CliRunner().invoke(main, ["board", "export", str(board.path), "--json"])
    assert result.exit_code == 0
    assert_no_control(result.output.replace("\n", ""))
    assert json.loads(result.output) == json.loads(board.to_json())


def test_progress_lines_carry_no_control(hostile) -> None:
    board, _, _ = hostile
    state = ProgressState(width=400)
    lines = state.apply(board.events())
    assert lines and any("Drug A works" in line for line in lines)
    for line in lines:
        assert_no_control(line)
    event = Event(seq=1, time="t", kind="collection.stopped", actor="loop",
                  investigation_id="I1", payload={"reason": "\x1b]52;c;AAAA\x07 spent"})
    assert state.render_event(event) == "! collection stopped:  spent"


def test_error_lines_carry_no_control() -> None:
    @click.command()
    @friendly_errors
    def failing() -> None:
        raise BoardError("board 'x\x1b]0;title\x07' is damaged; restore it")

    @click.command()
    @friendly_errors
    def refusing() -> None:
        raise click.ClickException("no board at '\x1b[2Jx'")

    for command in (failing, refusing):
        result = CliRunner().invoke(command, [])
        assert result.exit_code == 1
        assert_no_control(result.output.replace("\n", ""))


def test_plain_text_reprs_carry_no_control(hostile) -> None:
    board, _, _ = hostile
    for bundle in (BoardView(board)._repr_mimebundle_(),
                   InvestigationView(result_of(board))._repr_mimebundle_()):
        assert_no_control(bundle["text/plain"].replace("\n", ""))
