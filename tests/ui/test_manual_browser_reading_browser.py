"""What bench/manual_browser.py reads from the Ask tab (the answer without its citation chips, each
citation's document and page, an abstention) is what the app's renderer writes: the rendered HTML
of ui/render.py, read in the shared chromium of conftest.py."""

from __future__ import annotations

from types import SimpleNamespace

from backend.types import Answer, Citation, NodeKind
from tests.bench.conftest import load_tool
from tests.ui.helpers import BROWSER_MARKS
from ui.render import render_answer, render_citations

pytestmark = BROWSER_MARKS


def _tool():
    return load_tool("manual_browser")


def _citation(n: int, page: int, text: str) -> Citation:
    return Citation(n=n, node_id=f"d:p{n}", doc="R-intro.pdf", page=page, bbox=None, kind=NodeKind.SENTENCE,
                    section_path=["An Introduction to R", "1.7 Getting help"], text=text)


def _rendered(answer: Answer) -> str:
    return (f'<div id="ask-answer">{render_answer(SimpleNamespace(answer=answer, llm_error=""))}</div>'
            f'<div id="ask-citations">{render_citations(answer.citations, selected=1)}</div>')


def test_what_the_tool_reads_is_what_the_ask_tab_renders(browser):
    tool = _tool()
    cites = [_citation(1, 10, "the command is"), _citation(2, 11, "An alternative is")]
    answer = Answer(text="To get help on solve, the command is > help(solve)", abstained=False, citations=cites, confidence=0.6)
    page = browser.new_page()
    try:
        page.set_content(_rendered(answer))
        shown = tool.read_answer(page)
        page.set_content(_rendered(Answer(text="not enough evidence", abstained=True)))
        abstained = tool.read_answer(page)
    finally:
        page.close()
    assert shown.text == "To get help on solve, the command is > help(solve)"  # no "[1] [2]" chips
    assert shown.citations == (("R-intro.pdf", 10), ("R-intro.pdf", 11)) and not shown.abstained
    assert abstained.abstained and abstained.text == "" and abstained.citations == ()
    q = next(q for q in tool.QUESTIONS if q.id == "r-help")
    assert tool.holds(q, shown) and not tool.holds(q, abstained)
