"""How far int8 variants of the MiniLM ONNX graph move vectors and rankings from fp32, and how much
faster they encode, in the same run.

Component texts are sampled from ingested workspaces (their index texts, as ingest encodes them);
each collection's questions are ranked among the sample by every variant and compared with the
fp32 ranking (top-10 overlap, same top-1). The variants are ONNX Runtime's dynamic quantisation
of the exported fp32 graph: every weight MatMul (what `index.text_runtime=onnx-int8` ships),
per-tensor scales, and the transformer's FFN projections left in fp32. Nothing is downloaded:
the graph is exported from the local MiniLM into --cache.

Usage:
    python bench/int8_fidelity.py --workspace-root ROOT [--collections dev-mmlongbench,dev-docugami-10q] [--sample 1500]
ROOT holds one workspace per collection (as bench/halves_quality.py expects). Prints the command
line and a markdown table on stdout.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from bench.common import REPO_ROOT, command_line, machine_note, markdown_table  # noqa: E402

SHARED_BENCH = REPO_ROOT.parent / "shared" / "bench"
LAYERS = range(6)  # all-MiniLM-L6-v2
FFN_DOWN = [f"/model/encoder/layer.{i}/output/dense/MatMul" for i in LAYERS]
FFN_UP = [f"/model/encoder/layer.{i}/intermediate/dense/MatMul" for i in LAYERS]
VARIANTS: dict[str, dict] = {
    "every weight MatMul, per channel (the onnx-int8 setting)": dict(per_channel=True),
    "per tensor": dict(per_channel=False),
    "FFN down-projection kept fp32": dict(per_channel=True, nodes_to_exclude=FFN_DOWN),
    "FFN up-projection kept fp32": dict(per_channel=True, nodes_to_exclude=FFN_UP),
    "both FFN projections kept fp32": dict(per_channel=True, nodes_to_exclude=FFN_DOWN + FFN_UP),
}


def sample_texts(root: Path, bench: Path, collections: list[str], n: int, seed: int) -> tuple[list[str], list[str]]:
    """n component index texts per collection's workspace, and every question of the collection."""
    from backend.graph.store import WorkspaceStore
    from backend.index.texts import index_texts
    from backend.types import Layer

    rng = random.Random(seed)
    texts: list[str] = []
    questions: list[str] = []
    for name in collections:
        store = WorkspaceStore(root / name)
        try:
            nodes, _ = store.all_nodes()
            indexed = index_texts(nodes, {s.id: s for s in store.all_sections()}, {d.id: d for d in store.documents()})
        finally:
            store.close()
        comps = [indexed[n.id] for n in nodes if n.layer == Layer.COMPONENT]
        texts += rng.sample(comps, min(n, len(comps)))
        lines = (bench / name / "questions.jsonl").read_text().splitlines()
        questions += [json.loads(line)["question"] for line in lines if line.strip()]
    return texts, questions


def encoder_for(graph: Path, cache: Path):
    """The shipped ONNX encoder (tokenizer, batching, pooling) over another graph file."""
    from backend.config import IndexSettings
    from backend.index.encoders import OnnxTextEncoder

    enc = OnnxTextEncoder(IndexSettings(device="cpu"), cache)
    enc.file = graph
    return enc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workspace-root", type=Path, required=True)
    ap.add_argument("--bench", type=Path, default=SHARED_BENCH)
    ap.add_argument("--collections", default="dev-mmlongbench,dev-docugami-10q")
    ap.add_argument("--sample", type=int, default=1500, help="component texts per collection")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--cache", type=Path, default=None, help="folder for the exported graphs (default: a temporary one)")
    args = ap.parse_args()
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from backend.config import IndexSettings
    from backend.index.encoders import OnnxTextEncoder

    cache = args.cache or Path(tempfile.mkdtemp(prefix="int8-fidelity-"))
    print(command_line(), "\n\nmachine at start:", machine_note(), "\n")
    texts, questions = sample_texts(args.workspace_root, args.bench, args.collections.split(","), args.sample, args.seed)
    fp32 = OnnxTextEncoder(IndexSettings(device="cpu"), cache)
    fp32.encode(texts[:50])  # exports the graph and warms the session
    t0 = time.perf_counter()
    ref = fp32.encode(texts)
    ref_s = time.perf_counter() - t0
    ref_top = np.argsort(-(fp32.encode(questions) @ ref.T), axis=1)[:, :10]  # (n_questions, 10)
    rows = [["fp32 (reference)", f"{ref_s:.1f} s", "1 / 1", "1", "1"]]
    for name, options in VARIANTS.items():
        graph = cache / f"variant-{len(rows)}.onnx"
        if not graph.exists():
            quantize_dynamic(str(fp32.file), str(graph), weight_type=QuantType.QInt8, **options)
        enc = encoder_for(graph, cache)
        enc.encode(texts[:50])
        t0 = time.perf_counter()
        vecs = enc.encode(texts)
        secs = time.perf_counter() - t0
        cos = (vecs * ref).sum(axis=1)
        top = np.argsort(-(enc.encode(questions) @ vecs.T), axis=1)[:, :10]
        overlap = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(top, ref_top)])
        rows.append([name, f"{secs:.1f} s ({ref_s / secs:.2f}x)", f"{cos.mean():.3f} / {cos.min():.3f}", f"{overlap:.3f}",
                     f"{np.mean(top[:, 0] == ref_top[:, 0]):.3f}"])
    print(f"{len(texts):,} component texts, {len(questions):,} questions ranked among them\n")
    print(markdown_table(["variant", f"encode {len(texts):,} texts", "cosine to fp32 mean / min", "question top-10 overlap", "same top-1"], rows))
    print("\nmachine at end:", machine_note())


if __name__ == "__main__":
    main()
