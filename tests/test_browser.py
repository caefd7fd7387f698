"""The board in a real browser: JupyterLab + headless Chromium (Playwright).

Three checks, each on a fresh JupyterLab (127.0.0.1, free port, token) that loads the
extension built from ``extension/`` (``d2_notebook/labextension``) and its server
extension:

- **a saved notebook opened cold**: ``example_notebooks/01_covid_treatments.ipynb`` is
  executed offline with nbclient and saved; its board file is then moved away, so the
  graph can only come from the saved outputs. JupyterLab opens it and **no cell is
  run**: every board output must be drawn by the extension's renderer with one node per
  hypothesis and evidence, labels readable at the first zoom (>= 11 px), and a real
  mouse click on an evidence node must show its SQL and its result table;
- **Open With → Board**: the ``.d2board`` file opens in the extension's document viewer
  (no kernel), a click on an evidence shows its table and its chart (vega-embed, bundled),
  and the server answers the snapshot of a board JSON export;
- **the live widget** follows a board growing to 50 hypotheses and 300 evidence in
  batches; the test prints the time from the last update to the browser showing it, and
  a click then shows the evidence's chart in the details pane.

How nodes are found: Cytoscape.js registers every instance on its container element as
``container._cyreg.cy``; the test reads ``cy.nodes()`` and each node's
``renderedPosition()`` and clicks the page there — the mouse event a user makes.

Not skipped silently: without /usr/bin/chromium, the playwright package or the built
extension the tests fail saying what to do, unless ``D2_SKIP_BROWSER=1`` is set.
Screenshots go to the test's tmp dir, and to ``docs/board.png``,
``docs/notebook-cold.png``, ``docs/notebook-report.png`` (the report button's rendered
report) and ``docs/widget-folded.png`` (the live widget folding a 50-hypothesis board),
the README's pictures, only with ``D2_UPDATE_SCREENSHOT=1``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = "01_covid_treatments.ipynb"
LABEXTENSION = ROOT / "d2_notebook" / "labextension"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync",
                 "--disable-quic"]
TOKEN = "d2-browser-test-token"
RUN_TIMEOUT_MS = 180_000
MIN_LABEL_PX = 11

# Console errors that are not ours and do not affect the page, each with its reason.
# None are needed today (JupyterLab 4.6, ipywidgets 8, ipycytoscape 1.3.3): the console
# shows warnings only (a shared-module version notice, cytoscape's wheel-sensitivity
# notice), and warnings are not collected.
BENIGN_CONSOLE: tuple[str, ...] = ()

# JavaScript: the Cytoscape instances (container._cyreg.cy) under `selector`, with their
# nodes' rendered positions relative to the container, and the zoom.
FIND_GRAPHS = """
(selector) => Array.from(document.querySelectorAll(selector))
  .filter(el => el._cyreg && el._cyreg.cy)
  .map((el, index) => {
    const cy = el._cyreg.cy, box = el.getBoundingClientRect();
    el.dataset.d2TestGraph = String(index);
    return {
      left: box.left, top: box.top, width: box.width, height: box.height, zoom: cy.zoom(),
      nodes: cy.nodes().map(n => ({id: n.id(), classes: n.classes(),
                                   x: n.renderedPosition().x, y: n.renderedPosition().y,
                                   box: n.renderedBoundingBox({includeLabels: false,
                                                               includeOverlays: false}),
                                   visible: n.visible()})),
    };
  })
