"""A Jupyter server extension: the snapshot of a board file, for the document viewer.

JupyterLab's "Open With → Board" (``extension/src/plugin.ts``) asks
``GET {base_url}d2-notebook/snapshot?path=<path under the server root>`` and draws the
answer, the same snapshot a notebook output carries (:func:`board_snapshot`). The file
is a ``.d2board`` (the SQLite board, opened read-only here and closed again: viewing
never writes to the file or beside it) or a board JSON export
(:meth:`Board.to_json`, rebuilt in memory). No kernel is started and no user database is
touched: only the board file is read.

Enabled by ``etc/jupyter/jupyter_server_config.d/d2_notebook.json``, which the wheel
installs; by hand: ``jupyter server extension enable d2_notebook.notebook.server``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from d2_notebook.board import Board
from d2_notebook.errors import BoardDamagedError, D2Error
from d2_notebook.notebook.paths import BOARD_SUFFIX
from d2_notebook.notebook.snapshot import board_snapshot

ROUTE = "d2-notebook/snapshot"
MAX_JSON_BYTES = 200_000_000
"""Largest board JSON export the viewer reads (a guard against opening any huge file)."""


class SnapshotRequestError(D2Error):
    """The request names no readable board file; ``status`` is the HTTP status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def resolve_board_file(root: str | Path, relative: str) -> Path:
    """The file ``relative`` names under the server's ``root``.

    Raises:
        SnapshotRequestError: no path (400), a path outside the root (403), no such
            file (404), or a file that is neither a ``.d2board`` nor a ``.json`` (415).
    """
    if not relative:
        raise SnapshotRequestError(400, "pass ?path=<board file under the server root>")
    base = Path(root).expanduser().resolve()
    location = (base / relative.lstrip("/")).resolve()
    if not location.is_relative_to(base):
        raise SnapshotRequestError(403, f"{relative!r} is outside the server root")
    if not location.is_file():
        raise SnapshotRequestError(404, f"no file at {relative!r}")
    if location.suffix not in (BOARD_SUFFIX, ".json"):
        raise SnapshotRequestError(
            415, f"{relative!r} is not a board: open a {BOARD_SUFFIX} file or a board JSON "
                 "export (Board.to_json / d2 board export)")
    return location


def snapshot_of_file(location: Path) -> dict[str, Any]:
    """The snapshot of a board file or board JSON export.

    Raises:
        SnapshotRequestError: the file is not a board (422) or too large (413).
        BoardError: the board cannot be read (e.g. :class:`BoardDamagedError`).
    """
    if location.suffix == ".json":
        if location.stat().st_size > MAX_JSON_BYTES:
            raise SnapshotRequestError(413, f"{location.name} is larger than "
                                            f"{MAX_JSON_BYTES // 1_000_000} MB")
        try:
            board = Board.from_json(location.read_text(encoding="utf-8"))
        except D2Error as exc:
            raise SnapshotRequestError(422, f"{location.name} is not a board export: {exc}"
                                       ) from None
    else:
        try:
            board = Board.open(location, read_only=True)  # viewing never writes
        except BoardDamagedError as exc:
            raise SnapshotRequestError(422, str(exc)) from None
        except D2Error as exc:
            raise SnapshotRequestError(422, f"{location.name} is not a board: {exc}") from None
    with board:
        return board_snapshot(board)


def _handler_class() -> type:
    from jupyter_server.base.handlers import APIHandler
    from tornado import web

    class SnapshotHandler(APIHandler):  # type: ignore[misc]
        """``GET ?path=``: the board snapshot as JSON, or ``{"message"}`` with an error."""

        @web.authenticated
        def get(self) -> None:
            try:
                location = resolve_board_file(self.settings["server_root_dir"],
                                              self.get_argument("path", ""))
                snapshot = snapshot_of_file(location)
            except SnapshotRequestError as exc:
                self.set_status(exc.status)
                self.finish(json.dumps({"message": str(exc)}))
                return
            except D2Error as exc:
                self.set_status(422)
                self.finish(json.dumps({"message": str(exc)}))
                return
            self.finish(json.dumps(snapshot))

    return SnapshotHandler


def _jupyter_server_extension_points() -> list[dict[str, str]]:
    return [{"module": "d2_notebook.notebook.server"}]


def _load_jupyter_server_extension(serverapp: Any) -> None:
    """Register the snapshot route on the server (called by jupyter_server)."""
    from jupyter_server.utils import url_path_join

    web_app = serverapp.web_app
    route = url_path_join(web_app.settings["base_url"], ROUTE)
    web_app.add_handlers(".*$", [(route, _handler_class())])
    serverapp.log.info("d2_notebook: board snapshots at /%s", ROUTE)
