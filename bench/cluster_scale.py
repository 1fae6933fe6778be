"""Scale-out bench: one corpus ingested in this process (the local path) and on a local Ray cluster
of 1 and of 2 worker nodes (one CPU each, every node its own raylet, a head that schedules only),
each into a fresh workspace; prints pages/s per configuration and the scaling efficiency
(pages/s with 2 nodes / 2x pages/s with 1 node). Each timing is the ingest call: the local one
loads its encoders inside it, and so do the cluster's node actors; starting the cluster is not
timed, nor is the one-time ONNX export of the text encoder. The cluster workspaces are checked against the local one (same node ids and node count).

--copies N ingests N copies of every PDF (each with its own /Producer, so its own sha256 and
document; the same pages to parse), to give the nodes more than a handful of files.

A machine with fewer than 3 free cores cannot show speed-up here: the nodes share its cores
with the driver, the encoders and each other.

    python bench/cluster_scale.py --corpus sample_corpus --copies 3 --root /tmp/cluster-bench
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")

import pymupdf  # noqa: E402

from backend.config import Settings  # noqa: E402
from backend.graph.store import WorkspaceStore  # noqa: E402
from backend.service import Service  # noqa: E402

OBJECT_STORE_BYTES = 100 * 2**20


def corpus_copies(corpus: Path, copies: int, out: Path) -> list[Path]:
    """Every PDF of `corpus`, `copies` times, each copy with its own producer string."""
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for pdf in sorted(corpus.glob("*.pdf")):
        for k in range(copies):
            target = out / f"{pdf.stem}-{k}.pdf"
            with pymupdf.open(pdf) as doc:
                doc.set_metadata({**(doc.metadata or {}), "producer": f"cluster bench copy {k}"})
                doc.save(target)
            files.append(target)
    return files


def pages_of(files: list[Path]) -> int:
    total = 0
    for f in files:
        with pymupdf.open(f) as doc:
            total += doc.page_count
    return total


def timed_ingest(settings: Settings, workspace: Path, files: list[Path]) -> float:
    shutil.rmtree(workspace, ignore_errors=True)
    t0 = time.perf_counter()
    report = Service(settings).ingest(workspace, files)
    seconds = time.perf_counter() - t0
    if report.failed:
        raise SystemExit(f"{len(report.failed)} files failed in {workspace}: {report.failed[0].reason}")
    return seconds


def on_cluster(settings: Settings, workers: int, workspace: Path, files: list[Path]) -> float:
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True,
                      head_node_args={"num_cpus": 0, "object_store_memory": OBJECT_STORE_BYTES, "include_dashboard": False})
    try:
        for _ in range(workers):
            cluster.add_node(num_cpus=1, object_store_memory=OBJECT_STORE_BYTES)
        cluster.wait_for_nodes()
        ingest = settings.ingest.model_copy(update={"ray_address": cluster.address})
        return timed_ingest(settings.model_copy(update={"ingest": ingest}), workspace, files)
    finally:
        cluster.shutdown()


def node_ids(workspace: Path) -> set[str]:
    store = WorkspaceStore(workspace, create=False)
    try:
        return {n.id for n in store.all_nodes()[0]}
    finally:
        store.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=REPO_ROOT / "sample_corpus")
    ap.add_argument("--copies", type=int, default=1)
    ap.add_argument("--root", type=Path, required=True, help="scratch folder: copies, workspaces, ONNX cache")
    ap.add_argument("--nodes", type=int, nargs="+", default=[1, 2], help="worker node counts to time")
    args = ap.parse_args()

    files = corpus_copies(args.corpus, args.copies, args.root / "corpus")
    pages = pages_of(files)
    settings = Settings(workspace_root=args.root, load_sample=False)
    Service(settings).encoders.text.encode(["warm-up"])  # the one-time ONNX export, before any timing
    print(f"{len(files)} files, {pages} pages; machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    rows = [("local (this process)", timed_ingest(settings, args.root / "ws-local", files))]
    reference = node_ids(args.root / "ws-local")
    for n in args.nodes:
        ws = args.root / f"ws-{n}-nodes"
        rows.append((f"cluster, {n} worker node{'s' if n > 1 else ''}", on_cluster(settings, n, ws, files)))
        same = node_ids(ws) == reference
        print(f"  {n} nodes: workspace {'equals' if same else 'DIFFERS FROM'} the local one (node ids)", flush=True)
    print("\n| configuration | seconds | pages/s |\n|---|---|---|")
    rate = {}
    for name, seconds in rows:
        rate[name] = pages / seconds
        print(f"| {name} | {seconds:.1f} | {pages / seconds:.2f} |")
    one, two = rate.get("cluster, 1 worker node"), rate.get("cluster, 2 worker nodes")
    if one and two:
        print(f"\nscaling efficiency (pages/s at 2 nodes / 2x pages/s at 1 node): {two / (2 * one):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
