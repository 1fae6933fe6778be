"""A copy of a one-page-per-title collection whose pages do not name their subject.

HotpotQA's pages are an article's first paragraph, which names its subject ("Nora Ephron (May 19,
1941 - June 26, 2012) was an American writer"). MuSiQue's, the kind of the held-out collection of
issue 10, are often from the middle of an article ("In 1969 she was appointed ..."): only the
page's heading says what the paragraph is about. dev-hotpot-pdf cannot show what a method does
with such pages, so this script makes a copy that has them: on a share of the pages (chosen by a
hash of the file name, so the same every run) every body occurrence of the page's title, of the
title without its parenthetical qualifier, or of the part before its comma, is redacted. The
heading line, the links and the other pages' mentions of the title stay. questions.jsonl,
docs.jsonl and score.py are copied, so the copy is a collection `halves_quality.py` can read.

    python bench/denamed_corpus.py --src ../shared/bench/dev-hotpot-pdf --dst /tmp/bench/dev-hotpot-denamed
    python -m backend ingest --workspace ROOT/dev-hotpot-denamed /tmp/bench/dev-hotpot-denamed/corpus/
    python bench/halves_quality.py --bench /tmp/bench --workspace-root ROOT --collections dev-hotpot-denamed --out OUT
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
from pathlib import Path

import pymupdf

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from backend.index.texts import title_forms as written_forms  # noqa: E402

MIN_FORM_CHARS = 4  # a shorter name ("Ra") would be cut out of other words


def chosen(file_name: str, share: float) -> bool:
    """Whether a page is de-named: a fixed hash of its file name under the share."""
    return int(hashlib.sha256(file_name.encode()).hexdigest(), 16) % 10_000 < share * 10_000


def title_forms(title: str) -> list[str]:
    """The title, without its qualifier, and before its comma (as the index reads them); longest first."""
    return sorted((t for t in written_forms(title) if len(t) >= MIN_FORM_CHARS), key=len, reverse=True)


def dename_page(page: pymupdf.Page) -> int:
    """Redact the body's mentions of the page's title (its first line); returns how many."""
    title = page.get_text().strip().split("\n")[0].strip()
    heading_bottom = None
    for block in page.get_text("dict")["blocks"]:
        for line in block.get("lines", []):
            if "".join(s["text"] for s in line["spans"]).strip() == title:
                heading_bottom = line["bbox"][3]
                break
        if heading_bottom is not None:
            break
    n = 0
    for form in title_forms(title):
        for rect in page.search_for(form):
            if heading_bottom is not None and rect.y1 <= heading_bottom + 0.5:
                continue  # the heading itself
            page.add_redact_annot(rect)
            n += 1
    if n:
        page.apply_redactions(images=pymupdf.PDF_REDACT_IMAGE_NONE)
    return n


def denamed_copy(src: Path, dst: Path, share: float) -> tuple[int, int, int]:
    """Write the copy; returns (pages, pages de-named, mentions redacted)."""
    (dst / "corpus").mkdir(parents=True, exist_ok=True)
    for name in ("questions.jsonl", "docs.jsonl"):
        if (src / name).is_file():
            shutil.copy(src / name, dst / name)
    if (src.parent / "score.py").is_file():
        shutil.copy(src.parent / "score.py", dst.parent / "score.py")
    pages = denamed = mentions = 0
    for pdf in sorted((src / "corpus").glob("*.pdf")):
        pages += 1
        with pymupdf.open(pdf) as doc:
            if chosen(pdf.name, share):
                n = dename_page(doc[0])
                denamed += bool(n)
                mentions += n
            doc.save(dst / "corpus" / pdf.name)
    return pages, denamed, mentions


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", type=Path, required=True, help="a collection folder of one-page PDFs (dev-hotpot-pdf)")
    ap.add_argument("--dst", type=Path, required=True, help="the copy's collection folder")
    ap.add_argument("--share", type=float, default=0.5, help="share of the pages de-named")
    args = ap.parse_args(argv)
    pages, denamed, mentions = denamed_copy(args.src, args.dst, args.share)
    print(f"{pages} pages; {denamed} de-named; {mentions} mentions of their titles redacted")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
