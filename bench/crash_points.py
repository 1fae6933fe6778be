"""kill -9 at random moments of an ingest, N times: the workspace must stay readable and consistent.

tests/graph/test_persistence.py kills the CLI (and its parse worker) once, just after the first
commit. This repeats it at random points of the whole batch (before the database exists, while
a file is parsed, encoded or committed, between files), each time checking what the test checks:
SQLite's integrity check passes, the store opens, every stored document is whole (sections,
nodes with embeddings, edges, its PDF copy) and no table holds rows of a document that is not
there. Every `--resume-every` kills, a further ingest of the batch must complete over the
killed workspace. Prints one line per kill and a summary.

    timeout 1800 python bench/crash_points.py --n 50 --out /work/scratch/c/crash
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # run as a script: sys.path[0] is bench/
    sys.path.insert(0, str(REPO_ROOT))
SAMPLE = ["policy_brief.pdf", "data_annex.pdf", "methods_appendix.pdf", "cool_streets_report.pdf"]


def _spawn(workspace: Path, files: list[Path]) -> subprocess.Popen:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false", PYTHONPATH=str(REPO_ROOT))
    return subprocess.Popen(
        [sys.executable, "-m", "backend", "ingest", "--workspace", str(workspace), *map(str, files)],
        cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )


def _rows(db_path: Path, sql: str, *args) -> list[tuple]:
    db = sqlite3.connect(db_path)
    try:
        return db.execute(sql, args).fetchall()
    finally:
        db.close()


def check_workspace(workspace: Path) -> tuple[int, list[str]]:
    """(documents stored, problems found); a workspace killed before its database exists is fine."""
    from backend.graph.store import WorkspaceStore

    db = workspace / "strata.sqlite"
    if not db.exists():
        return 0, []
    problems: list[str] = []
    if _rows(db, "PRAGMA integrity_check") != [("ok",)]:
        return 0, ["integrity_check failed"]
    store = WorkspaceStore(workspace, create=False)
    try:
        docs = store.documents()
        ids = {d.id for d in docs}
        for d in docs:
            if _rows(db, "SELECT COUNT(*) FROM sections WHERE doc=?", d.id)[0][0] < 1:
                problems.append(f"{d.file_name}: no sections")
            if _rows(db, "SELECT COUNT(*) FROM nodes WHERE doc=? AND emb IS NOT NULL", d.id)[0][0] < 10:
                problems.append(f"{d.file_name}: nodes without embeddings")
            if not store.pdf_path(d.id).is_file():
                problems.append(f"{d.file_name}: its PDF copy is missing")
        for table in ("sections", "nodes", "edges", "blocks", "doc_links"):
            orphans = {r[0] for r in _rows(db, f"SELECT DISTINCT doc FROM {table}")} - ids
            if orphans:
                problems.append(f"half-written rows in {table}: {sorted(orphans)}")
    finally:
        store.close()
    return len(docs), problems


def _full_run_seconds(out: Path, files: list[Path]) -> float:
    ws = out / "calibrate"
    shutil.rmtree(ws, ignore_errors=True)
    t0 = time.perf_counter()
    proc = _spawn(ws, files)
    proc.wait(timeout=900)
    return time.perf_counter() - t0


def _kill_once(ws: Path, files: list[Path], at_s: float) -> tuple[bool, float]:
    """Run the batch and kill its process group at_s seconds in; (killed before it finished, seconds)."""
    shutil.rmtree(ws, ignore_errors=True)
    t0 = time.perf_counter()
    proc = _spawn(ws, files)
    try:
        proc.wait(timeout=at_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        return True, time.perf_counter() - t0
    return False, time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=50, help="kills")
    ap.add_argument("--out", type=Path, default=Path("/work/scratch/c/crash"))
    ap.add_argument("--resume-every", type=int, default=10, help="every K-th kill, check a further ingest completes")
    ap.add_argument("--seed", type=int, default=12)
    args = ap.parse_args()
    files = [REPO_ROOT / "sample_corpus" / n for n in SAMPLE]
    args.out.mkdir(parents=True, exist_ok=True)
    full = _full_run_seconds(args.out, files)
    print(f"a full ingest of {len(files)} files takes {full:.1f} s here; killing at uniform random points in (0, {full:.1f}) s", flush=True)
    rng = random.Random(args.seed)
    bad, resumed = 0, 0
    docs_seen: list[int] = []
    for i in range(args.n):
        at = rng.uniform(0.05, full)
        killed, secs = _kill_once(args.out / "ws", files, at)
        docs, problems = check_workspace(args.out / "ws")
        docs_seen.append(docs)
        if killed and args.resume_every and (i + 1) % args.resume_every == 0:
            problems += _resume(args.out / "ws", files)
            resumed += 1
        bad += bool(problems)
        print(f"kill {i + 1:3}/{args.n} at {at:6.2f} s ({'killed' if killed else 'finished first'}): {docs} documents stored, "
              + ("consistent" if not problems else "PROBLEMS: " + "; ".join(problems)), flush=True)
    print(f"summary: {args.n} kills, {bad} inconsistent workspaces, {resumed} resumed ingests; "
          f"documents stored at the kill: {dict(sorted({d: docs_seen.count(d) for d in docs_seen}.items()))}")
    return 1 if bad else 0


def _resume(ws: Path, files: list[Path]) -> list[str]:
    proc = _spawn(ws, files)
    if proc.wait(timeout=900) != 0:
        return [f"the further ingest exited with {proc.returncode}"]
    docs, problems = check_workspace(ws)
    return problems + ([] if docs == len(files) else [f"after a further ingest {docs} of {len(files)} documents"])


if __name__ == "__main__":
    sys.exit(main())
