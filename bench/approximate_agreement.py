"""How far approximate layers move each method's answers on a big workspace: every method answers
the golden sample questions (top 10, rules backend) once with every layer exact
(`index.approximate_rows` 0) and once with the default settings, each in its own process (one
100k-page corpus at a time); then the two top-10s are compared by node id and by source unit.

A scale workspace (bench/scale.py) is thousands of replicas of a few documents, so many rows are
near copies and which replica ranks 7th is close to chance: "by source unit" counts two hits as
the same when they are replicas of one unit of the source workspace (the file name before
`__r`, and the node id after the document id). Load time, corpus RSS and p50 of each run are
printed too (a run that writes the other kind of FAISS files first includes that in its load).

    python bench/approximate_agreement.py --workspace /work/scratch/h/scale/p100000 --out /tmp/agree
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

METHODS = "hybrid,dense,hikey,lilac,fif,mirag,strata,mmgraph"


def answer(workspace: Path, out: Path, methods: list[str]) -> None:
    """In this process: load the workspace with the environment's settings and save each
    method's top-10 ids per question to `out`."""
    from backend.config import Settings
    from backend.service import Service
    from backend.types import Trace
    from bench.golden_retrieval import SAMPLE_QUESTIONS
    from bench.scale import forget_queries, rss_mb

    service = Service(Settings(workspace_root=workspace.parent, load_sample=False))
    service.encoder.encode(["load the models first"])
    service.encoders.sub.encode(["load the models first"])
    rss0, t0 = rss_mb(), time.perf_counter()
    corpus = service.corpus(workspace)
    load_s, rss1 = time.perf_counter() - t0, rss_mb()
    kinds = ", ".join(f"{n} {'exact' if layer.dense.exact else 'approximate'}" for n, layer in corpus.layers.items())
    print(f"load {load_s:.1f} s, corpus {rss1 - rss0:.0f} MB ({kinds})", flush=True)
    llm, results = service.llm("rules"), {}
    for method in methods:
        times = []
        for q in SAMPLE_QUESTIONS:
            forget_queries(service)
            t = time.perf_counter()
            hits = service.retriever(method, corpus, llm=llm).retrieve(q, 10, {}, Trace(method=method))
            times.append(time.perf_counter() - t)
            results[f"{method}\t{q}"] = [h.node_id for h in hits]
        times.sort()
        print(f"{method}: p50 {1000 * times[len(times) // 2]:.0f} ms", flush=True)
    out.write_text(json.dumps(results))


def source_of(workspace: Path):
    """node id -> its source unit (the replicated document's file name before `__r`, the id after the document id)."""
    with sqlite3.connect(workspace / "strata.sqlite") as db:
        names = dict(db.execute("SELECT id, file_name FROM documents"))

    def source(node_id: str) -> str:
        doc, _, rest = node_id.partition(":")
        return names.get(doc, doc).split("__r")[0] + ":" + rest

    return source


def compare(workspace: Path, exact: dict, approx: dict) -> list[str]:
    source = source_of(workspace)
    by_method: dict[str, list[tuple[float, float, bool]]] = {}
    for key, a in exact.items():
        b = approx.get(key, [])
        same_ids = len(set(a) & set(b)) / max(1, len(a))
        same_sources = sum((Counter(map(source, a)) & Counter(map(source, b))).values()) / max(1, len(a))
        by_method.setdefault(key.split("\t")[0], []).append((same_ids, same_sources, bool(a and b and source(a[0]) == source(b[0]))))
    lines = ["| method | top-10 ids shared | top-10 source units shared | same top-1 source unit |", "| --- | --- | --- | --- |"]
    for method, rows in by_method.items():
        n = len(rows)
        lines.append(f"| {method} | {sum(r[0] for r in rows) / n:.2f} | {sum(r[1] for r in rows) / n:.2f} | {sum(r[2] for r in rows)}/{n} |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workspace", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True, help="folder for the two runs' answers")
    ap.add_argument("--methods", default=METHODS)
    ap.add_argument("--answer", type=Path, help=argparse.SUPPRESS)  # internal: one run, in this process
    args = ap.parse_args()
    methods = args.methods.split(",")
    if args.answer:
        answer(args.workspace, args.answer, methods)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    runs = {"exact": {"STRATA_INDEX__APPROXIMATE_ROWS": "0"}, "approximate": {}}
    for name, env in runs.items():
        print(f"## {name}", flush=True)
        subprocess.run(
            [sys.executable, __file__, "--workspace", str(args.workspace), "--out", str(args.out), "--methods", args.methods,
             "--answer", str(args.out / f"{name}.json")],
            env={**os.environ, **env}, check=True,
        )
    exact, approx = (json.loads((args.out / f"{n}.json").read_text()) for n in runs)
    print("\n".join(["", *compare(args.workspace, exact, approx)]))


if __name__ == "__main__":
    main()
