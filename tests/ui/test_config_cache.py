"""ui/config_cache.py: the first 200 answer of GET /config is replayed for the same URL and proxy
headers; other paths, other hosts, a login and a personal answer (a cookie set) pass through."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from ui.config_cache import ConfigCache


def _client() -> tuple[TestClient, list[str]]:
    calls: list[str] = []

    def config(request):
        calls.append(request.url.path)
        return JSONResponse({"root": str(request.base_url), "n": len(calls)})

    def cookie(request):
        calls.append(request.url.path)
        response = JSONResponse({"n": len(calls)})
        response.set_cookie("session", str(len(calls)))
        return response

    app = Starlette(routes=[Route("/config", config), Route("/gradio_api/config", cookie), Route("/other", config)],
                    middleware=[Middleware(ConfigCache)])
    return TestClient(app), calls


def test_the_config_is_built_once_per_url_and_replayed():
    client, calls = _client()
    first = client.get("/config").json()
    assert client.get("/config").json() == first and calls == ["/config"]
    assert client.get("/config", headers={"x-forwarded-host": "example.org"}).json()["n"] == 2  # another root URL
    assert client.get("/config?page=x").json()["n"] == 3
    assert client.get("/other").json()["n"] == 4 and client.get("/other").json()["n"] == 5


def test_a_login_or_a_cookie_set_is_never_replayed():
    client, calls = _client()
    assert client.get("/config", headers={"authorization": "Bearer x"}).json()["n"] == 1
    assert client.get("/config", headers={"authorization": "Bearer x"}).json()["n"] == 2
    assert client.get("/gradio_api/config").json()["n"] == 3
    assert client.get("/gradio_api/config").json()["n"] == 4
