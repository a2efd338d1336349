"""A small HTTP server on loopback that answers every GET with what a function returns: the
demo's stand-ins (the DCGM exporter, a page for a program it cannot run) and the tests' own."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Callable

Answer = Callable[[], tuple[int, bytes]]


def serve(answer: Answer, content_type: str, port: int = 0) -> http.server.ThreadingHTTPServer:
    """Serve `answer()` (status, body) on 127.0.0.1:`port` (a free one when 0) from a thread;
    `shutdown()` stops it."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status, body = answer()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def url_of(server: http.server.ThreadingHTTPServer, path: str = "/") -> str:
    return f"http://127.0.0.1:{server.server_address[1]}{path}"
