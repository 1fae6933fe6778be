"""Scale bench: query p50/p95 per method, load time, RSS and disk on workspaces of 1k, 10k and
100k pages, the index-backed query path against the brute-force one in the same run.

How the big workspaces are made (no PDF is parsed 100k times): one real ingested workspace
(default: the sample corpus, 4 PDFs / 15 pages, ingested by the real pipeline) is read through
the store API and its documents are replicated until the page target is met. Replica r of a
document gets
- new ids (the 16-hex document id, which prefixes every node, section and edge id, is replaced
  by a hash of (id, r)), a new file name and sha256;
- varied text: every number in every text is shifted by r (so "4,820 trees" becomes "4,827 trees"
  in replica 7) and every entity name the extractor found (places, people, organisations) is
  replaced by a name drawn, per replica, from a fixed list of synthetic names, so BM25 sees
  distinct documents with a realistic vocabulary growth;
- its vectors perturbed: v + N(0, sigma^2 I), re-normalised (sigma 0.025 per dimension: cosine
  ~0.89 to the original, under Strata's 0.95 template-copy threshold, so the corpus is not
  mistaken for boilerplate filings and strata keeps its HiKEY path). Vectors are not re-encoded
  from the varied text (that would be the ingest cost this bench avoids).
Each replica is written with WorkspaceStore.add_document (the PDF copied like a real ingest),
and the first query loads the corpus the real way (Corpus.load builds and saves the FAISS and
BM25 indexes). Workspaces are kept under --root and reused when their page count matches.

Queries: the sample questions (tests/fixtures/sample_questions.py), offline rules backend, each
method's retriever called directly (no reader), top_k 10, one warm-up call per method, the
encoders' question cache emptied before every timed question (each is encoded as new). Each
method runs both ways in the same process on the same loaded corpus, question by question
alternately (so both see the same load on a shared machine): `brute` (every strategy scores
every row with matrix @ q per use, nothing shared: the code path before QueryScores) and `index`.

Where one machine stops being enough: printed at the end from the measured trend (see
`ceiling_note`).

    timeout 3000 python3 bench/scale.py --root /work/scratch/h/scale --pages 1000 10000
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import logging
import re
import resource
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from backend.config import Settings  # noqa: E402
from backend.graph.store import WorkspaceStore  # noqa: E402
from backend.types import Layer, ParsedDocument  # noqa: E402

log = logging.getLogger("scale")

METHODS = ("dense", "hybrid", "hikey", "lilac", "fif", "strata", "mirag", "mmgraph", "bm25")
NOISE_SIGMA = 0.025
NAMES = tuple(
    f"{a}{b}" for a in ("Ash", "Bel", "Cor", "Dun", "Elm", "Fen", "Gal", "Hol", "Ivo", "Jar", "Kel", "Lor", "Mar", "Nor")
    for b in ("ford", "wick", "stead", "mere", "haven", "bury", "ton", "dale", "field", "moor")
)
_NUMBER = re.compile(r"\d+")


@dataclass(frozen=True, slots=True)
class SourceDoc:
    """One document of the source workspace, as JSON ready for id/text substitution."""

    doc_id: str
    pages: int
    parsed_json: str
    embeddings: dict[str, np.ndarray]
    entity_names: tuple[str, ...]
    extractor: str | None
    pdf: Path


def read_source(src: Path) -> list[SourceDoc]:
    """Every document of an ingested workspace, read through the store API."""
    store = WorkspaceStore(src, create=False)
    try:
        nodes, embs = store.all_nodes()
        by_doc: dict[str, dict[str, list]] = {}
        for doc in store.documents():
            by_doc[doc.id] = {"sections": [], "nodes": [], "edges": []}
        for s in store.all_sections():
            by_doc[s.doc]["sections"].append(s)
        for n in nodes:
            by_doc[n.doc]["nodes"].append(n)
        for e in store.all_edges():
            by_doc[e.src.split(":")[0]]["edges"].append(e)
        links = store.all_doc_links()
        runs = store.entity_runs()
        out = []
        for doc in store.documents():
            parts = by_doc[doc.id]
            parsed = ParsedDocument(document=doc, sections=parts["sections"], nodes=parts["nodes"], edges=parts["edges"],
                                    blocks=store.blocks(doc.id), doc_links=[p for d, p in links if d == doc.id])
            names = tuple(sorted({n.text for n in parts["nodes"] if n.layer == Layer.ENTITY and len(n.text) > 3}, key=len, reverse=True))
            out.append(SourceDoc(doc.id, doc.pages, parsed.model_dump_json(), {n.id: embs[n.id] for n in parts["nodes"] if n.id in embs},
                                 names, runs.get(doc.id), store.pdf_path(doc.id)))
        return out
    finally:
        store.close()


def vary(text: str, r: int, names: tuple[str, ...]) -> str:
    """Replica r's version of a text: numbers shifted by r, entity names swapped."""
    text = _NUMBER.sub(lambda m: str(int(m.group()) + r), text)
    for i, name in enumerate(names):
        text = text.replace(name, NAMES[(r * 7 + i) % len(NAMES)])
    return text


