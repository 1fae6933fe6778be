"""Run one method over a benchmark collection (the ../shared/bench format): ingest its corpus
(unchanged files are no-ops), answer every question, write predictions, and score them with the
collection's score.py. It does not implement metrics itself: score.py is the referee."""

from __future__ import annotations

import json
import logging
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from backend.config import Settings
from backend.errors import StrataError

log = logging.getLogger(__name__)


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

    def text(self) -> str:
        lines = [f"method={self.method} collection={self.collection} questions={self.questions} predictions={self.predictions}"]
        lines.append(f"latency_ms p50={self.latency_p50_ms:.1f} p95={self.latency_p95_ms:.1f} llm_calls/q={self.llm_calls_per_question:.2f}")
        if self.ingest_failures:
            lines.append(f"ingest failures: {len(self.ingest_failures)}: " + "; ".join(self.ingest_failures[:5]))
        lines.append(self.summary_line or "not scored (no score.py next to the collection)")
        if self.score_json:
            lines.append(f"full report: {self.score_json}")
        return "\n".join(lines)


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


def run_eval(
    settings: Settings, workspace: Path, bench: Path, method: str | None, *, top_k: int = 30, limit: int | None = None,
    out_dir: Path | None = None, service=None,
) -> EvalReport:
    from backend.__main__ import ask_json
    from backend.service import Service

    questions_path = bench / "questions.jsonl"
    if not questions_path.is_file() or not (bench / "corpus").is_dir():
        raise StrataError(f"'{bench}' is not a benchmark folder: it needs corpus/*.pdf and questions.jsonl.")
    service = service or Service(settings)
    pdfs = sorted((bench / "corpus").glob("*.pdf"))
    ingest = service.ingest(workspace, pdfs, lambda ev: None)
    method = method or settings.retrieval.default_method
    questions = [json.loads(line) for line in questions_path.read_text().splitlines() if line.strip()]
    if limit:
        questions = questions[:limit]
    out_dir = out_dir or workspace / "eval"
    out_dir.mkdir(parents=True, exist_ok=True)
    pred_path = out_dir / f"{bench.name}.{method}.jsonl"
    latencies: list[float] = []
    calls = 0
    with pred_path.open("w") as out:
        for i, q in enumerate(questions):
            t = time.perf_counter()
            result = service.ask(workspace, q["question"], method, top_k)
            latencies.append((time.perf_counter() - t) * 1000)
            calls += result.llm_calls
            row = ask_json(result)
            out.write(json.dumps({"id": q["id"], "results": row["results"], "answer": row["answer"]}) + "\n")
            if (i + 1) % 50 == 0:
                log.info("%s %s: %d/%d", bench.name, method, i + 1, len(questions))
    report = EvalReport(
        method=method, collection=bench.name, questions=len(questions), predictions=pred_path,
        ingest_failures=[f"{f.file_name}: {f.reason}" for f in ingest.failed],
        llm_calls_per_question=calls / len(questions) if questions else 0.0,
    )
    if latencies:
        lat = sorted(latencies)
        report.latency_p50_ms = statistics.median(lat)
        report.latency_p95_ms = lat[min(len(lat) - 1, int(0.95 * len(lat)))]
    score = find_score_script(bench)
    if score is not None:
        score_json = pred_path.with_suffix(".score.json")
        cmd = [sys.executable, str(score), str(bench), str(pred_path), "--json-out", str(score_json)]
        if limit:
            cmd += ["--limit", str(limit)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        summary = [ln for ln in proc.stdout.splitlines() if ln.startswith("SUMMARY")]
        report.summary_line = summary[-1] if summary else (proc.stderr.strip() or "score.py printed no SUMMARY line")
        report.summary = parse_summary(report.summary_line)
        report.score_json = score_json
    return report
