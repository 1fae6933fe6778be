"""Compare, Evaluate and Settings in a real browser against the running app (session fixtures
`app_url` and `browser` from conftest.py).

Compare: two methods on a sample question with typed gold pages: both columns, the overlap
matrix, and every result marked hit or miss on the right page. Evaluate: a tiny benchmark
(two sample PDFs, three questions with gold pages) zipped in a tmp folder and uploaded; the run
shows the metrics table, the plot and the breakdown, and the CSV downloads. Settings: an
OpenAI-compatible backend with a key: the key box is blanked, the page never holds the key, the
server log never holds it, and another session still answers with the rules backend; a dead LLM
server set there shows as an alert on every compared run.
"""

from __future__ import annotations

import csv
import json
import zipfile
from pathlib import Path

import pytest

from tests.http_servers import dead_url
from tests.ui.helpers import BROWSER_MARKS, INGEST_TIMEOUT_MS, REPO, SHARED, _open_session, _open_tab, _shot, sync_api

pytestmark = BROWSER_MARKS

QUESTION = "How many trees did the programme plant?"
GOLD = ("policy_brief.pdf", 2)
SECRET_KEY = "sk-strata-test-7f3c9a1e5b"
SHARED_BENCH = SHARED / "bench"
BENCH_QUESTIONS = [
    {"id": "b1", "question": QUESTION, "answers": ["4,820"], "unanswerable": False,
     "gold": [{"doc": "policy_brief.pdf", "page": 2}], "modality": "text", "hops": 1,
     "meta": {"doc_scope": ["data_annex.pdf"]}},  # another document than its gold's: a scoped run misses it
    {"id": "b2", "question": "How many air temperature sensors are in Saltmarsh?", "answers": ["5"], "unanswerable": False,
     "gold": [{"doc": "data_annex.pdf", "page": 2}], "modality": "table", "hops": 1},
    {"id": "b3", "question": "What is the mayor's favourite colour?", "answers": [], "unanswerable": True, "gold": [],
     "modality": None, "hops": None},
]


def _check(page, elem_id: str, label: str, checked: bool) -> None:
    box = page.locator(f"#{elem_id}").get_by_label(label, exact=True)
    if box.is_checked() != checked:
        box.click()


@pytest.fixture(scope="module")
def session(browser, app_url):
    context, page = _open_session(browser, app_url)
    yield page
    context.close()


@pytest.fixture()
def bench_zip(tmp_path) -> Path:
    path = tmp_path / "tiny-bench.zip"
    with zipfile.ZipFile(path, "w") as zf:
        for name in ("policy_brief.pdf", "data_annex.pdf"):
            zf.write(REPO / "sample_corpus" / name, f"tiny-bench/corpus/{name}")
        zf.writestr("tiny-bench/questions.jsonl", "".join(json.dumps(q) + "\n" for q in BENCH_QUESTIONS))
    return path


def test_compare_two_methods_side_by_side_with_gold(session):
    page = session
    _open_tab(page, "Compare")
    sync_api.expect(page.locator("#compare-summary .st-empty")).to_be_visible()
    page.locator("#compare-question textarea").fill(QUESTION)
    for name in ("bm25", "hikey"):
        _check(page, "compare-methods", name, True)
    if not page.locator("#compare-gold").is_visible():
        page.locator("#compare-gold-panel").get_by_text("Gold evidence").click()
    page.locator("#compare-gold textarea").fill(f"{GOLD[0]} p.{GOLD[1]}")
    page.locator("#compare-button").click()

    columns = page.locator("#compare-columns .st-cmp-col")
    sync_api.expect(columns).to_have_count(2)
    assert [columns.nth(i).get_attribute("data-method") for i in range(2)] == ["bm25", "hikey"]
    for method in ("bm25", "hikey"):
        col = page.locator(f'#compare-columns .st-cmp-col[data-method="{method}"]')
        results = col.locator("li.st-cmp-result")
        assert results.count() > 0
        assert col.locator('li[data-hit="none"]').count() == 0  # gold is known: every result is marked
        hits = col.locator('li[data-hit="hit"]')
        assert hits.count() >= 1, f"{method} found no result on {GOLD}"
        for i in range(results.count()):
            item = results.nth(i)
            on_gold = f"{GOLD[0]} p.{GOLD[1]}" == item.locator(".st-cmp-where").inner_text().strip()
            assert item.get_attribute("data-hit") == ("hit" if on_gold else "miss")
        row = page.locator(f'#compare-summary tr[data-method="{method}"]')
        sync_api.expect(row.locator('[data-field="gold-found"]')).to_have_text("1 of 1")
        # What only this method found, in the column and in the summary row.
        only = int(col.locator(".st-cmp-only").get_attribute("data-only-count"))
        assert col.locator('li[data-only="true"]').count() == only
        sync_api.expect(row.locator('[data-field="only"]')).to_have_text(f"{only} unit(s)")
    overlap = page.locator("#compare-overlap td[data-jaccard]")
    sync_api.expect(overlap).to_have_count(2)  # bm25 x hikey and hikey x bm25
    jaccard = [float(overlap.nth(i).get_attribute("data-jaccard")) for i in range(2)]
    assert jaccard[0] == jaccard[1] and 0.0 <= jaccard[0] <= 1.0
    sync_api.expect(page.locator("#compare-summary")).to_contain_text("LLM calls")
    _shot(page, "20_compare")


