"""A local extension repository (127.0.0.1) that records every request it receives:
the guard tests point DuckDB's extension settings at it to prove nothing is fetched."""

from __future__ import annotations

import http.server
import threading


class ExtensionRepository:
    """An extension repository on 127.0.0.1 that records every request it receives."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        repository = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                repository.requests.append(self.path)
                self.send_error(404)

            do_HEAD = do_GET

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
