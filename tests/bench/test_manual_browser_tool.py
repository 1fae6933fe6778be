"""bench/manual_browser.py: its questions are the probe's and it documents its options. What it
reads from the Ask tab is checked in chromium by tests/ui/test_manual_browser_reading_browser.py;
the whole run is the tool's, not the suite's (the ingest of two manuals takes minutes)."""

from __future__ import annotations

import json

from tests.bench.conftest import REPO, load_tool, run_tool


def _tool():
    return load_tool("manual_browser")


def test_the_questions_are_the_probes_with_their_gold_pages():
    tool = _tool()
    probe = {r["id"]: r for r in map(json.loads, (REPO / "bench" / "probes" / "manuals.jsonl").read_text().splitlines()) if r}
    assert len(tool.QUESTIONS) == 4 and {q.method for q in tool.QUESTIONS} == {"hikey", "fif", "strata"}
    for q in tool.QUESTIONS:
        row = probe[q.id]
        assert (q.manual, q.question, list(q.pages)) == (row["manual"], row["question"], row["pages"])
        assert q.answers


def test_the_tool_documents_its_options():
    done = run_tool("manual_browser", "--help", timeout_s=120)
    assert done.returncode == 0, done.stderr
    assert "--out" in done.stdout and "--pdfs" in done.stdout
