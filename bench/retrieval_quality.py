"""Retrieval and answer quality of every method on every ../shared/bench collection, scored by
../shared/bench/score.py. Prints one markdown table (figures only on stdout).

    python bench/retrieval_quality.py                       # all collections, all methods
    python bench/retrieval_quality.py --collections dev-tatqa-pdf --methods bm25,hikey --limit 100

Workspaces are kept under --workspace-root (default bench/out/ws), one per collection, so a
second run only re-asks (ingest of unchanged files is a no-op).
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from backend.config import Settings  # noqa: E402
from backend.eval.runner import run_eval  # noqa: E402
from backend.retrieval.base import method_names  # noqa: E402
from backend.service import Service  # noqa: E402

DEFAULT_BENCH = REPO.parent / "shared" / "bench"
COLUMNS = ["R@1", "R@5", "R@10", "MRR@10", "All@10", "DocR@10", "EM", "F1", "abstain"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", type=Path, default=DEFAULT_BENCH, help="folder of collections")
    ap.add_argument("--collections", default="", help="comma-separated collection names (default: all dev-*)")
    ap.add_argument("--methods", default="", help="comma-separated methods (default: the whole registry)")
    ap.add_argument("--workspace-root", type=Path, default=REPO / "bench" / "out" / "ws")
    ap.add_argument("--top-k", type=int, default=30)
    ap.add_argument("--limit", type=int, default=None, help="first N questions of each collection")
    ap.add_argument("--no-ingest", action="store_true",
                    help="ask over the workspaces as they are (no re-parse of documents from an older parser version)")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    collections = [c for c in args.collections.split(",") if c] or sorted(p.name for p in args.bench.glob("dev-*") if p.is_dir())
    methods = [m for m in args.methods.split(",") if m] or method_names()
    settings = Settings()
    service = Service(settings)
    print(f"Retrieval quality, {dt.date.today()}, top-k {args.top_k}, limit {args.limit or 'all'}; command: python {' '.join(sys.argv)}\n")
    print("| collection | method | n | " + " | ".join(COLUMNS) + " | p50 ms | p95 ms | LLM calls/q |")
    print("| --- | --- | --- | " + " | ".join("---" for _ in COLUMNS) + " | --- | --- | --- |")
    for name in collections:
        ws = args.workspace_root / name
        for method in methods:
            rep = run_eval(settings, ws, args.bench / name, method, top_k=args.top_k, limit=args.limit, service=service,
                           ingest=not args.no_ingest)
            s = rep.summary
            cells = [f"{s[c]:.3f}" if c in s else "-" for c in COLUMNS]
            print(f"| {name} | {method} | {int(s.get('n', rep.questions))} | " + " | ".join(cells)
                  + f" | {rep.latency_p50_ms:.0f} | {rep.latency_p95_ms:.0f} | {rep.llm_calls_per_question:.1f} |", flush=True)


if __name__ == "__main__":
    main()
