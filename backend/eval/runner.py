"""Run one method over a benchmark collection (the ../shared/bench format): ingest its corpus
(unchanged files are no-ops), answer every question, write predictions, and score them with the
collection's score.py. It does not implement the referee's metrics itself: score.py's SUMMARY line
is what a report quotes. Alongside, every question becomes a `QuestionRecord` (its results' pages,
the per-question figures of backend.eval.gold, answer, latency, LLM calls, why the LLM server
failed when the rules answered in its place), which the Evaluate tab
aggregates into tables by method, modality and hops (`metric_rows`) and exports as CSV and JSON.

The questions are asked through anything with the service's `ingest` and `ask` (`EvalService`),
so this module does not import the service. Benchmark folders (listing, zips, paths) are in
backend.eval.folders.
"""

from __future__ import annotations

import csv
import json
import logging
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from backend.config import LLMSettings, Settings
from backend.errors import StrataError
from backend.eval.folders import check_benchmark
from backend.eval.gold import (
    K_MAX,
    BenchQuestion,
    GoldRef,
    answer_scores,
    is_abstention,
    load_questions,
    ranked_pages,
    score_question,
)
from backend.query import PredictionLine
from backend.types import AskResult, IngestReport, ProgressEvent

log = logging.getLogger(__name__)

Breakdown = Literal["overall", "modality", "hops"]
BREAKDOWNS: tuple[Breakdown, ...] = ("overall", "modality", "hops")


@dataclass(frozen=True, slots=True)
class EvalProgress:
    """Where a run is: stage 'ingest' (files of the corpus), 'ask' (questions) or 'score'."""

    stage: Literal["ingest", "ask", "score"]
    done: int
    total: int
    message: str = ""


EvalProgressSink = Callable[[EvalProgress], None]


class QuestionRecord(BaseModel):
    """One question answered by one method, with its per-question retrieval figures."""

    model_config = ConfigDict(extra="forbid")

    method: str
    id: str
    question: str
    modality: str | None = None
    hops: int | None = None
    unanswerable: bool = False
    gold: list[GoldRef] = Field(default_factory=list)
    top_pages: list[tuple[str, int | None]] = Field(default_factory=list, description="First distinct (doc, page) pages, best first.")
    recall_at_1: float | None = None
    recall_at_5: float | None = None
    recall_at_10: float | None = None
    mrr_at_10: float | None = None
    all_at_10: float | None = None
    answer: str | None = None
    abstained: bool = False
    exact_match: float | None = Field(None, description="The answer against the best reference answer (score.py's EM); None without references.")
    f1: float | None = Field(None, description="Token F1 against the best reference answer (score.py's F1); None without references.")
    latency_ms: float = 0.0
    llm_calls: int = 0
    error: str | None = Field(None, description="Why this question could not be answered (the run went on).")
    llm_error: str | None = Field(None, description="Why the LLM server failed on this question; the rules answered in its place.")


class MetricRow(BaseModel):
    """Aggregated figures of one method over one group of questions (all, one modality, one hop count)."""

    model_config = ConfigDict(extra="forbid")

    method: str
    breakdown: Breakdown
    group: str
    questions: int
    scored: int = Field(description="Answerable questions with gold evidence (the retrieval metrics' n).")
    recall_at_1: float | None
    recall_at_5: float | None
    recall_at_10: float | None
    mrr_at_10: float | None
    all_at_10: float | None
    exact_match: float | None = Field(None, description="Mean EM of the questions with reference answers.")
    f1: float | None = Field(None, description="Mean token F1 of the questions with reference answers.")
    unanswerable: int
    abstention: float | None = Field(description="Share of the unanswerable questions answered with an abstention.")
    abstained_all: float = Field(description="Share of all questions answered with an abstention.")
    latency_p50_ms: float
    latency_mean_ms: float
    llm_calls_per_question: float
    errors: int
    llm_failed: int = Field(0, description="Questions the rules answered in place of a failed LLM server: their figures are the "
                            "rules', not the model's.")


