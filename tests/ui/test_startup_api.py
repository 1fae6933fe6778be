"""The first minute of a real server (`python app.py` on a first start, the sample not prepared):
an API upload is accepted and answered at once, before the sample is ready (its session does not
need it); a question over the sample waits for it and is answered; no call fails because the
server is starting; and nothing in the server's log names a server folder or holds a traceback.

The encoder's ONNX export is taken from the test session's cache folder (STRATA_CACHE_DIR), so
the start measures the sample preparation, not the export.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pymupdf
import pytest

from backend.config import cache_folder
from tests.ui.helpers import FILLER, REPO, SERVER_START_TIMEOUT_S, _free_port, _log_tail

gradio_client = pytest.importorskip("gradio_client")

pytestmark = pytest.mark.slow

READY_LINE = "ready: encoders and sample corpus loaded"


def _pdf(path: Path, fact: str) -> Path:
    with pymupdf.open() as pdf:
        pdf.new_page().insert_textbox(pymupdf.Rect(72, 90, 520, 400), fact + " " + FILLER, fontsize=10.5)
        pdf.save(path)
    return path


@pytest.fixture(scope="module")
def cold_server(tmp_path_factory, service):
    service.encoder.encode(["export the ONNX graph into the session's cache folder, once"])
    root = tmp_path_factory.mktemp("cold_app")
    port = _free_port()
    env = dict(
        os.environ, GRADIO_SERVER_PORT=str(port), GRADIO_SERVER_NAME="127.0.0.1", GRADIO_ANALYTICS_ENABLED="False",
        STRATA_WORKSPACE_ROOT=str(root / "workspaces"), STRATA_CACHE_DIR=str(cache_folder(service.settings)),
        GRADIO_TEMP_DIR=str(root / "gradio_tmp"), PYTHONUNBUFFERED="1",
    )
    log_path = root / "app.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen([sys.executable, "app.py"], cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}/"
        try:
            deadline = time.monotonic() + SERVER_START_TIMEOUT_S
            while True:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"app.py did not answer on {url}:\n{_log_tail(log_path)}")
                try:
                    with urllib.request.urlopen(url, timeout=2) as resp:
                        if resp.status == 200:
                            break
                except (urllib.error.URLError, OSError):
                    time.sleep(0.25)
            yield url, root, log_path
        finally:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=30)


def test_an_upload_at_the_first_page_is_answered_before_the_sample_is_ready(cold_server, tmp_path):
    url, _root, log_path = cold_server
    client = gradio_client.Client(url, verbose=False)
    pdf = _pdf(tmp_path / "okapi_notes.pdf", "The okapi count at the Ituri station was 4,211 this season.")
    report = client.predict(files=[gradio_client.handle_file(str(pdf))], api_name="/ingest")
    assert report["ingested"] == 1, report
    assert READY_LINE not in log_path.read_text(encoding="utf-8", errors="replace"), "the upload waited for the sample"
    mine = client.predict(question="okapi count Ituri", method="bm25", top_k=5, api_name="/ask")
    assert "okapi_notes.pdf" in {r["doc"] for r in mine["results"]}


def test_a_question_over_the_sample_waits_for_it_and_is_answered(cold_server):
    url, _root, log_path = cold_server
    reader = gradio_client.Client(url, verbose=False)
    reply = reader.predict(question="How many trees were planted?", method="bm25", top_k=3, api_name="/ask")
    assert reply["results"], reply
    assert READY_LINE in log_path.read_text(encoding="utf-8", errors="replace")


def test_the_log_of_the_start_names_no_server_folder(cold_server):
    _url, root, log_path = cold_server
    text = log_path.read_text(encoding="utf-8", errors="replace")
    assert "Traceback" not in text, _log_tail(log_path)
    for folder in (str(root), str(REPO), sys.prefix):
        assert folder not in text, f"{folder} in the app log:\n{_log_tail(log_path)}"
