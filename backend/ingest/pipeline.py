"""The ingest pipeline for a batch of files: for each file, check (sha256: unchanged files are a
no-op), parse in the isolated worker, encode every node, store in one transaction. A file that
fails is recorded in the report and the batch goes on; the workspace keeps everything else.
"""

from __future__ import annotations

import functools
import logging
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pymupdf

from backend.config import Settings, cache_folder
from backend.errors import BadPdfError, display_name, log_name
from backend.graph.entities import entity_index_text, extract_document_entities
from backend.graph.store import WorkspaceStore
from backend.index.encoders import EncoderSet
from backend.index.image import ImageEncoder, encode_figures
from backend.index.texts import index_texts
from backend.ingest.parser import PARSER_VERSION, file_sha256
from backend.ingest.speed import SpeedModel, contention, page_mix
from backend.ingest.worker import ParseWorker
from backend.llm.factory import build_llm
from backend.types import FileReport, IngestReport, Layer, NodeKind, ParsedDocument, ProgressEvent

log = logging.getLogger(__name__)

ProgressSink = Callable[[ProgressEvent], None]
ENCODE_CHUNK = 64  # texts per encode call: one progress event each
# Component texts seen in this Ingestor's batches, with their vectors: a filing's boilerplate
# repeats within it and across its siblings (two Apple 10-Qs: 1,419 component texts, 1,123
# distinct). 8,192 MiniLM vectors are 12 MiB of the parent's memory.
ENCODE_MEMO = 8192


def derivable_parents(parsed: ParsedDocument) -> set[str]:
    """Sections and documents whose vector can be the mean of their components' vectors: those
    with at least one component under them (a component's index text carries its section path)."""
    under: set[str] = set()
    parent = {s.id: s.parent for s in parsed.sections}
    for n in parsed.nodes:
        if n.layer == Layer.COMPONENT:
            under.add(n.doc)
            sec = n.section
            while sec is not None and sec not in under:
                under.add(sec)
                sec = parent.get(sec)
    return {n.id for n in parsed.nodes if n.kind in (NodeKind.SECTION, NodeKind.DOCUMENT) and n.id in under}


def parent_vectors(parsed: ParsedDocument, embeddings: dict[str, np.ndarray], parents: set[str]) -> dict[str, np.ndarray]:
    """L2-normalised mean of the component vectors under each of `parents` (section subtrees;
    the whole document for a document node)."""
    parent = {s.id: s.parent for s in parsed.sections}
    sums: dict[str, np.ndarray] = {}
    for n in parsed.nodes:
        if n.layer != Layer.COMPONENT or n.id not in embeddings:
            continue
        owners, sec = [n.doc], n.section
        while sec is not None:
            owners.append(sec)
            sec = parent.get(sec)
        for owner in owners:
            if owner in parents:
                sums[owner] = sums[owner] + embeddings[n.id] if owner in sums else embeddings[n.id].astype(np.float32).copy()
    out: dict[str, np.ndarray] = {}
    for node_id, vec in sums.items():
        norm = float(np.linalg.norm(vec))
        out[node_id] = vec / norm if norm > 0 else vec
    return out


def _counts(parsed: ParsedDocument) -> dict[str, int]:
    c: Counter[str] = Counter()
    for n in parsed.nodes:
        if n.layer == Layer.ENTITY:
            c["entities"] += 1
            continue
        c[n.kind.value + "s" if not n.kind.value.endswith("s") else n.kind.value] += 1
    for e in parsed.edges:
        c[f"{e.kind.value} edges"] += 1
    c["document links"] = len(parsed.doc_links)
    return dict(c)


def _parse_progress(name: str, emit: ProgressSink) -> Callable[[str, int, int], None]:
    def on_parse(stage: str, done: int, total: int) -> None:
        emit(ProgressEvent(stage=stage, doc=name, done=done, total=total))

    return on_parse


class PrefetchingParser:
    """The parse worker one file ahead: while this process encodes and stores file i, the worker
    process parses file i+1, so a batch keeps two cores busy. One parse runs at a time (the
    worker is one process); a prefetched parse that failed raises its BadPdfError when asked for."""

    def __init__(self, worker: ParseWorker) -> None:
        self._worker = worker
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="strata-parse-ahead")
        self._ahead: tuple[Path, Future[ParsedDocument]] | None = None

    def start(self, path: Path, crops_root: Path, name: str, progress: Callable[[str, int, int], None]) -> None:
        if self._ahead is None:
            self._ahead = (path, self._pool.submit(self._worker.parse, path, crops_root, name, progress))

    def parse(self, path: Path, crops_root: Path, name: str, progress: Callable[[str, int, int], None]) -> ParsedDocument:
        if self._ahead is not None and self._ahead[0] == path:
            future, self._ahead = self._ahead[1], None
            return future.result()
        self._drain()
        return self._worker.parse(path, crops_root, name, progress)

    def _drain(self) -> None:
        """Wait for a prefetched parse nobody asked for (its file was skipped)."""
        if self._ahead is not None:
            future, self._ahead = self._ahead[1], None
            try:
                future.result()
            except (BadPdfError, OSError) as exc:
                log.debug("prefetched parse of a skipped file failed: %s", exc)

    def __enter__(self) -> PrefetchingParser:
        return self

    def __exit__(self, *exc) -> None:
        self._drain()
        self._pool.shutdown(wait=True)