"""
RENDERED = ".d2-board-output .d2-graph"
LIVE = ".jp-OutputArea-output .widget-vbox *"


def _skip_or_fail(message: str) -> None:
    if os.environ.get("D2_SKIP_BROWSER") == "1":
        pytest.skip(f"D2_SKIP_BROWSER=1: {message}")
    pytest.fail(f"{message} (set D2_SKIP_BROWSER=1 to skip the browser test explicitly)")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _require_browser_and_extension() -> None:
    if not Path(CHROMIUM).is_file():
        _skip_or_fail(f"{CHROMIUM} is missing: run `apt-get install chromium` "
                      "(as root: apt-get update && apt-get install -y chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _skip_or_fail("the playwright package is missing: pip install -e '.[test]'")
    if not (LABEXTENSION / "package.json").is_file():
        _skip_or_fail(f"the JupyterLab extension is not built ({LABEXTENSION} is missing): "
                      "cd extension && jlpm install && jlpm build")


@contextlib.contextmanager
def jupyterlab(root: Path, scratch: Path) -> Iterator[str]:
    """Run JupyterLab over ``root`` with the extension built from this checkout (and its
    server extension); yields its base URL; kills it at the end."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "D2_MODEL")}
    # Keep JupyterLab's config, settings, workspaces and runtime files in the tmp dir.
    for var, sub in (("JUPYTER_CONFIG_DIR", "config"), ("JUPYTER_RUNTIME_DIR", "runtime"),
                     ("JUPYTERLAB_SETTINGS_DIR", "settings"),
                     ("JUPYTERLAB_WORKSPACES_DIR", "workspaces")):
        env[var] = str(scratch / sub)
    # The extension of this checkout first on the data path (an installed copy of the
    # same package would be shadowed by it), and the server extension enabled.
    labextensions = scratch / "data" / "labextensions"
    labextensions.mkdir(parents=True, exist_ok=True)
    (labextensions / "d2-notebook").symlink_to(LABEXTENSION, target_is_directory=True)
    env["JUPYTER_PATH"] = os.pathsep.join(
        [str(scratch / "data"), *filter(None, [os.environ.get("JUPYTER_PATH")])])
    (scratch / "config").mkdir(parents=True, exist_ok=True)
    (scratch / "config" / "jupyter_server_config.json").write_text(json.dumps(
        {"ServerApp": {"jpserver_extensions": {"d2_notebook.notebook.server": True}}}))
    # No "get notified about Jupyter news?" toast over the graph in the screenshot.
    notification = scratch / "settings" / "@jupyterlab" / "apputils-extension"
    notification.mkdir(parents=True, exist_ok=True)
    (notification / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    # Every cell rendered in place (no windowing), so scrolling to an output is plain.
    tracker = scratch / "settings" / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True, exist_ok=True)
    (tracker / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}')
    log = (scratch / "jupyterlab.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1",
         f"--port={port}", f"--IdentityProvider.token={TOKEN}",
         f"--ServerApp.root_dir={root}", "--ServerApp.port_retries=0",
         "--allow-root",  # CI runs as root
         "--LabApp.news_url=None", "--LabApp.extension_manager=readonly",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        cwd=root, env={**env, "PYTHONPATH": os.pathsep.join(
            [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])},
        stdout=log, stderr=subprocess.STDOUT)
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


@contextlib.contextmanager
def browser_page(tmp_path: Path, errors: list[str]) -> Iterator[Any]:
    """A headless Chromium page that collects console errors into ``errors``."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1000})
        page.on("console", lambda msg: msg.type == "error" and errors.append(
            f"console: {msg.text}"))
        page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
        try:
            yield page
        finally:
            with contextlib.suppress(Exception):  # for debugging a failure
                page.screenshot(path=str(tmp_path / "last-page.png"), full_page=True)
            browser.close()


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
            # Started once a prompt shows [*] or a count; a click on a kernel that is
            # still connecting can be lost, so try again.
            with contextlib.suppress(Exception):
                page.wait_for_function(
                    "() => Array.from(document.querySelectorAll('.jp-InputPrompt'))"
                    ".some(p => /\\[(\\*|\\d+)\\]/.test(p.textContent))", timeout=10_000)
                return
        else:
            page.keyboard.press("Escape")
        if time.monotonic() > deadline:
            raise AssertionError("Run → Run All Cells stayed disabled or started nothing")
        time.sleep(0.5)


def executed_notebook(folder: Path) -> tuple[Path, Path, set[str]]:
    """Execute a copy of notebook 01 offline in ``folder`` and save it with its outputs;
    move its board to ``demo.d2board`` (so nothing can read it under the old name).
    Returns the notebook, the board and the node ids the graph must show."""
    import nbclient
    import nbformat

    from d2_notebook.board import Board
    from d2_notebook.notebook.graph import board_elements

    notebook = nbformat.read(ROOT / "example_notebooks" / NOTEBOOK, as_version=4)
    env_key = os.environ.pop("ANTHROPIC_API_KEY", None)
    python_path = os.environ.get("PYTHONPATH")
    # The kernel imports this checkout's d2_notebook (not an installed copy).
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [python_path])])
    try:
        nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                                resources={"metadata": {"path": str(folder)}}).execute()
    finally:
        if env_key is not None:
            os.environ["ANTHROPIC_API_KEY"] = env_key
        if python_path is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = python_path
    path = folder / NOTEBOOK
    nbformat.write(notebook, path)
    (written,) = folder.glob("*.d2board")
    board_path = folder / "demo.d2board"
    for suffix in ("", "-wal", "-shm"):  # SQLite's side files travel with the board
        side = Path(f"{written}{suffix}")
        if side.exists():
            side.rename(f"{board_path}{suffix}")
    with Board.open(board_path) as board:
        return path, board_path, set(board_elements(board, include_redundant=True).nodes)


def click_node(page, graph: dict[str, Any], kind: str) -> dict[str, Any]:
    """Click the first ``kind`` node drawn inside the graph's box and the window."""
    node = next(n for n in graph["nodes"]
                if kind in n["classes"] and "redundant" not in n["classes"] and n["visible"]
                and 20 < n["x"] < graph["width"] - 20 and 20 < n["y"] < graph["height"] - 20
                and 0 < graph["top"] + n["y"] < 980)
    page.mouse.move(graph["left"] + node["x"], graph["top"] + node["y"])
    page.mouse.click(graph["left"] + node["x"], graph["top"] + node["y"])
    return node