@dataclass
class EvalReport:
    method: str
    collection: str
    questions: int
    predictions: Path
    latency_p50_ms: float = 0.0
    latency_p95_ms: float = 0.0
    llm_calls_per_question: float = 0.0
    ingest_failures: list[str] = field(default_factory=list)
    summary: dict[str, float] = field(default_factory=dict)
    summary_line: str = ""
    score_json: Path | None = None
    records: list[QuestionRecord] = field(default_factory=list)

    def text(self) -> str:
        lines = [f"method={self.method} collection={self.collection} questions={self.questions} predictions={self.predictions}"]
        lines.append(f"latency_ms p50={self.latency_p50_ms:.1f} p95={self.latency_p95_ms:.1f} llm_calls/q={self.llm_calls_per_question:.2f}")
        if self.ingest_failures:
            lines.append(f"ingest failures: {len(self.ingest_failures)}: " + "; ".join(self.ingest_failures[:5]))
        errors = [r for r in self.records if r.error]
        if errors:
            lines.append(f"questions that failed: {len(errors)}: " + "; ".join(f"{r.id}: {r.error}" for r in errors[:5]))
        if llm_failure := self.llm_failure():
            lines.append(llm_failure)
        lines.append(self.summary_line or "not scored (no score.py next to the collection)")
        if self.score_json:
            lines.append(f"full report: {self.score_json}")
        return "\n".join(lines)

    def llm_failure(self) -> str | None:
        """In plain words, on how many questions the LLM server failed and the first reason; None
        when it never did. Those answers are the rules', so the run's figures are not the model's."""
        failed = [r for r in self.records if r.llm_error]
        if not failed:
            return None
        return (f"The LLM server failed on {len(failed)} of {len(self.records)} questions (the rules answered them): "
                f"{failed[0].llm_error}")


def find_score_script(bench: Path) -> Path | None:
    for cand in (bench / "score.py", bench.parent / "score.py"):
        if cand.is_file():
            return cand
    return None


