"""The example notebooks run top to bottom offline, in a fresh kernel and folder.

Without ``ANTHROPIC_API_KEY`` notebook 01 investigates with the scripted
``HospitalWalkthrough`` and notebook 02's detective is the scripted ``CaseWalkthrough``
(both say so); both must finish without an error.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

from d2_notebook.detective.policies.hospital import SCRIPTED_LABEL  # noqa: E402

NOTEBOOKS = Path(__file__).resolve().parent.parent / "example_notebooks"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
BOARD_MIME = "application/vnd.d2.board+json"


def run_notebook(name: str, folder: Path, monkeypatch: pytest.MonkeyPatch):
    """Execute a copy of ``name`` in ``folder`` with no API key in the kernel's env, the
    kernel importing this checkout's ``d2_notebook`` (not whichever is installed)."""
    root = str(NOTEBOOKS.parent)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [root, *filter(None, [os.environ.get("PYTHONPATH")])]))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("D2_MODEL", raising=False)
    shutil.copy(NOTEBOOKS / name, folder / name)
    notebook = nbformat.read(folder / name, as_version=4)
    client = nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(folder)}})
    client.execute()  # raises CellExecutionError on the first failing cell
    return notebook


def texts(notebook) -> str:
    """Every stream and every text/plain, text/markdown or text/html output, joined."""
    parts = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            if output["output_type"] == "stream":
                parts.append(output["text"])
            elif output["output_type"] == "error":
                parts.append(f"ERROR {output['ename']}: {output['evalue']}")
            else:
                data = output.get("data", {})
                parts.extend(str(data.get(m, "")) for m in
                             ("text/plain", "text/markdown", "text/html"))
    return "\n".join(parts)


def mimes(notebook) -> set[str]:
    return {mime for cell in notebook.cells for output in cell.get("outputs", [])
            for mime in output.get("data", {})}


@pytest.mark.parametrize("name", ["01_covid_treatments.ipynb", "02_sql_murder_mystery.ipynb",
                                  "03_when_the_data_changes.ipynb"])
def test_notebooks_are_stored_without_outputs(name: str) -> None:
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    nbformat.validate(notebook)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, cell.source[:60]


def test_covid_notebook_runs_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    notebook = run_notebook("01_covid_treatments.ipynb", tmp_path, monkeypatch)
    text = texts(notebook)
    assert "ERROR" not in text
    assert f"*** {SCRIPTED_LABEL} ***" in text            # the run says it is scripted
    assert "## Answer" in text                             # the report's heading
    assert "H4: Pulmorex lowers mortality for older COVID-19 patients" in text
    assert "board file: which-treatment-is-most-effective" in text
    assert "difference" in text                            # an evidence frame is shown
    # The report's comparisons come with their charts (SVG, readable without a kernel).
    charts = text.split("Charts of the cited evidence", 1)
    assert len(charts) == 2 and "<svg" in charts[1], "notebook 01 shows no chart"
    # The live widget was replaced by the board snapshot when the run ended, so the
    # saved notebook reopens with the graph (the extension draws it without a kernel).
    assert BOARD_MIME in mimes(notebook) and WIDGET_MIME not in mimes(notebook)
    boards = list(tmp_path.glob("*.d2board"))
    assert len(boards) == 1, boards


def test_murder_notebook_runs_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    notebook = run_notebook("02_sql_murder_mystery.ipynb", tmp_path, monkeypatch)
    text = texts(notebook)
    assert "ERROR" not in text
    assert "A murder happened in SQL City on 2018-04-11" in text
    assert "I saw the killer." in text                     # the student's own queries
    for line in ("E1 supports H1", "E2 contradicts H2", "E3 contradicts H3"):
        assert line in text                                # %%evidence cells
    assert "*** scripted walk-through: " in text           # the offline detective, labelled
    assert "## Answer" in text                             # the detective's report
    assert "detective's conclusions: Raymond Carter (person 16388)" in text
    assert "murderer(s): Raymond Carter" in text
    assert "your supported hypotheses: Raymond Carter (16388) is the murderer" in text
    assert BOARD_MIME in mimes(notebook)                   # the student's board
    assert (tmp_path / "student.d2board").is_file()
    assert len(list(tmp_path.glob("a-murder-happened-*.d2board"))) == 1
    assert (tmp_path / "cases" / "sqlcity-s0-000.duckdb").is_file()
    # The grades side by side: the student's board and the (scripted) detective's.
    assert "your board" in text and "detective" in text
    assert "Raymond Carter (murderer)" in text and "caught" in text
    assert "Grade of student.d2board (case sqlcity-s0-000, easy)" in text
    assert "verifiability  0.50" in text                  # one query for three clues
    assert "Hint 1** (level 1 of 3): H2 has a clue" in text
    assert "Hint 2** (level 2 of 3)" in text and "drivers_license" in text


def test_data_changes_notebook_runs_offline(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Notebook 03: a follow-up reuses earlier evidence instead of re-running it; a month of
    new rows then changes the Pulmorex finding; the re-check marks exactly that verdict
    stale and confirms the others; the re-judge revises it; the new report version says
    what changed."""
    notebook = run_notebook("03_when_the_data_changes.ipynb", tmp_path, monkeypatch)
    text = texts(notebook)
    assert "ERROR" not in text
    assert f"*** {SCRIPTED_LABEL} ***" in text
    assert "H4  supported     Pulmorex lowers mortality for older COVID-19 patients" in text
    # evidence ids follow the parallel collectors' arrival order: two reused, none re-run
    assert re.search(r"I2: \d+ calls; reused, not re-run: E\d+, E\d+\n", text), text[:2000]
    assert "verdicts: 1 stale (H4), 6 confirmed" in text
    assert re.search(r"E\d+: changed — 1 row\(s\) added, 1 removed; n_drug 556 -> 756", text)
    assert "re-judge: revised H4; report version 2" in text
    assert "## What changed since" in text and "supported (0.85) -> inconclusive" in text
    assert BOARD_MIME in mimes(notebook)
    assert (tmp_path / "clinic.d2board").is_file()
    last = notebook.cells[-1].outputs[-1]["data"]  # show(BOARD, investigation="I1")
    assert last[BOARD_MIME]["investigation"] == "I1"
    assert {n["id"] for n in last[BOARD_MIME]["graph"]["nodes"]
            if n["kind"] == "hypothesis"} == {f"H{i}" for i in range(1, 9)}
    assert "I1 · Which treatment" in last["text/plain"]
    assert "also on this board: I2 · And for older patients" in last["text/plain"]
