"""Real HTTP endpoints on loopback for tests of what a broken LLM server looks like: a port with
nothing listening (`dead_url`) and a server that answers every request the same way
(`PlainServer`: garbage HTML, an error status, a model list)."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def dead_url() -> str:
    """A loopback URL whose port had a listener a moment ago and has none now (connection refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


class LoopbackServer:
    """A ThreadingHTTPServer on an ephemeral loopback port, served from a daemon thread, with an
    OpenAI-style base URL; subclasses pass their request handler to `_serve`."""

    def _serve(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


class PlainServer(LoopbackServer):
    """A real HTTP server on an ephemeral loopback port answering every GET and POST with
    `status` and `body` (a str is sent as text/html, anything else as JSON); counts requests."""

    def __init__(self, status: int, body) -> None:
        self.requests: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                owner.requests.append(f"{self.command} {self.path}")
                data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/html" if isinstance(body, str) else "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _answer  # noqa: N815 (http.server's naming)

            def log_message(self, format: str, *args) -> None:
                return

        self._serve(Handler)