def visible_only(graph: dict[str, Any]) -> dict[str, Any]:
    """``graph`` (from FIND_GRAPHS) with only the nodes drawn (not ``display: none``)."""
    return {**graph, "nodes": [n for n in graph["nodes"] if n["visible"]]}


def assert_whole_and_readable(graph: dict[str, Any]) -> None:
    """Every node of ``graph`` (from FIND_GRAPHS) inside its container, labels >= 11 px."""
    assert graph["zoom"] * 12 >= MIN_LABEL_PX, graph["zoom"]  # smallest font: 12 px
    outside = [n["id"] for n in graph["nodes"]
               if not (n["box"]["x1"] >= -1 and n["box"]["x2"] <= graph["width"] + 1
                       and n["box"]["y1"] >= -1 and n["box"]["y2"] <= graph["height"] + 1)]
    assert outside == [], f"nodes outside the {graph['width']}x{graph['height']} view: {outside}"


def test_saved_notebook_opened_cold_shows_the_board(tmp_path: Path) -> None:
    _require_browser_and_extension()
    root, scratch = tmp_path / "lab", tmp_path / "scratch"
    root.mkdir()
    scratch.mkdir()
    _notebook, _board, want = executed_notebook(root)
    assert len(want) >= 10  # 8 hypotheses + evidence in the scripted run
    errors: list[str] = []
    with jupyterlab(root, scratch) as base, browser_page(tmp_path, errors) as page:
        page.goto(f"{base}/lab/tree/{NOTEBOOK}?token={TOKEN}")
        page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=60_000)
        # No cell is run: both board outputs (the %%investigate cell and show()) are
        # drawn from the saved snapshot by the extension's renderer.
        page.wait_for_function(f"() => ({FIND_GRAPHS})('{RENDERED}').length >= 2",
                               timeout=60_000)
        graphs = page.evaluate(FIND_GRAPHS, RENDERED)
        for graph in graphs:
            assert {n["id"] for n in graph["nodes"]} == want
            assert graph["width"] > 500 and graph["height"] > 400
            assert_whole_and_readable(graph)
        assert page.locator(".jp-OutputArea-output .widget-vbox").count() == 0
        prompts = page.locator(".jp-InputPrompt").all_inner_texts()
        executed = [p for p in prompts if p.strip() not in ("[ ]:", "")]
        assert executed, "the saved notebook should show its execution counts"

        output = page.locator(".d2-board-output").last
        output.locator(".d2-graph").evaluate("el => el.scrollIntoView({block: 'start'})")
        page.wait_for_timeout(500)  # cytoscape refreshes its offsets on scroll
        graph = page.evaluate(FIND_GRAPHS, RENDERED)[-1]
        assert graph["top"] >= 0, graph["top"]

        # The wheel over the graph scrolls the notebook and leaves the zoom alone (upwards:
        # the graph is scrolled to the top, and the notebook may end below it).
        scroller = page.locator(".jp-WindowedPanel-outer").first
        before = scroller.evaluate("el => el.scrollTop")
        page.mouse.move(graph["left"] + 40, graph["top"] + 40)
        page.mouse.wheel(0, -300)
        page.wait_for_timeout(500)
        assert scroller.evaluate("el => el.scrollTop") < before
        assert page.evaluate(FIND_GRAPHS, RENDERED)[-1]["zoom"] == graph["zoom"]
        output.locator(".d2-graph").evaluate("el => el.scrollIntoView({block: 'start'})")
        page.wait_for_timeout(500)
        graph = page.evaluate(FIND_GRAPHS, RENDERED)[-1]
        panel = output.locator(".d2-details")
        hypothesis = click_node(page, graph, "hypothesis")
        panel.locator(".d2-details-hypothesis").wait_for(timeout=10_000)
        assert panel.inner_text().startswith(f"{hypothesis['id']}:")
        assert "Verdict" in panel.inner_text()

        node = click_node(page, graph, "evidence")
        table = panel.locator("table.d2-frame")
        try:
            table.wait_for(timeout=10_000)
        except Exception as exc:
            raise AssertionError(f"no table after clicking {node} in {graph['left']}, "
                                 f"{graph['top']}, {graph['width']}x{graph['height']}: "
                                 f"{panel.inner_text()[:100]}") from exc
        assert panel.inner_text().startswith(f"{node['id']}:"), panel.inner_text()[:200]
        assert table.locator("tbody tr").count() >= 1
        sql = panel.locator(".d2-sql").inner_text()
        assert sql.startswith("SELECT\n") and "\nFROM" in sql  # laid out by sqlglot
        assert panel.locator(".d2-sql").evaluate(  # its lines kept, scrolling sideways
            "el => getComputedStyle(el).whiteSpace") == "pre"
        # Hover text goes to the line under the graph, not over the nodes.
        assert node["id"] in output.locator(".d2-hover").inner_text()

        # The status filter: hide the supported hypotheses; the rest is laid out again
        # and the panel of a node that went away is cleared.
        selected = node["id"]
        output.locator("input[data-d2-filter='supported']").uncheck()
        page.wait_for_function(
            f"() => ({FIND_GRAPHS})('{RENDERED}').slice(-1)[0].nodes.length < {len(want)}")
        shown = {n["id"] for n in page.evaluate(FIND_GRAPHS, RENDERED)[-1]["nodes"]}
        if selected not in shown:
            assert "Click a hypothesis" in panel.inner_text()
        assert_whole_and_readable(page.evaluate(FIND_GRAPHS, RENDERED)[-1])

        page.mouse.move(1, 1)
        output.locator("input[data-d2-filter='supported']").check()
        page.wait_for_timeout(300)
        page.set_viewport_size({"width": 1500, "height": 2400})  # the whole output
        page.wait_for_timeout(500)
        output.screenshot(path=str(tmp_path / "board.png"))
        # The report button shows the report rendered (headings, lists, tables), not
        # its Markdown source.
        output.locator("button.d2-button", has_text="report").click()
        report = panel.locator(".d2-details-report .d2-report-html")
        report.wait_for(timeout=10_000)
        assert report.locator("h2").count() >= 1 and "##" not in report.inner_text()
        assert panel.locator("pre.d2-report").count() == 0
        panel.evaluate("el => el.scrollIntoView({block: 'start'})")
        page.wait_for_timeout(300)
        panel.screenshot(path=str(tmp_path / "notebook-report.png"))
        page.set_viewport_size({"width": 1500, "height": 1000})
        page.locator(".d2-board-output").first.scroll_into_view_if_needed()
        page.wait_for_timeout(300)
        page.screenshot(path=str(tmp_path / "notebook-cold.png"))
        if os.environ.get("D2_UPDATE_SCREENSHOT") == "1":
            for name in ("board.png", "notebook-cold.png", "notebook-report.png"):
                shutil.copy(tmp_path / name, ROOT / "docs" / name)

    problems = [e for e in errors if not any(b in e for b in BENIGN_CONSOLE)]
    assert problems == [], "\n".join(problems)


