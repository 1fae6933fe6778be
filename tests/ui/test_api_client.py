"""The named API endpoints (`/ingest`, `/ask`) used from `gradio_client` against the running app
(the `app_url` session fixture of conftest.py), as the README shows: a client ingests a PDF and
asks about it; another client does not see that PDF; a bad call comes back as a message; the
README's example runs as written.

Lives in tests/ui/ to share the one app server the browser tests start.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import pymupdf

from tests.ui.helpers import FILLER, REPO

gradio_client = pytest.importorskip("gradio_client")

pytestmark = pytest.mark.slow

FACT = "The Zorblax beacon on Harbour Hill glows teal every night."
QUESTION = "What colour does the Zorblax beacon glow?"


def _probe_pdf(path: Path) -> Path:
    with pymupdf.open() as pdf:
        page = pdf.new_page()
        page.insert_text((72, 90), "Zorblax Beacon Notes", fontsize=20, fontname="hebo")
        page.insert_text((72, 130), "1 The beacon", fontsize=13, fontname="hebo")
        page.insert_textbox(pymupdf.Rect(72, 145, 520, 400), FACT + " " + FILLER * 2, fontsize=10.5)
        pdf.save(path)
    return path


def test_the_named_endpoints_are_listed(app_url):
    client = gradio_client.Client(app_url, verbose=False)
    endpoints = client.view_api(return_format="dict", print_info=False)["named_endpoints"]
    assert {"/ingest", "/ask"} <= set(endpoints)
    assert [p["parameter_name"] for p in endpoints["/ask"]["parameters"]] == ["question", "method", "top_k", "docs", "stages"]
    assert [p["parameter_name"] for p in endpoints["/ingest"]["parameters"]] == ["files"]


def test_ingest_then_ask_through_gradio_client(app_url, tmp_path):
    pdf = _probe_pdf(tmp_path / "zorblax_notes.pdf")
    client = gradio_client.Client(app_url, verbose=False)

    report = client.predict(files=[gradio_client.handle_file(str(pdf))], api_name="/ingest")
    assert report["ingested"] == 1 and report["failed"] == 0
    assert report["files"][0]["file_name"] == "zorblax_notes.pdf" and report["files"][0]["status"] == "ingested"

    reply = client.predict(question=QUESTION, method="bm25", top_k=3, api_name="/ask")
    assert reply["question"] == QUESTION and reply["method"] == "bm25"
    assert reply["results"][0]["doc"] == "zorblax_notes.pdf" and reply["results"][0]["page"] == 1
    assert "teal" in reply["results"][0]["text"]
    assert reply["timings_ms"]["total"] > 0 and reply["llm_backend"] == "rules"
    assert set(reply["answer"]) == {"text", "abstained", "citations"}
    # One wire format with the CLI: a citation carries its node id and its place on the page.
    cited = reply["answer"]["citations"]
    assert cited and all(set(c) == {"n", "node_id", "doc", "page", "bbox", "kind", "section_path", "text"} for c in cited)
    assert (cited[0]["doc"], cited[0]["page"]) == ("zorblax_notes.pdf", 1) and "teal" in cited[0]["text"]
    assert cited[0]["bbox"] and len(cited[0]["bbox"]) == 4 and cited[0]["node_id"].startswith(reply["results"][0]["node_id"])

    # The sample corpus is there too (a client's workspace starts as a copy of it).
    sample = client.predict(question="How many trees did the programme plant?", method="bm25", top_k=5, api_name="/ask")
    assert any(r["doc"] == "policy_brief.pdf" for r in sample["results"])

    # Asked of the sample's policy brief only, the same question gets no result from the new PDF;
    # a name the workspace does not hold is refused with a message that names it.
    scoped = client.predict(question=QUESTION, method="strata", top_k=5, docs="policy_brief.pdf", api_name="/ask")
    assert scoped["results"] and {r["doc"] for r in scoped["results"]} == {"policy_brief.pdf"}
    both = client.predict(question=QUESTION, method="bm25", top_k=5, docs='["zorblax_notes.pdf", "policy_brief.pdf"]',
                          api_name="/ask")
    assert both["results"][0]["doc"] == "zorblax_notes.pdf"
    with pytest.raises(Exception) as err:
        client.predict(question=QUESTION, method="bm25", top_k=3, docs="no_such_report.pdf", api_name="/ask")
    assert "Not in this workspace: 'no_such_report.pdf'" in str(err.value) and "Traceback" not in str(err.value)

    # Another client has its own workspace: the PDF above is not in it.
    other = gradio_client.Client(app_url, verbose=False)
    theirs = other.predict(question=QUESTION, method="bm25", top_k=5, api_name="/ask")
    assert all(r["doc"] != "zorblax_notes.pdf" for r in theirs["results"])


def test_a_bad_call_comes_back_as_a_message(app_url):
    client = gradio_client.Client(app_url, verbose=False)
    with pytest.raises(Exception) as err:
        client.predict(question="   ", method="bm25", top_k=3, api_name="/ask")
    assert "The question is empty" in str(err.value)
    with pytest.raises(Exception) as err:
        client.predict(question=QUESTION, method="no-such-method", top_k=3, api_name="/ask")
    assert "no-such-method" in str(err.value) and "Traceback" not in str(err.value)


def test_out_of_bounds_input_is_refused_with_the_services_message(app_url):
    client = gradio_client.Client(app_url, verbose=False)
    cases = (
        ({"question": "Why " + "x" * 20_000, "top_k": 3}, "20,004 characters long; at most 2,000 are accepted"),
        ({"question": QUESTION, "top_k": 0}, "top_k must be a whole number between 1 and 100; got 0"),
        ({"question": QUESTION, "top_k": 500}, "between 1 and 100; got 500"),
    )
    for kwargs, expected in cases:
        with pytest.raises(Exception) as err:
            client.predict(method="bm25", api_name="/ask", **kwargs)
        assert expected in str(err.value) and "Traceback" not in str(err.value)


def test_the_readme_example_runs_as_written(app_url):
    section = (REPO / "README.md").read_text(encoding="utf-8").split("## API (gradio_client)", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    assert 'Client("http://127.0.0.1:7860/")' in code
    proc = subprocess.run(
        [sys.executable, "-c", code.replace("http://127.0.0.1:7860/", app_url)], cwd=REPO, capture_output=True, text=True,
        timeout=300, env=dict(os.environ, HF_HUB_OFFLINE="1"),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    status, answer_line = proc.stdout.strip().splitlines()[-2:]
    assert status == "unchanged"  # the sample brief is already in a new client's workspace
    assert "4,820" in answer_line  # the answer, then the (doc, page) of each result
    assert any(f"('{name}', " in answer_line for name in ("cool_streets_report.pdf", "policy_brief.pdf"))
