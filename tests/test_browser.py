"""The board widget in a real browser: JupyterLab + headless Chromium (Playwright).

Starts JupyterLab on 127.0.0.1 (free port, token, no browser) over a temp folder with a
copy of ``example_notebooks/01_covid_treatments.ipynb``, opens the notebook in headless
Chromium, runs all cells from the Run menu and checks what a user sees:

- the live board widget renders a cytoscape graph with one node per hypothesis and
  per evidence of the board the kernel wrote (read back from the ``.d2board`` file);
- clicking an evidence node (a real mouse click on the canvas) shows its stored
  DataFrame as an HTML table in the details panel;
- the browser console shows no errors.

How nodes are found: ipycytoscape draws on a canvas, but Cytoscape.js registers every
instance on its container element as ``container._cyreg.cy``. The test finds that
element inside the notebook's output, reads ``cy.nodes()`` (ids, classes) and each
node's ``renderedPosition()`` (pixels relative to the container), and clicks the page
at container's bounding box + rendered position — the same mouse event a user makes,
so the kernel-side click handler is exercised through the widget comm.

Not skipped silently: without /usr/bin/chromium (or the playwright package) the test
fails saying what to install, unless ``D2_SKIP_BROWSER=1`` is set explicitly.
Saves a screenshot of the board to the test's tmp dir, and to ``docs/board.png`` (the
README's picture) only when ``D2_UPDATE_SCREENSHOT=1`` is set, so a test run never
changes tracked files.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = "01_covid_treatments.ipynb"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync",
                 "--disable-quic"]
TOKEN = "d2-browser-test-token"
RUN_TIMEOUT_MS = 180_000

# Console errors that are not ours and do not affect the page, each with its reason.
# None are needed today (JupyterLab 4.6, ipywidgets 8, ipycytoscape 1.3.3): the console
# shows warnings only (a shared-module version notice, cytoscape's wheel-sensitivity
# notice), and warnings are not collected.
BENIGN_CONSOLE: tuple[str, ...] = ()

# JavaScript: find the Cytoscape instances (container._cyreg.cy) in the notebook.
FIND_GRAPHS = """
() => Array.from(document.querySelectorAll('.jp-OutputArea-output *'))
  .filter(el => el._cyreg && el._cyreg.cy)
  .map((el, index) => {
    const cy = el._cyreg.cy, box = el.getBoundingClientRect();
    // Tag the board widget (the VBox around the graph) so locators can find it.
    const board = el.closest('.widget-vbox');
    if (board) board.dataset.d2TestBoard = String(index);
    const html = board ? board.querySelectorAll('.widget-html') : [];
    return {
      header: html.length ? html[0].textContent : '',
      left: box.left, top: box.top, width: box.width, height: box.height,
      nodes: cy.nodes().map(n => ({id: n.id(), classes: n.classes(),
                                   x: n.renderedPosition().x, y: n.renderedPosition().y,
                                   visible: n.visible()})),
    };
  })
