"""Recall@10 of an approximate layer (IVF over 8-bit codes, backend/index/vector.py) against exact
search, by the share of its lists probed: the dev collections' real component vectors (their
workspaces' FAISS files) and their real questions, per tune and check half. This chose the
default of `index.approximate_share` on the tune half.

    python bench/approximate_recall.py --workspace-root /work/scratch/k/roots
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import faiss
import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from backend.config import Settings  # noqa: E402
from backend.index.vector import Approximate, build_approximate, lists_for  # noqa: E402
from backend.service import Service  # noqa: E402
from bench.split import DEFAULT_BENCH, split_of  # noqa: E402

COLLECTIONS = "dev-mmlongbench,dev-docugami-10q,dev-tatqa-pdf,dev-hotpot-pdf"
SHARES = (0.007, 0.013, 0.027, 0.053, 0.106, 0.212, 0.425)


def layer_rows(workspace: Path) -> np.ndarray:
    """(n, dim) the component vectors of a workspace's flat FAISS file."""
    index = faiss.read_index(str(workspace / "index" / "components.faiss"))
    if not isinstance(index, faiss.IndexFlat):
        raise SystemExit(f"{workspace}: the components file is not flat (load it once with index.approximate_rows 0)")
    return faiss.rev_swig_ptr(index.get_xb(), index.ntotal * index.d).reshape(index.ntotal, index.d).copy()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workspace-root", type=Path, required=True, help="one ingested workspace per collection")
    ap.add_argument("--bench", type=Path, default=DEFAULT_BENCH)
    ap.add_argument("--collections", default=COLLECTIONS)
    args = ap.parse_args()
    cols = args.collections.split(",")
    x = np.concatenate([layer_rows(args.workspace_root / c) for c in cols])
    questions = [json.loads(line) for c in cols for line in (args.bench / c / "questions.jsonl").read_text().splitlines() if line]
    q = Service(Settings(load_sample=False)).encoders.text.encode([r["question"] for r in questions]).astype(np.float32)
    half = np.array([split_of(r["id"]) for r in questions])
    exact = np.argsort(-(q @ x.T), axis=1, kind="stable")[:, :10]  # (n_questions, 10)
    lists = lists_for(len(x))
    index = build_approximate(x, Approximate(rows=1))
    print(f"{len(x):,} component rows of {', '.join(cols)}; {len(questions)} questions; {lists} lists\n")
    print("| share of lists | probes | recall@10 tune | recall@10 check | ms per query (batched) |")
    print("| --- | --- | --- | --- | --- |")
    for share in SHARES:
        index.nprobe = Approximate(share=share).probes(lists)
        t0 = time.perf_counter()
        _, got = index.search(q, 10)
        ms = (time.perf_counter() - t0) / len(q) * 1000
        recall = np.array([len(set(a) & set(b)) / 10 for a, b in zip(got, exact)])
        print(f"| {share:.1%} | {index.nprobe} | {recall[half == 'tune'].mean():.3f} | {recall[half == 'check'].mean():.3f} | {ms:.2f} |")


if __name__ == "__main__":
    main()
