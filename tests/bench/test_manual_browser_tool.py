"""bench/manual_browser.py: its questions are the probe's, it documents its options, and what it
reads from the Ask tab (the answer without its citation chips, each citation's page) is what the
app's renderer writes (in chromium, on the rendered HTML; the whole run is the tool's, not the suite's)."""

from __future__ import annotations

import importlib.util
import json
import sys
from types import SimpleNamespace

import pytest

from backend.types import Answer, Citation, NodeKind
from tests.bench.conftest import REPO, run_tool
from tests.ui.helpers import BROWSER_MARKS, CHROMIUM, CHROMIUM_ARGS, sync_api
from ui.render import render_answer, render_citations


def _tool():
    spec = importlib.util.spec_from_file_location("manual_browser", REPO / "bench" / "manual_browser.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("manual_browser", module)  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


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


def _citation(n: int, page: int, text: str) -> Citation:
    return Citation(n=n, node_id=f"d:p{n}", doc="R-intro.pdf", page=page, bbox=None, kind=NodeKind.SENTENCE,
                    section_path=["An Introduction to R", "1.7 Getting help"], text=text)


def _in_browser(test):
    """The browser tests' marks: browser (out of the quick run), slow, and skipped without chromium or playwright."""
    for mark in (pytest.mark.browser, *BROWSER_MARKS):
        test = mark(test)
    return test


@_in_browser
def test_what_it_reads_is_what_the_ask_tab_renders():
    tool = _tool()
    cites = [_citation(1, 10, "the command is"), _citation(2, 11, "An alternative is")]
    answer = Answer(text="To get help on solve, the command is > help(solve)", abstained=False, citations=cites, confidence=0.6)
    html = (f'<div id="ask-answer">{render_answer(SimpleNamespace(answer=answer, llm_error=""))}</div>'
            f'<div id="ask-citations">{render_citations(cites, selected=1)}</div>')
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.set_content(html)
            shown = tool.read_answer(page)
            page.set_content(f'<div id="ask-answer">{render_answer(SimpleNamespace(answer=Answer(text="x", abstained=True), llm_error=""))}</div>')
            abstained = tool.read_answer(page)
        finally:
            browser.close()
    assert shown.text == "To get help on solve, the command is > help(solve)"  # no "[1] [2]" chips
    assert shown.citations == (("R-intro.pdf", 10), ("R-intro.pdf", 11)) and not shown.abstained
    assert abstained.abstained and abstained.text == "" and abstained.citations == ()
    q = next(q for q in tool.QUESTIONS if q.id == "r-help")
    assert tool.holds(q, shown) and not tool.holds(q, abstained)
