"""What each stage of the query pipeline buys: every method with no stages, with the default set,
and with each stage of the default set alone removed, scored per half (page R@5 and All@10) by
../shared/bench/score.py over already ingested workspaces.

A method's own ranking depends only on the text it ranks by, its depth and its parameters, so it
is computed once per question for every configuration that gives it the same three (a stage that
did not rewrite the question leaves all three as they are) and the stages run on a copy of it.
The figures are those `ask --stages ...` gives; only the method's repeated work is skipped.

    python bench/stages_table.py --workspace-root WS_ROOT --out OUT \
        --collections dev-tatqa-pdf,dev-hotpot-pdf --methods hikey,strata
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from backend.config import Settings  # noqa: E402
from backend.eval.gold import load_questions  # noqa: E402
from backend.query import result_item  # noqa: E402
from backend.retrieval.base import get_retriever_class  # noqa: E402
from backend.service import Service  # noqa: E402
from backend.stages import STAGES  # noqa: E402
from backend.types import Trace  # noqa: E402
from bench.split import DEFAULT_BENCH, HALVES, score_half  # noqa: E402

GRAPH_METHODS = ("hikey", "lilac", "fif", "mirag", "mmgraph", "strata")
COLUMNS = ("R@5", "All@10")


class MemoRetriever:
    """A retriever whose rankings are kept by (ranked text, depth, parameters): the stages of
    each configuration run on a fresh copy, and the method's own steps are replayed into the trace."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.memo: dict[tuple, tuple[list, list, list]] = {}
        self.calls = 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def retrieve(self, question, depth, params, trace: Trace):
        key = (question, depth, json.dumps(params, sort_keys=True, default=str))
        if key not in self.memo:
            self.calls += 1
            own = Trace(method=trace.method, llm_backend=trace.llm_backend)
            hits = self.inner.retrieve(question, depth, params, own)
            self.memo[key] = (list(hits), list(own.steps), list(own.notes))
        hits, steps, notes = self.memo[key]
        trace.steps.extend(steps)
        trace.notes.extend(notes)
        return list(hits)


def configurations() -> dict[str, str]:
    """label -> stages spec: none, default, and default without each stage."""
    names = [s.name for s in STAGES]
    out = {"none": "none", "default": "default"}
    out.update({f"-{n}": ",".join(m for m in names if m != n) for n in names})
    return out


def run_collection(service: Service, workspace: Path, bench: Path, method: str, top_k: int, out_dir: Path,
                   configs: dict[str, str]) -> dict[str, Path]:
    """Predictions of each configuration for one method over one collection; label -> file."""
    corpus = service.corpus(workspace)
    questions = load_questions(bench)
    files = {label: out_dir / f"{bench.name}.{method}.{label}.jsonl" for label in configs}
    handles = {label: path.open("w", encoding="utf-8") for label, path in files.items()}
    pipeline = service._pipeline(corpus, None, None)
    memo = MemoRetriever(service.retriever(method, corpus, pipeline.llm))
    start = time.perf_counter()
    for q in questions:
        memo.memo.clear()
        for label, spec in configs.items():
            hits, _ = pipeline.retrieve(memo, method, q.question, top_k, {}, frozenset(), spec)
            results = [result_item(corpus, i + 1, h) for i, h in enumerate(hits)]
            line = {"id": q.id, "results": [{"doc": r.doc, "page": r.page, "text": r.text, "bbox": r.bbox} for r in results]}
            handles[label].write(json.dumps(line) + "\n")
    for h in handles.values():
        h.close()
    print(f"<!-- {bench.name} {method}: {len(questions)} questions, {memo.calls} method runs, "
          f"{time.perf_counter() - start:.0f} s -->", file=sys.stderr, flush=True)
    return files


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", type=Path, default=DEFAULT_BENCH, help="folder of collections")
    ap.add_argument("--collections", default="", help="comma-separated names (default: every dev-* collection)")
    ap.add_argument("--methods", default=",".join(GRAPH_METHODS), help="comma-separated methods")
    ap.add_argument("--workspace-root", type=Path, required=True, help="holds one ingested workspace per collection")
    ap.add_argument("--top-k", type=int, default=30)
    ap.add_argument("--out", type=Path, required=True, help="prediction files go here")
    ap.add_argument("--configs", default="", help="comma-separated labels to run (default: all): none, default, -STAGE")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    names = [c for c in args.collections.split(",") if c] or sorted(p.name for p in args.bench.glob("dev-*") if p.is_dir())
    methods = [m for m in args.methods.split(",") if m]
    for m in methods:
        get_retriever_class(m)
    args.out.mkdir(parents=True, exist_ok=True)
    service = Service(Settings())
    configs = configurations()
    chosen = [c for c in args.configs.split(",") if c]
    unknown = [c for c in chosen if c not in configs]
    if unknown:
        ap.error(f"unknown configuration(s) {unknown}; choose from {list(configs)}")
    configs = {k: v for k, v in configs.items() if not chosen or k in chosen}
    labels = list(configs)
    print(f"Page R@5 / All@10 per half, top-k {args.top_k}, 1-min load {os.getloadavg()[0]:.1f}; "
          f"command: python {' '.join(sys.argv)}\n")
    print("| collection | method | half | " + " | ".join(labels) + " |")
    print("| --- | --- | --- | " + " | ".join("---" for _ in labels) + " |")
    for name in names:
        for method in methods:
            files = run_collection(service, args.workspace_root / name, args.bench / name, method, args.top_k, args.out, configs)
            for half in HALVES:
                cells = []
                for label in labels:
                    report, _ = score_half(files[label], half, [name], args.bench)
                    r = report["overall"]["retrieval"]
                    cells.append("/".join(f"{r[c]:.3f}" for c in COLUMNS))
                print(f"| {name} | {method} | {half} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
