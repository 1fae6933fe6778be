"""The evaluation runner and the service's compare/evaluate facade on a tiny benchmark built in a
tmp folder from two sample PDFs: progress events, per-question records that agree with score.py's
SUMMARY, breakdowns by modality and hops, CSV/JSON export, the CLI's run_eval call still working,
benchmark folders kept apart from the user's documents, comparing methods side by side, and a
dead LLM server counted per method (the rules answered those questions)."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from backend.config import LLMSettings, Settings
from backend.errors import StrataError, WorkspaceError
from backend.eval.gold import GoldRef
from backend.eval.runner import EvalProgress, export_reports, metric_rows, run_eval
from backend.service import Service
from tests.http_servers import dead_url

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "sample_corpus"
SCORE_PY = REPO.parent / "shared" / "bench" / "score.py"

QUESTIONS = [
    {"id": "t1", "question": "How many trees did the programme plant?", "answers": ["4,820"], "unanswerable": False,
     "gold": [{"doc": "policy_brief.pdf", "page": 2}], "modality": "text", "hops": 1},
    {"id": "t2", "question": "How many air temperature sensors are in Saltmarsh?", "answers": ["5"], "unanswerable": False,
     "gold": [{"doc": "data_annex.pdf", "page": 2}], "modality": "table", "hops": 1},
    {"id": "t3", "question": "Which district had the biggest canopy gain, and what was its mean July surface temperature in 2023?",
     "answers": ["38.5"], "unanswerable": False,
     "gold": [{"doc": "policy_brief.pdf", "page": 2}, {"doc": "data_annex.pdf", "page": 2}], "modality": "mixed", "hops": 2},
    {"id": "t4", "question": "What is the mayor's favourite colour?", "answers": [], "unanswerable": True, "gold": [],
     "modality": None, "hops": None},
]


def make_bench(folder: Path, with_score: bool = True) -> Path:
    (folder / "corpus").mkdir(parents=True)
    for name in ("policy_brief.pdf", "data_annex.pdf"):
        shutil.copy(SAMPLE / name, folder / "corpus" / name)
    (folder / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    if with_score and SCORE_PY.is_file():
        shutil.copy(SCORE_PY, folder / "score.py")
    return folder


@pytest.fixture(scope="module")
def bench_service(service, tmp_path_factory) -> Service:
    """A service (sharing the session's encoders) whose bench_root holds one tiny collection."""
    root = tmp_path_factory.mktemp("bench_eval")
    make_bench(root / "bench" / "tiny")
    settings = Settings(workspace_root=root / "workspaces", bench_root=root / "bench", load_sample=False)
    return Service(settings, encoder=service.encoder, sub_encoder=service.encoders.sub)


@pytest.fixture(scope="module")
def session_ws(bench_service) -> Path:
    return bench_service.new_session_workspace()


@pytest.fixture(scope="module")
def evaluated(bench_service, session_ws):
    events: list[tuple[int, EvalProgress]] = []
    bench = bench_service.benchmark_folders()[0]
    reports = bench_service.evaluate(bench, session_ws, ["bm25", "hybrid"], progress=lambda i, ev: events.append((i, ev)))
    return bench, reports, events


@pytest.mark.slow
def test_evaluate_reports_progress_for_ingest_questions_and_scoring(evaluated):
    _, reports, events = evaluated
    assert [r.method for r in reports] == ["bm25", "hybrid"]
    stages = [(i, ev.stage) for i, ev in events]
    assert (0, "ingest") in stages and (0, "ask") in stages
    asks = [ev for i, ev in events if i == 1 and ev.stage == "ask"]
    assert [(ev.done, ev.total) for ev in asks] == [(n, 4) for n in range(5)]
    if SCORE_PY.is_file():
        assert stages[-1] == (1, "score")


@pytest.mark.slow
def test_records_hold_per_question_figures(evaluated):
    _, reports, _ = evaluated
    records = {r.id: r for r in reports[0].records}
    assert list(records) == ["t1", "t2", "t3", "t4"]
    t1 = records["t1"]
    assert t1.gold == [GoldRef(doc="policy_brief.pdf", page=2)] and t1.top_pages
    assert t1.recall_at_10 == 1.0 and 0 < t1.mrr_at_10 <= 1 and t1.latency_ms > 0 and t1.error is None
    assert records["t4"].recall_at_10 is None and records["t4"].unanswerable
    assert records["t3"].hops == 2 and records["t3"].modality == "mixed"


@pytest.mark.slow
@pytest.mark.skipif(not SCORE_PY.is_file(), reason="../shared/bench/score.py is not here")
def test_overall_rows_agree_with_the_referee(evaluated):
    _, reports, _ = evaluated
    for report, row in zip(reports, metric_rows(reports, "overall")):
        assert report.summary_line.startswith("SUMMARY"), report.summary_line
        s = report.summary
        assert row.scored == s["retrieval_n"] == 3
        for ours, theirs in [(row.recall_at_1, "R@1"), (row.recall_at_5, "R@5"), (row.recall_at_10, "R@10"),
                             (row.mrr_at_10, "MRR@10"), (row.all_at_10, "All@10")]:
            assert ours == pytest.approx(s[theirs], abs=1e-3), theirs
        if "abstain" in s:
            assert row.abstention == pytest.approx(s["abstain"], abs=1e-3)


@pytest.mark.slow
def test_breakdowns_by_modality_and_hops(evaluated):
    _, reports, _ = evaluated
    by_modality = metric_rows(reports[:1], "modality")
    assert [r.group for r in by_modality] == ["mixed", "table", "text", "null"]
    assert all(r.method == "bm25" and r.breakdown == "modality" for r in by_modality)
    by_hops = {r.group: r for r in metric_rows(reports[:1], "hops")}
    assert list(by_hops) == ["1", "2", "null"]
    assert by_hops["1"].questions == 2 and by_hops["2"].questions == 1 and by_hops["null"].unanswerable == 1
    assert by_hops["null"].recall_at_10 is None  # no gold, nothing to score


@pytest.mark.slow
def test_export_writes_csv_rows_and_json_records(evaluated, tmp_path):
    _, reports, _ = evaluated
    csv_path, json_path = export_reports(reports, tmp_path, "tiny-run")
    rows = list(csv.DictReader(csv_path.open()))
    assert {(r["method"], r["breakdown"], r["group"]) for r in rows} >= {("bm25", "overall", "all"), ("hybrid", "hops", "2")}
    assert float(rows[0]["recall_at_10"]) == metric_rows(reports, "overall")[0].recall_at_10
    data = json.loads(json_path.read_text())
    assert data["methods"] == ["bm25", "hybrid"] and len(data["records"]) == 8
    assert data["records"][0]["id"] == "t1" and data["collection"] == "tiny"


@pytest.mark.slow
def test_benchmark_corpora_stay_out_of_the_users_workspace(bench_service, session_ws, evaluated):
    bench, _, _ = evaluated
    ws = bench_service.benchmark_workspace(bench, session_ws)
    assert ws == (bench_service.settings.workspace_root / "bench" / "tiny").resolve()
    assert {d.file_name for d in bench_service.documents(ws)} == {"policy_brief.pdf", "data_annex.pdf"}
    assert bench_service.documents(session_ws) == []


def test_only_listed_or_uploaded_benchmarks_are_accepted(bench_service, session_ws, tmp_path):
    elsewhere = make_bench(tmp_path / "elsewhere", with_score=False)
    with pytest.raises(WorkspaceError, match="not a listed benchmark"):
        bench_service.benchmark_questions(elsewhere, session_ws)
    with pytest.raises(WorkspaceError):
        bench_service.evaluate(elsewhere, session_ws, ["bm25"])
    with pytest.raises(StrataError, match="No method"):
        bench_service.evaluate(bench_service.benchmark_folders()[0], session_ws, [])


@pytest.mark.slow
def test_run_eval_keeps_the_cli_call_working(bench_service, evaluated, tmp_path):
    bench, _, _ = evaluated
    ws = bench_service.benchmark_workspace(bench, bench_service.new_session_workspace())
    report = run_eval(bench_service.settings, ws, bench, "bm25", top_k=30, limit=2, service=bench_service)
    assert report.questions == 2 and report.predictions.is_file() and len(report.records) == 2
    lines = [json.loads(line) for line in report.predictions.read_text().splitlines()]
    assert [line["id"] for line in lines] == ["t1", "t2"] and lines[0]["results"][0]["doc"].endswith(".pdf")
    assert "method=bm25" in report.text()


@pytest.mark.slow
def test_a_scoped_run_asks_each_question_of_its_documents_and_says_so(bench_service, evaluated, tmp_path):
    bench, _, _ = evaluated
    scoped = tmp_path / "scoped"
    shutil.copytree(bench, scoped)
    rows = [json.loads(line) for line in (scoped / "questions.jsonl").read_text().splitlines()]
    rows[0]["meta"] = {"doc_scope": ["data_annex.pdf"]}  # t1's gold is in the brief: asked of the annex, it is missed
    (scoped / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    ws = bench_service.benchmark_workspace(bench, bench_service.new_session_workspace())
    report = run_eval(bench_service.settings, ws, scoped, "bm25", top_k=30, limit=2, service=bench_service, scoped=True,
                      ingest=False)
    assert report.method == "bm25 (scoped)" and report.predictions.name.endswith(".bm25.scoped.jsonl")
    lines = {json.loads(line)["id"]: json.loads(line) for line in report.predictions.read_text().splitlines()}
    assert {r["doc"] for r in lines["t1"]["results"]} == {"data_annex.pdf"}
    assert len({r["doc"] for r in lines["t2"]["results"]}) == 2  # no doc_scope: the whole workspace
    assert [r.method for r in metric_rows([report])] == ["bm25 (scoped)"]


@pytest.mark.slow
def test_compare_runs_each_method_once_in_order(bench_service, evaluated, session_ws):
    bench, _, _ = evaluated
    ws = bench_service.benchmark_workspace(bench, session_ws)
    results = bench_service.compare(ws, "How many trees did the programme plant?", ["bm25", "hikey", "bm25"], top_k=5)
    assert [r.method for r in results] == ["bm25", "hikey"]
    assert all(0 < len(r.results) <= 5 and r.timings_ms["total"] > 0 for r in results)
    gold = bench_service.parse_gold("policy_brief.pdf p.2")
    hits = bench_service.gold_hits(results[0].results, gold)
    assert any(hits) and hits == [r.doc == "policy_brief.pdf" and r.page == 2 for r in results[0].results]


@pytest.mark.slow
def test_compare_asks_every_method_of_the_same_chosen_documents(bench_service, evaluated, session_ws):
    bench, _, _ = evaluated
    assert bench_service.benchmark_documents(bench, session_ws) == ["data_annex.pdf", "policy_brief.pdf"]
    ws = bench_service.benchmark_workspace(bench, session_ws)
    question = "How many trees did the programme plant?"
    everywhere = bench_service.compare(ws, question, ["bm25", "strata"], top_k=10)
    assert all({r.doc for r in res.results} == {"data_annex.pdf", "policy_brief.pdf"} for res in everywhere)
    scoped = bench_service.compare(ws, question, ["bm25", "strata"], top_k=10, docs=["data_annex.pdf"])
    assert [r.method for r in scoped] == ["bm25", "strata"]
    assert all(res.results and {r.doc for r in res.results} == {"data_annex.pdf"} for res in scoped)
    assert all(c.doc == "data_annex.pdf" for res in scoped for c in res.answer.citations)
    with pytest.raises(StrataError, match="Not in this workspace: 'budget.pdf'"):
        bench_service.compare(ws, question, ["bm25", "dense"], docs=["budget.pdf"])


def test_compare_refuses_no_method_too_many_and_unknown_ones(bench_service, session_ws):
    with pytest.raises(StrataError, match="No method"):
        bench_service.compare(session_ws, "q?", [])
    with pytest.raises(StrataError, match="at most 4"):
        bench_service.compare(session_ws, "q?", ["bm25", "dense", "hybrid", "hikey", "lilac"])
    with pytest.raises(StrataError):
        bench_service.compare(session_ws, "q?", ["bm25", "no-such-method"])


def test_per_call_llm_settings_leave_the_shared_settings_alone(bench_service):
    before = bench_service.settings.model_dump_json()
    llm = bench_service.llm("openai", LLMSettings(model="session-model", api_key="sk-session-only"))
    assert llm.name == "openai:session-model"
    assert bench_service.settings.model_dump_json() == before
    assert bench_service.llm().name == "rules"


@pytest.mark.slow
def test_a_dead_llm_server_is_counted_per_method_and_said_in_plain_words(bench_service, evaluated, tmp_path):
    """The rules answer every question in the failed model's place: each record and prediction
    line says why, the metric row counts them, the report says it with the first reason, and
    score.py still reads the predictions."""
    bench, reports, _ = evaluated
    assert all(row.llm_failed == 0 for row in metric_rows(reports)) and reports[0].llm_failure() is None
    ws = bench_service.benchmark_workspace(bench, bench_service.new_session_workspace())
    dead = LLMSettings(base_url=dead_url(), model="fake-model", max_retries=0, timeout_s=2.0)
    report = run_eval(bench_service.settings, ws, bench, "bm25", top_k=30, limit=2, service=bench_service, ingest=False,
                      out_dir=tmp_path, llm_backend="openai", llm_settings=dead)
    assert [r.error for r in report.records] == [None, None]
    assert all("openai:fake-model failed" in r.llm_error and "cannot reach the server" in r.llm_error for r in report.records)
    (row,) = metric_rows([report])
    assert row.llm_failed == 2 and row.errors == 0
    assert report.llm_failure() == (
        f"The LLM server failed on 2 of 2 questions (the rules answered them): {report.records[0].llm_error}")
    assert report.llm_failure() in report.text()
    lines = [json.loads(line) for line in report.predictions.read_text().splitlines()]
    assert [line["llm_error"] for line in lines] == [r.llm_error for r in report.records]
    if SCORE_PY.is_file():
        assert report.summary_line.startswith("SUMMARY"), report.summary_line  # score.py ignores the extra key
    csv_path, _ = export_reports([report], tmp_path, "dead-llm")
    assert {r["llm_failed"] for r in csv.DictReader(csv_path.open()) if r["breakdown"] == "overall"} == {"2"}
