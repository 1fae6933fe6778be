"""The pure renderers of ui/render.py: PDF text is escaped everywhere, traces are drawn by step
kind (unknown kinds still show), and the ingest progress board folds events into rows."""

from __future__ import annotations


from backend.types import (
    Answer,
    AskResult,
    Block,
    BlockKind,
    Citation,
    ClusterTasks,
    EvidencePack,
    FileReport,
    IngestReport,
    NodeKind,
    PackedUnit,
    ProgressEvent,
    ResultItem,
    Section,
    Trace,
)
from ui import render
from ui.library import ProgressBoard

EVIL = '<script>window.__xss=1</script><img src=x onerror="window.__xss=2">'


def _assert_escaped(html: str) -> None:
    assert "<script" not in html and "<img" not in html
    assert "&lt;script&gt;" in html


def _result(abstained: bool = False) -> AskResult:
    cite = Citation(
        n=1, node_id="d:p1.0", doc=f"{EVIL}.pdf", page=2, bbox=(1, 2, 3, 4), kind=NodeKind.SENTENCE,
        section_path=["Title", EVIL], text=EVIL,
    )
    return AskResult(
        question="q", method="hikey",
        results=[ResultItem(rank=1, node_id="d:p1", doc="a.pdf", page=2, bbox=None, kind=NodeKind.PARAGRAPH,
                            section_path=["Title", "1 Intro"], text=EVIL, score=0.5)],
        pack=EvidencePack(budget=100, tokens=40, units=[PackedUnit(node_id="d:p1", role="anchor", tokens=40, path=[EVIL])], text=EVIL),
        answer=Answer(text=EVIL, abstained=abstained, citations=[] if abstained else [cite], reason="r"),
        trace=Trace(method="hikey"), timings_ms={"total": 1.0}, llm_backend="rules",
    )


def test_pdf_text_is_escaped_in_every_renderer():
    section = Section(id="d:s1", doc="d", title=EVIL, level=1, parent=None, path=[EVIL], page=1, bbox=None, confidence=0.9, source="font")
    block = Block(page=1, bbox=(0, 0, 1, 1), kind=BlockKind.PARAGRAPH, text=EVIL, order=0)
    report = IngestReport(workspace="w", files=[
        FileReport(file_name=EVIL, status="failed", reason=EVIL),
        FileReport(file_name="ok.pdf", status="ingested", title=EVIL, pages=1, warnings=[EVIL]),
    ])
    result = _result()
    pieces = [
        render.render_section_tree([section]),
        render.render_blocks([block], {}),
        render.render_report(report),
        render.render_answer(result),
        render.render_citations(result.answer.citations),
        render.render_progress([render.FileProgress(file_name=EVIL, stage="extract", done=1, total=2)], 1.0, True),
    ]
    for html in pieces:
        _assert_escaped(html)


def test_abstention_is_marked():
    html = render.render_answer(_result(abstained=True))
    assert 'data-abstained="true"' in html and "Not enough evidence" in html


def test_progress_board_follows_events():
    board = ProgressBoard(["a.pdf", "b.pdf"])
    board.apply(ProgressEvent(stage="open", doc="a.pdf", done=0, total=2))
    board.apply(ProgressEvent(stage="extract", doc="a.pdf", done=3, total=5))
    assert (board.rows[0].stage, board.rows[0].done, board.rows[0].total) == ("extract", 3, 5)
    board.apply(ProgressEvent(stage="done", doc="a.pdf", done=1, total=2, message="ingested"))
    html = render.render_progress(board.rows, 2.0, True)
    assert "1 of 2 file(s) done" in html and 'data-stage="done"' in html and 'data-stage="waiting"' in html




def test_progress_board_shows_the_cluster_tasks_and_nodes_of_a_cluster_ingest():
    board = ProgressBoard(["a.pdf"])
    board.apply(ProgressEvent(stage="open", doc="a.pdf", done=0, total=1))
    assert board.cluster is None and "On the cluster" not in render.render_progress(board.rows, 1.0, True, board.cluster)
    tasks = ClusterTasks(running=3, done=5, failed=1, nodes=2)
    board.apply(ProgressEvent(stage="encode", doc="a.pdf", done=0, total=1, message="parsed; encoding", cluster=tasks))
    html = render.render_progress(board.rows, 2.0, True, board.cluster)
    assert "On the cluster: 3 tasks running, 5 done, 1 failed; 2 nodes in use" in html


def test_a_code_block_renders_as_escaped_preformatted_code():
    code = "if (a < b) {\n    x = \"<script>\";\n}"
    block = Block(page=3, bbox=(72, 100, 300, 140), kind=BlockKind.CODE, text=code, order=4)
    for html in (render.render_blocks([block], {}), render.render_unit(block, 1, "#475569")):
        assert '<pre class="st-code">' in html and "<script>" not in html
        assert "if (a &lt; b) {\n    x = &quot;&lt;script&gt;&quot;;\n}" in html  # line breaks and indentation kept
    cited = Citation(n=1, node_id="d1:c4", doc="a.pdf", page=3, bbox=None, kind=NodeKind.CODE, section_path=[], text=code)
    assert '<pre class="st-code">' in render.render_citations([cited])
