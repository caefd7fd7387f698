"""A tiny JSON-over-HTTP server on 127.0.0.1 for provider tests (real HTTP, real SDKs)."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def json_server(reply: Callable[[dict[str, Any]], dict[str, Any] | None]
                ) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Answer each POST with ``reply(body)`` (None: 404); yields ``(url, bodies)``.

    Every recorded body also carries the request's ``_path`` and ``_auth`` header.
    """
    bodies: list[dict[str, Any]] = []
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            body["_path"], body["_auth"] = self.path, self.headers.get("authorization")
            with lock:
                bodies.append(body)
            answer = reply(body)
            if answer is None:
                self.send_error(404)
                return
            data = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:  # keep test output quiet
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", bodies
    finally:
        server.shutdown()
        server.server_close()