def test_board_file_opens_with_the_board_viewer(tmp_path: Path) -> None:
    _require_browser_and_extension()
    import pandas as pd

    from d2_notebook.board import Board, RecheckOutcome, VerdictCheck
    from d2_notebook.notebook.graph import board_elements

    root, scratch = tmp_path / "lab", tmp_path / "scratch"
    root.mkdir()
    scratch.mkdir()
    with Board.open(root / "notes.d2board") as board:
        inv = board.start_investigation("Which drug works?", {}, actor="user")
        board.add_hypothesis("Pulmorex lowers deaths", investigation_id=inv.id)
        frame = pd.DataFrame({"drug": ["Pulmorex", "Hydrazol"], "deaths": [3, 9]})
        item = board.add_evidence("SELECT drug, deaths FROM t", frame,
                                  description="deaths by drug")
        board.link(item.id, "H1", "supports", "fewest deaths", actor="collector-1")
        board.add_verdict("H1", "supported", 0.8, "fewest deaths", [item.id], author="judge")
        # A re-check found E1 changed: H1's verdict is stale.
        run = board.start_recheck(inv.id, "duckdb:covid.duckdb", actor="user")
        board.record_recheck(run.id, item.id, RecheckOutcome.CHANGED, "3 → 7", actor="user")
        board.finish_recheck(run.id, {"H1": (VerdictCheck.STALE, [item.id])}, actor="user")
        (root / "notes-export.json").write_text(board.to_json())
        want = set(board_elements(board).nodes)
    (root / "not-a-board.json").write_text('{"hello": 1}')
    (root / "empty.d2board").touch()
    shutil.copy(root / "notes.d2board", root / "damaged.d2board")
    with sqlite3.connect(root / "damaged.d2board") as conn:
        conn.execute("UPDATE hypotheses SET status = 'probably'")
    conn.close()

    def snapshot(path: str) -> tuple[int, dict[str, Any]]:
        url = f"{base}/d2-notebook/snapshot?path={path}&token={TOKEN}"
        try:
            with urllib.request.urlopen(url, timeout=30) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    errors: list[str] = []
    with jupyterlab(root, scratch) as base, browser_page(tmp_path, errors) as page:
        # The server extension: a JSON export, and bad requests with a clear message.
        status, body = snapshot("notes-export.json")
        assert status == 200 and {n["id"] for n in body["graph"]["nodes"]} == want
        assert snapshot("not-a-board.json")[0] == 422
        assert snapshot("../outside.d2board")[0] in (403, 404)
        assert "not a board" in snapshot("missing.txt")[1]["message"] or (
            snapshot("missing.txt")[0] == 404)
        # Viewing never writes: an empty .d2board stays empty; damage is one JSON line.
        for name, words in (("empty.d2board", "is not a d2 board"),
                            ("damaged.d2board", "is damaged")):
            status, body = snapshot(name)
            assert status == 422 and words in body["message"], body
            assert "\n" not in body["message"] and name in body["message"]
        assert (root / "empty.d2board").stat().st_size == 0
        assert not list(root.glob("*-wal")) and not list(root.glob("*-shm"))

        # A .d2board opens in the Board viewer by default: no kernel is started.
        page.goto(f"{base}/lab/tree/notes.d2board?token={TOKEN}")
        selector = ".d2-board-document .d2-graph"
        page.wait_for_function(f"() => ({FIND_GRAPHS})('{selector}').length === 1",
                               timeout=60_000)
        page.wait_for_timeout(500)  # the panel settles its size
        graph = page.evaluate(FIND_GRAPHS, selector)[0]
        assert {n["id"] for n in graph["nodes"]} == want
        click_node(page, graph, "evidence")
        page.locator(".d2-board-document table.d2-frame").wait_for(timeout=10_000)
        # Its chart, drawn by the bundled vega-embed from the snapshot's spec.
        chart = page.locator(".d2-board-document .d2-chart svg")
        chart.wait_for(timeout=10_000)
        assert "Pulmorex" in chart.inner_html() and "deaths" in chart.inner_html()
        # The stale verdict: marked on its node, counted in the header, said in its pane.
        assert "1 stale (H1)" in page.locator(".d2-board-document .d2-header").inner_text()
        h1 = next(n for n in graph["nodes"] if n["id"] == "H1")
        assert "stale" in h1["classes"]
        click_node(page, graph, "hypothesis")
        check = page.locator(".d2-board-document .d2-check-stale")
        check.wait_for(timeout=10_000)
        assert check.inner_text().startswith("Re-check: Stale since")
        with urllib.request.urlopen(f"{base}/api/kernels?token={TOKEN}") as response:
            assert json.loads(response.read()) == []
    problems = [e for e in errors if not any(b in e for b in BENIGN_CONSOLE)]
    assert problems == [], "\n".join(problems)


