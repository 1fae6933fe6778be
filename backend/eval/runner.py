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
from pathlib import Path

from backend.config import Settings
from backend.errors import StrataError

log = logging.getLogger(__name__)


def find_score_script(bench: Path) -> Path | None:
    for cand in (bench / "score.py", bench.parent / "score.py"):
        if cand.is_file():
            return cand
    return None


def run_eval(
    settings: Settings, workspace: Path, bench: Path, method: str | None, *, top_k: int = 30, limit: int | None = None,
    out_dir: Path | None = None,
) -> str:
    from backend.__main__ import ask_json
    from backend.service import Service

    questions_path = bench / "questions.jsonl"
    if not questions_path.is_file() or not (bench / "corpus").is_dir():
        raise StrataError(f"'{bench}' is not a benchmark folder: it needs corpus/*.pdf and questions.jsonl.")
    service = Service(settings)
    pdfs = sorted((bench / "corpus").glob("*.pdf"))
    report = service.ingest(workspace, pdfs, lambda ev: None)
    failed = report.failed
    if failed:
        log.warning("%d corpus files failed to ingest: %s", len(failed), "; ".join(f"{f.file_name}: {f.reason}" for f in failed[:5]))
    method = method or settings.retrieval.default_method
    questions = [json.loads(line) for line in questions_path.read_text().splitlines() if line.strip()]
    if limit:
        questions = questions[:limit]
    out_dir = out_dir or workspace / "eval"
    out_dir.mkdir(parents=True, exist_ok=True)
    pred_path = out_dir / f"{bench.name}.{method}.jsonl"
    latencies: list[float] = []
    with pred_path.open("w") as out:
        for i, q in enumerate(questions):
            t = time.perf_counter()
            result = service.ask(workspace, q["question"], method, top_k)
            latencies.append((time.perf_counter() - t) * 1000)
            row = ask_json(result)
            out.write(json.dumps({"id": q["id"], "results": row["results"], "answer": row["answer"]}) + "\n")
            if (i + 1) % 50 == 0:
                log.info("%s %s: %d/%d", bench.name, method, i + 1, len(questions))
    lines = [f"method={method} collection={bench.name} questions={len(questions)} predictions={pred_path}"]
    if latencies:
        lat = sorted(latencies)
        p95 = lat[min(len(lat) - 1, int(0.95 * len(lat)))]
        lines.append(f"latency_ms p50={statistics.median(lat):.1f} p95={p95:.1f}")
    score = find_score_script(bench)
    if score is None:
        lines.append("score.py not found next to the collection; predictions written but not scored")
    else:
        score_json = pred_path.with_suffix(".score.json")
        cmd = [sys.executable, str(score), str(bench), str(pred_path), "--json-out", str(score_json)]
        if limit:
            cmd += ["--limit", str(limit)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        summary = [ln for ln in proc.stdout.splitlines() if ln.startswith("SUMMARY")]
        lines.extend(summary or [proc.stderr.strip() or "score.py printed no SUMMARY line"])
        lines.append(f"full report: {score_json}")
    return "\n".join(lines)
