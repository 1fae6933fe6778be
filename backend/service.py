"""The one facade the UI, the CLI and the tests call. It owns the settings, the (lazily loaded)
encoder, and a cache of loaded corpora keyed by workspace folder and database generation.

Workspaces: a shared sample workspace built from sample_corpus/ at start, and one workspace per
browser session (a copy of the sample workspace plus that session's uploads), so uploads of one
session are never visible to another.

The work itself lives elsewhere and the facade only wires it: a question runs through
backend.query (retrieve -> pack -> read, the input bounds, the answer's wire format), pages are
drawn by backend.render, benchmark folders and their workspaces are backend.eval.folders'.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import shutil
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import Field

from backend import heap
from backend.admission import AdmissionGate
from backend.config import LLMSettings, Settings, cache_folder
from backend.errors import BadPdfError, ConfigError, EmptyCorpusError, StrataError, WorkspaceError, display_name, without_paths
from backend.eval.folders import allowed_benchmark, benchmark_workspace, list_benchmarks, unpack_benchmark_zip, uploads_folder
from backend.eval.gold import BenchQuestion, GoldRef, load_questions, parse_gold, result_hits
from backend.eval.runner import EvalProgress, EvalReport, MetricRow, export_reports, metric_rows, run_eval
from backend.graph import export as graph_export
from backend.graph.corpus import Corpus
from backend.graph.store import WorkspaceStore
from backend.index.encoders import EncoderSet, QueryCachingEncoder, TextEncoder, WordLlamaEncoder, build_encoders, runtime_for
from backend.index.image import ImageEncoder, build_image_encoder
from backend.index.vector import Approximate, gpu_available
from backend.ingest.parser import PARSER_VERSION, file_sha256, open_validated
from backend.ingest.pipeline import Ingestor
from backend.ingest.speed import PageMix, SpeedModel, contention, page_mix
from backend.llm.base import LLMBackend
from backend.llm.factory import BACKENDS as LLM_BACKENDS
from backend.llm.factory import build_llm
from backend.llm.hf import ModelSource, locate_model
from backend.llm.openai_compat import probe_server
from backend.starter_questions import starter_questions
from backend.query import AskReply, QueryPipeline, checked_question, checked_scope, checked_top_k
from backend.render import BLOCK_COLORS, block_highlights, png_bytes, render_page  # noqa: F401 (ui/parse.py reads BLOCK_COLORS here)
from backend.retrieval.base import Retriever, get_retriever_class, method_names
from backend.stages import select_stages, stage_infos
from backend.sessions import SAMPLE_MARKER, Reattach, SamplePreparation, SessionHandle, SessionManager  # the last three: for ui/
from backend.types import (
    AskResult,
    BBox,
    Block,
    DocId,
    Document,
    FileEstimate,
    GraphCounts,
    GraphView,
    Highlight,
    IngestEstimate,
    IngestReport,
    MethodInfo,
    Model,
    NodeDetails,
    NodeId,
    NodeKind,
    PageView,
    ParamInfo,
    ProgressEvent,
    ResultItem,
    Section,
    StageInfo,
    TableView,
)

log = logging.getLogger(__name__)

MAX_COMPARE_METHODS = 4  # side-by-side columns still fit a laptop screen
SAMPLE_DIR = Path(__file__).resolve().parent.parent / "sample_corpus"
BUSY_CONTENTION = 1.5  # contention (speed.py) from which the estimate says the machine is busy
LARGE_INGEST_S = 60.0  # estimates above this carry a warning before the user presses Ingest


class NodeBrief(Model):
    """Where a node id met in a trace or a pack sits and what it says, for the UI's replay.
    (A view of the service like PageView; kept here until types.py grows a home for it.)"""

    id: NodeId
    kind: NodeKind
    doc: str = Field(description="File name of the document.")
    doc_id: DocId
    page: int
    bbox: BBox | None = None
    label: str | None = None
    section_path: list[str] = Field(default_factory=list)
    text: str


def _normal_spec(spec: str | Sequence[str] | None) -> str:
    """A stages spec as one comparable string: names lower-case, sorted, comma-joined; "default" when empty."""
    names = spec.split(",") if isinstance(spec, str) else list(spec or [])
    return ",".join(sorted({n.strip().lower() for n in names if n and n.strip()})) or "default"


class Service:
    def __init__(
        self, settings: Settings | None = None, encoder: TextEncoder | None = None, sub_encoder: TextEncoder | None = None
    ) -> None:
        self.settings = settings or Settings()
        self._encoders: EncoderSet | None = None
        self._other_encoders: dict[str, EncoderSet] = {}  # text runtime -> encoders, for workspaces built with another
        self._injected = encoder is not None
        if encoder is not None:
            if sub_encoder is None:
                sub_encoder = (
                    QueryCachingEncoder(WordLlamaEncoder()) if self.settings.index.subcomponent_encoder == "wordllama" else encoder
                )
            self._encoders = EncoderSet(encoder, sub_encoder)
        self._image_encoder: ImageEncoder | None = None
        self._corpora: dict[Path, Corpus] = {}
        self._lock = threading.RLock()
        self._write_locks: dict[Path, threading.Lock] = {}
        self._ingest_rates: deque[tuple[int, float]] = deque(maxlen=50)  # (pages, seconds) of recently parsed files
        self.sample = SamplePreparation()  # progress of the sample workspace built behind a running app

    # ---------------------------------------------------------------- shared pieces

    @property
    def encoders(self) -> EncoderSet:
        """The configured encoders: what a new workspace is built with."""
        if self._encoders is None:
            self._encoders = build_encoders(self.settings.index, onnx_cache=cache_folder(self.settings) / "onnx")
        return self._encoders

    def encoders_for(self, signature: str | None) -> EncoderSet:
        """The encoders that reproduce a workspace's vectors, from the signature it recorded (None:
        a new workspace): the configured ones, or the same model in the precision the workspace was
        built with (encoders.runtime_for). Encoders handed to the constructor serve every workspace."""
        if self._injected:
            return self.encoders
        runtime = runtime_for(signature, self.settings.index)
        if runtime == self.settings.index.text_runtime:
            return self.encoders
        with self._lock:
            if runtime not in self._other_encoders:
                index = self.settings.index.model_copy(update={"text_runtime": runtime})
                self._other_encoders[runtime] = build_encoders(index, onnx_cache=cache_folder(self.settings) / "onnx")
            return self._other_encoders[runtime]

    @property
    def image_encoder(self) -> ImageEncoder | None:
        """The configured image encoder (index.image_encoder), or None when images are off."""
        if self._image_encoder is None:
            self._image_encoder = build_image_encoder(self.settings.index)
        return self._image_encoder

    @property
    def encoder(self) -> TextEncoder:
        """The text encoder (documents, sections, components)."""
        return self.encoders.text

    def device_info(self) -> str:
        enc = self.encoder
        device = getattr(enc, "device", "cpu")
        if device == "cuda":
            import torch

            device = f"GPU ({torch.cuda.get_device_name(0)})"
        else:
            device = "CPU"
        faiss_dev = "FAISS GPU" if gpu_available(self.settings.index.use_gpu_faiss) else "FAISS CPU"
        return f"{device}, {faiss_dev}, encoders {enc.name} + {self.encoders.sub.name} (subcomponents), LLM backend {self.llm().name}"

    def methods(self) -> list[MethodInfo]:
        out = []
        for name in method_names():
            cls = get_retriever_class(name)
            out.append(MethodInfo(name=name, description=cls.description, params=[ParamInfo(**dataclasses.asdict(p)) for p in cls.param_specs(self.settings)]))
        return out

    @staticmethod
    def stage_infos() -> list[StageInfo]:
        """The stages of the query pipeline (name, description, on which corpora each acts), in the
        order they run, the scope filter last (README "Stages")."""
        return stage_infos()

    def _store(self, workspace: Path, create: bool = False) -> WorkspaceStore:
        return WorkspaceStore(Path(workspace), create=create)

    def corpus(self, workspace: Path) -> Corpus:
        """The loaded corpus of a workspace, reloaded when its database has changed. A question
        over the sample workspace while it is being prepared waits for it (sessions.sample_wait_s)."""
        self.wait_for_workspace(workspace)
        return self._load_corpus(Path(workspace).resolve())

    def wait_for_workspace(self, workspace: Path) -> None:
        """Return when `workspace` can be read: at once, unless it is the sample workspace while it
        is being prepared, which is waited for (sessions.sample_wait_s, then SamplePreparingError)."""
        if not self.sample.ready and Path(workspace).resolve() == self.sample_workspace_path():
            self.sample.wait(self.settings.sessions.sample_wait_s)

    def _load_corpus(self, key: Path) -> Corpus:
        store = self._store(key)
        try:
            generation = store.generation
            with self._lock:
                cached = self._corpora.get(key)
                if cached is not None and cached.generation == generation:
                    return cached
                encoders = self.encoders_for(store.encoder_signature)
                dims = {name: encoders.for_layer(name).dim for name in ("documents", "sections", "components", "subcomponents")}
                ix = self.settings.index
                approximate = Approximate(rows=ix.approximate_rows, share=ix.approximate_share, candidates=ix.approximate_candidates)
                corpus = Corpus.load(store, dims=dims, use_gpu=gpu_available(ix.use_gpu_faiss), approximate=approximate)
                self._corpora[key] = corpus
                heap.trim()  # what the load read and built on the way (rows, JSON, token lists) is freed
                return corpus
        finally:
            store.close()

    # ---------------------------------------------------------------- workspaces

    def ingest(
        self,
        workspace: Path,
        files: list[Path],
        progress: Callable[[ProgressEvent], None] | None = None,
        display_names: list[str] | None = None,
    ) -> IngestReport:
        key = Path(workspace).resolve()
        with self._lock:
            lock = self._write_locks.setdefault(key, threading.Lock())
        with lock:
            store = self._store(key, create=True)
            try:
                # The models load after the first file parses (Ingestor), not before.
                recorded = store.encoder_signature
                if self.settings.ingest.ray_address:  # on a Ray cluster, whose nodes load the encoders
                    from backend.ingest.cluster import ClusterIngestor

                    ingestor = ClusterIngestor(self.settings, lambda: self.image_encoder)
                else:
                    ingestor = Ingestor(self.settings, lambda: self.encoders_for(recorded), lambda: self.image_encoder)
                report = ingestor.ingest(store, [Path(f) for f in files], progress, display_names)
            finally:
                store.close()
        heap.trim()  # the parsed documents and encode batches of the ingest are freed
        with self._lock:
            self._ingest_rates.extend((f.pages, f.seconds) for f in report.files if f.status in ("ingested", "replaced") and f.pages)
        return report

    def documents(self, workspace: Path) -> list[Document]:
        if not (Path(workspace) / "strata.sqlite").exists():
            return []
        store = self._store(workspace)
        try:
            return store.documents()
        finally:
            store.close()

    def remove_document(self, workspace: Path, doc_id: str) -> Document:
        store = self._store(workspace)
        try:
            return store.remove_document(doc_id)
        finally:
            store.close()

    def sections(self, workspace: Path, doc_id: str) -> list[Section]:
        corpus = self.corpus(workspace)
        return [s for s in corpus.sections.values() if s.doc == doc_id]

    def own_documents(self, workspace: Path) -> list[Document]:
        """The documents of a session's workspace that are not the sample corpus's (its uploads),
        by content: a sample PDF uploaded again still counts as the sample's. [] for the sample
        workspace itself."""
        sample = self.sample_workspace_path()
        if Path(workspace).resolve() == sample:
            return []
        sample_files = {d.sha256 for d in self.documents(sample)}
        return [d for d in self.documents(workspace) if d.sha256 not in sample_files]

    def starter_questions(self, workspace: Path, docs: Sequence[Document], limit: int = 4) -> list[str]:
        """Example questions about `docs` made from their headings by rules (backend/starter_questions.py)."""
        corpus = self.corpus(workspace)
        sections: dict[str, list[Section]] = {}
        for section in corpus.sections.values():
            sections.setdefault(section.doc, []).append(section)
        return starter_questions(docs, sections, limit)

    def sample_workspace_path(self) -> Path:
        return (self.settings.workspace_root / "sample").resolve()

    def sample_key(self) -> str:
        """What the prepared sample workspace depends on: the sample files' hashes, the parser
        version and the encoders' signature (a change to any of them rebuilds it)."""
        parts = [f"{p.name}:{file_sha256(p)}" for p in sorted(SAMPLE_DIR.glob("*.pdf"))]
        parts += [f"parser:{PARSER_VERSION}", f"encoders:{self.encoders.signature}"]
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()

    def sample_prepared(self) -> bool:
        """Is the sample workspace on disk built from these files with this parser and these encoders?"""
        path = self.sample_workspace_path()
        marker = path / SAMPLE_MARKER
        if not (path / "strata.sqlite").exists() or not marker.is_file():
            return False
        try:
            return marker.read_text(encoding="utf-8").strip() == self.sample_key()
        except OSError:
            return False

    def ensure_sample_workspace(self, build_elsewhere: Callable[[Settings, SamplePreparation], None] | None = None) -> Path:
        """The shared, read-only workspace of the sample corpus: reused as it is when it was
        prepared with the same files, parser and encoders (see sample_key), else rebuilt from
        scratch, one file at a time so `self.sample` can say how far it got. build_elsewhere:
        builds it outside this process (the app passes backend.sample_build.run_sample_build: a
        niced child process while it serves); None builds it here (tests, the CLI)."""
        path = self.sample_workspace_path()
        if self.sample_prepared():
            log.info("reusing the prepared sample workspace %s", path.name)
            self.sample.finish()
            return path
        pdfs = sorted(SAMPLE_DIR.glob("*.pdf"))
        log.info("the sample workspace must be prepared (first start, or its files, parser or encoders changed): "
                 "%d PDFs, once%s; later starts reuse it", len(pdfs), " in a separate process" if build_elsewhere else "")
        self.sample.start(len(pdfs))
        try:
            with self._lock:
                self._corpora.pop(path, None)
            if build_elsewhere is not None:
                build_elsewhere(self.settings, self.sample)
            else:
                self.build_sample(path, pdfs, self.sample.advance)
        except Exception as exc:
            self.sample.finish(error=without_paths(str(exc)))
            raise
        self.sample.finish()
        return path

    def build_sample(self, path: Path, pdfs: list[Path], advance: Callable[[int], None]) -> None:
        """Ingest the sample PDFs into `path` from scratch, one at a time (`advance(k)` after the
        k-th), write its index caches and the marker of what it was built from."""
        started = time.perf_counter()
        shutil.rmtree(path, ignore_errors=True)
        for i, pdf in enumerate(pdfs):
            report = self.ingest(path, [pdf])
            for f in report.failed:
                log.error("sample %s failed: %s", f.file_name, f.reason)
            advance(i + 1)
            log.info("sample corpus: %d of %d files prepared (%s)", i + 1, len(pdfs), pdf.name)
        self._load_corpus(path)  # writes the index caches now, so later reads never write into the shared sample
        tmp = path / (SAMPLE_MARKER + ".tmp")
        tmp.write_text(self.sample_key(), encoding="utf-8")
        tmp.replace(path / SAMPLE_MARKER)
        log.info("sample workspace prepared in %.1f s", time.perf_counter() - started)

    def admission_gates(self, first_ask_s: float = 1.0, first_ingest_s: float = 10.0) -> tuple[AdmissionGate, AdmissionGate]:
        """(questions, uploads) gates for the API (backend/admission.py, settings.serving): one question
        per core (serving.ask_slots), one upload at a time; `first_*_s`: seconds per call before any was measured."""
        serving = self.settings.serving
        slots = serving.ask_slots or os.cpu_count() or 1
        return (
            AdmissionGate("questions", slots, serving.max_wait_s, first_ask_s),
            AdmissionGate("uploads", 1, serving.max_wait_s, first_ingest_s),
        )

    def session_manager(self, sample_workspace: Path | None) -> SessionManager:
        """The sessions of one app: they read `sample_workspace` (None = start empty) until their
        first write gives them a workspace of their own under workspace_root/sessions."""
        return SessionManager(
            self.settings.sessions, self.settings.workspace_root, sample_workspace, self.remove_session_workspace, self.sample,
            read_only=self.settings.serve_workspace is not None,
        )

    def served_workspace(self) -> Path | None:
        """The workspace the app serves read-only instead of the sample (settings.serve_workspace), checked."""
        path = self.settings.serve_workspace
        if path is None:
            return None
        if not (Path(path) / "strata.sqlite").is_file():
            raise WorkspaceError(f"No workspace at '{path}' (STRATA_SERVE_WORKSPACE). Build it with "
                                 "`python -m backend ingest --workspace DIR PDFS`, or unset the setting to serve the sample corpus.")
        return Path(path).resolve()

    def new_session_workspace(self, base: Path | None = None) -> Path:
        """A private workspace for one browser session: a copy of `base` (the sample workspace)."""
        path = (self.settings.workspace_root / "sessions" / uuid.uuid4().hex[:16]).resolve()
        if base is not None and (Path(base) / "strata.sqlite").exists():
            shutil.copytree(base, path)
        else:
            path.mkdir(parents=True, exist_ok=True)
        return path

    # ---------------------------------------------------------------- asking

    def ask(
        self,
        workspace: Path,
        question: str,
        method: str | None = None,
        top_k: int | None = None,
        params: dict | None = None,
        budget: int | None = None,
        llm_backend: str | None = None,
        llm_settings: LLMSettings | None = None,
        docs: Sequence[str] | None = None,
        stages: str | Sequence[str] | None = None,
    ) -> AskResult:
        """Retrieve, pack and read (backend.query.QueryPipeline). `llm_backend` (rules | openai | hf)
        overrides settings.reader.llm_backend for this question only; None keeps the setting.
        `llm_settings` (base URL, key, model, call budget ...) replaces settings.llm the same way,
        so one browser session's LLM choice never reaches another's. `docs`: file names (or ids)
        of the documents to ask, none for the whole workspace (backend/stages/scope.py). The
        question and top_k are checked against settings.max_question_chars and max_top_k before
        anything is loaded. `stages`: "default", "none" or stage names (README "Stages"; None:
        settings.retrieval.stages); an unknown name fails before the corpus is loaded too."""
        question = checked_question(question, self.settings)
        top_k = checked_top_k(top_k, self.settings)
        method = method or self.settings.retrieval.default_method
        stages = self.settings.retrieval.stages if stages is None else stages
        select_stages(stages, get_retriever_class(method).follows_references)  # unknown names fail before the corpus is loaded
        corpus = self.corpus(workspace)
        if not corpus.documents:
            raise EmptyCorpusError("This workspace has no documents yet. Upload a PDF in the Library tab first.")
        scope = checked_scope(corpus, docs)
        pipeline = self._pipeline(corpus, llm_backend, llm_settings)
        retriever = self.retriever(method, corpus, pipeline.llm)
        budget = int(budget or self.settings.reader.token_budget)
        return pipeline.run(retriever, method, question, top_k, dict(params or {}), budget, scope, stages)

    @staticmethod
    def ask_reply(result: AskResult, with_trace: bool = True) -> AskReply:
        """An answered question in the one wire format (`ask --json`, the API's /ask, predictions)."""
        return AskReply.of(result, with_trace)

    def _pipeline(self, corpus: Corpus, llm_backend: str | None, llm_settings: LLMSettings | None) -> QueryPipeline:
        encoders = self.encoders_for(corpus.encoder_signature)
        return QueryPipeline(
            corpus=corpus, llm=self.llm(llm_backend, llm_settings), count_tokens=encoders.text.count_tokens,
            question_vectors=lambda q: (encoders.text.encode([q])[0], encoders.sub.encode([q])[0]), reader=self.settings.reader,
            rank_depth=self.settings.retrieval.rank_depth, stages=self.settings.retrieval.stages,
            profile=self.settings.retrieval.profile,
        )

    def llm(self, backend: str | None = None, llm_settings: LLMSettings | None = None) -> LLMBackend:
        """A fresh backend per question, so its usage counts are that question's cost. `backend`
        (rules | openai | hf) overrides settings.reader.llm_backend; None keeps the setting.
        `llm_settings` replaces settings.llm for this backend only (the shared settings stay as they are)."""
        settings = self.settings if llm_settings is None else self.settings.model_copy(update={"llm": llm_settings})
        if not backend or backend == settings.reader.llm_backend:
            return build_llm(settings)
        if backend not in LLM_BACKENDS:
            raise ConfigError(f"Unknown LLM backend '{backend}'. Choose one of: {', '.join(LLM_BACKENDS)}.")
        reader = settings.reader.model_copy(update={"llm_backend": backend})
        return build_llm(settings.model_copy(update={"reader": reader}))

    @staticmethod
    def llm_backends() -> tuple[str, ...]:
        """The LLM backends a question can be answered with (the UI's backend menu)."""
        return LLM_BACKENDS

    @staticmethod
    def locate_hf_model(name: str, allow_download: bool = False) -> ModelSource:
        """Where the hf backend's model `name` (a local folder or a Hub id) is; a Hub id missing from the
        local cache is downloaded only with allow_download (the Settings tab's explicit choice) and never
        under HF_HUB_OFFLINE (backend.llm.hf.locate_model)."""
        return locate_model(name, allow_download)

    @staticmethod
    def check_llm_server(llm_settings: LLMSettings) -> str:
        """Is the OpenAI-compatible server of `llm_settings` up and serving its model? One line when
        it is; LLMError saying what came back and the fix when not (backend.llm.openai_compat.probe_server)."""
        return probe_server(llm_settings)

    def retriever(self, method: str, corpus: Corpus, llm: LLMBackend | None = None) -> Retriever:
        cls = get_retriever_class(method)
        encoders = self.encoders_for(corpus.encoder_signature)
        return cls(
            corpus, encoders.text, self.settings, sub_encoder=encoders.sub, llm=llm or self.llm(), image_encoder=self.image_encoder
        )

    def repack(
        self, workspace: Path, result: AskResult, budget: int, llm_backend: str | None = None,
        llm_settings: LLMSettings | None = None,
    ) -> AskResult:
        """Pack the same ranked results under another token budget and read again (with
        `llm_backend` and `llm_settings` when given, as in `ask`)."""
        return self._pipeline(self.corpus(workspace), llm_backend, llm_settings).reread(result, budget)

    def describe_nodes(self, workspace: Path, ids: list[str]) -> dict[str, NodeBrief]:
        """Document, page, kind and text of the given node ids (documents, sections, units,
        entities). Ids not in the workspace (a run imported from another one) are left out."""
        corpus = self.corpus(workspace)
        out: dict[str, NodeBrief] = {}
        for node_id in dict.fromkeys(ids):
            node = corpus.nodes.get(node_id)
            if node is None:
                continue
            doc = corpus.documents.get(node.doc)
            out[node_id] = NodeBrief(
                id=node_id, kind=node.kind, doc=doc.file_name if doc else node.doc, doc_id=node.doc, page=node.page,
                bbox=node.bbox, label=node.label, section_path=corpus.section_path(node_id), text=node.text,
            )
        return out

    # ---------------------------------------------------------------- pages

    def page_view(self, workspace: Path, doc_id: str, page: int) -> PageView:
        store = self._store(workspace)
        try:
            doc = store.document(doc_id)
            if doc is None:
                raise WorkspaceError(f"No document with id '{doc_id}' in this workspace.")
            page = min(max(1, int(page)), doc.pages)
            w, h = doc.page_sizes[page - 1]
            return PageView(doc_id=doc_id, file_name=doc.file_name, page=page, pages=doc.pages, width=w, height=h, blocks=store.blocks(doc_id, page))
        finally:
            store.close()

    def render_page(self, workspace: Path, doc_id: str, page: int, highlights: list[Highlight] | None = None, dpi: int = 90):
        """The page as a PIL image with the given boxes drawn on it (backend.render)."""
        store = self._store(workspace)
        try:
            pdf_path = store.pdf_path(doc_id)
        finally:
            store.close()
        return render_page(pdf_path, page, highlights, dpi, doc_id=doc_id)

    @staticmethod
    def block_highlights(blocks: list[Block]) -> list[Highlight]:
        """The page's layout blocks as highlights coloured by kind (BLOCK_COLORS)."""
        return block_highlights(blocks)

    @staticmethod
    def png_bytes(image) -> bytes:
        return png_bytes(image)

    # ---------------------------------------------------------------- added for the UI

    def remove_session_workspace(self, workspace: Path) -> None:
        """Delete one browser session's workspace folder and drop its cached corpus (the session
        ended or the user started over). Refuses any folder that is not under workspace_root/sessions."""
        path = Path(workspace).resolve()
        sessions = (self.settings.workspace_root / "sessions").resolve()
        if path.parent != sessions:
            raise WorkspaceError(f"'{path.name}' is not a session workspace (a folder under workspace_root/sessions); it was not deleted.")
        with self._lock:
            for key in [k for k in self._corpora if k.is_relative_to(path)]:  # its own and its evaluation workspaces
                self._corpora.pop(key)
            lock = self._write_locks.pop(path, None) or threading.Lock()
        with lock:  # waits for an ingest into this workspace to finish
            if path.exists():
                shutil.rmtree(path)
        log.info("removed session workspace %s", path.name)

    # ---------------------------------------------------------------- graph views, export, ingest estimates

    def _has_graph(self, workspace: Path) -> bool:
        return (Path(workspace) / "strata.sqlite").exists()

    def graph_counts(self, workspace: Path) -> GraphCounts:
        """Nodes by layer and kind, edges by kind, of the workspace's whole graph (zeros when empty)."""
        return graph_export.graph_counts(self.corpus(workspace)) if self._has_graph(workspace) else GraphCounts()

    def graph_view(
        self, workspace: Path, layers=None, node_kinds=None, edge_kinds=None, doc_ids=None, limit: int = 300
    ) -> GraphView:
        """The part of the graph that passes the filters (None = no filter), at most `limit` nodes."""
        if not self._has_graph(workspace):
            return GraphView(nodes=[], edges=[], total=GraphCounts(), matched=GraphCounts(), limit=limit, truncated=False)
        return graph_export.graph_view(self.corpus(workspace), layers, node_kinds, edge_kinds, doc_ids, int(limit))

    def ego_view(
        self, workspace: Path, centres: list[str], edge_kinds=None, layers=None, node_kinds=None, limit: int = 300
    ) -> GraphView:
        """The graph around `centres` (a chosen node, an answer's evidence): see graph_export.ego_view."""
        if not self._has_graph(workspace):
            raise EmptyCorpusError("This workspace has no documents yet, so there is no graph to show. Ingest a PDF first.")
        return graph_export.ego_view(self.corpus(workspace), centres, edge_kinds, layers, node_kinds, int(limit))

    def node_details(self, workspace: Path, node_id: str, thumbnail_dpi: int = 60) -> NodeDetails:
        """A node with its parent, neighbours and its page as a PNG with the node's box highlighted."""
        details = graph_export.node_details(self.corpus(workspace), node_id)
        highlights = [Highlight(bbox=details.bbox, label=details.kind.value)] if details.bbox else []
        image = self.render_page(workspace, details.doc, details.page, highlights, dpi=thumbnail_dpi)
        return details.model_copy(update={"thumbnail_png": self.png_bytes(image)})

    def table_view(self, workspace: Path, node_id: str) -> TableView:
        return graph_export.table_view(self.corpus(workspace), node_id)

    def export_graph(
        self, workspace: Path, fmt: str = "json", layers=None, node_kinds=None, edge_kinds=None, doc_ids=None
    ) -> bytes:
        """The graph as node-link JSON or GraphML (networkx); filters as in `graph_view`, no node limit."""
        if not self._has_graph(workspace):
            raise EmptyCorpusError("This workspace has no documents yet, so there is no graph to export. Ingest a PDF first.")
        return graph_export.export_graph(self.corpus(workspace), fmt, layers, node_kinds, edge_kinds, doc_ids)

    def estimate_ingest(self, workspace: Path, files: list[Path], display_names: list[str] | None = None) -> IngestEstimate:
        """Pages and time an ingest of `files` will take, before it starts: each PDF is opened (page
        tree only, nothing is parsed) and checked like the ingest does; seconds per page are those
        this server measured on its recent ingests, else a typical CPU figure."""
        names = [display_name(n) for n in (display_names or [Path(f).name for f in files])]
        known = {d.sha256: d for d in self.documents(workspace)}
        by_name = {d.file_name: d for d in known.values()}
        out: list[FileEstimate] = []
        mix = PageMix()
        for path, name in zip((Path(f) for f in files), names):
            try:
                with open_validated(path, self.settings.ingest) as pdf:
                    pages = pdf.page_count
                    file_mix = page_mix(pdf)
            except BadPdfError as exc:
                out.append(FileEstimate(file_name=name, status="invalid", reason=exc.reason))
                continue
            same = known.get(file_sha256(path))
            if same is not None and same.parser_version == PARSER_VERSION:
                status, reason = "unchanged", f"already in the workspace as {same.file_name}; it will be skipped"
            elif name in by_name:
                status, reason = "replaces", "a different version of this file is in the workspace; it will be replaced"
            else:
                status, reason = "new", ""
            out.append(FileEstimate(file_name=name, pages=pages, bytes=path.stat().st_size, status=status, reason=reason))
            if status != "unchanged":
                mix = mix + file_mix
        # Seconds per page of each kind (text, ruled/table, no text layer) this server measured
        # (backend/ingest/speed.py), else calibrated defaults.
        # x the machine's contention now: a machine shared with other work runs slower.
        model = SpeedModel(cache_folder(self.settings))
        measured = model.measured
        pages = sum(f.pages for f in out if f.status in ("new", "replaces"))
        load = contention()
        seconds = round(model.estimate(mix, load), 1)
        rate = seconds / pages if pages else model.rates()["text"] * load
        warnings = [f"{f.file_name} will fail: {f.reason}" for f in out if f.status == "invalid"]
        if load >= BUSY_CONTENTION and pages:
            warnings.append(f"This machine is busy with other work: the estimate assumes it stays about {load:.1f}x slower than idle.")
        limit = self.settings.max_upload_files
        if len(out) > limit:
            warnings.append(f"{len(out)} files were chosen; at most {limit} can be ingested at once. Upload them in smaller batches.")
        if seconds > LARGE_INGEST_S:
            warnings.append(
                f"This is a large batch: about {seconds / 60:.0f} minute(s) for {pages} pages. "
                "Consider uploading fewer files at once; you can use the other tabs while it runs."
            )
        return IngestEstimate(files=out, pages=pages, seconds=seconds, seconds_per_page=round(rate, 3), measured=measured, warnings=warnings)

    # ---------------------------------------------------------------- compare + evaluate

    def compare(
        self,
        workspace: Path,
        question: str,
        methods: list[str],
        top_k: int | None = None,
        params: dict[str, dict] | None = None,
        budget: int | None = None,
        llm_backend: str | None = None,
        llm_settings: LLMSettings | None = None,
        docs: Sequence[str] | None = None,
        stages: str | Sequence[str] | None = None,
    ) -> list[AskResult]:
        """The same question through each method, in the order given, one AskResult per (method,
        stages) pair, repeats dropped. `stages`: one spec for every method (a str, or None for the
        setting), or a sequence of one spec per method ("hikey" twice with "none" and "default"
        puts the method beside itself with its stages). `params` maps a method name to its
        parameters; `docs` asks every method of the same documents (ask)."""
        runs = self._compare_runs(methods, stages)
        params = params or {}
        return [
            self.ask(
                workspace, question, name, top_k, params.get(name), budget, llm_backend=llm_backend, llm_settings=llm_settings,
                docs=docs, stages=spec,
            )
            for name, spec in runs
        ]

    def _compare_runs(self, methods: list[str], stages: str | Sequence[str] | None) -> list[tuple[str, str]]:
        """(method, stages spec) pairs in the order given, repeats and empty names dropped; a
        StrataError for none, too many, an unknown method or stage, or a stages list of another length."""
        methods = list(methods or [])
        if stages is None or isinstance(stages, str):
            specs = [stages if stages is not None else self.settings.retrieval.stages] * len(methods)
        else:
            specs = list(stages)
            if len(specs) != len(methods):
                raise StrataError(f"{len(specs)} stage choices for {len(methods)} methods; give one per method, or one for all.")
        runs = list(dict.fromkeys((m, _normal_spec(s)) for m, s in zip(methods, specs) if m))
        if not runs:
            raise StrataError("No method to compare. Pick two to four methods.")
        if len(runs) > MAX_COMPARE_METHODS:
            raise StrataError(f"{len(runs)} methods were picked; compare at most {MAX_COMPARE_METHODS} at once.")
        for name, spec in runs:
            select_stages(spec, get_retriever_class(name).follows_references)  # unknown names fail before any method runs
        return runs

    @staticmethod
    def parse_gold(text: str) -> list[GoldRef]:
        """Gold evidence typed by a person ('report.pdf p.3', one per line) or pasted as JSON."""
        return parse_gold(text)

    @staticmethod
    def gold_hits(results: list[ResultItem], gold: list[GoldRef]) -> list[bool]:
        """Per ranked result: does it land on a gold page (doc + page, as ../shared/bench/score.py)?"""
        return result_hits(results, gold)

    def benchmark_folders(self) -> list[Path]:
        """The benchmark collections under settings.bench_root (none when it does not exist)."""
        return list_benchmarks(self.settings.bench_root)

    def benchmark_questions(self, bench: Path, session_workspace: Path, limit: int | None = None) -> list[BenchQuestion]:
        return load_questions(self._allowed_benchmark(bench, session_workspace), limit)

    def benchmark_documents(self, bench: Path, session_workspace: Path) -> list[str]:
        """The file names of a benchmark's corpus, sorted: the documents a question over its
        workspace can be asked of, known before the corpus is ingested."""
        bench = self._allowed_benchmark(bench, session_workspace)
        return sorted(p.name for p in (bench / "corpus").glob("*.pdf"))

    def unpack_benchmark(self, archive: Path, session_workspace: Path) -> Path:
        """Unpack an uploaded zip of a benchmark folder into the session's workspace (it goes when
        the session goes) and return the collection folder."""
        return unpack_benchmark_zip(archive, uploads_folder(session_workspace), max_unpacked_mb=self.settings.bench_max_unpacked_mb)

    def benchmark_workspace(self, bench: Path, session_workspace: Path) -> Path:
        """Where a benchmark's corpus is ingested, apart from the user's documents: the collections
        of bench_root (the same files for everyone) once under workspace_root/bench, an uploaded
        collection inside the session's workspace."""
        bench = self._allowed_benchmark(bench, session_workspace)
        return benchmark_workspace(bench, self.settings.bench_root, self.settings.workspace_root, session_workspace)

    def prepare_benchmark(
        self, bench: Path, session_workspace: Path, progress: Callable[[ProgressEvent], None] | None = None
    ) -> Path:
        """Ingest a benchmark's corpus into its workspace (unchanged files are no-ops) and return it."""
        bench = self._allowed_benchmark(bench, session_workspace)
        workspace = self.benchmark_workspace(bench, session_workspace)
        pdfs = sorted((bench / "corpus").glob("*.pdf"))
        report = self.ingest(workspace, pdfs, progress)
        if not report.ok:
            raise StrataError(f"None of the {len(pdfs)} PDFs of '{bench.name}' could be ingested: {report.failed[0].reason}")
        return workspace

    def evaluate(
        self,
        bench: Path,
        session_workspace: Path,
        methods: list[str],
        limit: int | None = None,
        top_k: int = 30,
        progress: Callable[[int, EvalProgress], None] | None = None,
        budget: int | None = None,
        llm_backend: str | None = None,
        llm_settings: LLMSettings | None = None,
        scoped: bool = False,
    ) -> list[EvalReport]:
        """Run each method over the benchmark (its corpus ingested once into its own workspace)
        and score it; `progress` gets (index of the method, event). `scoped`: ask each question of
        the documents its meta.doc_scope names (run_eval)."""
        names = list(dict.fromkeys(m for m in methods or [] if m))
        if not names:
            raise StrataError("No method to evaluate. Pick at least one method.")
        for name in names:
            get_retriever_class(name)
        top_k = checked_top_k(top_k, self.settings)  # a bad top_k fails once here, not once per question
        bench = self._allowed_benchmark(bench, session_workspace)
        workspace = self.benchmark_workspace(bench, session_workspace)
        reports = []
        for i, name in enumerate(names):
            reports.append(
                run_eval(
                    self.settings, workspace, bench, name, top_k=top_k, limit=limit, out_dir=workspace / "eval", service=self,
                    progress=(lambda ev, i=i: progress(i, ev)) if progress else None, budget=budget,
                    llm_backend=llm_backend, llm_settings=llm_settings, scoped=scoped,
                )
            )
        return reports

    @staticmethod
    def eval_rows(reports: list[EvalReport], breakdown: str = "overall") -> list[MetricRow]:
        """Metric rows per method: 'overall', or per 'modality' / 'hops' value."""
        if breakdown not in ("overall", "modality", "hops"):
            raise StrataError(f"Unknown breakdown '{breakdown}'. Use overall, modality or hops.")
        return metric_rows(reports, breakdown)

    @staticmethod
    def export_eval(reports: list[EvalReport], session_workspace: Path) -> tuple[Path, Path]:
        """The evaluation as CSV (metric rows) and JSON (rows + per-question records), in the session's workspace."""
        if not reports:
            raise StrataError("Nothing to export yet. Run an evaluation first.")
        stem = f"{reports[0].collection}-{time.strftime('%Y%m%d-%H%M%S')}"
        return export_reports(reports, Path(session_workspace) / "eval" / "exports", stem)

    def _allowed_benchmark(self, bench: Path, session_workspace: Path) -> Path:
        """`bench` resolved, when it is one of bench_root's collections or an upload of this session."""
        return allowed_benchmark(bench, self.settings.bench_root, session_workspace)