LIVE_NOTEBOOK_CELLS = [
    """\
import asyncio, time
import pandas as pd
from d2_notebook import Board
from d2_notebook.notebook.widget import BoardWidget

board = Board.open("live.d2board")
inv = board.start_investigation("A large board", {}, actor="user")
frame = pd.DataFrame({"n": range(5), "label": list("abcde")})
for i in range(50):
    board.add_hypothesis(f"hypothesis {i}: a statement long enough to wrap over lines",
                         investigation_id=inv.id, parent_id=f"H{i - 9}" if i >= 10 else None)
for j in range(250):
    item = board.add_evidence(f"SELECT {j}", frame, description=f"evidence {j} rows")
    board.link(item.id, f"H{j % 50 + 1}", "supports" if j % 3 else "contradicts", "",
               actor="collector")
widget = BoardWidget(board, show_redundant=True)
widget""",
    """\
async def grow():
    for step in range(10):  # 50 more evidence in 10 batches, as collectors add them
        for k in range(5):
            item = board.add_evidence("SELECT 1", frame, description=f"late {step}.{k}")
            board.link(item.id, f"H{(step * 5 + k) % 50 + 1}", "supports", "", actor="c")
        board.set_status(f"H{step + 1}", "investigating", actor="orchestrator")
        widget.refresh()
        await asyncio.sleep(0.2)
    return time.time()

last_update = await grow()
print(f"LAST_UPDATE {last_update:.3f}")""",
]