def unchanged_report(store: WorkspaceStore, path: Path, name: str) -> tuple[str, FileReport | None]:
    """The file's sha256 and, when the workspace already holds that file under this parser, its
    "unchanged" report (None otherwise); a BadPdfError when the file is missing. The local and the
    cluster path make this check before any parse."""
    if not path.is_file():
        raise BadPdfError(name, "file not found")
    sha = file_sha256(path)
    existing = store.document_by_sha(sha)
    if existing is None or existing.parser_version != PARSER_VERSION:
        return sha, None
    note = None if existing.file_name == name else f"the same file is already in the workspace as {existing.file_name}"
    return sha, FileReport(file_name=name, status="unchanged", doc_id=existing.id, title=existing.title,
                           pages=existing.pages, reason=note)


class Ingestor:
    def __init__(
        self, settings: Settings, encoders: EncoderSet | Callable[[], EncoderSet],
        image_encoder: ImageEncoder | None | Callable[[], ImageEncoder | None] = None, *, derive_parents: bool | None = None
    ) -> None:
        """encoders / image_encoder: the models, or functions that load them. A function is called
        once, after the batch's first file has parsed: the parse worker's memory share is what the
        parent leaves, and a batch whose files all fail never loads a model."""
        self._settings = settings
        self._encoder_source = encoders
        self._image_source = image_encoder  # None: figures are represented by their text only
        self._store_checked = False  # the store's encoder signatures, once per ingest call
        self._load = 1.0  # the machine's contention when the current batch started (speed.py)
        self._derive_parents = settings.index.derive_parents if derive_parents is None else derive_parents
        self.timings: defaultdict[str, float] = defaultdict(float)  # seconds per stage over this Ingestor's files
        self.encoded: Counter[str] = Counter()  # texts encoded per encoder name
        self._memo: dict[str, np.ndarray] = {}  # text -> vector of the component layers' encoder

    def ingest(
        self,
        store: WorkspaceStore,
        files: list[Path],
        progress: ProgressSink | None = None,
        display_names: list[str] | None = None,
    ) -> IngestReport:
        emit = progress or (lambda ev: None)
        self._store_checked = False
        self._load = contention()  # before this batch's own processes count in the load average
        reports: list[FileReport] = []
        # Names as the user gave them, bytes that are not UTF-8 shown escaped (display_name), never
        # replaced; log lines escape them further (log_name). Files are opened by path, never by name.
        names = [display_name(n) for n in (display_names or [Path(f).name for f in files])]
        with ParseWorker(self._settings.ingest) as process, PrefetchingParser(process) as worker:
            for i, (path, name) in enumerate(zip(files, names)):
                t0 = time.perf_counter()
                emit(ProgressEvent(stage="open", doc=name, done=i, total=len(files), message=f"file {i + 1} of {len(files)}"))
                ahead = [(Path(p), n) for p, n in zip(files[i + 1 : i + 2], names[i + 1 : i + 2])]
                report = self._ingest_or_fail(
                    store, worker, Path(path), name, emit, lambda ahead=ahead: self._prefetch(store, worker, ahead, emit)
                )
                report.seconds = round(time.perf_counter() - t0, 3)
                reports.append(report)
                emit(ProgressEvent(stage="done" if report.status != "failed" else "failed", doc=name, done=i + 1, total=len(files), message=report.reason or report.status))
        return IngestReport(workspace=str(store.root), files=reports)

    def _prefetch(self, store: WorkspaceStore, worker: PrefetchingParser, ahead: list[tuple[Path, str]], emit: ProgressSink) -> None:
        """Start parsing the next file unless it is missing or already in the workspace unchanged."""
        for path, name in ahead:
            if not path.is_file():
                continue
            existing = store.document_by_sha(file_sha256(path))
            if existing is not None and existing.parser_version == PARSER_VERSION:
                continue
            worker.start(path, store.root / "crops", name, _parse_progress(name, emit))

    # Encoders are not callable, so a callable source is a loader.
    @functools.cached_property
    def _encoders(self) -> EncoderSet:
        return self._encoder_source() if callable(self._encoder_source) else self._encoder_source

    @functools.cached_property
    def _image_encoder(self) -> ImageEncoder | None:
        return self._image_source() if callable(self._image_source) else self._image_source

    def _check_store(self, store: WorkspaceStore) -> None:
        """Refuse (WorkspaceError, the whole batch) a workspace built with other encoders; once
        per ingest call, before the first vector is written."""
        if not self._store_checked:
            store.check_encoders(self._encoders.signature)
            store.check_image_encoder(self._image_encoder.name if self._image_encoder is not None else None)
            self._store_checked = True

    def _ingest_or_fail(
        self, store: WorkspaceStore, worker: PrefetchingParser, path: Path, name: str, emit: ProgressSink,
        after_parse: Callable[[], None] = lambda: None,
    ) -> FileReport:
        """One file's report: a failure of that file is recorded with a reason a person can read
        (no exception class, no server path) and the batch goes on."""
        try:
            return self._ingest_one(store, worker, path, name, emit, after_parse)
        except BadPdfError as exc:
            log.warning("%s failed: %s", log_name(name), exc.reason)
            return FileReport(file_name=name, status="failed", reason=exc.reason)
        except OSError as exc:
            log.warning("%s could not be read or stored: %s", log_name(name), exc.strerror or "input/output error")
            return FileReport(file_name=name, status="failed", reason=f"could not read or store the file ({exc.strerror or 'input/output error'})")
        except ValueError:  # a parsed document the encoders or the store refused (pydantic's errors are ValueErrors)
            log.warning("%s was parsed but could not be indexed", log_name(name))
            log.debug("%s could not be indexed", log_name(name), exc_info=True)
            return FileReport(file_name=name, status="failed", reason="the file was parsed but could not be indexed; the server log has the details")

    def _ingest_one(
        self, store: WorkspaceStore, worker: PrefetchingParser, path: Path, name: str, emit: ProgressSink,
        after_parse: Callable[[], None] = lambda: None,
    ) -> FileReport:
        _sha, unchanged = unchanged_report(store, path, name)
        if unchanged is not None:
            return unchanged

        started = time.perf_counter()
        t = started
        try:
            parsed = worker.parse(path, store.root / "crops", name, _parse_progress(name, emit))
        finally:
            self.timings["parse wait (worker, not overlapped)"] += time.perf_counter() - t
            after_parse()  # the worker is free: it parses the next file while this one is encoded
        for stage, seconds in parsed.stage_seconds.items():
            self.timings[f"parse: {stage}"] += seconds
        self._check_store(store)
        embeddings = self._encode(parsed, name, emit)
        parsed, entity_extractor = self._add_entities(parsed, embeddings, name, emit)
        emit(ProgressEvent(stage="store", doc=name, done=0, total=1))
        t = time.perf_counter()
        image_embeddings = encode_figures(self._image_encoder, parsed.nodes, store.root) if self._image_encoder is not None else {}
        self.timings["encode: images"] += time.perf_counter() - t
        t = time.perf_counter()
        replaced = store.add_document(parsed, path, embeddings, image_embeddings, entity_extractor=entity_extractor)
        self.timings["index write"] += time.perf_counter() - t
        emit(ProgressEvent(stage="store", doc=name, done=1, total=1))
        self._record_speed(store.pdf_path(parsed.document.id), name, time.perf_counter() - started)
        doc = parsed.document
        return FileReport(
            file_name=name, status="replaced" if replaced is not None else "ingested", doc_id=doc.id, title=doc.title,
            pages=doc.pages, counts=_counts(parsed), warnings=doc.warnings,
        )

    def _record_speed(self, stored: Path, name: str, seconds: float) -> None:
        """Add this file's pages (by kind) and seconds to the server's measured speed (speed.py),
        which the Library's estimate before an ingest reads; `stored` is the workspace's copy of
        the file (a plain name MuPDF opens), `name` the user's. A failure only loses the measurement."""
        try:
            with pymupdf.open(stored, filetype="pdf") as pdf:
                mix = page_mix(pdf)
            SpeedModel(cache_folder(self._settings)).record(mix, seconds, self._load)
        except (OSError, RuntimeError, ValueError) as exc:
            log.warning("could not record the ingest speed of %s: %s", log_name(name), exc)

    def encode_document(
        self, parsed: ParsedDocument, name: str, progress: ProgressSink | None = None
    ) -> tuple[ParsedDocument, dict[str, np.ndarray], str]:
        """One parsed document's vectors and entity layer, as a batch here makes them: what a
        cluster node's encoder does for the files parsed on the cluster (cluster.py). Returns the
        document with its entities, every node's vector and the entity extractor's name."""
        emit = progress or (lambda ev: None)
        embeddings = self._encode(parsed, name, emit)
        parsed, extractor = self._add_entities(parsed, embeddings, name, emit)
        return parsed, embeddings, extractor

    def _encode(self, parsed: ParsedDocument, name: str, emit: ProgressSink) -> dict[str, np.ndarray]:
        """Every node's vector: sections and documents from their components' vectors (see
        parent_vectors) where derive_parents is on, the rest with the layer's encoder, in chunks
        of ENCODE_CHUNK texts so the progress bar moves during the encode."""
        texts = index_texts(parsed.nodes, {s.id: s for s in parsed.sections}, {parsed.document.id: parsed.document})
        derived = derivable_parents(parsed) if self._derive_parents else set()
        jobs = [
            (self._encoders.text, [n for n in parsed.nodes if n.layer != Layer.SUBCOMPONENT and n.id not in derived]),
            (self._encoders.sub, [n for n in parsed.nodes if n.layer == Layer.SUBCOMPONENT]),
        ]
        total = sum(len(nodes) for _, nodes in jobs)
        done = 0
        embeddings: dict[str, np.ndarray] = {}
        emit(ProgressEvent(stage="encode", doc=name, done=0, total=total))
        for encoder, nodes in jobs:
            for start in range(0, len(nodes), ENCODE_CHUNK):
                chunk = nodes[start : start + ENCODE_CHUNK]
                t = time.perf_counter()
                chunk_texts = [texts[n.id] for n in chunk]
                if encoder is self._encoders.text:
                    vectors = self._encode_memo(chunk_texts)
                else:
                    vectors = encoder.encode(chunk_texts)
                    self.encoded[encoder.name] += len(chunk)
                self.timings[f"encode: {encoder.name}"] += time.perf_counter() - t
                embeddings.update(zip((n.id for n in chunk), vectors))
                done += len(chunk)
                emit(ProgressEvent(stage="encode", doc=name, done=done, total=total))
        t = time.perf_counter()
        embeddings.update(parent_vectors(parsed, embeddings, derived))
        self.timings["encode: parents from children"] += time.perf_counter() - t
        return embeddings

    def _encode_memo(self, texts: list[str]) -> list[np.ndarray]:
        """The component layers' vectors of texts, each distinct text not seen before encoded once
        (the encoder is deterministic, so a repeated text gets the vector it would get again)."""
        encoder = self._encoders.text
        new = list(dict.fromkeys(t for t in texts if t not in self._memo))
        # Own copies, read-only: a row of the batch would keep the whole batch alive, and a vector
        # shared by two nodes must not be changed through one of them.
        fresh = {t: np.array(v, dtype=np.float32) for t, v in zip(new, encoder.encode(new))} if new else {}
        for vec in fresh.values():
            vec.setflags(write=False)
        self.encoded[encoder.name] += len(new)
        vectors = [fresh[t] if t in fresh else self._memo[t] for t in texts]
        for text, vec in fresh.items():
            if len(self._memo) >= ENCODE_MEMO:
                self._memo.pop(next(iter(self._memo)))
            self._memo[text] = vec
        return vectors

    def _add_entities(
        self, parsed: ParsedDocument, embeddings: dict, name: str, emit: ProgressSink
    ) -> tuple[ParsedDocument, str]:
        """MMGraphRAG's entity layer of one document (backend/graph/entities.py): entity nodes with
        mention and relation edges, their name + description encoded in the subcomponent space
        (short strings, where the static encoder is as good and hundreds of times faster). With a
        model backend, the per-question call budget bounds the model calls per document; the
        rules extract the chunks past it. Returns the document with them and the extractor's name."""
        emit(ProgressEvent(stage="entities", doc=name, done=0, total=1))
        t = time.perf_counter()
        doc = parsed.document
        found = extract_document_entities(doc.id, doc.title, parsed.nodes, build_llm(self._settings))
        vectors = self._encoders.sub.encode([entity_index_text(n) for n in found.nodes])
        embeddings.update(zip((n.id for n in found.nodes), vectors))
        self.timings["entities"] += time.perf_counter() - t
        emit(ProgressEvent(stage="entities", doc=name, done=1, total=1, message=f"{len(found.nodes)} entities"))
        return parsed.model_copy(update={"nodes": parsed.nodes + found.nodes, "edges": parsed.edges + found.edges}), found.extractor
