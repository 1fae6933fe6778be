"""Quick FiF iterations on one bench collection: load the workspace once, run the retriever on
its questions, write predictions and score them with ../shared/bench/score.py.

    python bench/fif_dev.py                                  # fif on dev-hotpot-pdf, all questions
    python bench/fif_dev.py --methods fif,hybrid --limit 60  # compare, first 60 questions
    python bench/fif_dev.py --misses                         # also list the questions All@10 misses

Retrieval only (no packing or reading), so the latency is the retriever's. The workspace must
already hold the collection (bench/retrieval_quality.py ingests it).
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from backend.config import Settings  # noqa: E402
from backend.service import Service  # noqa: E402
from backend.types import Trace  # noqa: E402

BENCH = REPO.parent / "shared" / "bench"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--collection", default="dev-hotpot-pdf")
    ap.add_argument("--workspace-root", type=Path, default=Path("/work/bench-ws"))
    ap.add_argument("--methods", default="fif")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--top-k", type=int, default=30)
    ap.add_argument("--params", default="{}", help="JSON object of retriever parameters")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "fif_dev")
    ap.add_argument("--misses", action="store_true", help="print the questions whose gold pages are not all in the top 10")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    bench = BENCH / args.collection
    questions = [json.loads(line) for line in (bench / "questions.jsonl").read_text().splitlines() if line.strip()]
    questions = questions[: args.limit] if args.limit else questions
    service = Service(Settings())
    t = time.perf_counter()
    corpus = service.corpus(args.workspace_root / args.collection)
    print(f"loaded {len(corpus.documents)} documents in {time.perf_counter() - t:.1f}s", file=sys.stderr)
    args.out.mkdir(parents=True, exist_ok=True)
    params = json.loads(args.params)
    for method in [m for m in args.methods.split(",") if m]:
        pred = args.out / f"{args.collection}.{method}.jsonl"
        latencies: list[float] = []
        actions: Counter[str] = Counter()
        misses: list[tuple[dict, list[str]]] = []
        with pred.open("w") as out:
            for q in questions:
                trace = Trace(method=method)
                llm = service.llm()
                retriever = service.retriever(method, corpus, llm)
                t = time.perf_counter()
                hits = retriever.retrieve(q["question"], args.top_k, dict(params), trace)
                latencies.append((time.perf_counter() - t) * 1000)
                for s in trace.steps:
                    if s.kind == "agent":
                        actions[f"{s.action}:{s.outcome}"] += 1
                        actions["backtracks"] += s.backtrack_to is not None
                rows = []
                for h in hits:
                    node = corpus.nodes[h.node_id]
                    rows.append({"doc": corpus.documents[node.doc].file_name, "page": node.page, "text": node.text[:200]})
                out.write(json.dumps({"id": q["id"], "results": rows, "answer": None}) + "\n")
                pages = list(dict.fromkeys((r["doc"], r["page"]) for r in rows))[:10]
                if args.misses and not all((g["doc"], g["page"]) in pages for g in q["gold"]):
                    misses.append((q, [p[0] for p in pages]))
        cmd = [sys.executable, str(BENCH / "score.py"), str(bench), str(pred)]
        if args.limit:
            cmd += ["--limit", str(args.limit)]
        summary = [ln for ln in subprocess.run(cmd, capture_output=True, text=True).stdout.splitlines() if ln.startswith("SUMMARY")]
        lat = sorted(latencies)
        print(f"{method}: {summary[-1] if summary else 'no SUMMARY'}")
        print(f"  retrieval latency ms p50={statistics.median(lat):.0f} p95={lat[min(len(lat) - 1, int(0.95 * len(lat)))]:.0f}; "
              f"agent actions per question: " + ", ".join(f"{k}={v / len(questions):.2f}" for k, v in sorted(actions.items())))
        for q, pages in misses:
            print(f"  MISS {q['question'][:100]!r}: gold {[g['doc'] for g in q['gold']]}; top {pages[:5]}")


if __name__ == "__main__":
    main()
