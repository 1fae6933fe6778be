"""Failures the user can see (issue 48 item 7), in the pure renderers and the API payload: a
failed file's progress bar is red (not full and blue), an answer the rules gave in place of a
failed LLM opens with an error box, an unchanged file is not counted as ingested, and Settings'
Apply says when the server it was given does not answer (a real closed port)."""

from __future__ import annotations

import re
import socket

from backend.config import Settings
from backend.types import Answer, AskResult, EvidencePack, FileReport, IngestReport, ProgressEvent, Trace
from ui import render
from ui import settings as settings_tab
from ui.api import ingest_payload
from ui.library import ProgressBoard


def _fill_classes(html: str, file_name: str) -> list[str]:
    row = re.search(rf'<tr data-file="{re.escape(file_name)}".*?</tr>', html).group(0)
    return re.findall(r'class="(st-bar-fill[^"]*)"', row)


def test_a_failed_files_bar_is_red_and_a_done_files_is_blue():
    board = ProgressBoard(["good.pdf", "broken.pdf"])
    board.apply(ProgressEvent(stage="extract", doc="broken.pdf", done=2, total=9))
    board.apply(ProgressEvent(stage="done", doc="good.pdf", done=1, total=2, message="ingested"))
    board.apply(ProgressEvent(stage="failed", doc="broken.pdf", done=2, total=2, message="not a PDF"))
    html = render.render_progress(board.rows, 3.0, False)
    assert _fill_classes(html, "broken.pdf") == ["st-bar-fill st-bar-failed"]
    assert _fill_classes(html, "good.pdf") == ["st-bar-fill"]


def _result(llm_error: str | None) -> AskResult:
    return AskResult(
        question="q", method="bm25", results=[], pack=EvidencePack(budget=100, tokens=0, units=[], text=""),
        answer=Answer(text="1200 trees", abstained=False, reason="r"), trace=Trace(method="bm25"), timings_ms={"total": 1.0},
        llm_backend="openai:m", llm_error=llm_error,
    )


def test_an_answer_after_an_llm_failure_opens_with_an_error_box():
    html = render.render_answer(_result("The LLM backend openai:m failed, so the rules backend answered in its place: <boom>."))
    assert html.startswith('<div class="st-error st-llm-error" role="alert"')
    assert "&lt;boom&gt;" in html and "Answer by the rules backend, in place of the failed LLM" in html
    fine = render.render_answer(_result(None))
    assert "st-error" not in fine and 'data-llm-failed="false"' in fine


def test_an_unchanged_file_is_not_counted_as_ingested():
    report = IngestReport(workspace="w", files=[
        FileReport(file_name="a.pdf", status="unchanged", doc_id="a", pages=3),
        FileReport(file_name="b.pdf", status="ingested", doc_id="b", pages=2),
        FileReport(file_name="c.pdf", status="replaced", doc_id="c", pages=2),
        FileReport(file_name="d.pdf", status="failed", reason="not a PDF"),
    ])
    payload = ingest_payload(report)
    assert (payload["ingested"], payload["unchanged"], payload["failed"]) == (2, 1, 1)
    only_unchanged = ingest_payload(IngestReport(workspace="w", files=[FileReport(file_name="a.pdf", status="unchanged")]))
    assert (only_unchanged["ingested"], only_unchanged["unchanged"]) == (0, 1)
    assert "2 of 4 file(s) ingested, 1 unchanged, 1 failed" in render.render_report(report)


def test_apply_checks_the_server_and_says_it_is_dead():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    server = Settings(load_sample=False)
    current = settings_tab.default_session_settings(server)
    new, *_boxes, status = settings_tab.on_apply(current, server, "openai", url, "", False, "m", "", False, 5, 1024, 4)
    assert new.llm_backend == "openai" and new.llm.base_url == url  # applied: the server may be started later
    assert '<div class="st-error" role="alert">Applied, but the LLM server does not work: Cannot reach' in status
    rules, *_boxes, status = settings_tab.on_apply(current, server, "rules", "", "", False, "", "", False, 5, 1024, 4)
    assert "st-error" not in status  # no server to check