def test_live_widget_stays_responsive_on_a_300_evidence_board(tmp_path: Path) -> None:
    _require_browser_and_extension()
    import nbformat

    root, scratch = tmp_path / "lab", tmp_path / "scratch"
    root.mkdir()
    scratch.mkdir()
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in LIVE_NOTEBOOK_CELLS]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    nbformat.write(notebook, root / "live.ipynb")
    errors: list[str] = []
    with jupyterlab(root, scratch) as base, browser_page(tmp_path, errors) as page:
        page.goto(f"{base}/lab/tree/live.ipynb?token={TOKEN}")
        page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").wait_for(
            timeout=60_000)
        run_all_cells(page)
        # Once the widget is drawn, note the time of every frame Cytoscape renders.
        page.wait_for_function(f"() => ({FIND_GRAPHS})('{LIVE}').length > 0",
                               timeout=RUN_TIMEOUT_MS)
        page.evaluate(f"""() => ({FIND_GRAPHS})('{LIVE}') && Array.from(
            document.querySelectorAll('{LIVE}')).filter(el => el._cyreg).forEach(el =>
            el._cyreg.cy.on('render', () => {{ window.d2LastRender = Date.now() / 1000; }}))""")
        printed = page.locator(".jp-OutputArea-output", has_text="LAST_UPDATE")
        printed.wait_for(timeout=RUN_TIMEOUT_MS)
        # 50 hypotheses, each with its evidence folded into one "▸ N evidence" node.
        # The evidence stays in the graph, hidden under its fold (display: none).
        shown = "g => g.nodes.filter(n => n.visible).length"
        page.wait_for_function(
            f"() => ({FIND_GRAPHS})('{LIVE}').some(g => ({shown})(g) === 100)",
            timeout=60_000)
        page.wait_for_timeout(2000)  # let every pending frame render
        last_render = page.evaluate("() => window.d2LastRender")
        last_update = float(printed.inner_text().split()[1])
        graph = visible_only(next(g for g in page.evaluate(FIND_GRAPHS, LIVE)
                                  if len(g["nodes"]) == 350 + 50))
        statuses = page.evaluate(
            "() => Array.from(document.querySelectorAll('.jp-OutputArea-output .widget-vbox *'))"
            ".filter(el => el._cyreg).map(el => el._cyreg.cy.$id('H10').data('status'))")
        print(f"live widget, 50 hypotheses + 300 evidence: last frame rendered "
              f"{last_render - last_update:.2f} s after the kernel's last update")
        assert "investigating" in statuses  # the last batch's change arrived
        ids = {n["id"] for n in graph["nodes"]}
        assert {f"H{i}" for i in range(1, 51)} <= ids
        assert len([i for i in ids if i.startswith("fold:")]) == 50
        assert_whole_and_readable(graph)
        # With the kernel free again, a click on a fold unfolds it, and a click on an
        # evidence fills the details pane, chart included (drawn in Python from the
        # evidence's stored rows).
        page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").wait_for(
            timeout=60_000)
        page.locator(".jp-OutputArea-output .widget-vbox").first.evaluate(
            "el => el.scrollIntoView({block: 'start'})")
        page.wait_for_timeout(500)
        page.screenshot(path=str(tmp_path / "widget-folded.png"))
        if os.environ.get("D2_UPDATE_SCREENSHOT") == "1":
            shutil.copy(tmp_path / "widget-folded.png", ROOT / "docs" / "widget-folded.png")
        graph = visible_only(page.evaluate(FIND_GRAPHS, LIVE)[0])
        fold = click_node(page, graph, "fold")
        home = fold["id"].removeprefix("fold:")
        page.wait_for_function(
            f"() => ({FIND_GRAPHS})('{LIVE}').some(g => g.nodes.some(n => n.visible && "
            "n.id.startsWith('E')))", timeout=30_000)
        page.wait_for_timeout(1000)
        graph = visible_only(page.evaluate(FIND_GRAPHS, LIVE)[0])
        unfolded = [n["id"] for n in graph["nodes"] if n["id"].startswith("E")]
        assert len(unfolded) == 6 and f"fold:{home}" not in {n["id"] for n in graph["nodes"]}
        assert_whole_and_readable(graph)
        click_node(page, graph, "evidence")
        chart = page.locator(".jp-OutputArea-output .d2-chart svg").first
        chart.wait_for(timeout=30_000)
        assert "label" in chart.inner_html()
    problems = [e for e in errors if not any(b in e for b in BENIGN_CONSOLE)]
    assert problems == [], "\n".join(problems)


