"""What a new user hit on a real manual (issue 48 items 4, 5, 7), in a real browser:

- the library survives a reload (the browser keeps its session's token), another browser never
  sees it, and a session that idled out says so in plain words after the reload;
- once the session has uploads, questions go to them by default, the sample corpus is one click
  away, and the example questions come from the uploads' headings;
- a failed file's progress bar is red, an unchanged file is reported as unchanged, and a dead or
  garbage LLM server shows as an error on Settings' Apply and on the answer (real sockets).

Uses the shared app server of conftest.py, and for the idle-out one of its own with a short idle
time that starts from a copy of the shared server's prepared sample workspace.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pymupdf
import pytest

from tests.http_servers import PlainServer, dead_url
from tests.ui.helpers import (
    BROWSER_MARKS,
    FILLER,
    AppStartError,
    _open_session,
    _open_tab,
    _select,
    _shot,
    result_docs,
    call_and_wait,
    ingest_files,
    running_app,
    sync_api,
)

pytestmark = BROWSER_MARKS

MANUAL = "pump_manual.pdf"
BROKEN = "broken_scan.pdf"
SAMPLE_QUESTION = "How many trees did the programme plant?"
IDLE_MINUTES = 0.5


@pytest.fixture(scope="module")
def uploads(tmp_path_factory) -> tuple[Path, Path]:
    """A one-page manual with numbered headings, and a '.pdf' that is not a PDF."""
    folder = tmp_path_factory.mktemp("library_uploads")
    manual = folder / MANUAL
    with pymupdf.open() as pdf:
        page = pdf.new_page()
        page.insert_text((72, 80), "Garden Pump GP-7 Manual", fontsize=22, fontname="hebo")
        y = 130
        for heading, fact in (("1 Priming the pump", "Fill the priming chamber with 0.4 litres of water."),
                              ("2 Winter storage", "Drain the pump before the first frost.")):
            page.insert_text((72, y), heading, fontsize=15, fontname="hebo")
            page.insert_textbox(pymupdf.Rect(72, y + 12, 540, y + 140), fact + " " + FILLER * 2, fontsize=10)
            y += 170
        pdf.save(manual)
    broken = folder / BROKEN
    broken.write_text("This is a scanner's error page, not a PDF.\n")
    return manual, broken


def _ask(page, question: str) -> None:
    facts = page.locator("#ask-facts .st-facts")
    old_run = facts.get_attribute("data-run") if facts.count() else ""
    page.locator("#ask-question textarea").fill(question)
    call_and_wait(page, page.locator("#ask-button").click, page.locator(f'#ask-facts .st-facts:not([data-run="{old_run}"])'), "Ask")


def test_a_reload_keeps_the_uploads_which_become_the_default_scope(browser, app_url, uploads):
    manual, broken = uploads
    context, page = _open_session(browser, app_url)
    other_context = None
    try:
        note = page.locator("#session-note")
        sync_api.expect(note).to_contain_text("reload the page and they are still here")
        sync_api.expect(note).to_contain_text("minutes without use")

        ingest_files(page, [manual, broken])
        # Item 7: the failed file's bar is red, the ingested one's is full and blue.
        failed_bar = page.locator(f'#ingest-progress tr[data-file="{BROKEN}"] .st-bar-fill')
        sync_api.expect(failed_bar).to_have_css("background-color", "rgb(220, 38, 38)")
        sync_api.expect(page.locator(f'#ingest-progress tr[data-file="{MANUAL}"] .st-bar-fill')).to_have_css(
            "background-color", "rgb(37, 99, 235)")
        sync_api.expect(page.locator(f'#ingest-report .st-card[data-file="{BROKEN}"]')).to_have_attribute("data-status", "failed")
        _shot(page, "library_failed_bar_red")

        # Item 4: a reload finds the same documents.
        page.reload()
        sync_api.expect(page.locator("#documents-table")).to_contain_text(MANUAL)
        sync_api.expect(page.locator("#documents-table")).to_contain_text("policy_brief.pdf")
        _shot(page, "library_after_reload")

        # Another browser never sees them.
        other_context, other = _open_session(browser, app_url)
        sync_api.expect(other.locator("#documents-table")).not_to_contain_text(MANUAL)
        _open_tab(other, "Ask")
        sync_api.expect(other.locator("#ask-scope")).to_be_hidden()
        sync_api.expect(other.locator("#ask-examples")).to_contain_text(SAMPLE_QUESTION)

        # Item 7: the same file again is unchanged, not ingested.
        ingest_files(page, [manual])
        sync_api.expect(page.locator(f'#ingest-report .st-card[data-file="{MANUAL}"]')).to_have_attribute("data-status", "unchanged")
        sync_api.expect(page.locator("#ingest-report .st-report-head")).to_have_text("0 of 1 file(s) ingested, 1 unchanged")

        # Item 5: questions go to the uploads by default; examples come from their headings.
        _open_tab(page, "Ask")
        scope = page.locator("#ask-scope")
        sync_api.expect(scope).to_be_visible()
        sync_api.expect(scope.get_by_label("Your documents")).to_be_checked()
        examples = page.locator("#ask-examples")
        sync_api.expect(examples).to_contain_text("Questions about your documents")
        sync_api.expect(examples).to_contain_text("priming the pump")
        sync_api.expect(examples).not_to_contain_text(SAMPLE_QUESTION)
        example = "What does pump_manual.pdf say about priming the pump?"
        examples.get_by_text("priming the pump").first.click()
        sync_api.expect(page.locator("#ask-question textarea")).to_have_value(example)
        _shot(page, "ask_scope_own_documents")
        _select(page, "ask-method", "bm25")
        _ask(page, example + " How much water does the chamber take, and how many trees were planted?")
        assert result_docs(page) == {MANUAL}  # the sample's words in the question do not pull the sample in

        # The sample corpus is one click away.
        scope.get_by_label("The sample corpus").click()
        _ask(page, SAMPLE_QUESTION)
        docs = result_docs(page)
        assert MANUAL not in docs and "policy_brief.pdf" in docs, docs
        assert page.page_errors == []
    finally:
        if other_context is not None:
            other_context.close()
        context.close()


def test_a_dead_or_garbage_llm_server_shows_as_an_error(browser, app_url):
    garbage = PlainServer(200, "<html><body>It works! This is not an API.</body></html>")
    context, page = _open_session(browser, app_url)
    try:
        _open_tab(page, "Settings")
        page.locator("#settings-backend").get_by_text("OpenAI-compatible server").click()
        url_box = page.locator("#settings-base-url textarea, #settings-base-url input").first
        url_box.fill(dead_url())
        page.locator("#settings-model textarea, #settings-model input").first.fill("test-model")
        page.locator("#settings-apply").click()
        status = page.locator("#settings-status")
        sync_api.expect(status.locator(".st-error")).to_contain_text("Applied, but the LLM server does not work: Cannot reach")

        url_box.fill(garbage.base_url)
        page.locator("#settings-apply").click()
        sync_api.expect(status.locator(".st-error")).to_contain_text("not as an OpenAI-compatible server")
        sync_api.expect(status.locator('[data-field="backend"]')).to_contain_text("openai: model test-model")
        _shot(page, "settings_llm_check_failed")

        _open_tab(page, "Ask")
        _select(page, "ask-method", "bm25")
        _ask(page, SAMPLE_QUESTION)
        error = page.locator("#ask-answer #ask-llm-error")
        sync_api.expect(error).to_be_visible()  # on the answer, not inside the collapsed replay
        sync_api.expect(error).to_contain_text("openai:test-model failed, so the rules backend answered in its place")
        sync_api.expect(error).to_contain_text("It works!")
        sync_api.expect(page.locator("#ask-answer .st-answer-label")).to_contain_text("in place of the failed LLM")
        _shot(page, "ask_llm_error")
        assert page.page_errors == []
    finally:
        context.close()
        garbage.close()


@pytest.fixture(scope="module")
def short_idle_app(app_server, tmp_path_factory):
    """An app whose sessions idle out after IDLE_MINUTES, started on a copy of the shared server's sample workspace."""
    shared_root = app_server[1].parent / "workspaces"
    root = tmp_path_factory.mktemp("short_idle_app")
    shutil.copytree(shared_root / "sample", root / "workspaces" / "sample")
    try:
        with running_app(root, STRATA_SESSIONS__IDLE_MINUTES=str(IDLE_MINUTES)) as (url, _log):
            yield url
    except AppStartError as exc:
        pytest.fail(str(exc))


def test_a_session_that_idled_out_says_so_after_a_reload(browser, short_idle_app, uploads):
    manual, _ = uploads
    context, page = _open_session(browser, short_idle_app)
    try:
        sync_api.expect(page.locator("#session-note")).to_contain_text(f"after {IDLE_MINUTES:g} minutes without use")
        ingest_files(page, [manual])
        page.reload()
        sync_api.expect(page.locator("#documents-table")).to_contain_text(MANUAL)  # within the idle time: still here
        time.sleep(IDLE_MINUTES * 60 + 10)
        page.reload()
        sync_api.expect(page.locator("#session-note .st-error")).to_contain_text(
            f"Your earlier session sat idle for more than {IDLE_MINUTES:g} minutes, so the files you uploaded were removed")
        sync_api.expect(page.locator("#documents-table")).to_contain_text("policy_brief.pdf")
        sync_api.expect(page.locator("#documents-table")).not_to_contain_text(MANUAL)
        _shot(page, "library_idled_out")
        page.reload()  # said once
        sync_api.expect(page.locator("#session-note")).to_contain_text("reload the page and they are still here")
        sync_api.expect(page.locator("#session-note .st-error")).to_have_count(0)
        assert page.page_errors == []
    finally:
        context.close()
