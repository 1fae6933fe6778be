"""Sessions against the real server (`python app.py` started here with a workspace root this test
can look into): two `gradio_client` clients do not see each other's uploads, a client that only
asks creates no workspace folder, and stopping the server removes the session workspaces.

The server starts warm: the sample workspace of the test session is copied in with the marker
of a prepared sample, so this also checks that a prepared sample is reused, not rebuilt.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from backend.service import SAMPLE_MARKER
import pymupdf

from tests.ui.helpers import FILLER, REPO, SERVER_START_TIMEOUT_S, _free_port, _log_tail

gradio_client = pytest.importorskip("gradio_client")

pytestmark = pytest.mark.slow

READY_LINE = "ready: encoders and sample corpus loaded"  # app.py logs it once the sample is loaded


def _pdf(path: Path, fact: str) -> Path:
    with pymupdf.open() as pdf:
        page = pdf.new_page()
        page.insert_text((72, 90), "Field Notes", fontsize=20, fontname="hebo")
        page.insert_textbox(pymupdf.Rect(72, 120, 520, 400), fact + " " + FILLER, fontsize=10.5)
        pdf.save(path)
    return path


def _wait_until_served(proc: subprocess.Popen, url: str, log_path: Path) -> None:
    """Until the page is served, then until the sample is checked and loaded (behind the page)."""
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    served = False
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"app.py exited with code {proc.returncode}:\n{_log_tail(log_path)}")
        if not served:
            try:
                with urllib.request.urlopen(url, timeout=2) as resp:
                    served = resp.status == 200
            except (urllib.error.URLError, OSError):
                pass
        elif READY_LINE in log_path.read_text(encoding="utf-8", errors="replace"):
            return
        time.sleep(0.5)
    pytest.fail(f"app.py did not {'get ready' if served else 'answer'} on {url}:\n{_log_tail(log_path)}")


@pytest.fixture(scope="module")
def server(tmp_path_factory, service, sample_workspace):
    root = tmp_path_factory.mktemp("sessions_app")
    workspaces = root / "workspaces"
    shutil.copytree(sample_workspace, workspaces / "sample")
    (workspaces / "sample" / SAMPLE_MARKER).write_text(service.sample_key(), encoding="utf-8")
    port = _free_port()
    env = dict(
        os.environ, GRADIO_SERVER_PORT=str(port), GRADIO_SERVER_NAME="127.0.0.1", GRADIO_ANALYTICS_ENABLED="False",
        STRATA_WORKSPACE_ROOT=str(workspaces), GRADIO_TEMP_DIR=str(root / "gradio_tmp"), PYTHONUNBUFFERED="1",
    )
    log_path = root / "app.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen([sys.executable, "app.py"], cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}/"
        try:
            _wait_until_served(proc, url, log_path)
            yield url, workspaces, proc, log_path
        finally:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=30)


def _sessions(workspaces: Path) -> list[Path]:
    folder = workspaces / "sessions"
    return sorted(p for p in folder.iterdir() if p.is_dir()) if folder.exists() else []


def test_the_prepared_sample_is_reused(server):
    _url, _workspaces, _proc, log_path = server
    log = log_path.read_text(encoding="utf-8", errors="replace")
    assert "reusing the prepared sample workspace" in log
    assert "must be prepared" not in log


def test_a_client_that_only_asks_creates_no_workspace(server):
    url, workspaces, _proc, _log = server
    before = _sessions(workspaces)
    reader = gradio_client.Client(url, verbose=False)
    reply = reader.predict(question="How many trees were planted?", method="bm25", top_k=3, api_name="/ask")
    assert reply["results"], "a reader should get answers from the shared sample"
    assert _sessions(workspaces) == before


def test_two_clients_do_not_see_each_others_uploads(server, tmp_path):
    url, workspaces, _proc, _log = server
    a, b = gradio_client.Client(url, verbose=False), gradio_client.Client(url, verbose=False)
    pdf_a = _pdf(tmp_path / "quokka_notes.pdf", "The quokka census on Rottnest counted 11,432 animals.")
    pdf_b = _pdf(tmp_path / "narwhal_notes.pdf", "The narwhal survey in Baffin Bay logged 3,977 tusks.")
    assert a.predict(files=[gradio_client.handle_file(str(pdf_a))], api_name="/ingest")["ingested"] == 1
    assert b.predict(files=[gradio_client.handle_file(str(pdf_b))], api_name="/ingest")["ingested"] == 1
    assert len(_sessions(workspaces)) >= 2

    def docs_seen(client, question: str) -> set[str]:
        reply = client.predict(question=question, method="bm25", top_k=10, api_name="/ask")
        return {r["doc"] for r in reply["results"]}

    assert "quokka_notes.pdf" in docs_seen(a, "quokka census Rottnest")
    assert "narwhal_notes.pdf" not in docs_seen(a, "narwhal survey Baffin Bay tusks")
    assert "narwhal_notes.pdf" in docs_seen(b, "narwhal survey Baffin Bay tusks")
    assert "quokka_notes.pdf" not in docs_seen(b, "quokka census Rottnest")
    fresh = gradio_client.Client(url, verbose=False)
    assert not {"quokka_notes.pdf", "narwhal_notes.pdf"} & docs_seen(fresh, "quokka narwhal census survey")
    assert "quokka_notes.pdf" not in {p.name for p in (workspaces / "sample" / "files").iterdir()}


def test_stopping_the_server_removes_session_workspaces(server):
    _url, workspaces, proc, log_path = server
    assert _sessions(workspaces), "the upload test should have left session workspaces"
    proc.terminate()
    assert proc.wait(timeout=30) is not None
    assert _sessions(workspaces) == [], _log_tail(log_path)
    assert (workspaces / "sample" / "strata.sqlite").exists()
