"""The app's API surface without a server: building the Blocks registers exactly the documented
endpoints as public (every UI event listener is private), so gradio_client's view_api() and
/info list /ingest and /ask only. tests/ui/test_app_surface.py checks the same on a running app."""

from __future__ import annotations

import ui
from backend.config import Settings
from backend.service import Service


def test_only_ingest_and_ask_are_public(tmp_path):
    service = Service(Settings(workspace_root=tmp_path / "workspaces", load_sample=False))
    demo = ui.build(service, sample_workspace=None)
    info = demo.get_api_info()
    assert sorted(info["named_endpoints"]) == ["/ask", "/ingest"]
    assert info["unnamed_endpoints"] == {}
    public = sorted(fn.api_name for fn in demo.fns.values() if fn.api_visibility == "public")
    assert public == ["ask", "ingest"]