def test_a_fifty_hypothesis_board_folds_its_evidence_and_stays_readable(
        tmp_path: Path) -> None:
    _require_browser_and_extension()
    import pandas as pd

    from d2_notebook.board import Board

    root, scratch = tmp_path / "lab", tmp_path / "scratch"
    root.mkdir()
    scratch.mkdir()
    frame = pd.DataFrame({"n": [1], "difference": [-0.25]})
    with Board.open(root / "big.d2board") as board:
        inv = board.start_investigation("A large board", {}, actor="user")
        for i in range(50):
            board.add_hypothesis(f"hypothesis {i}: a statement long enough to wrap",
                                 investigation_id=inv.id,
                                 parent_id=f"H{i - 9}" if i >= 10 else None)
        for j in range(300):
            item = board.add_evidence(f"SELECT 1 FROM t WHERE k = '{j}'", frame,
                                      description="one slice")
            board.link(item.id, f"H{j % 50 + 1}", "supports" if j % 3 else "contradicts",
                       "", actor="collector")
    errors: list[str] = []
    with jupyterlab(root, scratch) as base, browser_page(tmp_path, errors) as page:
        page.goto(f"{base}/lab/tree/big.d2board?token={TOKEN}")
        selector = ".d2-board-document .d2-graph"
        page.wait_for_function(f"() => ({FIND_GRAPHS})('{selector}').length === 1",
                               timeout=60_000)
        page.wait_for_timeout(500)
        graph = page.evaluate(FIND_GRAPHS, selector)[0]
        ids = {n["id"] for n in graph["nodes"]}
        assert {f"H{i}" for i in range(1, 51)} <= ids
        folds = [n for n in graph["nodes"] if "fold" in n["classes"]]
        assert len(folds) == 50 and not any(i.startswith("E") for i in ids)
        assert_whole_and_readable(graph)
        page.locator(".d2-board-document .d2-graph").evaluate(
            "el => el.scrollIntoView({block: 'start'})")
        page.wait_for_timeout(500)
        graph = page.evaluate(FIND_GRAPHS, selector)[0]
        fold = click_node(page, graph, "fold")
        page.wait_for_function(
            f"() => ({FIND_GRAPHS})('{selector}')[0].nodes.some(n => n.id.startsWith('E'))",
            timeout=10_000)
        graph = page.evaluate(FIND_GRAPHS, selector)[0]
        home = fold["id"].removeprefix("fold:")
        unfolded = [n for n in graph["nodes"] if n["id"].startswith("E")]
        assert len(unfolded) == 6 and f"fold:{home}" not in {n["id"] for n in graph["nodes"]}
        assert_whole_and_readable(graph)
        # Clicked, the graph has focus: now the wheel zooms it (as Plotly does). The
        # unfolded graph is taller than the window: wheel over its visible part.
        page.mouse.move(graph["left"] + 40, max(graph["top"], 0) + 40)
        page.mouse.wheel(0, -200)
        page.wait_for_function(
            f"() => ({FIND_GRAPHS})('{selector}')[0].zoom !== {graph['zoom']}",
            timeout=10_000)
    problems = [e for e in errors if not any(b in e for b in BENIGN_CONSOLE)]
    assert problems == [], "\n".join(problems)


