"""A frontend's own dev server, for pages that call Consentry from another origin
(``CONSENTRY_CORS_ORIGINS``): any request handler, on a port of its own, in a thread."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["QuietHandler", "frontend_origin"]


class QuietHandler(BaseHTTPRequestHandler):
    """A handler that keeps the test's output clean (no access log)."""

    def log_message(self, *_: Any) -> None:
        pass


@contextmanager
def frontend_origin(handler: Any) -> Iterator[str]:
    """Serve ``handler`` (a ``BaseHTTPRequestHandler`` class, or a factory of one); yield the
    origin ``http://127.0.0.1:<port>``."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
