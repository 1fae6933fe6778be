"""Retrieval quality of the methods on the tune and the check half of each collection, side by
side, scored by ../shared/bench/score.py on each half (bench/split.py's fixed split).

Each method answers every question of a collection once over an already ingested workspace
(`<workspace-root>/<collection>`, see bench/retrieval_quality.py or `python -m backend ingest`);
the predictions are then scored per half. Knobs are chosen on `tune`; figures are quoted on
`check`. Figures only on stdout (one markdown table), logs on stderr.

    python bench/halves_quality.py --workspace-root WS_ROOT --collections dev-hotpot-pdf \
        --methods hybrid,strata --out /tmp/halves
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from backend.config import Settings  # noqa: E402
from backend.eval.runner import run_eval  # noqa: E402
from backend.retrieval.base import method_names  # noqa: E402
from backend.service import Service  # noqa: E402
from bench.split import DEFAULT_BENCH, HALVES, score_half  # noqa: E402

COLUMNS = ("R@1", "R@5", "R@10", "MRR@10", "All@10", "DocR@10")


def _cells(retrieval: dict) -> list[str]:
    return [f"{retrieval[c]:.3f}" if isinstance(retrieval.get(c), (int, float)) else "-" for c in COLUMNS]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", type=Path, default=DEFAULT_BENCH, help="folder of collections")
    ap.add_argument("--collections", default="", help="comma-separated names (default: every dev-* collection)")
    ap.add_argument("--methods", default="", help="comma-separated methods (default: the whole registry)")
    ap.add_argument("--workspace-root", type=Path, required=True, help="holds one ingested workspace per collection")
    ap.add_argument("--top-k", type=int, default=30)
    ap.add_argument("--out", type=Path, required=True, help="prediction files go here")
    ap.add_argument("--params", default="", help="JSON object of method parameters (one method), e.g. '{\"mentions\": false}'")
    ap.add_argument("--tag", default="", help="label of this variant in the table and the prediction file names")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    names = [c for c in args.collections.split(",") if c] or sorted(p.name for p in args.bench.glob("dev-*") if p.is_dir())
    methods = [m for m in args.methods.split(",") if m] or method_names()
    settings = Settings()
    service = Service(settings)
    print(f"Quality per half, {dt.date.today()}, top-k {args.top_k}, 1-min load {os.getloadavg()[0]:.1f}; "
          f"command: python {' '.join(sys.argv)}\n")
    print("| collection | method | half | n | " + " | ".join(COLUMNS) + " | p50 ms |")
    print("| --- | --- | --- | --- | " + " | ".join("---" for _ in COLUMNS) + " | --- |")
    for name in names:
        for method in methods:
            out_dir = args.out / args.tag if args.tag else args.out
            rep = run_eval(settings, args.workspace_root / name, args.bench / name, method, top_k=args.top_k,
                           service=service, out_dir=out_dir, ingest=False, params=json.loads(args.params) if args.params else None)
            pred = out_dir / f"{name}.{method}.jsonl"
            label = f"{method} {args.tag}".strip()
            for half in HALVES:
                report, _ = score_half(pred, half, [name], args.bench)
                retrieval = report["overall"]["retrieval"]
                print(f"| {name} | {label} | {half} | {retrieval['n']} | " + " | ".join(_cells(retrieval))
                      + f" | {rep.latency_p50_ms:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
