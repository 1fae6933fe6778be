"""Gradio's `/config` answered from a cache once it has been answered once.

Every client asks for `/config` when it connects (a browser tab, each `gradio_client.Client`),
and Gradio rebuilds it for each request: a deep copy of the whole UI's config (about 250 KB
here) in the server's thread pool, tens of milliseconds of CPU with the interpreter lock held.
Fifty clients connecting at once queue those copies behind each other while the server's event
loop waits for the lock, and a client's own 5 s request timeout runs out. The answer depends
only on the request's URL and the proxy headers that set the root URL (the app has no login),
and the UI does not change after launch, so one answer per such key is kept and replayed.
Anything else, and any answer but a 200, passes through untouched.
"""

from __future__ import annotations

import threading

CONFIG_PATHS = frozenset({"/config", "/gradio_api/config"})
KEY_HEADERS = (b"host", b"x-forwarded-host", b"x-forwarded-proto", b"x-forwarded-prefix", b"x-direct-url")
MAX_ENTRIES = 32  # distinct hosts and query strings kept (a server answers a handful)


class ConfigCache:
    """ASGI middleware: replays the first 200 answer of GET /config for the same URL and proxy headers."""

    def __init__(self, app) -> None:
        self.app = app
        self._answers: dict[tuple, tuple[list, bytes]] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _key(scope) -> tuple | None:
        if scope["type"] != "http" or scope["method"] != "GET" or scope["path"] not in CONFIG_PATHS:
            return None
        headers = dict(scope.get("headers") or [])
        if b"authorization" in headers or b"cookie" in headers and b"access-token" in headers[b"cookie"]:
            return None  # a login would make the answer someone's own
        return (scope["path"], scope.get("query_string", b""), scope.get("root_path", ""), scope.get("scheme"),
                *(headers.get(h) for h in KEY_HEADERS))

    async def __call__(self, scope, receive, send) -> None:
        key = self._key(scope)
        if key is None:
            await self.app(scope, receive, send)
            return
        with self._lock:
            kept = self._answers.get(key)
        if kept is not None:
            headers, body = kept
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, self._recorder(key, send))

    def _recorder(self, key: tuple, send):
        started: dict = {}
        chunks: list[bytes] = []

        async def record(message) -> None:
            if message["type"] == "http.response.start":
                started.update(message)
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
                personal = any(name.lower() == b"set-cookie" for name, _ in started.get("headers", []))
                if not message.get("more_body") and started.get("status") == 200 and not personal:
                    with self._lock:
                        if len(self._answers) < MAX_ENTRIES:
                            self._answers[key] = (list(started.get("headers", [])), b"".join(chunks))
            await send(message)

        return record
