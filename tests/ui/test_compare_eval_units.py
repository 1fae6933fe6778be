"""The pure parts of the Compare, Evaluate and Settings tabs and the ZeroGPU wrapper, without a
browser: PDF text escaped in the side-by-side columns, hit/miss marks, the overlap matrix, the
metric tables and plots, the per-session settings (the key kept as a secret, never rendered or
logged, the server's key never sent to a URL the user typed), and `gpu_task` wrapping only when
the `spaces` package is there."""

from __future__ import annotations

import logging
import sys
import types
from pathlib import Path

import pytest

from backend.config import LLMSettings, Settings
from backend.errors import StrataError
from backend.eval.runner import EvalReport, QuestionRecord, metric_rows
from backend.types import Answer, AskResult, EvidencePack, NodeKind, ResultItem, Trace
from ui import compare, evaluate, spaces_gpu
from ui import settings as settings_tab
from ui.render import esc

EVIL = '<script>window.__xss=1</script><img src=x onerror="window.__xss=2">'
KEY = "sk-unit-test-5d1e0c"


def _result(method: str, pages: list[tuple[str, int]], text: str = "plain", answer: str = "42") -> AskResult:
    results = [
        ResultItem(rank=i + 1, node_id=f"{method}-{i}", doc=doc, page=page, bbox=None, kind=NodeKind.PARAGRAPH,
                   section_path=["Report", f"Section {EVIL}"], text=text, score=1.0 / (i + 1))
        for i, (doc, page) in enumerate(pages)
    ]
    return AskResult(
        question="q", method=method, results=results, pack=EvidencePack(budget=100, tokens=0, units=[], text=""),
        answer=Answer(text=answer, abstained=False), trace=Trace(method=method), timings_ms={"total": 12.5},
        llm_backend="rules", llm_calls=0,
    )


# ---------------------------------------------------------------- compare


def test_columns_escape_pdf_text_and_mark_hits():
    a = _result("bm25", [("a.pdf", 2), ("b.pdf", 1)], text=EVIL, answer=EVIL)
    html = compare.render_columns([a], [[True, False]])
    assert "<script" not in html and "<img" not in html and "&lt;script&gt;" in html
    assert html.count('data-hit="hit"') == 1 and html.count('data-hit="miss"') == 1
    assert 'data-hit="none"' in compare.render_columns([a], None)


def test_overlap_is_the_jaccard_of_result_pages():
    a = _result("bm25", [("a.pdf", 1), ("a.pdf", 1), ("b.pdf", 2)])
    b = _result("hikey", [("a.pdf", 1), ("c.pdf", 3)])
    assert compare.jaccard(compare.result_pages(a), compare.result_pages(b)) == pytest.approx(1 / 3)
    assert compare.jaccard(set(), set()) == 1.0
    html = compare.render_overlap([a, b])
    assert html.count('data-jaccard="0.33"') == 2 and "2 pages" in html


def test_summary_counts_hits_and_gold_found():
    a = _result("bm25", [("a.pdf", 2), ("b.pdf", 1), ("a.pdf", 2)])
    html = compare.render_summary([a], [[True, False, True]], [(1, 2)])
    assert '<td data-field="hits">2 of 3</td>' in html and '<td data-field="gold-found">1 of 2</td>' in html and "rank 1" in html


def test_each_column_shows_what_only_its_method_found():
    a = _result("bm25", [("a.pdf", 1), ("b.pdf", 2)], answer="Forty-two trees.")
    b = _result("hikey", [("a.pdf", 1), ("c.pdf", 3)], answer="Forty-two  trees.")
    b.results[0].node_id = a.results[0].node_id  # both found the unit on a.pdf p.1
    assert compare.only_found([a, b]) == [{"bm25-1"}, {"hikey-1"}]
    html = compare.render_columns([a, b], None)
    assert html.count('data-only="true"') == 2 and html.count('data-only="false"') == 2
    assert "1 unit(s) no other run found, on b.pdf p.2" in html and "on c.pdf p.3" in html
    summary = compare.render_summary([a, b], None, None)
    assert summary.count('<td data-field="only">1 unit(s)</td>') == 2
    assert 'data-same-as="hikey"' in summary and 'data-same-as="bm25"' in summary  # same words, spacing aside
    same = compare.render_columns([a, _result("dense", [("a.pdf", 1)])], None)
    assert "Every result of this run was also found by another run." not in same  # different node ids
    c = _result("dense", [])
    assert compare.only_found([c, a]) == [set(), {"bm25-0", "bm25-1"}]
    assert 'data-only-count="0"' in compare.render_columns([c, a], None)


