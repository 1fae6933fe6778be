"""Where a loaded corpus's memory goes: the load's time, RSS before and after it and its peak, what the
allocators hold against what is in use, and the corpus's own arrays, for this checkout and any
other given (a git worktree of an older commit), each loaded in its own process, one after the
other in the same run.

    python bench/corpus_memory.py --workspace /work/scratch/h/scale/p100000 [--repo OLD_CHECKOUT ...]

Python's small-object allocator (pymalloc) hands an arena (1 MiB) back to the system only when
every object in it is gone, so a load that keeps a few objects among many transient ones holds
the arenas around them: "arenas held" against "small objects in use" shows it. glibc's figures
are from mallinfo2 after malloc_trim.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]

# Runs inside the checkout being measured; prints one JSON line.
PROBE = r'''
import ctypes, gc, json, os, sys, tempfile, time
sys.path.insert(0, os.getcwd())
from pathlib import Path
from backend.config import Settings
from backend.service import Service
from backend import heap

def status():
    out = {}
    for line in open("/proc/self/status"):
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) // 1024
    return out

def pymalloc():
    """(arenas held, bytes in allocated blocks) from sys._debugmallocstats (written to fd 2)."""
    with tempfile.TemporaryFile("w+") as f:
        saved = os.dup(2)
        os.dup2(f.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        f.seek(0)
        text = f.read()
    arenas = int(text.split("# arenas allocated current")[1].split("=")[1].split()[0].replace(",", ""))
    used = int(text.split("# bytes in allocated blocks")[1].split("=")[1].split()[0].replace(",", ""))
    return arenas, used

class MallInfo(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]

svc = Service(Settings(load_sample=False))
svc.encoder.encode(["warm"]); svc.encoders.sub.encode(["warm"])
gc.collect(); heap.trim()
before = status()
t0 = time.perf_counter()
corpus = svc.corpus(Path(sys.argv[1]))
load_s = time.perf_counter() - t0
gc.collect(); heap.trim()
after = status()
arenas, used = pymalloc()
libc = ctypes.CDLL("libc.so.6"); libc.mallinfo2.restype = MallInfo
info = libc.mallinfo2()
nodes = corpus.nodes
mib = 2 ** 20
print(json.dumps({
    "load_s": round(load_s, 1), "rss_before": before["VmRSS"], "rss_after": after["VmRSS"], "peak": after["VmHWM"],
    "pymalloc_arenas": arenas, "pymalloc_used": used // mib,
    "glibc_in_use": info.uordblks // mib, "glibc_mmapped": info.hblkhd // mib,
    "nodes": len(nodes), "node_columns": nodes.nbytes() // mib if hasattr(nodes, "nbytes") else None,
    "edges": corpus.edges.nbytes() // mib,
    "vectors": sum(layer.dense.nbytes for layer in corpus.layers.values()) // mib,
}))
'''

ROWS = [
    ("load, s", lambda r: r["load_s"]),
    ("corpus RSS (after - before the load), MB", lambda r: r["rss_after"] - r["rss_before"]),
    ("peak RSS of the process, MB", lambda r: r["peak"]),
    ("pymalloc arenas held, MB", lambda r: r["pymalloc_arenas"]),
    ("pymalloc small objects in use, MB", lambda r: r["pymalloc_used"]),
    ("glibc heap in use, MB", lambda r: r["glibc_in_use"]),
    ("glibc mmapped blocks, MB", lambda r: r["glibc_mmapped"]),
    ("vectors and codes (FAISS), MB", lambda r: r["vectors"]),
    ("edge arrays, MB", lambda r: r["edges"]),
    ("node columns and text buffer, MB", lambda r: r["node_columns"] if r["node_columns"] is not None else "-"),
    ("nodes", lambda r: f"{r['nodes']:,}"),
]


def measure(repo: Path, workspace: Path) -> dict:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(PROBE)
    try:
        out = subprocess.run([sys.executable, f.name, str(workspace)], cwd=repo, env=env, capture_output=True, text=True, check=True)
    finally:
        os.unlink(f.name)
    return json.loads(out.stdout.strip().splitlines()[-1])


def commit_of(repo: Path) -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=repo, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return repo.name


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workspace", type=Path, required=True, help="an ingested workspace (e.g. one bench/scale.py built)")
    ap.add_argument("--repo", type=Path, action="append", default=[], help="another checkout to measure first (repeatable)")
    args = ap.parse_args()
    repos = [*args.repo, HERE]
    results = [(commit_of(r), measure(r, args.workspace)) for r in repos]
    print(f"## {args.workspace}")
    print("| | " + " | ".join(name for name, _ in results) + " |")
    print("|---|" + "---|" * len(results))
    for label, value in ROWS:
        print(f"| {label} | " + " | ".join(str(value(r)) for _, r in results) + " |")


if __name__ == "__main__":
    main()
