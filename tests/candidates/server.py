"""A real HTTP server on loopback for the import tests and the bench: images, a slow endpoint, a 404, redirects,
an HTML page, huge files, a flaky endpoint; it counts the requests each path got."""

from __future__ import annotations

import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Site:
    """Routes: path -> (status, headers, body) or a callable(handler) that answers itself."""

    def __init__(self):
        self.routes: dict[str, object] = {}
        self.hits: Counter[str] = Counter()
        self.lock = threading.Lock()
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):  # noqa: N802 (the standard library's name)
                path = self.path.split("?", 1)[0]
                with site.lock:
                    site.hits[path] += 1
                    count = site.hits[path]
                route = site.routes.get(path)
                if route is None:
                    self._answer(404, {"Content-Type": "text/plain"}, b"not found")
                elif callable(route):
                    route(self, count)
                else:
                    self._answer(*route)

            def _answer(self, status, headers, body):
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                if "Content-Length" not in headers:
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def image(self, path: str, data: bytes, content_type: str = "image/jpeg") -> None:
        self.routes[path] = (200, {"Content-Type": content_type}, data)

    def __enter__(self) -> Site:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def slow(seconds: float, body: bytes):
    def answer(handler, count):
        time.sleep(seconds)
        handler._answer(200, {"Content-Type": "image/jpeg"}, body)

    return answer


def flaky(failures: int, body: bytes):
    """503 on the first `failures` requests, then the image."""

    def answer(handler, count):
        if count <= failures:
            handler._answer(503, {"Content-Type": "text/plain"}, b"busy")
        else:
            handler._answer(200, {"Content-Type": "image/jpeg"}, body)

    return answer


def endless(chunk: bytes = b"\xff" * 65536, limit: int = 200):
    """An image/jpeg body without Content-Length that goes on (up to `limit` chunks) until the client stops."""

    def answer(handler, count):
        handler.send_response(200)
        handler.send_header("Content-Type", "image/jpeg")
        handler.send_header("Connection", "close")
        handler.end_headers()
        try:
            for _ in range(limit):
                handler.wfile.write(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
        handler.close_connection = True

    return answer
