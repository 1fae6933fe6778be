"""Golden run of every retrieval method: ranked node ids, scores and answer text as JSON.

Use it to prove that a structural refactor leaves behaviour unchanged: run it before, keep the
output, run it after, diff the two files. It ingests the sample corpus (and, with --tatqa N, the
first N documents of a dev collection and their questions) into a scratch workspace, then asks
every registered method every question with the offline rules backend.

What it does not do: score quality (bench/retrieval_quality.py does) or time anything.

    python bench/golden_retrieval.py --root /work/scratch/a/golden --out before.json [--tatqa 15]
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from backend.config import Settings  # noqa: E402
from backend.retrieval.base import method_names  # noqa: E402
from backend.service import Service  # noqa: E402
from tests.fixtures.sample_questions import SAMPLE_QUESTIONS  # noqa: E402

log = logging.getLogger("golden")

DEFAULT_TATQA = Path("/work/shared/bench/dev-tatqa-pdf")


def tatqa_subset(bench: Path, n_docs: int, max_questions: int) -> tuple[list[Path], list[str]]:
    """The first n_docs documents (sorted names) and up to max_questions questions scoped to them."""
    docs = sorted((bench / "corpus").glob("*.pdf"))[:n_docs]
    names = {d.name for d in docs}
    questions: list[str] = []
    for line in (bench / "questions.jsonl").read_text().splitlines():
        row = json.loads(line)
        scope = set(row.get("meta", {}).get("doc_scope") or [g["doc"] for g in row.get("gold", [])])
        if scope and scope <= names:
            questions.append(row["question"])
        if len(questions) >= max_questions:
            break
    return docs, questions


def _untimed(value):
    """The trace without wall-clock fields (they differ run to run)."""
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if not (k.endswith("_ms") or k.endswith("seconds"))}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def run_set(service: Service, workspace: Path, files: list[Path], questions: list[str], top_k: int) -> dict:
    if not (workspace / "strata.sqlite").exists():
        report = service.ingest(workspace, files)
        failed = [f.file for f in report.files if f.status == "failed"]
        if failed:
            log.warning("failed to ingest: %s", failed)
    out: dict = {}
    for method in method_names():
        rows = []
        for q in questions:
            res = service.ask(workspace, q, method=method, top_k=top_k, llm_backend="rules")
            rows.append({
                "question": q,
                "results": [[r.node_id, round(r.score, 6)] for r in res.results],
                "answer": res.answer.text,
                "citations": [c.model_dump(mode="json") for c in res.answer.citations],
                "trace": _untimed(res.trace.model_dump(mode="json")),
            })
        out[method] = rows
        log.info("%s done", method)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", type=Path, required=True, help="scratch folder for the workspaces")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--top-k", type=int, default=10)
    ap.add_argument("--tatqa", type=int, default=0, help="also this many tatqa documents (0: none)")
    ap.add_argument("--tatqa-questions", type=int, default=15)
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    service = Service(Settings(workspace_root=args.root, load_sample=False))
    result = {"sample": run_set(service, args.root / "sample", sorted((REPO_ROOT / "sample_corpus").glob("*.pdf")),
                                list(SAMPLE_QUESTIONS), args.top_k)}
    if args.tatqa:
        docs, questions = tatqa_subset(DEFAULT_TATQA, args.tatqa, args.tatqa_questions)
        result["tatqa"] = run_set(service, args.root / "tatqa", docs, questions, args.top_k)
    args.out.write_text(json.dumps(result, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
