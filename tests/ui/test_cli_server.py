"""`python -m backend ask --server URL`: the CLI asks a running server's /ask API (the shared app
server of tests/ui/conftest.py) instead of loading models itself: the same answer as the API
gives, and no model, index or PDF library imported in the CLI's process.

Lives in tests/ui/ to share the one app server the browser tests start.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.ui.helpers import REPO

gradio_client = pytest.importorskip("gradio_client")

pytestmark = pytest.mark.slow

QUESTION = "How many trees did the programme plant?"
HEAVY = ("torch", "sentence_transformers", "onnxruntime", "faiss", "bm25s", "pymupdf", "backend.service")
# The CLI's main() in a fresh interpreter, then which heavy modules that process imported.
RUN_CLI = (
    "import json, sys\n"
    "from backend.__main__ import main\n"
    "rc = main(sys.argv[1:])\n"
    f"print('LOADED=' + json.dumps([m for m in {HEAVY!r} if m in sys.modules]), file=sys.stderr)\n"
    "sys.exit(rc)\n"
)


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    return subprocess.run([sys.executable, "-c", RUN_CLI, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)


def test_ask_through_a_running_server_loads_no_models(app_url):
    out = _cli("ask", "--server", app_url, "--method", "bm25", "--top-k", "3", "--json", QUESTION)
    assert out.returncode == 0, out.stderr[-2000:]
    reply = json.loads(out.stdout)
    assert reply["question"] == QUESTION and reply["method"] == "bm25" and len(reply["results"]) == 3
    loaded = json.loads(out.stderr.rsplit("LOADED=", 1)[1].splitlines()[0])
    assert loaded == []  # the server did the work: this process loaded none of them
    api = gradio_client.Client(app_url, verbose=False).predict(question=QUESTION, method="bm25", top_k=3, api_name="/ask")
    assert [r["node_id"] for r in reply["results"]] == [r["node_id"] for r in api["results"]]


def test_the_text_answer_and_the_servers_refusals_and_absence(app_url):
    text = _cli("ask", "--server", app_url, "--method", "bm25", QUESTION)
    assert text.returncode == 0, text.stderr[-2000:]
    assert "[1] " in text.stdout and "(bm25, " in text.stdout
    refused = _cli("ask", "--server", app_url, "--method", "no-such-method", QUESTION)
    assert refused.returncode == 2 and "refused the question" in refused.stderr and "no-such-method" in refused.stderr
    not_here = _cli("ask", "--server", app_url, "--budget", "500", QUESTION)
    assert not_here.returncode == 2 and "--budget cannot go with --server" in not_here.stderr
    down = _cli("ask", "--server", "http://127.0.0.1:9/", QUESTION)
    assert down.returncode == 2 and "Could not ask the Strata server" in down.stderr and "python app.py" in down.stderr
