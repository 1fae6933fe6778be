"""Precision and recall of the tables found on labelled real pages: ruled tables only (find_tables,
as ingest read pages before borderless.py) against ruled + borderless tables and ruled + borderless
+ statement tables (statements.py: line items and columns of figures), in one run, with
PyMuPDF's own text-alignment finder (find_tables(strategy="text")) beside them for reference.

Labels: bench/probes/tables/pages.jsonl, one page a line: {"half": "tune"|"check", "source", "page",
"kind", "tables": [key, ...]}. Each key is text that only its table holds on the page (a header
cell or a row label). A found table is right when its text (header and rows) holds a key of its
page; a key is found when some table holds it. Precision = right tables / tables found, recall =
keys found / keys. Sources: "debian:<package>:<member>" (fetched with apt-get download into the
test cache, tests/fixtures/debian_manuals.py) or "shared:<path under /work/shared/bench>".

Also, with --dev N: the borderless tables found on the first pages of N PDFs of each financial dev
collection (each such table is a change to a filing's parse; 0 means none).

    python bench/table_finder.py [-v] [--dev 20]
"""

from __future__ import annotations

import argparse
from dataclasses import replace
import glob
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pymupdf  # noqa: E402

from backend.ingest.borderless import find_borderless_tables  # noqa: E402
from backend.ingest.statements import find_statement_tables  # noqa: E402
from backend.ingest.extract import RawTable, extract_page  # noqa: E402
from tests.fixtures.debian_manuals import DebianManual, fetch_manual  # noqa: E402

LABELS = Path(__file__).resolve().parent / "probes" / "tables" / "pages.jsonl"
SHARED = Path("/work/shared/bench")
DEV = ("dev-tatqa-pdf", "dev-docugami-10q")


def _pdf(source: str) -> Path:
    kind, _, rest = source.partition(":")
    if kind == "debian":
        package, _, member = rest.partition(":")
        return fetch_manual(DebianManual(Path(member).stem, package, member, "", (1, 1)))
    return SHARED / rest


SYSTEMS = ("ruled only", "ruled + borderless", "ruled + borderless + statements", "PyMuPDF text strategy")


def _text_strategy(page: pymupdf.Page) -> list[RawTable]:
    """PyMuPDF's own finder for tables without rules (find_tables(strategy="text")), for reference."""
    out = []
    for tab in page.find_tables(strategy="text").tables:
        rows = [[c or "" for c in r] for r in tab.extract()]
        if len(rows) >= 2:
            out.append(RawTable(bbox=tuple(tab.bbox), header=rows[0], header_bbox=None, rows=rows[1:], row_bboxes=[]))
    return out


def _tables(pdf: pymupdf.Document, page_no: int, text_strategy: bool = False) -> list[list[RawTable]]:
    """[ruled tables, ruled + borderless tables, those + statement tables(, PyMuPDF's text
    strategy)] of one page, each finder reading the lines the ones before it left, as layout.py runs them."""
    raw, _ = extract_page(pdf[page_no - 1], find_tables=True, max_tables=10, ocr_engine=None, ocr_language="eng", ocr_dpi=100)
    borderless, kept = find_borderless_tables(raw)
    statements, _ = find_statement_tables(replace(raw, blocks=kept, tables=raw.tables + borderless))
    found = [raw.tables, raw.tables + borderless, raw.tables + borderless + statements]
    return [*found, _text_strategy(pdf[page_no - 1])] if text_strategy else found


def _text(t: RawTable) -> str:
    return " ".join(" ".join(" | ".join(r) for r in [t.header, *t.rows]).split()).lower()


def _score(found: list[RawTable], keys: list[str]) -> tuple[int, int, int, int]:
    """(right tables, tables found, keys found, keys)."""
    keys = [" ".join(k.split()).lower() for k in keys]
    texts = [_text(t) for t in found]
    right = sum(any(k in t for k in keys) for t in texts)
    hit = sum(any(k in t for t in texts) for k in keys)
    return right, len(found), hit, len(keys)


def _line(name: str, s: list[int]) -> str:
    p = s[0] / s[1] if s[1] else float("nan")
    r = s[2] / s[3] if s[3] else float("nan")
    return f"{name:<23} precision {p:.2f} ({s[0]}/{s[1]})  recall {r:.2f} ({s[2]}/{s[3]})"


def labelled(verbose: bool) -> None:
    totals: dict[tuple[str, str], list[int]] = {}
    docs: dict[str, pymupdf.Document] = {}
    for line in LABELS.read_text().splitlines():
        label = json.loads(line)
        src = label["source"]
        pdf = docs.setdefault(src, pymupdf.open(_pdf(src)))
        for name, found in zip(SYSTEMS, _tables(pdf, label["page"], text_strategy=True)):
            s = _score(found, label["tables"])
            for half in (label["half"], "all"):
                acc = totals.setdefault((half, name), [0, 0, 0, 0])
                for i, v in enumerate(s):
                    acc[i] += v
            if verbose:
                print(f"  {Path(src).name} p{label['page']} {name}: {s}  [{label['kind']}]")
    pages = LABELS.read_text().count("\n")
    print(f"{pages} labelled pages ({LABELS.relative_to(Path.cwd()) if LABELS.is_relative_to(Path.cwd()) else LABELS})")
    for half in ("tune", "check", "all"):
        for name in SYSTEMS:
            print(f"{half:<6}", _line(name, totals[(half, name)]))


def dev_changes(n: int, max_pages: int = 60) -> None:
    for coll in DEV:
        files = sorted(glob.glob(str(SHARED / coll / "corpus" / "*.pdf")))
        random.Random(0).shuffle(files)
        pages = added = 0
        for f in files[:n]:
            with pymupdf.open(f) as pdf:
                for i in range(min(pdf.page_count, max_pages)):
                    ruled, both = _tables(pdf, i + 1)[:2]
                    pages += 1
                    for t in both[len(ruled):]:
                        added += 1
                        print(f"  {Path(f).name} p{i + 1}: borderless table {t.header}")
        print(f"{coll}: {min(n, len(files))} PDFs, {pages} pages: {added} borderless tables added; ruled tables unchanged")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dev", type=int, default=0, help="also count borderless tables on N PDFs of each financial dev collection")
    ap.add_argument("-v", "--verbose", action="store_true", help="print each page's score")
    args = ap.parse_args()
    labelled(args.verbose)
    if args.dev:
        dev_changes(args.dev)


if __name__ == "__main__":
    main()