def replica(src: SourceDoc, r: int, rng: np.random.Generator) -> tuple[ParsedDocument, dict[str, np.ndarray]]:
    """Replica r of a document: new ids and file name, texts varied (ids, pages and boxes kept),
    vectors perturbed and re-normalised."""
    new_id = "d" + hashlib.sha256(f"{src.doc_id}:{r}".encode()).hexdigest()[:15]
    parsed = ParsedDocument.model_validate_json(src.parsed_json.replace(src.doc_id, new_id))

    def v(t: str) -> str:
        return vary(t, r, src.entity_names)

    doc = parsed.document
    parsed.document = doc.model_copy(update={
        "file_name": f"{doc.file_name.rsplit('.', 1)[0]}__r{r}.pdf", "title": v(doc.title), "card": v(doc.card),
        "summary": v(doc.summary), "sha256": hashlib.sha256(f"{doc.sha256}:{r}".encode()).hexdigest(),
    })
    parsed.nodes = [dataclasses.replace(n, text=v(n.text), context=v(n.context)) for n in parsed.nodes]
    parsed.sections = [dataclasses.replace(s, title=v(s.title), path=[v(x) for x in s.path]) for s in parsed.sections]
    parsed.blocks = [b.model_copy(update={"text": v(b.text)}) for b in parsed.blocks]
    embs = {}
    for node_id, vec in src.embeddings.items():
        w = vec + rng.normal(0.0, NOISE_SIGMA, size=vec.shape).astype(np.float32)
        embs[node_id.replace(src.doc_id, new_id)] = w / max(float(np.linalg.norm(w)), 1e-12)
    return parsed, embs


def build_workspace(src: Path, dst: Path, pages: int, seed: int = 0) -> int:
    """Replicate the source's documents into dst until it holds >= `pages` pages; returns the
    page count. An existing dst with >= pages pages is reused."""
    store = WorkspaceStore(dst)
    try:
        have = sum(d.pages for d in store.documents())
        if have >= pages:
            return have
        source = WorkspaceStore(src, create=False)
        for key in ("encoders", "image_encoder"):
            value = source._meta(key)  # noqa: SLF001 - the bench copies the source's encoder stamps
            if value is not None:
                store._set_meta(key, value)  # noqa: SLF001
        source.close()
        docs = read_source(src)
        rng = np.random.default_rng(seed)
        r, t0 = len(store.documents()) // max(1, len(docs)), time.perf_counter()
        while have < pages:
            for d in docs:
                parsed, embs = replica(d, r, rng)
                store.add_document(parsed, d.pdf, embs, entity_extractor=d.extractor)
                have += d.pages
            r += 1
            if r % 50 == 0:
                log.info("%s: %d pages written (%.0f s)", dst.name, have, time.perf_counter() - t0)
        return have
    finally:
        store.close()


def disk_bytes(path: Path) -> tuple[int, int]:
    """(all bytes under the workspace, bytes of the copied PDFs under files/)."""
    total = sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    pdfs = sum(p.stat().st_size for p in (path / "files").glob("*") if p.is_file())
    return total, pdfs


