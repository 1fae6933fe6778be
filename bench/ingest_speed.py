"""Ingest speed per stage, in pages per second, against raw PyMuPDF text extraction.

Parses every file in-process with backend.ingest.parser.parse_pdf (default IngestSettings; the
parse worker adds only process start-up and JSON transfer) and sums its stage_seconds
(open / extract / layout / hierarchy / components / links), then encodes every node's index
text (backend.index.texts.index_texts) as pipeline.py does: build_encoders(IndexSettings()),
the SentenceTransformerEncoder for documents, sections and components and the subcomponent
encoder (WordLlama by default) for sentences, rows and regions. The
baseline, in the same run over the same files, is `page.get_text("dict")` on every page. Peak
RSS (resource.getrusage) is read after each phase; it only grows, so the phases run from the
lightest to the heaviest.

Default files: every PDF of ../shared/bench/dev-tatqa-pdf/corpus plus the 5 smallest (by
bytes) of ../shared/bench/dev-mmlongbench/corpus.

Usage: python bench/ingest_speed.py [PDF_OR_FOLDER ...] [--smallest N] [--no-encode]
Prints the command line and markdown tables on stdout; logs go to stderr.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pymupdf  # noqa: E402

from backend.config import IndexSettings, IngestSettings  # noqa: E402
from backend.ingest.parser import parse_pdf  # noqa: E402
from bench.common import REPO_ROOT, command_line, machine_note, markdown_table, peak_rss_mb  # noqa: E402

log = logging.getLogger("bench.ingest_speed")
SHARED_BENCH = REPO_ROOT.parent / "shared" / "bench"
STAGES = ("open", "extract", "layout", "hierarchy", "components", "links")


def default_files(smallest: int) -> list[Path]:
    tatqa = sorted((SHARED_BENCH / "dev-tatqa-pdf" / "corpus").glob("*.pdf"))
    mmlb = sorted((SHARED_BENCH / "dev-mmlongbench" / "corpus").glob("*.pdf"), key=lambda p: (p.stat().st_size, p.name))
    return tatqa + mmlb[:smallest]


def expand(paths: list[Path]) -> list[Path]:
    files: list[Path] = []
    for p in paths:
        if p.is_dir():
            files.extend(sorted(p.rglob("*.pdf")))
        elif p.is_file():
            files.append(p)
        else:
            raise SystemExit(f"No file or folder at '{p}'. Name PDFs or folders of PDFs, or give no argument for the default set.")
    return files


def baseline(files: list[Path]) -> tuple[float, int]:
    """(seconds, pages) of raw `page.get_text("dict")` over every page of the files."""
    pages = 0
    t0 = time.perf_counter()
    for path in files:
        with pymupdf.open(path) as doc:
            for page in doc:
                page.get_text("dict")
                pages += 1
    return time.perf_counter() - t0, pages


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="*", type=Path, help="PDFs or folders of PDFs (default: the dev collections, see above)")
    ap.add_argument("--smallest", type=int, default=5, help="default set: how many of the smallest MMLongBench PDFs (default 5)")
    ap.add_argument("--no-encode", action="store_true", help="skip the encode phase (no model load)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")

    files = expand(args.paths) if args.paths else default_files(args.smallest)
    if not files:
        raise SystemExit("No PDF to measure: the default collections are missing; name PDFs or folders.")
    rss: dict[str, float] = {"start": peak_rss_mb()}
    machine_at_start = machine_note()

    raw_s, raw_pages = baseline(files)
    rss["after raw get_text"] = peak_rss_mb()

    settings = IngestSettings()
    stage_s: dict[str, float] = defaultdict(float)
    parsed, failed = [], []
    t0 = time.perf_counter()
    for path in files:
        try:
            doc = parse_pdf(path, settings, None)
        except Exception as exc:  # noqa: BLE001 - a failed file is reported, the rest still count
            failed.append(f"{path.name}: {type(exc).__name__}: {exc}")
            log.error("parse failed for %s: %s", path, exc)
            continue
        parsed.append(doc)
        for stage, seconds in doc.stage_seconds.items():
            stage_s[stage] += seconds
    parse_wall_s = time.perf_counter() - t0
    rss["after parse"] = peak_rss_mb()
    pages = sum(d.document.pages for d in parsed)
    nodes = sum(len(d.nodes) for d in parsed)

    encode_s: dict[str, float] = {}
    encode_n: dict[str, int] = {}
    load_s = 0.0
    if not args.no_encode:
        from backend.index.encoders import build_encoders
        from backend.index.texts import index_texts
        from backend.types import Layer

        encoders = build_encoders(IndexSettings())  # as pipeline.py: MiniLM, and WordLlama for subcomponents
        t0 = time.perf_counter()
        for enc in (encoders.text, encoders.sub):
            enc.encode(["warm up"])  # loads the model; timed apart from encoding
        load_s = time.perf_counter() - t0
        for d in parsed:
            texts = index_texts(d.nodes, {s.id: s for s in d.sections}, {d.document.id: d.document})
            for enc, layer_nodes in (
                (encoders.text, [n for n in d.nodes if n.layer != Layer.SUBCOMPONENT]),
                (encoders.sub, [n for n in d.nodes if n.layer == Layer.SUBCOMPONENT]),
            ):
                t0 = time.perf_counter()
                enc.encode([texts[n.id] for n in layer_nodes])
                encode_s[enc.name] = encode_s.get(enc.name, 0.0) + time.perf_counter() - t0
                encode_n[enc.name] = encode_n.get(enc.name, 0) + len(layer_nodes)
        rss["after encode"] = peak_rss_mb()

    def row(name: str, seconds: float, n_pages: int, share_of: float | None) -> tuple:
        rate = f"{n_pages / seconds:.1f}" if seconds > 0 else "inf"
        share = f"{100 * seconds / share_of:.1f}%" if share_of else ""
        return (name, f"{seconds:.2f}", rate, share)

    parse_s = sum(stage_s.values())
    rows = [row(f"parse: {s}", stage_s.get(s, 0.0), pages, parse_s) for s in STAGES]
    rows += [row(f"parse: {s} (other)", v, pages, parse_s) for s, v in stage_s.items() if s not in STAGES]
    rows.append(row("parse: all stages", parse_s, pages, parse_s))
    for name, seconds in encode_s.items():
        rows.append(row(f"encode: {encode_n[name]} texts with {name}", seconds, pages, None))
    if encode_s:
        rows.append(row("parse + encode", parse_s + sum(encode_s.values()), pages, None))
    rows.append(row('baseline: raw page.get_text("dict")', raw_s, raw_pages, None))

    print(f"`{command_line()}`")
    print()
    print(f"machine at start: {machine_at_start}; at end: {machine_note()}")
    print()
    print(f"{len(files)} files, {raw_pages} pages; parsed {len(parsed)} files ({pages} pages, {nodes} nodes), {len(failed)} failed")
    print()
    print(markdown_table(("phase", "seconds", "pages/s", "share of parse"), rows))
    print()
    extra = [("parse wall clock (incl. hashing, cards)", f"{parse_wall_s:.2f} s")]
    if not args.no_encode:
        extra.append(("encoder loads (not in encode)", f"{load_s:.2f} s"))
    extra.append(("parse / baseline time", f"{parse_s / raw_s:.1f}x" if raw_s else "n/a"))
    extra += [(f"peak RSS {k}", f"{v:.0f} MiB") for k, v in rss.items()]
    print(markdown_table(("figure", "value"), extra))
    for line in failed:
        print(f"- failed: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
