"""Every way a user looks at a board file, as one call each, and a fingerprint of a
folder (bytes, mtime, names) to prove that looking changed nothing."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner

import d2_notebook
from d2_notebook.cli import main
from d2_notebook.errors import D2Error
from d2_notebook.notebook.server import resolve_board_file, snapshot_of_file
from d2_notebook.notebook.style import MIME_TYPE
from d2_notebook.notebook.views import show

READERS = ("board-show", "board-export", "viewer", "show")
"""``d2 board show``, ``d2 board export --json``, the JupyterLab viewer's snapshot
endpoint and ``show()`` in a notebook."""


@dataclass(frozen=True)
class Outcome:
    """What a reader gave: ``ok`` and its output, or the error text it showed."""

    ok: bool
    text: str


def read_with(reader: str, path: Path) -> Outcome:
    """Look at the board file ``path`` the way ``reader`` does."""
    if reader in ("board-show", "board-export"):
        args = ["board", "show", str(path)] if reader == "board-show" else [
            "board", "export", str(path), "--json"]
        result = CliRunner().invoke(main, args)
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            repr(result.exception))
        return Outcome(result.exit_code == 0, result.output)
    if reader == "viewer":
        try:
            snapshot = snapshot_of_file(resolve_board_file(path.parent, path.name))
        except D2Error as exc:  # the route answers {"message": str(exc)} with a status
            return Outcome(False, str(exc))
        return Outcome(True, json.dumps(snapshot))
    if reader == "show":
        try:
            view = show(path)
        except D2Error as exc:  # IPython shows it through _render_traceback_
            return Outcome(False, "\n".join(exc._render_traceback_()))
        bundle = view._repr_mimebundle_()
        view.board.close()
        return Outcome(MIME_TYPE in bundle, bundle["text/plain"])
    raise ValueError(reader)


def fingerprint(folder: Path) -> dict[str, tuple[str, int, int]]:
    """Every file in ``folder``: its content hash, size and modification time."""
    found = {}
    for file in sorted(folder.iterdir()):
        if file.is_file():
            data = file.read_bytes()
            found[file.name] = (hashlib.sha256(data).hexdigest(), len(data),
                                file.stat().st_mtime_ns)
    return found


SOURCE_ROOT = str(Path(d2_notebook.__file__).resolve().parents[1])

READ_AS_SCRIPT = """
import json, os, pwd, sys
from pathlib import Path
sys.path.insert(0, {root!r})
from board_readers import read_with
reader, target, warm_up, user = sys.argv[1:]
assert read_with(reader, Path(warm_up)).ok  # loads every module the reader needs
entry = pwd.getpwnam(user)
os.setgroups([])
os.setgid(entry.pw_gid)
os.setuid(entry.pw_uid)  # from here on the file's and folder's permission bits hold
outcome = read_with(reader, Path(target))
print(json.dumps({{"ok": outcome.ok, "text": outcome.text}}))
"""


def read_as_user(reader: str, path: Path, user: str, warm_up: Path) -> Outcome:
    """``read_with`` in a child process that runs as ``user`` once its modules are
    loaded (by reading the board ``warm_up`` first), so permission bits hold even when
    the tests run as root. (The interpreter may live where ``user`` cannot reach.)"""
    script = READ_AS_SCRIPT.format(root=str(Path(__file__).parent))
    env = {**os.environ, "PYTHONPATH": SOURCE_ROOT}
    done = subprocess.run([sys.executable, "-c", script, reader, str(path), str(warm_up),
                           user], env=env, capture_output=True, text=True, timeout=120,
                          cwd="/")
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return Outcome(found["ok"], found["text"])
