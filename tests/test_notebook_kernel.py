"""The magic in a real IPython kernel, where the cell runs inside the kernel's asyncio
loop: a foreground run nests on that loop, a background run is a task on it, and a
kernel interrupt leaves a resumable board."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from d2_notebook.board import Board

jupyter_client = pytest.importorskip("jupyter_client.manager")

SETUP = '''
import asyncio
%load_ext d2_notebook.notebook
from d2_notebook.datasets import hospital
from d2_notebook.llm.offline import FunctionModel, text, tool_call, tool_calls

def team(delay):
    async def respond(request):
        await asyncio.sleep(delay)
        if request.role == "hypothesizer":
            if len(request.messages) == 1:
                return tool_call("add_hypothesis", {"statement": "Pulmorex lowers deaths",
                                                    "rationale": "a guess"})
            return tool_call("done", {"summary": "one"})
        if request.role == "orchestrator":
            return tool_calls(("abandon", {"hypothesis_id": "H1", "reason": "test"}),
                              ("finish", {"reason": "done"}))
        if request.role == "reporter":
            return tool_call("write_report", {"markdown": "# Report"})
        return text("?")
    return FunctionModel(respond)

con = hospital.create(patients=200)
fast, slow = team(0.01), team(5.0)
'''


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("kernel")
    manager, client = jupyter_client.start_new_kernel(kernel_name="python3", cwd=str(folder))
    try:
        assert execute(client, SETUP)["error"] is None
        yield manager, client, folder
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def execute(client, code: str, timeout: float = 60) -> dict:
    """Run a cell; collect its outputs' mime types, stdout/stderr and error name."""
    msg_id = client.execute(code)
    seen: dict = {"mimes": [], "text": "", "error": None}
    while True:
        msg = client.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "stream":
            seen["text"] += content["text"]
        elif kind in ("display_data", "update_display_data", "execute_result"):
            seen["mimes"].append((kind, sorted(content["data"])))
        elif kind == "error":
            seen["error"] = content["ename"]
        elif kind == "status" and content["execution_state"] == "idle":
            return seen


def test_foreground_run_nests_on_the_kernel_loop(kernel) -> None:
    _manager, client, folder = kernel
    seen = execute(client, "%%investigate con --board fg.d2board --model fast --out res\n"
                           "Which treatment?\n")
    assert seen["error"] is None
    kinds = [kind for kind, _ in seen["mimes"]]
    assert kinds == ["display_data", "update_display_data", "execute_result"]
    assert "application/vnd.jupyter.widget-view+json" in seen["mimes"][0][1]
    assert "text/html" in seen["mimes"][0][1]
    assert execute(client, "print(res.state)")["text"].strip() == "finished"
    assert (folder / "fg.d2board").is_file()


def test_background_run_is_a_task_on_the_kernel_loop(kernel) -> None:
    _manager, client, _folder = kernel
    seen = execute(client, "%%investigate con --board bg.d2board --model fast --background\n"
                           "Which treatment?\n")
    assert seen["error"] is None
    out = execute(client, "run = _\nprint(run.done)\nresult = run.wait()\n"
                          "print(result.state, run.done)")
    assert out["text"].split() == ["False", "finished", "True"]


def test_kernel_interrupt_leaves_a_resumable_board(kernel) -> None:
    manager, client, folder = kernel
    threading.Timer(2.0, manager.interrupt_kernel).start()
    seen = execute(client, "%%investigate con --board stop.d2board --model slow\nWhich?\n")
    assert seen["error"] == "KeyboardInterrupt"
    assert "--resume --board stop.d2board" in seen["text"]
    with Board.open(Path(folder) / "stop.d2board") as board:
        assert board.list_investigations()[-1].state.value == "interrupted"
    assert execute(client, "print(1 + 1)")["text"].strip() == "2"  # the kernel lives on