BLOCKING_NOTEBOOK_CELLS = [
    """\
import time
import pandas as pd
from d2_notebook import Board
from d2_notebook.notebook.widget import BoardWidget

board = Board.open("busy.d2board")
inv = board.start_investigation("Which drug works?", {}, actor="user")
board.add_hypothesis("Pulmorex lowers deaths", investigation_id=inv.id)
frame = pd.DataFrame({"drug": ["Pulmorex", "Hydrazol"], "death_rate": [0.08, 0.17]})
item = board.add_evidence("select drug, avg(died) as death_rate from t where age >= 65 "
                          "group by drug", frame, description="death rate by drug")
board.link(item.id, "H1", "supports", "lowest", actor="collector-1")
widget = BoardWidget(board)
widget""",
    """\
print("BUSY", flush=True)
time.sleep(60)  # a normal, blocking run: the kernel answers nothing meanwhile""",
]


def test_a_click_during_a_blocking_run_shows_the_evidence_table(tmp_path: Path) -> None:
    _require_browser_and_extension()
    import nbformat

    root, scratch = tmp_path / "lab", tmp_path / "scratch"
    root.mkdir()
    scratch.mkdir()
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in BLOCKING_NOTEBOOK_CELLS]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    nbformat.write(notebook, root / "busy.ipynb")
    errors: list[str] = []
    with jupyterlab(root, scratch) as base, browser_page(tmp_path, errors) as page:
        page.goto(f"{base}/lab/tree/busy.ipynb?token={TOKEN}")
        page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").wait_for(
            timeout=60_000)
        run_all_cells(page)
        page.locator(".jp-OutputArea-output", has_text="BUSY").wait_for(
            timeout=RUN_TIMEOUT_MS)
        page.wait_for_function(f"() => ({FIND_GRAPHS})('{LIVE}').length > 0",
                               timeout=60_000)
        page.locator(".widget-vbox").first.scroll_into_view_if_needed()
        page.wait_for_timeout(1000)
        assert page.locator(".jp-Notebook-ExecutionIndicator[data-status='busy']").count()
        graph = page.evaluate(FIND_GRAPHS, LIVE)[0]
        click_node(page, graph, "evidence")
        popup = page.locator(".tippy-popper, .tippy-box, [data-tippy-root]").first
        popup.locator("table").wait_for(timeout=10_000)
        text = popup.inner_text()
        assert "Pulmorex" in text and "death_rate" in text and "E1:" in text
        assert page.locator(".jp-Notebook-ExecutionIndicator[data-status='busy']").count()
        page.screenshot(path=str(tmp_path / "busy-click.png"))
    problems = [e for e in errors if not any(b in e for b in BENIGN_CONSOLE)]
    assert problems == [], "\n".join(problems)
