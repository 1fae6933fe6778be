"""The /ask endpoint's `stages` argument without a server: it is listed after `docs`, and the
callback passes it to the service (empty: the server's setting), whose reply names the stages run."""

from __future__ import annotations

import pytest

import ui
from backend.config import Settings
from backend.errors import StrataError
from backend.service import Service


def _ask_fn(demo):
    return next(fn for fn in demo.fns.values() if fn.api_name == "ask")


def test_ask_lists_stages_after_docs(tmp_path):
    service = Service(Settings(workspace_root=tmp_path / "workspaces", load_sample=False))
    demo = ui.build(service, sample_workspace=None)
    params = [p["parameter_name"] for p in demo.get_api_info()["named_endpoints"]["/ask"]["parameters"]]
    assert params == ["question", "method", "top_k", "docs", "stages"]


def test_ask_passes_stages_to_the_service(tmp_path, monkeypatch):
    service = Service(Settings(workspace_root=tmp_path / "workspaces", load_sample=False))
    demo = ui.build(service, sample_workspace=None)
    seen: list[object] = []

    def fake_ask(ws, question, method=None, top_k=None, docs=None, stages=None, **kw):
        seen.append(stages)
        raise StrataError("stop here")

    monkeypatch.setattr(service, "ask", fake_ask)
    monkeypatch.setattr("ui.api.session_workspace", lambda value: tmp_path)
    call = _ask_fn(demo).fn
    for sent, expected in (("none", "none"), (" quoted,spread ", "quoted,spread"), ("", None), (None, None)):
        with pytest.raises(Exception, match="stop here"):
            call("How many trees?", "hikey", 5, "", sent, "")
        assert seen[-1] == expected