def test_a_run_whose_llm_failed_shows_the_failure_on_its_row_and_column():
    ok = _result("bm25", [("a.pdf", 1)], answer="Forty-two.")
    failed = _result("hikey", [("b.pdf", 2)], answer="Forty-two.")
    failed.llm_error = f"The LLM backend openai:m failed, so the rules backend answered in its place: {EVIL}"
    summary = compare.render_summary([ok, failed], None, None)
    assert "<script" not in summary and "<img" not in summary and "&lt;script&gt;" in summary
    assert summary.count('data-llm-failed="true"') == 1 and summary.count('data-llm-failed="false"') == 1
    assert summary.count('class="st-error st-llm-error" role="alert" data-llm-error="hikey"') == 1
    assert 'tr data-method="hikey" data-label="hikey" data-llm-failed="true"' in summary
    columns = compare.render_columns([ok, failed], None)
    assert "<script" not in columns and "<img" not in columns
    col = columns.split('<section class="st-cmp-col" data-method="hikey"')[1]
    assert 'role="alert" data-llm-error="hikey"' in col and "openai:m failed, so the rules backend answered" in col
    assert "in place of the failed LLM" in col and 'class="st-cmp-answer" data-llm-failed="true"' in col
    assert "st-llm-error" not in columns.split('<section class="st-cmp-col" data-method="hikey"')[0]
    assert "st-llm-error" not in compare.render_summary([ok], None, None) + compare.render_columns([ok], None)


def test_gold_text_round_trips_through_the_parser():
    from backend.service import Service

    gold = Service.parse_gold("a.pdf p.3\nb.pdf")
    assert compare.gold_text(gold) == "a.pdf p.3\nb.pdf"
    assert compare.gold_found(_result("bm25", [("a.pdf", 3), ("c.pdf", 1)]), gold) == (1, 2)


# ---------------------------------------------------------------- evaluate


class _Row:
    def __init__(self, method: str, group: str = "all", r10: float | None = 0.5):
        self.method, self.group, self.questions, self.scored, self.unanswerable, self.errors = method, group, 4, 3, 1, 0
        self.llm_failed = 2
        self.recall_at_1, self.recall_at_5, self.recall_at_10, self.mrr_at_10, self.all_at_10 = 0.25, 0.4, r10, 0.3, 0.2
        self.abstention, self.abstained_all = None, 0.25
        self.exact_match, self.f1 = 0.5, 0.625
        self.latency_p50_ms, self.latency_mean_ms, self.llm_calls_per_question = 40.0, 45.5, 1.5


def test_progress_labels_name_the_stage_file_question_and_method():
    assert evaluate.progress_label("ingest", 0, 120, doc="tatqa_1.pdf") == "Ingesting the collection: file 1 of 120 (tatqa_1.pdf)"
    assert evaluate.progress_label("warm", 0, 0, "hikey") == "Loading the indexes for hikey (not timed)"
    assert evaluate.progress_label("ask", 2, 10, "bm25") == "bm25: asking question 3 of 10"
    assert evaluate.progress_label("ask", 10, 10, "bm25") == "bm25: 10 questions asked"
    assert evaluate.progress_label("score", 0, 1, "bm25") == "bm25: scoring"


def test_the_ingest_of_a_collection_is_announced_before_the_first_run():
    html = evaluate.ingest_note("dev-<b>", 120, 240, 300.0)
    assert 'data-pages="240"' in html and "120 PDFs, 240 pages, about 5 min" in html and "dev-&lt;b&gt;" in html
    assert 'data-pages="0"' in evaluate.ingest_note("dev", 120, 0, 0.0)
    assert evaluate.ingest_note("dev", 0, 0, 0.0) == ""


def test_metric_tables_format_numbers_and_missing_values():
    (row,) = evaluate.metric_table([_Row("bm25", r10=None)])
    headers = evaluate.TABLE_HEADERS
    assert row[0] == "bm25" and row[5] == "–" and row[3] == "0.250" and row[10] == "–" and row[headers.index("LLM calls/q")] == "1.50"
    assert row[headers.index("EM")] == "0.500" and row[headers.index("F1")] == "0.625"  # the answers, in the main table
    assert len(row) == len(evaluate.TABLE_HEADERS)
    assert row[headers.index("LLM failed (rules answered)")] == 2  # figures from a dead server are not read as the model's
    assert len(evaluate.breakdown_table([_Row("bm25", "table")])[0]) == len(evaluate.BREAKDOWN_HEADERS)