def test_compare_asks_for_two_to_four_methods(session):
    page = session
    _open_tab(page, "Compare")
    page.locator("#compare-question textarea").fill(QUESTION)
    for name in ("bm25", "hikey", "dense", "hybrid", "lilac", "mirag", "mmgraph", "strata", "fif"):
        if page.locator("#compare-methods").get_by_label(name, exact=True).count():
            _check(page, "compare-methods", name, name == "bm25")
    page.locator("#compare-button").click()
    sync_api.expect(page.get_by_text("Tick 2 to 4 methods").first).to_be_visible()
    assert page.get_by_text("Traceback").count() == 0
    _check(page, "compare-methods", "hikey", True)


def test_compare_shows_a_dead_llm_server_on_each_run(browser, app_url):
    """A session whose LLM server is dead (set in Settings): every run's row and column carry the
    failure as an alert, and the answers are labelled as the rules' (in a context of its own, so
    the module's session keeps the rules backend)."""
    context, page = _open_session(browser, app_url)
    try:
        _open_tab(page, "Settings")
        page.locator("#settings-backend").get_by_text("OpenAI-compatible server").click()
        page.locator("#settings-base-url textarea, #settings-base-url input").first.fill(dead_url())
        page.locator("#settings-model textarea, #settings-model input").first.fill("test-model")
        page.locator("#settings-apply").click()
        sync_api.expect(page.locator("#settings-status .st-error")).to_contain_text("Cannot reach")

        _open_tab(page, "Compare")
        page.locator("#compare-question textarea").fill(QUESTION)
        for name in ("bm25", "hikey"):
            _check(page, "compare-methods", name, True)
        page.locator("#compare-button").click()
        rows = page.locator('#compare-summary tr[data-llm-failed="true"]')
        sync_api.expect(rows).to_have_count(2)
        for method in ("bm25", "hikey"):
            alert = page.locator(f'#compare-summary tr[data-method="{method}"] .st-llm-error[role="alert"]')
            sync_api.expect(alert).to_be_visible()
            sync_api.expect(alert).to_contain_text("openai:test-model failed, so the rules backend answered in its place")
            col = page.locator(f'#compare-columns .st-cmp-col[data-method="{method}"]')
            sync_api.expect(col.locator('.st-llm-error[role="alert"]')).to_contain_text("cannot reach the server")
            sync_api.expect(col.locator(".st-answer-label")).to_contain_text("in place of the failed LLM")
            assert col.locator('.st-cmp-answer[data-llm-failed="true"]').count() == 1
        _shot(page, "compare_llm_error")
        assert page.page_errors == []
    finally:
        context.close()


