"""What a program and a person reading the log see of the running app (the `app_url` server of
conftest.py): gradio_client lists exactly the documented endpoints, and the app log at INFO
carries no library chatter (bm25s DEBUG lines, transformers' token-length warning).

Lives in tests/ui/ to share the one app server the browser tests start.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import pymupdf

from tests.ui.helpers import FILLER

gradio_client = pytest.importorskip("gradio_client")

pytestmark = pytest.mark.slow

DOCUMENTED = {"/ingest", "/ask"}


def test_gradio_client_lists_exactly_the_documented_endpoints(app_url):
    client = gradio_client.Client(app_url, verbose=False)
    api = client.view_api(return_format="dict", print_info=False)
    assert set(api["named_endpoints"]) == DOCUMENTED, sorted(api["named_endpoints"])
    assert api["unnamed_endpoints"] == {}
    for name in DOCUMENTED:
        params = api["named_endpoints"][name]["parameters"]
        assert params and all(p["python_type"]["type"] for p in params), (name, params)


def _long_paragraph_pdf(path: Path) -> Path:
    """One paragraph of ~600 tokens: longer than MiniLM's 256-token window, so counting its
    tokens for the pack used to make transformers warn."""
    with pymupdf.open() as pdf:
        page = pdf.new_page()
        page.insert_text((72, 80), "Canal Survey Notes", fontsize=20, fontname="hebo")
        text = "The Quillon canal lock opens at dawn for barges. " + FILLER * 7
        page.insert_textbox(pymupdf.Rect(72, 100, 540, 800), text, fontsize=9)
        pdf.save(path)
    return path


def test_the_app_log_has_no_library_chatter(app_url, app_log, tmp_path):
    client = gradio_client.Client(app_url, verbose=False)
    pdf = _long_paragraph_pdf(tmp_path / "canal_notes.pdf")
    report = client.predict(files=[gradio_client.handle_file(str(pdf))], api_name="/ingest")
    assert report["ingested"] == 1, report
    reply = client.predict(question="When does the Quillon canal lock open?", method="bm25", top_k=3, api_name="/ask")
    assert reply["results"] and reply["results"][0]["doc"] == "canal_notes.pdf"
    log_text = Path(app_log).read_text(encoding="utf-8", errors="replace")
    assert "Token indices sequence length is longer" not in log_text
    bm25s_debug = [ln for ln in log_text.splitlines() if "DEBUG bm25s" in ln]
    assert not bm25s_debug, bm25s_debug[:3]