def _report(method: str, llm_errors: list[str | None]) -> EvalReport:
    records = [QuestionRecord(method=method, id=f"q{i}", question="q?", answer="a", llm_error=e) for i, e in enumerate(llm_errors)]
    return EvalReport(method=method, collection="tiny", questions=len(records), predictions=Path("p.jsonl"), records=records)


def test_the_status_says_in_plain_words_on_how_many_questions_the_llm_failed():
    reason = f"The LLM backend openai:m failed, so the rules backend answered in its place: {EVIL}"
    failed, ok = _report("hikey", [None, reason, "second reason"]), _report("bm25", [None, None])
    html = evaluate.render_status([ok, failed], "tiny")
    assert "<script" not in html and "<img" not in html
    assert html.count("st-llm-error") == 1 and 'data-method="hikey" data-llm-failed="2"' in html
    assert f"hikey: The LLM server failed on 2 of 3 questions (the rules answered them): {esc(reason)}" in html
    assert "second reason" not in html  # the first reason only
    (row,) = metric_rows([failed])
    assert row.llm_failed == 2 and evaluate.metric_table([row])[0][-1] == 2 and row.errors == 0
    records = evaluate.record_table([failed])
    assert [r[-1] for r in records] == ["", f"LLM failed, the rules answered: {reason}", "LLM failed, the rules answered: second reason"]


def test_figures_have_one_bar_group_per_method():
    fig = evaluate.metrics_figure([_Row("bm25"), _Row("hikey")])
    assert [t.name for t in fig.data] == ["bm25", "bm25", "hikey", "hikey"]
    assert list(fig.data[0].x) == ["R@1", "R@5", "R@10", "MRR@10", "All@10"]
    by = evaluate.breakdown_figure([_Row("bm25", "text"), _Row("bm25", "table"), _Row("hikey", "text", r10=None)], "modality")
    assert [t.name for t in by.data] == ["bm25", "hikey"] and list(by.data[0].x) == ["text", "table"] and list(by.data[1].x) == []


# ---------------------------------------------------------------- settings


def _apply(current, server, backend="openai", base_url="http://127.0.0.1:8000/v1", key="", forget=False, model="m", hf="",
           top_k=7, budget=1024, calls=5):
    return settings_tab.apply_settings(current, server, backend, base_url, key, forget, model, hf, top_k, budget, calls)


def test_the_key_is_kept_as_a_secret_and_never_rendered_or_logged(caplog):
    server = Settings(load_sample=False)
    start = settings_tab.default_session_settings(server)
    with caplog.at_level(logging.DEBUG):
        s = _apply(start, server, key=KEY)
    assert s.llm.api_key.get_secret_value() == KEY and s.key_source == "session" and s.key_set
    assert (s.llm_backend, s.top_k, s.token_budget, s.llm.max_calls_per_question) == ("openai", 7, 1024, 5)
    for text in (settings_tab.render_status(s), s.describe(), repr(s), str(s), caplog.text):
        assert KEY not in text
    assert server.llm.api_key is None and server.reader.llm_backend == "rules"  # the shared settings are untouched
    assert _apply(s, server, key="").llm.api_key.get_secret_value() == KEY  # an empty box keeps the key
    forgotten = _apply(s, server, forget=True)
    assert forgotten.llm.api_key is None and not forgotten.key_set
    assert s.ask_options() == {"budget": 1024, "llm_backend": "openai", "llm_settings": s.llm}


def test_the_servers_key_never_goes_to_a_url_the_user_typed():
    server = Settings(load_sample=False, llm=LLMSettings(api_key="sk-operator", base_url="http://llm.internal/v1"))
    start = settings_tab.default_session_settings(server)
    assert start.key_source == "server"
    same = _apply(start, server, base_url="http://llm.internal/v1/")
    assert same.llm.api_key.get_secret_value() == "sk-operator"
    elsewhere = _apply(start, server, base_url="https://attacker.example/v1")
    assert elsewhere.llm.api_key is None and elsewhere.key_source == "none"
    own = _apply(start, server, base_url="https://mine.example/v1", key=KEY)
    assert own.llm.api_key.get_secret_value() == KEY