@pytest.mark.skipif(not (SHARED_BENCH / "dev-tatqa-pdf" / "questions.jsonl").is_file(), reason="../shared/bench is not here")
def test_picking_a_benchmark_question_fills_question_and_gold(browser, app_url):
    first = json.loads((SHARED_BENCH / "dev-tatqa-pdf" / "questions.jsonl").read_text().splitlines()[0])
    # A session of its own: the empty-state text below shows only before any comparison, and the
    # module's shared session has run some by now.
    context, page = _open_session(browser, app_url)
    _open_tab(page, "Compare")
    # The text says to pick a benchmark question: the picker is in view, not in a closed section.
    sync_api.expect(page.locator("#compare-summary .st-empty")).to_contain_text("pick a benchmark question above")
    sync_api.expect(page.locator("#compare-bench")).to_be_visible()
    sync_api.expect(page.locator("#compare-bench-question")).to_be_visible()
    bench_box, summary_box = page.locator("#compare-bench").bounding_box(), page.locator("#compare-summary").bounding_box()
    assert bench_box["y"] < summary_box["y"]
    _shot(page, "19_compare_picker")
    page.locator("#compare-bench input").click()
    page.get_by_role("option", name="dev-tatqa-pdf").click()
    page.locator("#compare-bench-question input").click()
    page.get_by_role("option", name=f"{first['id']}: ", exact=False).first.click()
    sync_api.expect(page.locator("#compare-question textarea")).to_have_value(first["question"])
    if not page.locator("#compare-gold").is_visible():
        page.locator("#compare-gold-panel").get_by_text("Gold evidence").click()
    gold = "\n".join(f"{g['doc']} p.{g['page']}" for g in first["gold"])
    sync_api.expect(page.locator("#compare-gold textarea")).to_have_value(gold)
    sync_api.expect(page.locator("#compare-corpus").get_by_label("The benchmark's corpus", exact=False)).to_be_checked()
    # The question names its report (meta.doc_scope): every method is asked of that report.
    sync_api.expect(page.locator("#compare-docs")).to_contain_text(first["meta"]["doc_scope"][0])
    # Back to the user's documents: the benchmark's report is not one of them, so it leaves the menu.
    page.locator("#compare-corpus").get_by_label("My documents").check()
    sync_api.expect(page.locator("#compare-docs")).not_to_contain_text(first["meta"]["doc_scope"][0])
    page.locator("#compare-gold textarea").fill("")
    context.close()


def test_evaluate_an_uploaded_benchmark(session, bench_zip, tmp_path):
    page = session
    _open_tab(page, "Evaluate")
    sync_api.expect(page.locator("#eval-status .st-empty")).to_be_visible()
    page.locator("#eval-upload input[type=file]").set_input_files(str(bench_zip))
    sync_api.expect(page.locator('#eval-upload-status [data-uploaded="tiny-bench"]')).to_contain_text("3 questions")
    sync_api.expect(page.locator("#eval-bench input")).to_have_value("tiny-bench (uploaded)")
    # Before the first run: the collection's ingest is announced with its page count.
    note = page.locator("#eval-ingest-note .st-eval-ingest")
    sync_api.expect(note).to_contain_text("the first run ingests")
    assert int(note.get_attribute("data-pages")) > 0
    _shot(page, "21_evaluate_before")
    for name in ("bm25", "hikey"):
        _check(page, "eval-methods", name, True)
    page.locator("#eval-run").click()
    # While it runs the placeholder is gone from under the progress bar.
    sync_api.expect(page.locator("#eval-status .st-empty")).to_have_count(0)
    sync_api.expect(page.locator('#eval-status .st-eval-done[data-questions="3"]')).to_be_visible(timeout=4 * INGEST_TIMEOUT_MS)

    table = page.locator("#eval-metrics")
    sync_api.expect(table).to_contain_text("bm25")
    sync_api.expect(table).to_contain_text("hikey")
    sync_api.expect(table).to_contain_text("MRR@10")
    for answer_metric in ("EM", "F1"):  # the answers' scores, in the main table
        sync_api.expect(table.locator("th").filter(has_text=answer_metric).first).to_be_visible()
    sync_api.expect(page.locator("#eval-plot .js-plotly-plot")).to_be_visible()
    sync_api.expect(page.locator("#eval-breakdown")).to_contain_text("table")  # the modality of b2
    page.locator("#eval-breakdown-by").get_by_label("Hops").click()
    sync_api.expect(page.locator("#eval-breakdown")).to_contain_text("null")  # b3 has no hop count
    sync_api.expect(page.locator("#eval-breakdown-plot .js-plotly-plot")).to_be_visible()
    sync_api.expect(page.locator('#eval-ingest-note .st-eval-ingest[data-pages="0"]')).to_be_visible()  # ingested now
    _shot(page, "21_evaluate")

    with page.expect_download() as info:
        page.locator("#eval-csv").click()
    saved = tmp_path / "metrics.csv"
    info.value.save_as(saved)
    rows = list(csv.DictReader(saved.open()))
    overall = {r["method"]: r for r in rows if r["breakdown"] == "overall"}
    assert set(overall) == {"bm25", "hikey"}
    assert overall["bm25"]["questions"] == "3" and overall["bm25"]["scored"] == "2" and overall["bm25"]["unanswerable"] == "1"
    assert 0.0 <= float(overall["bm25"]["recall_at_10"]) <= 1.0
    assert {r["group"] for r in rows if r["breakdown"] == "modality"} >= {"text", "table"}

    # Asked of each question's own documents, the run is labelled so; b1's meta names the annex,
    # whose pages do not hold its gold.
    page.locator("#eval-scoped").get_by_label("Ask each question of its own documents (meta.doc_scope)").check()
    _check(page, "eval-methods", "hikey", False)
    done = page.locator("#eval-status .st-eval-done")
    page.locator("#eval-run").click()
    sync_api.expect(page.locator("#eval-metrics")).to_contain_text("bm25 (scoped)", timeout=4 * INGEST_TIMEOUT_MS)
    sync_api.expect(done).to_be_visible()
    sync_api.expect(page.locator("#eval-metrics")).not_to_contain_text("hikey")
    page.locator("#eval-scoped").get_by_label("Ask each question of its own documents (meta.doc_scope)").uncheck()
    assert page.page_errors == []


