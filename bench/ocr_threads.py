"""RapidOCR's ONNX Runtime threads under an address-space limit like the parse worker's.

The parse worker runs under RLIMIT_AS (backend/ingest/worker.py). ONNX Runtime's default of a
thread per core failed there on a 16-core machine (bench/RESULTS.md, fifteenth session), so
Strata runs RapidOCR's sessions on one thread. This script OCRs one page at 200 dpi in a fresh
process for each (threads, limit) pair, with rapidocr's cap of threads at the core count lifted so
that a small machine can act out a large one, and prints which pairs read the page.

    python bench/ocr_threads.py --pdf FILE --page 3 --threads 1 2 4 16 --limit-mb 1300 1800
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import resource, sys
import numpy as np, pymupdf
threads, limit_mb, pdf, page = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
resource.setrlimit(resource.RLIMIT_AS, (limit_mb << 20, limit_mb << 20))
from rapidocr_onnxruntime import RapidOCR
import rapidocr_onnxruntime.utils.infer_engine as engine_module
engine_module.os.cpu_count = lambda: 1024  # rapidocr ignores a thread count above the core count
pix = pymupdf.open(pdf)[page - 1].get_pixmap(dpi=200)
img = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.height, pix.width, pix.n)[:, :, :3]
lines, _ = RapidOCR(intra_op_num_threads=threads, inter_op_num_threads=1)(img)
print(len(lines or []))
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pdf", type=Path, required=True)
    ap.add_argument("--page", type=int, default=1, help="1-based")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2, 4, 16])
    ap.add_argument("--limit-mb", type=int, nargs="+", default=[1300, 1800])
    args = ap.parse_args(argv)
    env = dict(os.environ, MALLOC_ARENA_MAX="2")  # as the parse worker runs
    print(f"`python bench/ocr_threads.py {' '.join(sys.argv[1:])}` ({os.cpu_count()} CPUs)\n")
    print("| limit MiB | threads | result |\n|---|---|---|")
    for limit in args.limit_mb:
        for threads in args.threads:
            run = subprocess.run([sys.executable, "-c", CHILD, str(threads), str(limit), str(args.pdf), str(args.page)],
                                 env=env, capture_output=True, text=True, timeout=300, cwd=REPO_ROOT)
            last = (run.stderr.strip().splitlines() or [""])[-1]
            result = f"{run.stdout.strip()} lines read" if run.returncode == 0 else f"failed: {last[-90:]}"
            print(f"| {limit} | {threads} | {result} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