def rss_mb() -> float:
    """Current resident set size (MB), from /proc."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def forget_queries(service) -> None:
    """Empty the service encoders' question caches (QueryCachingEncoder), so that every timed
    question is encoded as a new question would be, in both modes alike."""
    for enc in {id(e): e for e in (service.encoder, service.encoders.sub)}.values():
        cache = getattr(enc, "_cache", None)
        if isinstance(cache, dict):
            cache.clear()


# Bridge questions over the sample corpus (--bridge): the rules split each into a subquery and one
# that depends on it, so the methods' per-hop paths (strata's composed hops, FiF's subtasks) run.
BRIDGE_QUESTIONS = (
    "Who led the programme that planted street trees in 2021?",
    "Which method mapped the land surface temperature of the neighbourhoods that had the highest heat exposure?",
    "What budget did the programme whose canopy target is set for 2030 have?",
)


def method_spec(spec: str) -> tuple[str, dict]:
    """'strata' or 'strata:{"compose": 0}': a method and the parameters it runs with (a variant
    timed beside the default in the same run)."""
    name, _, params = spec.partition(":")
    return name, (json.loads(params) if params else {})


def time_method(service, corpus, method: str, questions: list[str], budget_s: float) -> dict[bool, list[float]]:
    """Seconds per question for one method (retriever only, rules backend), brute force (True)
    and index path (False) interleaved question by question, so both see the same machine load;
    stops after budget_s. `method` may carry parameters (method_spec)."""
    from backend.types import Trace

    method, params = method_spec(method)
    llm = service.llm("rules")
    times: dict[bool, list[float]] = {True: [], False: []}
    depth = service.settings.retrieval.rank_depth  # what a question ranks before its top_k are returned
    service.retriever(method, corpus, llm=llm).retrieve(questions[0], depth, dict(params), Trace(method=method))  # warm-up
    start = time.perf_counter()
    for q in questions:
        for brute in (True, False):
            forget_queries(service)
            retriever = service.retriever(method, corpus, llm=llm)
            retriever.brute_force = brute
            t0 = time.perf_counter()
            retriever.retrieve(q, depth, dict(params), Trace(method=method))
            times[brute].append(time.perf_counter() - t0)
        if time.perf_counter() - start > budget_s:
            break
    return times


def pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.array(xs) * 1000, q)) if xs else float("nan")


def measure(
    service, workspace: Path, pages: int, methods: list[str], questions: list[str], budget_s: float
) -> tuple[list[str], tuple[int, float, float, float]]:
    """Load the workspace (timed), then time every method both ways; the report lines and
    (pages, corpus RSS MB, hikey index p50 ms, vector MB)."""
    service.encoder.encode(["load the models first"])  # the models' memory is not the corpus's
    service.encoders.sub.encode(["load the models first"])
    rss0 = rss_mb()
    t0 = time.perf_counter()
    corpus = service.corpus(workspace)
    load_s = time.perf_counter() - t0
    rss1 = rss_mb()
    total, pdfs = disk_bytes(workspace)
    per100k = 100_000 / pages
    lines = [
        f"## {pages} pages ({len(corpus.documents)} documents, {len(corpus.layers['components'].ids)} components, "
        f"{len(corpus.layers['subcomponents'].ids)} subcomponents)",
        f"load {load_s:.1f} s; RSS {rss1:.0f} MB after load (+{rss1 - rss0:.0f} MB for the corpus); "
        f"disk {total / 1e6:.0f} MB ({pdfs / 1e6:.0f} MB PDF copies) = {total * per100k / 1e9:.2f} GB per 100k pages "
        f"({(total - pdfs) * per100k / 1e9:.2f} GB without the PDFs); vectors held "
        f"{sum(layer.dense.nbytes for layer in corpus.layers.values()) / 1e6:.0f} MB; approximate layers: "
        f"{', '.join(n for n, layer in corpus.layers.items() if not layer.dense.exact) or 'none'}",
        "| method | brute p50 ms | brute p95 ms | index p50 ms | index p95 ms | n |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    hikey_p50 = float("nan")
    for m in methods:
        times = time_method(service, corpus, m, questions, budget_s)
        brute, index = times[True], times[False]
        lines.append(f"| {m} | {pct(brute, 50):.0f} | {pct(brute, 95):.0f} | {pct(index, 50):.0f} | {pct(index, 95):.0f} | {len(index)} |")
        log.info(lines[-1])
        hikey_p50 = pct(index, 50) if m == "hikey" else hikey_p50
    lines.append(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    vec_mb = sum(layer.dense.nbytes for layer in corpus.layers.values()) / 1e6
    return lines, (pages, rss1 - rss0, hikey_p50, vec_mb)


def ceiling_note(sizes: list[tuple[int, float, float, float]]) -> str:
    """Where one machine stops being enough, from the measured (pages, corpus RSS MB, p50 of
    hikey ms, vector MB) points: memory extrapolated linearly to 100k pages."""
    lines = []
    vec_note = "n rows x dim x 4 bytes"
    if sizes:
        pages, rss, p50, vec_mb = max(sizes)
        mb_per_page = rss / pages
        vec_note = f"{vec_mb * 100_000 / pages / 1e3:.1f} GB of vectors and codes per 100k pages here"
        lines.append(f"measured: {rss:.0f} MB of corpus RSS at {pages} pages = {mb_per_page * 100_000 / 1024:.1f} GB per 100k pages "
                     f"(linear); 4 GB holds about {int(4096 / mb_per_page):,} pages; hikey p50 {p50:.0f} ms at {pages} pages.")
    lines.append(
        "Where one machine stops being enough: a layer under index.approximate_rows is an exact flat index (FAISS "
        "IndexFlatIP), a larger one an IVF index over 8-bit codes searched in a share of its lists, each with a BM25 index "
        "memory-mapped from the workspace; the hybrid strategies fuse every-row score arrays (candidates' own scores in an "
        f"approximate layer) built per question ({vec_note}), and the process holds every node as a row of columns "
        "(its id string, its text in one UTF-8 buffer; a record is made when asked for), every section as a Python "
        "object and the edges as arrays, so memory and a question's array passes still grow with the corpus. Past the pages that fit in 4 GB (above), or once a question's passes exceed ~100 ms, Strata "
        "would hand its per-layer indexes to OpenSearch: one engine that shards BM25 and k-NN (FAISS or HNSW) indexes "
        "across machines, fuses them with min-max normalisation server-side (the normalization-processor of its hybrid "
        "query, the same maths as scoring.fuse_minmax, which also gives a document one search did not return that "
        "search's lowest score), and filters by document and section ids (HiKEY stage 2, FiF's local hops); the "
        "strategies keep their maths over the returned candidates."
    )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", type=Path, required=True, help="scratch folder for the built workspaces")
    ap.add_argument("--source", type=Path, default=Path("/work/scratch/h/golden/sample"), help="an ingested workspace")
    ap.add_argument("--pages", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--methods", nargs="+", default=list(METHODS),
                    help='methods, each optionally with parameters: strata \'strata:{"compose": 0}\'')
    ap.add_argument("--bridge", action="store_true", help="time the bridge questions only (BRIDGE_QUESTIONS)")
    ap.add_argument("--repeat", type=int, default=1, help="ask the question list this many times (within the budget)")
    ap.add_argument("--budget", type=float, default=60.0, help="seconds per method (both modes)")
    ap.add_argument("--build-only", action="store_true")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s")
    from tests.fixtures.sample_questions import SAMPLE_QUESTIONS
    from backend.service import Service

    report: list[str] = []
    sizes: list[tuple[int, float, float, float]] = []
    for pages in args.pages:
        ws = args.root / f"p{pages}"
        t0 = time.perf_counter()
        got = build_workspace(args.source, ws, pages)
        log.info("built %s: %d pages in %.0f s", ws, got, time.perf_counter() - t0)
        if not args.build_only:
            # A Service per size: the previous size's corpus is released before the next loads.
            service = Service(Settings(workspace_root=args.root, load_sample=False))
            questions = list(BRIDGE_QUESTIONS if args.bridge else SAMPLE_QUESTIONS) * max(1, args.repeat)
            lines, point = measure(service, ws, got, args.methods, questions, args.budget)
            report += lines
            sizes.append(point)
            print("\n".join(lines), flush=True)
    print(ceiling_note(sizes))


if __name__ == "__main__":
    main()