def parse_summary(line: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for tok in line.split():
        if "=" in tok:
            k, v = tok.split("=", 1)
            try:
                out[k] = float(v.split("(")[0])
            except ValueError:
                continue
    return out


# ---------------------------------------------------------------- running


class EvalService(Protocol):
    """What the runner needs of the service (backend.service.Service has it)."""

    def ingest(self, workspace: Path, files: list[Path], progress: Callable[[ProgressEvent], None] | None = None) -> IngestReport: ...

    def ask(self, workspace: Path, question: str, method: str | None = None, top_k: int | None = None, **options: Any) -> AskResult: ...


def run_eval(
    settings: Settings, workspace: Path, bench: Path, method: str | None, *, service: EvalService, top_k: int = 30,
    limit: int | None = None, out_dir: Path | None = None, progress: EvalProgressSink | None = None, budget: int | None = None,
    llm_backend: str | None = None, llm_settings: LLMSettings | None = None, ingest: bool = True, params: dict | None = None,
    scoped: bool = False,
) -> EvalReport:
    """Ingest `bench`'s corpus into `workspace`, answer its questions with `method`, score them.
    `scoped`: ask each question of the documents its `meta.doc_scope` names (the whole workspace
    when it names none); the report and its predictions are labelled "METHOD (scoped)", so they
    are never read as the corpus-wide figures.

    A question that fails (a StrataError) is recorded with its error and the run goes on; only
    when every question fails does the run raise, with the first error."""
    bench = Path(bench)
    check_benchmark(bench)
    emit = progress or (lambda ev: None)
    failures = _ingest_corpus(service, workspace, bench, emit) if ingest else []  # ingest=False: the workspace as it is
    method = method or settings.retrieval.default_method
    questions = load_questions(bench, limit)
    out_dir = out_dir or workspace / "eval"
    out_dir.mkdir(parents=True, exist_ok=True)
    label = f"{method} (scoped)" if scoped else method
    pred_path = out_dir / f"{bench.name}.{method}{'.scoped' if scoped else ''}.jsonl"
    # Only what the caller set, so a service without per-call LLM settings still runs the CLI's eval.
    ask_options = {k: v for k, v in (("budget", budget), ("llm_backend", llm_backend), ("llm_settings", llm_settings),
                                     ("params", params)) if v is not None}

    def ask(q: BenchQuestion) -> AskResult:
        docs = {"docs": q.doc_scope} if scoped and q.doc_scope else {}
        return service.ask(workspace, q.question, method, top_k, **ask_options, **docs)

    records = _answer_all(questions, ask, label, pred_path, emit, bench.name)
    if records and all(r.error for r in records):
        raise StrataError(f"Every question of '{bench.name}' failed with {label}: {records[0].error}")
    report = _report(label, bench.name, len(questions), pred_path, records, failures)
    score = find_score_script(bench)
    if score is not None:
        emit(EvalProgress("score", 0, 1, "score.py"))
        _score(report, score, bench, limit)
        emit(EvalProgress("score", 1, 1, "score.py"))
    return report


def _ingest_corpus(service: EvalService, workspace: Path, bench: Path, emit: EvalProgressSink) -> list[str]:
    """Ingest the collection's PDFs (unchanged ones are no-ops); the files that failed, with why."""
    pdfs = sorted((bench / "corpus").glob("*.pdf"))

    def on_ingest(ev: ProgressEvent) -> None:
        if ev.stage in ("open", "done", "failed"):
            emit(EvalProgress("ingest", ev.done, ev.total, f"{ev.doc}: {ev.stage}"))

    report = service.ingest(workspace, pdfs, on_ingest)
    if not report.ok:
        raise StrataError(f"None of the {len(pdfs)} PDFs of '{bench.name}' could be ingested: {report.failed[0].reason}")
    return [f"{f.file_name}: {f.reason}" for f in report.failed]


def _answer_all(
    questions: list[BenchQuestion], ask: Callable[[BenchQuestion], AskResult], method: str, pred_path: Path,
    emit: EvalProgressSink, collection: str,
) -> list[QuestionRecord]:
    """Ask every question, writing one prediction line each (an empty one for a failed question)."""
    records: list[QuestionRecord] = []
    emit(EvalProgress("ask", 0, len(questions), method))
    with pred_path.open("w") as out:
        for i, q in enumerate(questions):
            t = time.perf_counter()
            try:
                result = ask(q)
            except StrataError as exc:
                records.append(_record(method, q, None, (time.perf_counter() - t) * 1000, str(exc)))
                line = PredictionLine(id=q.id, error=str(exc))
            else:
                records.append(_record(method, q, result, (time.perf_counter() - t) * 1000))
                line = PredictionLine.of(q.id, result)
            out.write(line.to_json() + "\n")
            emit(EvalProgress("ask", i + 1, len(questions), f"{method}: question {i + 1} of {len(questions)}"))
            if (i + 1) % 50 == 0:
                log.info("%s %s: %d/%d", collection, method, i + 1, len(questions))
    return records


def _report(
    method: str, collection: str, questions: int, pred_path: Path, records: list[QuestionRecord], ingest_failures: list[str]
) -> EvalReport:
    answered = [r for r in records if not r.error]
    report = EvalReport(
        method=method, collection=collection, questions=questions, predictions=pred_path, ingest_failures=ingest_failures,
        llm_calls_per_question=sum(r.llm_calls for r in answered) / questions if questions else 0.0, records=records,
    )
    if answered:
        lat = sorted(r.latency_ms for r in answered)
        report.latency_p50_ms = statistics.median(lat)
        report.latency_p95_ms = lat[min(len(lat) - 1, int(0.95 * len(lat)))]
    return report


def _score(report: EvalReport, score: Path, bench: Path, limit: int | None) -> None:
    """Run the collection's score.py over the predictions and keep its SUMMARY line."""
    score_json = report.predictions.with_suffix(".score.json")
    cmd = [sys.executable, str(score), str(bench), str(report.predictions), "--json-out", str(score_json)]
    if limit:
        cmd += ["--limit", str(limit)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    summary = [ln for ln in proc.stdout.splitlines() if ln.startswith("SUMMARY")]
    report.summary_line = summary[-1] if summary else (proc.stderr.strip() or "score.py printed no SUMMARY line")
    report.summary = parse_summary(report.summary_line)
    report.score_json = score_json


def _record(method: str, q: BenchQuestion, result, latency_ms: float, error: str | None = None) -> QuestionRecord:
    record = QuestionRecord(
        method=method, id=q.id, question=q.question, modality=q.modality, hops=q.hops, unanswerable=q.unanswerable,
        gold=q.gold, latency_ms=round(latency_ms, 2), error=error,
    )
    if result is None:
        if q.answers:  # a failed question with reference answers: it answered nothing
            record.exact_match = record.f1 = 0.0
        return record
    record.top_pages = ranked_pages(result.results)[:K_MAX]
    record.answer = result.answer.text
    record.abstained = is_abstention(result.answer.text, result.answer.abstained)
    record.llm_calls = result.llm_calls
    record.llm_error = result.llm_error
    answered = answer_scores(result.answer.text, result.answer.abstained, q.answers)
    if answered is not None:
        record.exact_match, record.f1 = answered
    scores = score_question(result.results, q.gold) if q.scored else None
    if scores is not None:
        record.recall_at_1, record.recall_at_5, record.recall_at_10 = (scores.recall[k] for k in (1, 5, 10))
        record.mrr_at_10 = scores.mrr
        record.all_at_10 = scores.all_found
    elif q.scored:  # failed question with gold: it found nothing
        record.recall_at_1 = record.recall_at_5 = record.recall_at_10 = record.mrr_at_10 = record.all_at_10 = 0.0
    return record


# ---------------------------------------------------------------- aggregating and exporting


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def _group_order(value: str) -> tuple:
    """Numbers in numeric order, then other labels alphabetically, 'null' last (as score.py)."""
    if value == "null":
        return (2, 0.0, value)
    try:
        return (0, float(value), value)
    except ValueError:
        return (1, 0.0, value)


def _row(method: str, breakdown: Breakdown, group: str, records: list[QuestionRecord]) -> MetricRow:
    scored = [r for r in records if r.recall_at_10 is not None]
    unanswerable = [r for r in records if r.unanswerable]
    ok = [r for r in records if not r.error]
    latencies = [r.latency_ms for r in ok]
    return MetricRow(
        method=method, breakdown=breakdown, group=group, questions=len(records), scored=len(scored),
        recall_at_1=_mean([r.recall_at_1 for r in scored]), recall_at_5=_mean([r.recall_at_5 for r in scored]),
        recall_at_10=_mean([r.recall_at_10 for r in scored]), mrr_at_10=_mean([r.mrr_at_10 for r in scored]),
        all_at_10=_mean([r.all_at_10 for r in scored]),
        exact_match=_mean([r.exact_match for r in records if r.exact_match is not None]),
        f1=_mean([r.f1 for r in records if r.f1 is not None]),
        unanswerable=len(unanswerable),
        abstention=_mean([float(r.abstained or r.error is not None) for r in unanswerable]),
        abstained_all=_mean([float(r.abstained) for r in records]) or 0.0,
        latency_p50_ms=round(statistics.median(latencies), 1) if latencies else 0.0,
        latency_mean_ms=round(statistics.fmean(latencies), 1) if latencies else 0.0,
        llm_calls_per_question=round(sum(r.llm_calls for r in records) / len(records), 2) if records else 0.0,
        errors=sum(r.error is not None for r in records),
        llm_failed=sum(r.llm_error is not None for r in records),
    )


def metric_rows(reports: list[EvalReport], breakdown: Breakdown = "overall") -> list[MetricRow]:
    """One row per method ('overall'), or per method and modality / hop count, in method order."""
    rows: list[MetricRow] = []
    for report in reports:
        if breakdown == "overall":
            rows.append(_row(report.method, breakdown, "all", report.records))
            continue
        groups: dict[str, list[QuestionRecord]] = {}
        for r in report.records:
            value = getattr(r, breakdown)
            groups.setdefault("null" if value is None else str(value), []).append(r)
        rows.extend(_row(report.method, breakdown, g, groups[g]) for g in sorted(groups, key=_group_order))
    return rows


def export_reports(reports: list[EvalReport], out_dir: Path, stem: str) -> tuple[Path, Path]:
    """Write the metric rows (every breakdown) as CSV, and rows + per-question records + score.py's
    SUMMARY lines as JSON. Returns (csv path, json path)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = [row for b in BREAKDOWNS for row in metric_rows(reports, b)]
    csv_path = out_dir / f"{stem}.csv"
    with csv_path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(MetricRow.model_fields))
        writer.writeheader()
        writer.writerows(row.model_dump(mode="json") for row in rows)
    json_path = out_dir / f"{stem}.json"
    payload = {
        "collection": reports[0].collection if reports else None,
        "methods": [r.method for r in reports],
        "metrics": [row.model_dump(mode="json") for row in rows],
        "score_py": {r.method: r.summary_line for r in reports},
        "ingest_failures": sorted({f for r in reports for f in r.ingest_failures}),
        "records": [rec.model_dump(mode="json") for r in reports for rec in r.records],
    }
    json_path.write_text(json.dumps(payload, indent=1), encoding="utf-8")
    return csv_path, json_path
