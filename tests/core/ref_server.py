"""A local HTTP server that counts requests, standing in for a schema host a $ref names."""

from __future__ import annotations

import contextlib
import http.server
import threading
from collections.abc import Iterator

SCHEMA_BODY = b'{"type": "string", "description": "SERVED-SCHEMA-CANARY"}'


@contextlib.contextmanager
def counting_server() -> Iterator[tuple[str, list[str]]]:
    """(base URL on 127.0.0.1, the request lines it has received so far)."""
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.requestline)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(SCHEMA_BODY)))
            self.end_headers()
            self.wfile.write(SCHEMA_BODY)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", hits
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