"""


def _skip_or_fail(message: str) -> None:
    if os.environ.get("D2_SKIP_BROWSER") == "1":
        pytest.skip(f"D2_SKIP_BROWSER=1: {message}")
    pytest.fail(f"{message} (set D2_SKIP_BROWSER=1 to skip the browser test explicitly)")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def jupyterlab(root: Path, scratch: Path) -> Iterator[str]:
    """Run JupyterLab over ``root``; yields its base URL; kills it at the end."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "D2_MODEL")}
    # Keep JupyterLab's config, settings, workspaces and runtime files in the tmp dir.
    for var, sub in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_RUNTIME_DIR", "runtime"),
                     ("JUPYTERLAB_SETTINGS_DIR", "settings"),
                     ("JUPYTERLAB_WORKSPACES_DIR", "workspaces")):
        env[var] = str(scratch / sub)
    # No "get notified about Jupyter news?" toast over the widget in the screenshot.
    notification = scratch / "settings" / "@jupyterlab" / "apputils-extension"
    notification.mkdir(parents=True, exist_ok=True)
    (notification / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    log = (scratch / "jupyterlab.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1",
         f"--port={port}", f"--IdentityProvider.token={TOKEN}",
         f"--ServerApp.root_dir={root}", "--ServerApp.port_retries=0",
         "--allow-root",  # CI runs as root
         "--LabApp.news_url=None", "--LabApp.extension_manager=readonly",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise RuntimeError("JupyterLab exited: "
                                   + (scratch / "jupyterlab.log").read_text()[-2000:])
            try:
                with urllib.request.urlopen(f"{base}/api/status?token={TOKEN}", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("JupyterLab did not start within 60 s: "
                                       + (scratch / "jupyterlab.log").read_text()[-2000:]
                                       ) from None
                time.sleep(0.3)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
        log.close()


def run_all_cells(page, timeout_s: float = 60) -> None:
    """Open the Run menu and click "Run All Cells" once it is enabled."""
    deadline = time.monotonic() + timeout_s
    while True:
        page.locator(".jp-Notebook .jp-Cell .jp-InputPrompt").first.click()
        page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
        item = page.locator(".lm-Menu-item", has=page.locator(
            ".lm-Menu-itemLabel", has_text="Run All Cells")).first
        item.wait_for()
        if "lm-mod-disabled" not in (item.get_attribute("class") or ""):
            item.click()
            return
        page.keyboard.press("Escape")
        if time.monotonic() > deadline:
            raise AssertionError("Run → Run All Cells stayed disabled")
        time.sleep(0.5)


def expected_nodes(root: Path) -> set[str]:
    """Node ids the widget should show: every hypothesis and every evidence (the widget
    starts with redundant evidence shown) of the board the notebook wrote."""
    from d2_notebook.board import Board
    from d2_notebook.notebook.graph import board_elements

    (path,) = root.glob("*.d2board")
    with Board.open(path) as board:
        return set(board_elements(board, include_redundant=True).nodes)


def test_board_widget_in_jupyterlab(tmp_path: Path) -> None:
    if not Path(CHROMIUM).is_file():
        _skip_or_fail(f"{CHROMIUM} is missing: run `apt-get install chromium` "
                      "(as root: apt-get update && apt-get install -y chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _skip_or_fail("the playwright package is missing: pip install -e '.[test]'")

    root, scratch = tmp_path / "lab", tmp_path / "scratch"
    root.mkdir()
    scratch.mkdir()
    shutil.copy(ROOT / "example_notebooks" / NOTEBOOK, root / NOTEBOOK)
    errors: list[str] = []

    with jupyterlab(root, scratch) as base, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            page.on("console", lambda msg: msg.type == "error" and errors.append(
                f"console: {msg.text}"))
            page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
            page.goto(f"{base}/lab/tree/{NOTEBOOK}?token={TOKEN}")
            page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=60_000)
            page.locator(".jp-Notebook.jp-mod-commandMode, .jp-Notebook").first.wait_for()
            # Wait for the kernel to be idle before running, so no cell is queued
            # on a kernel that is still starting (the status shows "Idle").
            page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").wait_for(
                timeout=60_000)

            # Run → Run All Cells, from the menu bar as a user would. The item is
            # disabled until the notebook panel is the current widget, so retry.
            run_all_cells(page)

            # Both widgets (the live one and show() at the end) are drawn once every
            # cell has run: wait for the second Cytoscape instance to appear.
            page.wait_for_function(f"() => ({FIND_GRAPHS})().length >= 2",
                                   timeout=RUN_TIMEOUT_MS)
            page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").wait_for(
                timeout=RUN_TIMEOUT_MS)
            want = expected_nodes(root)
            assert len(want) >= 10  # 8 hypotheses + evidence in the scripted run
            page.wait_for_function(
                f"() => ({FIND_GRAPHS})().every(g => g.nodes.length === {len(want)})",
                timeout=30_000)
            graphs = page.evaluate(FIND_GRAPHS)
            for graph in graphs:
                assert {n["id"] for n in graph["nodes"]} == want
                assert graph["width"] > 200 and graph["height"] > 200

            # The header (question, state, counts) is the first HTML of the widget.
            header = graphs[0]["header"]
            hypotheses = sum(1 for n in want if n.startswith("H"))
            evidence = len(want) - hypotheses
            assert "Which treatment is most effective" in header, header
            assert "[finished]" in header and f"{evidence} evidence" in header, header

            # Click an evidence node of the live widget, where the canvas draws it.
            live = page.locator("[data-d2-test-board='0']")
            live.scroll_into_view_if_needed()
            # Cytoscape caches its container's page offset and refreshes it on the
            # scroll event: let that event and a frame pass before reading positions.
            page.wait_for_timeout(500)
            graph = page.evaluate(FIND_GRAPHS)[0]
            node = next(n for n in graph["nodes"]
                        if "evidence" in n["classes"] and "redundant" not in n["classes"])
            page.mouse.move(graph["left"] + node["x"], graph["top"] + node["y"])
            page.mouse.click(graph["left"] + node["x"], graph["top"] + node["y"])
            table = live.locator("table.d2-frame")
            table.wait_for(timeout=30_000)
            panel = live.locator(".widget-html", has=page.locator("table.d2-frame"))
            assert panel.inner_text().startswith(f"{node['id']}:"), panel.inner_text()[:200]
            assert table.locator("tbody tr").count() >= 1
            assert "SELECT" in panel.inner_text()  # the evidence's SQL is shown too

            # The screenshot: the whole live widget (header, graph, details), with the
            # pointer moved off the graph so no tooltip hides a node.
            page.mouse.move(1, 1)
            page.wait_for_timeout(300)
            live.screenshot(path=str(tmp_path / "board.png"))
            if os.environ.get("D2_UPDATE_SCREENSHOT") == "1":
                (ROOT / "docs").mkdir(exist_ok=True)
                shutil.copy(tmp_path / "board.png", ROOT / "docs" / "board.png")
        finally:
            with contextlib.suppress(Exception):  # for debugging a failure
                page.screenshot(path=str(tmp_path / "last-page.png"), full_page=True)
            browser.close()

    problems = [e for e in errors if not any(b in e for b in BENIGN_CONSOLE)]
    assert problems == [], "\n".join(problems)
