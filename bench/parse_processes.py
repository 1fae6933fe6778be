"""Parse time of whole benchmark collections with the pages of each file read by one process and
by more (STRATA_INGEST__PARSE_PROCESSES), in the same run, and whether every file parses to the
same ParsedDocument both ways (stage timings aside).

Each file is parsed in this process with `parse_pdf` (the parse worker's code, without the worker
around it: no memory watch), one setting after the other, so both see the same machine. Identical
parses mean identical workspaces and so identical retrieval: this is the quality check of the
setting, file by file, on the real corpora.

Usage:
    python bench/parse_processes.py [--collections dev-tatqa-pdf,dev-mmlongbench] [--processes 2] [--limit N]
Prints the command line and a markdown table on stdout.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import REPO_ROOT, command_line, machine_note, markdown_table  # noqa: E402

SHARED_BENCH = REPO_ROOT.parent / "shared" / "bench"


def parse_both(path: Path, processes: int) -> tuple[float, float, bool, int, str | None]:
    """(seconds alone, seconds split, identical, pages, failure) for one file."""
    from backend.config import IngestSettings
    from backend.errors import BadPdfError
    from backend.ingest.parser import parse_pdf

    out, seconds = [], []
    for n in (1, processes):
        t = time.perf_counter()
        try:
            parsed = parse_pdf(path, IngestSettings(parse_processes=n), None)
        except BadPdfError as exc:
            return 0.0, 0.0, True, 0, exc.reason
        seconds.append(time.perf_counter() - t)
        parsed.stage_seconds = {}
        out.append(parsed.model_dump_json())
    return seconds[0], seconds[1], out[0] == out[1], parsed.document.pages, None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", type=Path, default=SHARED_BENCH)
    ap.add_argument("--collections", default="dev-tatqa-pdf,dev-docugami-10q,dev-mmlongbench")
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0, help="at most this many files per collection (0: all)")
    args = ap.parse_args()
    sys.modules.setdefault("pymupdf.layout", None)  # as in the worker: the layout model is not loaded
    print(f"`{command_line()}`\n\nmachine at start: {machine_note()}\n")
    rows = []
    for coll in [c for c in args.collections.split(",") if c]:
        files = sorted((args.bench / coll / "corpus").glob("*.pdf"))[: args.limit or None]
        alone = split = 0.0
        pages = same = 0
        differ: list[str] = []
        for path in files:
            a, s, identical, n, failed = parse_both(path, args.processes)
            alone, split, pages = alone + a, split + s, pages + n
            same += identical and not failed
            if not identical:
                differ.append(path.name)
        rows.append((coll, len(files), pages, f"{alone:.1f}", f"{split:.1f}", f"{alone / max(split, 1e-9):.2f}x",
                     f"{same}/{len(files)}", ", ".join(differ[:5]) or "-"))
        print(f"{coll} done", file=sys.stderr)
    print(markdown_table(("collection", "files", "pages", "s, 1 process", f"s, {args.processes} processes", "speed-up",
                          "identical parses", "files that differ"), rows))
    print(f"\nmachine at end: {machine_note()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