def _server_log(tmp_path_factory) -> Path | None:
    logs = sorted(tmp_path_factory.getbasetemp().glob("strata_app*/app.log"))
    return logs[-1] if logs else None


def test_settings_key_is_never_shown_back(browser, app_url, tmp_path_factory):
    context, page = _open_session(browser, app_url)
    other = None
    try:
        _open_tab(page, "Settings")
        sync_api.expect(page.locator("#settings-server")).to_contain_text("Text encoder")
        sync_api.expect(page.locator("#settings-server")).to_contain_text("CPU" if "CPU" in page.locator("#device-info").inner_text() else "GPU")
        page.locator("#settings-backend").get_by_text("OpenAI-compatible server").click()
        sync_api.expect(page.locator("#settings-api-key input")).to_be_visible()
        page.locator("#settings-base-url textarea, #settings-base-url input").first.fill("http://127.0.0.1:9/v1")
        page.locator("#settings-model textarea, #settings-model input").first.fill("test-model")
        key_box = page.locator("#settings-api-key input")
        assert key_box.get_attribute("type") == "password"
        key_box.fill(SECRET_KEY)
        page.locator("#settings-apply").click()
        status = page.locator("#settings-status")
        sync_api.expect(status.locator('[data-field="backend"]')).to_contain_text("openai: model test-model")
        sync_api.expect(status.locator('[data-field="key"]')).to_have_text("set")
        sync_api.expect(key_box).to_have_value("")
        _shot(page, "22_settings")
        assert SECRET_KEY not in page.content()
        assert SECRET_KEY not in page.evaluate("() => document.documentElement.outerHTML")
        log = _server_log(tmp_path_factory)
        if log is not None:
            assert SECRET_KEY not in log.read_text(errors="replace")

        # Another browser session keeps the server's default backend.
        other_context, other = _open_session(browser, app_url)
        _open_tab(other, "Settings")
        sync_api.expect(other.locator('#settings-status [data-field="backend"]')).to_contain_text("rules")
        sync_api.expect(other.locator('#settings-status [data-field="key"]')).to_have_text("not set")
        other_context.close()

        # A bad base URL is refused with a message; the key box stays blank.
        page.locator("#settings-base-url textarea, #settings-base-url input").first.fill("ftp://nowhere")
        key_box.fill(SECRET_KEY)
        page.locator("#settings-apply").click()
        sync_api.expect(page.locator("#settings-status .st-error")).to_contain_text("not an http(s) URL")
        sync_api.expect(key_box).to_have_value("")
        assert SECRET_KEY not in page.content()
    finally:
        context.close()
