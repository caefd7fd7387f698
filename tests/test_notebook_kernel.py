"""The magic in a real IPython kernel, where the cell runs inside the kernel's asyncio
loop: a foreground run nests on that loop, a background run is a task on it, and a
kernel interrupt leaves a resumable board."""

from __future__ import annotations

import os
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

async def explode(request):
    raise RuntimeError("model exploded")
broken = FunctionModel(explode)
'''


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("kernel")
    # The kernel imports this checkout's d2_notebook (not an installed copy).
    root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [root, *filter(None, [os.environ.get("PYTHONPATH")])])}
    manager, client = jupyter_client.start_new_kernel(kernel_name="python3", cwd=str(folder),
                                                      env=env)
    try:
        assert execute(client, SETUP)["error"] is None
        yield manager, client, folder
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def execute(client, code: str, timeout: float = 60, messages: list | None = None) -> dict:
    """Run a cell; collect its outputs' mime types, stdout/stderr and error name (and
    into ``messages`` every iopub message seen meanwhile, whatever cell it belongs to:
    a background run updates its placeholder while later cells run)."""
    msg_id = client.execute(code)
    seen: dict = {"mimes": [], "text": "", "error": None}
    while True:
        msg = client.get_iopub_msg(timeout=timeout)
        if messages is not None:
            messages.append(msg)
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
    seen = execute(client, "%%investigate con --board bg.d2board --model fast --background "
                           "--out run\nWhich treatment?\n")
    assert seen["error"] is None
    out = execute(client, "print(run.done)\nresult = run.wait()\n"
                          "print(result.state, run.done)")
    assert out["text"].split() == ["False", "finished", "True"]


def test_background_placeholder_is_replaced_by_the_report(kernel) -> None:
    _manager, client, _folder = kernel
    messages: list[dict] = []
    seen = execute(client, "%%investigate con --board bg2.d2board --model fast --background "
                           "--out run2\nWhich treatment?\n", messages=messages)
    assert seen["error"] is None
    kinds = [kind for kind, _ in seen["mimes"]]
    assert "execute_result" not in kinds, "no stale <InvestigationRun running…> result"
    placeholder = next(m for m in messages if m["msg_type"] == "display_data"
                       and "running in the background" in m["content"]["data"]["text/plain"])
    assert "run2.wait()" in placeholder["content"]["data"]["text/plain"]
    display_id = placeholder["content"]["transient"]["display_id"]
    execute(client, "run2.wait()\nimport time; time.sleep(0.5)", messages=messages)
    updates = [m["content"] for m in messages if m["msg_type"] == "update_display_data"
               and m["content"]["transient"]["display_id"] == display_id]
    assert updates, "the placeholder was never replaced"
    assert "# Report" in updates[-1]["data"]["text/markdown"]
    assert "running" not in updates[-1]["data"]["text/plain"]


def test_failed_background_run_shows_its_error_in_one_line(kernel) -> None:
    _manager, client, _folder = kernel
    messages: list[dict] = []
    seen = execute(client, "%%investigate con --board bg3.d2board --model broken "
                           "--background --out run3\nWhich treatment?\n", messages=messages)
    assert seen["error"] is None
    placeholder = next(m for m in messages if m["msg_type"] == "display_data"
                       and "running in the background" in m["content"]["data"]["text/plain"])
    display_id = placeholder["content"]["transient"]["display_id"]
    execute(client, "import contextlib\nwith contextlib.suppress(BaseException):\n"
                    "    run3.wait()\ntime.sleep(0.5)", messages=messages)
    updates = [m["content"] for m in messages if m["msg_type"] == "update_display_data"
               and m["content"]["transient"]["display_id"] == display_id]
    assert updates, "the placeholder was never replaced"
    line = updates[-1]["data"]["text/plain"]
    assert line.startswith("investigation stopped:") and "\n" not in line
    assert "model exploded" in line
    assert "--resume --board bg3.d2board" in line


def test_kernel_interrupt_leaves_a_resumable_board(kernel) -> None:
    manager, client, folder = kernel
    threading.Timer(2.0, manager.interrupt_kernel).start()
    seen = execute(client, "%%investigate con --board stop.d2board --model slow\nWhich?\n")
    assert seen["error"] == "KeyboardInterrupt"
    assert "--resume --board stop.d2board" in seen["text"]
    with Board.open(Path(folder) / "stop.d2board") as board:
        assert board.list_investigations()[-1].state.value == "interrupted"
    assert execute(client, "print(1 + 1)")["text"].strip() == "2"  # the kernel lives on
