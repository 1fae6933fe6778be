"""A real OpenAI-compatible HTTP server on 127.0.0.1 (ephemeral port) for the LLM backend tests.

Each test scripts the server with a function `reply(request) -> Reply`; the server records every
request (path, headers, parsed JSON body) so the test can check what the backend sent.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler

from tests.http_servers import LoopbackServer
from typing import Any


@dataclass
class Request:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class Reply:
    status: int = 200
    body: dict[str, Any] | str = field(default_factory=dict)
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


def completion(content: str, prompt_tokens: int | None = 11, completion_tokens: int | None = 7, finish_reason: str = "stop") -> dict:
    """A chat-completions response body with one choice; usage left out when the counts are None."""
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": "fake-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish_reason}],
    }
    if prompt_tokens is not None:
        body["usage"] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                         "total_tokens": prompt_tokens + (completion_tokens or 0)}
    return body


class ChatServer(LoopbackServer):
    def __init__(self, reply: Callable[[Request], Reply]) -> None:
        self.reply = reply
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                req = Request(self.path, {k.lower(): v for k, v in self.headers.items()}, json.loads(raw or b"{}"))
                with server._lock:
                    server.requests.append(req)
                if self.path != "/v1/chat/completions":
                    out = Reply(404, {"error": {"message": f"no route {self.path}"}})
                else:
                    out = server.reply(req)
                if out.delay_s:
                    time.sleep(out.delay_s)
                data = out.body.encode() if isinstance(out.body, str) else json.dumps(out.body).encode()
                try:
                    self.send_response(out.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in out.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

            def log_message(self, format: str, *args: Any) -> None:  # keep pytest output clean
                return

        self._serve(Handler)