@pytest.mark.parametrize(
    "kwargs, message",
    [({"base_url": "ftp://x"}, "http"), ({"model": " "}, "model"), ({"backend": "hf", "hf": "/no/such/model"}, "No model folder"),
     ({"backend": "gpt"}, "Unknown LLM backend")],
)
def test_bad_settings_are_refused_with_a_message(kwargs, message):
    server = Settings(load_sample=False)
    with pytest.raises(StrataError, match=message):
        _apply(settings_tab.default_session_settings(server), server, **kwargs)


def test_a_local_model_folder_is_accepted(tmp_path):
    server = Settings(load_sample=False)
    s = _apply(settings_tab.default_session_settings(server), server, backend="hf", hf=str(tmp_path))
    assert s.llm_backend == "hf" and s.llm.hf_model == str(tmp_path) and "hf: local model" in s.describe()


# ---------------------------------------------------------------- ZeroGPU


def test_gpu_task_wraps_only_when_spaces_is_importable(monkeypatch):
    def handler(x, progress=None):
        return x + 1

    spaces_gpu._spaces_module.cache_clear()
    monkeypatch.setitem(sys.modules, "spaces", None)  # import fails
    assert spaces_gpu.gpu_task(handler) is handler and not spaces_gpu.zero_gpu_available()

    calls = []
    fake = types.ModuleType("spaces")

    def GPU(duration=60):  # noqa: N802 - the name of the real decorator
        def deco(fn):
            calls.append((fn.__name__, duration))
            return fn

        return deco

    fake.GPU = GPU
    spaces_gpu._spaces_module.cache_clear()
    monkeypatch.setitem(sys.modules, "spaces", fake)
    try:
        wrapped = spaces_gpu.gpu_task(duration_s=300)(handler)
        assert wrapped(1) == 2 and calls == [("handler", 300)]
        spaces_gpu.gpu_task(handler)
        assert calls[-1] == ("handler", spaces_gpu.DEFAULT_DURATION_S)
    finally:
        spaces_gpu._spaces_module.cache_clear()


def test_prepare_run_loads_each_methods_indexes_with_an_untimed_question_first(tmp_path):
    """Issue 11 item 7: the first timed question used to pay for the cold index build. prepare_run
    ingests the collection once, then asks every chosen method one question outside the timing."""
    asked, labels = [], []

    class RecordingService:
        def prepare_benchmark(self, bench, ws, on_ingest):
            on_ingest(types.SimpleNamespace(stage="open", done=0, total=2, doc="a.pdf"))
            return tmp_path / "bench-ws"

        def benchmark_questions(self, bench, ws, limit=None):
            return [types.SimpleNamespace(question="How many trees?")][:limit]

        def ask(self, ws, question, method, top_k, **opts):
            asked.append((ws, question, method, top_k))

    evaluate.prepare_run(RecordingService(), tmp_path, tmp_path, ["bm25", "hikey"], {}, lambda frac, desc: labels.append(desc))
    assert [(m, q) for _, q, m, _ in asked] == [("bm25", "How many trees?"), ("hikey", "How many trees?")]
    assert all(ws == tmp_path / "bench-ws" for ws, *_ in asked)
    assert labels[0] == "Ingesting the collection: file 1 of 2 (a.pdf)"
    assert labels[1:] == ["Loading the indexes for bm25 (not timed)", "Loading the indexes for hikey (not timed)"]


def test_the_tab_starts_on_the_smallest_collection(tmp_path):
    for name, pdfs in (("big", 5), ("tiny", 1), ("mid", 3)):
        corpus = tmp_path / name / "corpus"
        corpus.mkdir(parents=True)
        for i in range(pdfs):
            (corpus / f"d{i}.pdf").write_bytes(b"%PDF-1.4 " * 10)
    benches = sorted(tmp_path.iterdir())
    assert evaluate.smallest_bench(benches).name == "tiny"
    assert evaluate.smallest_bench([]) is None


def test_answers_are_scored_as_score_py_scores_them():
    from backend.eval.gold import answer_scores

    assert answer_scores("The 4,820 trees.", False, ["4,820 trees", "4820"]) == (1.0, 1.0)
    em, f1 = answer_scores("about 4,820 street trees", False, ["4,820 trees"])
    assert em == 0.0 and abs(f1 - 0.75) < 1e-9  # "4 820 trees" within 5 tokens: P 3/5, R 1
    assert answer_scores("I cannot answer this from the documents.", False, ["5"]) == (0.0, 0.0)
    assert answer_scores("5", True, ["5"]) == (0.0, 0.0)  # an abstention scores nothing
    assert answer_scores("anything", False, []) is None  # no reference: not scored
