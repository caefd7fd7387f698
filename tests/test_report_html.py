"""The exported HTML report: self-contained, escaped, with charts, opening offline.

The browser check opens the file in headless Chromium (Debian's, as tests/test_browser.py)
beside a local HTTP server that hostile values point at: the server must receive no
request, the page must raise no script error and no dialog, and hostile values must read
as text.
"""

from __future__ import annotations

import http.server
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pandas as pd
import pytest
from click.testing import CliRunner

from d2_notebook.board import Board
from d2_notebook.cli.commands import main
from d2_notebook.notebook.report_html import report_document, write_report

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync",
                 "--disable-quic"]


class _Recorder(http.server.BaseHTTPRequestHandler):
    requests: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).requests.append(self.path)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        return


@pytest.fixture
def listener() -> Iterator[tuple[str, list[str]]]:
    _Recorder.requests = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}", _Recorder.requests
    server.shutdown()


def _board(path: Path, base: str) -> Board:
    """A finished investigation whose texts and values try to load from ``base``."""
    hostile = f"<img src={base}/onerror.png onerror=alert(1)>"
    board = Board.open(path)
    investigation = board.start_investigation(f"Which ward? {hostile}")
    rates = board.add_evidence(
        "SELECT ward, avg(died) AS death_rate, count(*) AS n FROM t GROUP BY ward",
        pd.DataFrame({"ward": ["icu", hostile, "ward"], "death_rate": [0.4, 0.2, 0.1],
                      "n": [50, 80, 300]}),
        description=f"death rate by ward {hostile}", investigation_id=investigation.id)
    lookup = board.add_evidence(
        "SELECT * FROM person WHERE id = 7",
        pd.DataFrame({"id": [7], "name": [f"<script>fetch('{base}/script')</script>"]}),
        description="who is 7", investigation_id=investigation.id)
    hypothesis = board.add_hypothesis(f"The ICU differs {hostile}",
                                      investigation_id=investigation.id)
    board.link(rates.id, hypothesis.id, "supports", f"0.4 vs 0.1 {hostile}", actor="t")
    board.add_verdict(hypothesis.id, "supported", 0.9, f"Clear gap {hostile}", [rates.id],
                      author="judge")
    report = (f"## Answer\n\nThe ICU's death rate is 0.4 against 0.1 [{rates.id}].\n\n"
              f"![leak]({base}/markdown.png) [click]({base}/link) {hostile}\n\n"
              f"Person 7 was looked up [{lookup.id}].\n")
    board.set_investigation_state(investigation.id, "finished", report=report, actor="reporter")
    return board


def test_the_report_holds_answer_check_charts_graph_and_every_evidence(tmp_path) -> None:
    board = _board(tmp_path / "b.d2board", "http://127.0.0.1:9")
    html = report_document(board)
    assert "<h2>Report</h2>" in html and "Claim check:" in html
    assert "numbers checked against the evidence they cite" in html
    assert "Charts of the cited evidence" in html and html.count("<svg") >= 3
    for evidence in board.list_evidence():
        assert f"<b>{evidence.id}</b>" in html
        assert evidence.sql in html.replace("&#x27;", "'") or "SELECT" in html
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    board.close()


def test_hostile_text_is_escaped_everywhere(tmp_path) -> None:
    board = _board(tmp_path / "b.d2board", "http://127.0.0.1:9")
    html = report_document(board)
    assert "<img" not in html and "<script" not in html
    assert "&lt;img src=http://127.0.0.1:9/onerror.png onerror=alert(1)&gt;" in html
    assert "src=\"http://127.0.0.1:9" not in html and "href=\"http://127.0.0.1:9" not in \
        html.replace("<a href=\"http://127.0.0.1:9/link\"", "")
    board.close()


def test_d2_board_export_html_writes_the_report_and_refuses_two_formats(tmp_path) -> None:
    board = _board(tmp_path / "b.d2board", "http://127.0.0.1:9")
    board.close()
    runner = CliRunner()
    out = tmp_path / "report.html"
    done = runner.invoke(main, ["board", "export", str(tmp_path / "b.d2board"),
                                "--html", str(out)])
    assert done.exit_code == 0, done.output
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    both = runner.invoke(main, ["board", "export", str(tmp_path / "b.d2board"), "--json",
                                "--html", str(out)])
    assert both.exit_code != 0 and "--json or --html" in both.output
    missing = runner.invoke(main, ["board", "export", str(tmp_path / "b.d2board"),
                                   "--html", str(tmp_path / "nowhere" / "r.html")])
    assert missing.exit_code != 0 and "does not exist" in missing.output


def test_d2_board_show_charts_writes_one_file_per_chartable_evidence(tmp_path) -> None:
    board = _board(tmp_path / "b.d2board", "http://127.0.0.1:9")
    board.close()
    runner = CliRunner()
    for file_format in ("svg", "png"):
        folder = tmp_path / file_format
        done = runner.invoke(main, ["board", "show", str(tmp_path / "b.d2board"),
                                    "--charts", str(folder), "--chart-format", file_format])
        assert done.exit_code == 0, done.output
        assert sorted(p.name for p in folder.iterdir()) == [f"E1.{file_format}"]
    assert (tmp_path / "png" / "E1.png").read_bytes().startswith(b"\x89PNG")


@pytest.mark.skipif(os.environ.get("D2_SKIP_BROWSER") == "1", reason="D2_SKIP_BROWSER=1")
def test_the_report_opens_offline_in_chromium_and_loads_nothing(tmp_path, listener) -> None:
    base, requests = listener
    board = _board(tmp_path / "b.d2board", base)
    path = write_report(board, tmp_path / "report.html")
    board.close()
    from playwright.sync_api import sync_playwright

    errors: list[str] = []
    dialogs: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        page.goto(path.as_uri())
        page.wait_for_timeout(500)
        text = page.inner_text("body")
        svg_count = page.eval_on_selector_all("figure svg", "nodes => nodes.length")
        page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        browser.close()
    assert requests == [] and errors == [] and dialogs == []
    assert f"<img src={base}/onerror.png onerror=alert(1)>" in text
    assert svg_count >= 2
