"""The web app in a real browser: `python app.py` as a subprocess (its own workspace root in a
tmp dir, so the sample workspace is built from scratch), driven with Playwright + Debian chromium.

Covers: upload + live ingest progress + report, the parse view (page image, section tree, jump to
a section), asking with citations shown on the page, PDF text that carries HTML/script payloads
being shown escaped, and uploads of one browser session staying invisible to another.
Screenshots of each step go to test-artifacts/ (git-ignored) for a human to look at.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import pymupdf

from tests.ui.helpers import (
    BROWSER_MARKS,
    BENCH_CORPUS,
    FILLER,
    IMG_PAYLOAD,
    INGEST_TIMEOUT_MS,
    SAMPLE_BRIEF,
    SCRIPT_PAYLOAD,
    _open_session,
    _open_tab,
    _shot,
    sync_api,
)

pytestmark = BROWSER_MARKS


def _upload_and_ingest(page, files: list[Path], shot_name: str) -> None:
    page.locator("#upload-files input[type=file]").set_input_files([str(f) for f in files])
    for f in files:  # each file is listed with a download link once Gradio has it on the server
        sync_api.expect(page.locator(f'#upload-files a[href$="/{f.name}"]')).to_have_count(1)
    page.locator("#ingest-button").click()
    sync_api.expect(page.locator("#ingest-progress .st-progress")).to_be_visible()
    _shot(page, f"{shot_name}_progress")
    sync_api.expect(page.locator('#ingest-progress [data-running="false"]')).to_be_visible(timeout=INGEST_TIMEOUT_MS)
    sync_api.expect(page.locator("#ingest-report .st-card")).to_have_count(len(files))
    _shot(page, f"{shot_name}_report")


def _select_dropdown(page, elem_id: str, option: str) -> None:
    page.locator(f"#{elem_id} input").click()
    page.get_by_role("option", name=option).first.click()


@pytest.fixture(scope="module")
def session_a(browser, app_url):
    context, page = _open_session(browser, app_url)
    _shot(page, "01_library_loaded")
    yield page
    context.close()


@pytest.fixture(scope="module")
def uploaded_brief(session_a, tmp_path_factory):
    """Session A after uploading a changed copy of the sample brief under a new name."""
    folder = tmp_path_factory.mktemp("uploads")
    path = folder / "uploaded_brief.pdf"
    # Same pages, other metadata: a new sha256, so the upload is a new document, not 'unchanged'.
    with pymupdf.open(SAMPLE_BRIEF) as pdf:
        pdf.set_metadata({**pdf.metadata, "title": "Uploaded brief (test copy)"})
        pdf.save(path)
    _upload_and_ingest(session_a, [path], "02_upload")
    return session_a, path.name


# ---------------------------------------------------------------- tests


def test_upload_shows_progress_and_report(uploaded_brief):
    page, name = uploaded_brief
    progress = page.locator(f'#ingest-progress tr[data-file="{name}"]')
    sync_api.expect(progress).to_have_attribute("data-stage", "done")
    card = page.locator(f'#ingest-report .st-card[data-file="{name}"]')
    sync_api.expect(card).to_have_attribute("data-status", "ingested")
    sync_api.expect(card).to_contain_text("page(s)")
    sync_api.expect(card).to_contain_text("sections")
    sync_api.expect(page.locator("#documents-table")).to_contain_text(name)


def test_upload_benchmark_pdf(session_a):
    pdfs = sorted(BENCH_CORPUS.glob("*.pdf")) if BENCH_CORPUS.is_dir() else []
    if not pdfs:
        pytest.skip(f"no benchmark corpus at {BENCH_CORPUS}")
    _upload_and_ingest(session_a, [pdfs[0]], "03_upload_benchmark")
    card = session_a.locator(f'#ingest-report .st-card[data-file="{pdfs[0].name}"]')
    sync_api.expect(card).to_have_attribute("data-status", "ingested")
    sync_api.expect(session_a.locator("#documents-table")).to_contain_text(pdfs[0].name)


def test_parse_tab_shows_page_and_section_tree(session_a):
    page = session_a
    _open_tab(page, "Parse")
    sync_api.expect(page.locator("#parse-page-image img")).to_be_visible()
    tree = page.locator("#parse-tree")
    sync_api.expect(tree.locator(".st-sec").first).to_be_visible()
    assert tree.locator(".st-sec").count() >= 3
    sync_api.expect(page.locator("#parse-blocks .st-blocks")).to_be_visible()
    sync_api.expect(page.locator("#parse-legend")).to_contain_text("heading")
    _shot(page, "04_parse")
    # Clicking a section in the tree shows its page.
    _select_dropdown(page, "parse-document", "cool_streets_report.pdf (5 p.)")
    tree.get_by_text("3.3 Tree planting and survival").click()
    sync_api.expect(page.locator("#parse-page input")).to_have_value("3")
    sync_api.expect(tree.locator(".st-sec-current")).to_have_text("3.3 Tree planting and survival")
    _shot(page, "05_parse_section")


def test_ask_answers_with_citations(session_a):
    page = session_a
    _open_tab(page, "Ask")
    page.locator("#ask-question textarea").fill("How many trees did the programme plant?")
    _select_dropdown(page, "ask-method", "hikey")
    page.locator("#ask-button").click()
    answer = page.locator('#ask-answer .st-answer[data-abstained="false"]')
    sync_api.expect(answer).to_contain_text("4,820")
    citation = page.locator("#ask-citations .st-citation").first
    sync_api.expect(citation).to_contain_text(".pdf")
    sync_api.expect(citation).to_contain_text("page")
    sync_api.expect(page.locator("#ask-citation-image img")).to_be_visible()
    _shot(page, "06_ask")
    page.locator("#ask-trace-panel").click()
    sync_api.expect(page.locator("#ask-trace .st-step").first).to_be_visible()
    page.locator("#ask-pack-panel").click()
    sync_api.expect(page.locator("#ask-pack .st-budget")).to_contain_text("tokens used")
    _shot(page, "07_ask_details")


def test_ask_abstains_and_reports_errors(session_a):
    page = session_a
    _open_tab(page, "Ask")
    page.locator("#ask-question textarea").fill("What is the airspeed velocity of an unladen swallow?")
    page.locator("#ask-button").click()
    sync_api.expect(page.locator('#ask-answer .st-answer[data-abstained="true"]')).to_contain_text("Not enough evidence")
    page.locator("#ask-question textarea").fill("   ")
    page.locator("#ask-button").click()
    # A StrataError reaches the user as its message, not as a stack trace.
    sync_api.expect(page.get_by_text("The question is empty").first).to_be_visible()
    assert page.get_by_text("Traceback").count() == 0
    _shot(page, "08_ask_abstain_error")


def _xss_pdf(path: Path) -> None:
    """A one-page report whose heading and first paragraph carry HTML/script payloads as text."""
    with pymupdf.open() as pdf:
        page = pdf.new_page()
        page.insert_text((72, 90), "Probe Report", fontsize=20, fontname="hebo")
        page.insert_text((72, 130), f"1 Payload {IMG_PAYLOAD}", fontsize=13, fontname="hebo")
        first = f"The probe text holds {SCRIPT_PAYLOAD} as plain words. It also holds {IMG_PAYLOAD} which must stay text. "
        page.insert_textbox(pymupdf.Rect(72, 145, 520, 260), first + FILLER, fontsize=10.5)
        page.insert_text((72, 290), "2 Method", fontsize=13, fontname="hebo")
        page.insert_textbox(pymupdf.Rect(72, 305, 520, 480), FILLER * 4, fontsize=10.5)
        page.insert_text((72, 510), "3 Results", fontsize=13, fontname="hebo")
        page.insert_textbox(pymupdf.Rect(72, 525, 520, 700), FILLER * 4, fontsize=10.5)
        pdf.save(path)


def test_pdf_text_is_escaped(browser, app_url, tmp_path):
    path = tmp_path / "xss_probe.pdf"
    _xss_pdf(path)
    context, page = _open_session(browser, app_url)
    try:
        _upload_and_ingest(page, [path], "09_xss_upload")
        sync_api.expect(page.locator('#ingest-report .st-card[data-file="xss_probe.pdf"]')).to_have_attribute(
            "data-status", "ingested"
        )
        _open_tab(page, "Parse")
        _select_dropdown(page, "parse-document", "xss_probe.pdf (1 p.)")
        blocks = page.locator("#parse-blocks")
        sync_api.expect(blocks).to_contain_text(SCRIPT_PAYLOAD)
        sync_api.expect(blocks).to_contain_text(IMG_PAYLOAD)
        _shot(page, "10_xss_parse")
        assert page.locator("#parse-blocks script, #parse-tree script, #parse-blocks img, #parse-tree img").count() == 0
        _open_tab(page, "Ask")
        page.locator("#ask-question textarea").fill("What does the probe text hold?")
        page.locator("#ask-button").click()
        sync_api.expect(page.locator("#ask-answer .st-answer")).to_be_visible()
        _shot(page, "11_xss_ask")
        assert page.evaluate("() => typeof window.__xss") == "undefined"
        assert page.page_errors == []
    finally:
        context.close()


def test_uploads_stay_in_their_session(browser, app_url, uploaded_brief):
    page_a, name = uploaded_brief
    context_b, page_b = _open_session(browser, app_url)
    try:
        _shot(page_b, "12_second_session")
        sync_api.expect(page_b.locator("#documents-table")).to_contain_text("cool_streets_report.pdf")
        sync_api.expect(page_b.locator("#documents-table")).not_to_contain_text(name)
        _open_tab(page_a, "Library")
        sync_api.expect(page_a.locator("#documents-table")).to_contain_text(name)
    finally:
        context_b.close()
