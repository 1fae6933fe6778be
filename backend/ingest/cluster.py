"""Ingest a batch of files on a Ray cluster; the workspace is written here, as the local path writes it.

The driver (this process) checks every file first (missing, unchanged by sha256, not a PDF, too
long: today's reasons) and sends the rest to the cluster, a bounded number of files at a time:
- a file of at most ingest.ray_pages_per_task pages is one parse task; a longer one is read in
  page ranges, one task each, and parsed into its document by one more task from those pages, so
  a 600-page filing is spread over the nodes. Every task parses in a bounded child process
  (bounded.py: the parse worker's time and memory limits) and asks Ray for that memory;
- the parsed document is encoded on a node that keeps the encoders loaded: one actor per node,
  the one on the node that parsed it, or a GPU node's actor when the cluster has one (it encodes
  for the others);
- the driver stores each encoded document with WorkspaceStore.add_document: one transaction per
  file, so a file is in the workspace whole or not at all, in whatever order files finish.
A node that dies takes its tasks and its actor with it: Ray runs the tasks again on the others
and the driver sends the encode to another node's actor (at most MAX_ATTEMPTS times per file).
Nothing is stored twice (a file is stored once, when its encode comes back). An interrupted driver
leaves the files it stored whole and none of the others; a rerun skips the stored ones (sha256).

What it does not do: keep the query index anywhere but on the machine that serves it, or import
ray before it is asked to ingest on a cluster (the local path never imports this module).
"""

from __future__ import annotations

import functools
import logging
import os
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from backend.config import Settings
from backend.errors import BadPdfError, ConfigError, clean_text, log_name
from backend.graph.store import WorkspaceStore
from backend.index.image import ImageEncoder, encode_figures
from backend.ingest.bounded import ParseJob, run_job
from backend.ingest.parser import open_validated
from backend.types import ClusterTasks, FileReport, IngestReport, ParsedDocument, ProgressEvent

log = logging.getLogger(__name__)

ProgressSink = Callable[[ProgressEvent], None]
MAX_ATTEMPTS = 3  # a file whose tasks or encoder were lost this often (nodes died) fails with a reason
TASK_RETRIES = 3  # Ray's own retries of a task whose node or worker process died
LOCAL_OBJECT_STORE_BYTES = 100 * 2**20  # a throwaway local cluster holds a few files in flight, no more
FILES_PER_CPU = 2  # files in flight per CPU of the cluster: a parse queued behind each running one
WAIT_S = 1.0  # the driver's longest wait for a result before it reports progress again
FORWARDED_ENV = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "TOKENIZERS_PARALLELISM", "HF_HOME")
RAY_MISSING = ("Ingest on a cluster needs ray: pip install -r requirements-cluster.txt "
               "(or leave STRATA_INGEST__RAY_ADDRESS / --ray empty to ingest in this process).")


# ---------------------------------------------------------------- what travels between driver and nodes


@dataclass(frozen=True, slots=True)
class FilePlan:
    """A file the cluster parses: its place in the batch, its bytes' sha256 and its page count."""

    index: int
    path: Path
    name: str
    sha: str
    pages: int


@dataclass(frozen=True, slots=True)
class TaskOutcome:
    """The small half of a parse task's answer, read by the driver: the node it ran on and the
    file's failure (None: parsed). The parsed document stays in the object store until encoded."""

    node: str
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class ParsedFile:
    """A parsed document and its figure crops (path under the workspace -> PNG bytes): the node
    that parsed it need not share a disk with the workspace."""

    parsed: ParsedDocument
    crops: dict[str, bytes]


@dataclass(frozen=True, slots=True)
class EncodedFile:
    parsed: ParsedDocument  # with its entity layer
    embeddings: dict[str, np.ndarray]  # node id -> (dim,)
    extractor: str
    crops: dict[str, bytes]
    signature: str  # EncoderSet.signature of the encoders that made the vectors


@dataclass(slots=True)
class ClusterProgress:
    """Tasks and nodes of the batch, sent with every progress event (ProgressEvent.cluster)."""

    running: int = 0
    done: int = 0
    failed: int = 0
    nodes: set[str] = field(default_factory=set)

    def snapshot(self) -> ClusterTasks:
        return ClusterTasks(running=self.running, done=self.done, failed=self.failed, nodes=len(self.nodes))


# ---------------------------------------------------------------- the work on the nodes


def _node_id() -> str:
    import ray

    return ray.get_runtime_context().get_node_id()


def read_range(data: bytes, name: str, first: int, stop: int, settings_json: str) -> tuple[TaskOutcome, list | None]:
    """Task: pages first..stop-1 of one file, read in a bounded child."""
    from backend.config import IngestSettings

    settings = IngestSettings.model_validate_json(settings_json)
    with tempfile.TemporaryDirectory(prefix="strata-task-") as tmp:
        pdf = Path(tmp) / "file.pdf"
        pdf.write_bytes(data)
        try:
            return TaskOutcome(_node_id()), run_job(ParseJob(pdf, name, pages=(first, stop)), settings)
        except BadPdfError as exc:
            return TaskOutcome(_node_id(), exc.reason), None


def parse_file(data: bytes, name: str, settings_json: str, *ranges: tuple[TaskOutcome, list | None]) -> tuple[TaskOutcome, ParsedFile | None]:
    """Task: one file parsed into its document in a bounded child, from the pages its range tasks
    read (`ranges`, in page order) or, without them, reading every page itself."""
    from backend.config import IngestSettings

    failed = next((outcome for outcome, _ in ranges if outcome.reason is not None), None)
    if failed is not None:
        return TaskOutcome(_node_id(), failed.reason), None
    reads = [read for _, part in ranges for read in part] if ranges else None
    settings = IngestSettings.model_validate_json(settings_json)
    with tempfile.TemporaryDirectory(prefix="strata-task-") as tmp:
        pdf, crops_root = Path(tmp) / "file.pdf", Path(tmp) / "crops"
        pdf.write_bytes(data)
        try:
            parsed = run_job(ParseJob(pdf, name, page_reads=reads, crops_root=crops_root), settings)
        except BadPdfError as exc:
            return TaskOutcome(_node_id(), exc.reason), None
        crops = {f"crops/{f.relative_to(crops_root).as_posix()}": f.read_bytes() for f in sorted(crops_root.rglob("*")) if f.is_file()}
    return TaskOutcome(_node_id()), ParsedFile(parsed, crops)


def _writable(folder: Path) -> Path:
    """The driver's ONNX cache folder where this node can write it (the same machine, shared
    storage), else one in this node's temporary folder: each node exports the graph once."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if os.access(folder, os.W_OK):
            return folder
    except OSError:
        pass
    return Path(tempfile.gettempdir()) / "strata-onnx-cache"


class NodeEncoders:
    """Actor: the workspace's encoders, loaded once on one node, encoding the documents sent to it."""

    def __init__(self, settings: Settings, onnx_cache: str) -> None:
        from backend.index.encoders import build_encoders
        from backend.ingest.pipeline import Ingestor

        encoders = build_encoders(settings.index, onnx_cache=_writable(Path(onnx_cache)))
        self._signature = encoders.signature
        self._ingestor = Ingestor(settings, encoders)

    def node(self) -> str:
        return _node_id()

    def encode(self, parsed_file: ParsedFile) -> EncodedFile:
        name = parsed_file.parsed.document.file_name
        parsed, embeddings, extractor = self._ingestor.encode_document(parsed_file.parsed, name)
        return EncodedFile(parsed, embeddings, extractor, parsed_file.crops, self._signature)


# ---------------------------------------------------------------- the driver


def _ray():
    try:
        import ray
    except ImportError as exc:
        raise ConfigError(RAY_MISSING) from exc
    return ray


@contextmanager
def connected(address: str) -> Iterator:
    """ray, connected to the cluster `address` names ('auto', 'local' or HOST:PORT) for the
    batch, and disconnected after it (a 'local' cluster is stopped). A process already connected
    (ray.init called by its owner) keeps its connection."""
    ray = _ray()
    if ray.is_initialized():
        yield ray
        return
    import backend

    runtime_env = {
        "py_modules": [str(Path(backend.__file__).resolve().parent)],  # the nodes run this checkout's code
        "env_vars": {k: os.environ[k] for k in FORWARDED_ENV if k in os.environ},
    }
    try:
        if address == "local":  # a new instance, even beside a cluster this machine runs or joined
            ray.init(address="local", object_store_memory=LOCAL_OBJECT_STORE_BYTES, include_dashboard=False, runtime_env=runtime_env,
                     log_to_driver=False, logging_level=logging.WARNING)
        else:
            ray.init(address=address, runtime_env=runtime_env, log_to_driver=False, logging_level=logging.WARNING)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ConfigError(f"Could not reach the Ray cluster at '{address}': {exc}. Start one with `ray start --head` "
                          "(then use 'auto' on that machine), give its HOST:PORT, or use 'local'.") from exc
    try:
        yield ray
    finally:
        ray.shutdown()


class EncoderPool:
    """One NodeEncoders actor per node that encodes, created when a node first needs one; a GPU
    node's actor encodes for every node. An actor whose node died is dropped."""

    def __init__(self, ray, settings: Settings, onnx_cache: Path) -> None:
        self._ray = ray
        self._settings = settings
        self._onnx_cache = str(onnx_cache)
        self._actors: dict[str, object] = {}
        self._gpu_nodes = {n["NodeID"] for n in ray.nodes() if n["Alive"] and n["Resources"].get("GPU", 0) >= 1}
        self._cls = ray.remote(NodeEncoders)

    def _start(self, node: str):
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        gpu = node in self._gpu_nodes
        settings = self._settings
        if not gpu:
            settings = settings.model_copy(update={"index": settings.index.model_copy(update={"device": "cpu"})})
        actor = self._cls.options(
            num_cpus=0, num_gpus=1 if gpu else 0, max_restarts=0,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False),
        ).remote(settings, self._onnx_cache)
        self._actors[node] = actor
        return actor

    def warm(self) -> None:
        """Load the encoders on every node now, while the first files parse."""
        for n in self._ray.nodes():
            if n["Alive"] and (n["Resources"].get("CPU", 0) > 0 or n["NodeID"] in self._gpu_nodes):
                self.pick(n["NodeID"])

    def pick(self, node: str) -> tuple[str, object]:
        gpu = sorted(n for n in self._gpu_nodes if n in self._actors or self._alive(n))
        chosen = gpu[0] if gpu else node
        if chosen not in self._actors:
            if not self._alive(chosen):
                if not self._actors:
                    raise ConfigError("No node of the Ray cluster is alive to encode on; start one with `ray start --address ...`.")
                chosen = next(iter(self._actors))
            else:
                self._start(chosen)
        return chosen, self._actors[chosen]

    def drop(self, node: str) -> None:
        self._actors.pop(node, None)
        self._gpu_nodes.discard(node)

    def _alive(self, node: str) -> bool:
        return any(n["NodeID"] == node and n["Alive"] for n in self._ray.nodes())


class ClusterIngestor:
    """The Ingestor's contract (ingest(store, files, progress, display_names) -> IngestReport) on a
    Ray cluster. The nodes build the encoders that reproduce the workspace's vectors (the text
    runtime it was built with, as Service.encoders_for chooses); image_encoder (or a function that
    loads it): figures' image vectors, made here from the crops the nodes send back."""

    def __init__(self, settings: Settings, image_encoder: ImageEncoder | None | Callable[[], ImageEncoder | None] = None) -> None:
        if not settings.ingest.ray_address:
            raise ConfigError("ClusterIngestor needs STRATA_INGEST__RAY_ADDRESS (auto, local or HOST:PORT).")
        self._settings = settings
        self._image_source = image_encoder
        self.progress = ClusterProgress()

    def ingest(
        self, store: WorkspaceStore, files: list[Path], progress: ProgressSink | None = None, display_names: list[str] | None = None,
    ) -> IngestReport:
        emit = progress or (lambda ev: None)
        names = [clean_text(n) for n in (display_names or [Path(f).name for f in files])]
        reports: dict[int, FileReport] = {}
        plans: list[FilePlan] = []
        repeats: list[tuple[int, Path, str]] = []  # the same bytes twice in one batch: checked after the first is stored
        seen: set[str] = set()
        for i, (path, name) in enumerate(zip(files, names)):
            plan_or_report = self._plan(store, i, Path(path), name)
            if isinstance(plan_or_report, FileReport):
                reports[i] = plan_or_report
            elif plan_or_report.sha in seen:
                repeats.append((i, plan_or_report.path, name))
            else:
                seen.add(plan_or_report.sha)
                plans.append(plan_or_report)
        for i, report in reports.items():
            emit(ProgressEvent(stage="failed" if report.status == "failed" else "done", doc=report.file_name, done=i + 1,
                               total=len(files), message=report.reason or report.status))
        if plans:
            with connected(self._settings.ingest.ray_address) as ray:
                batch = _Batch(ray, self._settings, store, plans, (len(reports), len(files)), emit, self.progress, self._image_encoder)
                reports.update(batch.run())
        for i, path, name in repeats:
            reports[i] = self._plan(store, i, path, name)  # now unchanged (or failed as its first copy did)
            if isinstance(reports[i], FilePlan):
                reports[i] = FileReport(file_name=name, status="failed", reason="the same file earlier in this batch failed")
        return IngestReport(workspace=str(store.root), files=[reports[i] for i in range(len(files))])

    # Encoders are not callable, so a callable source is a loader (as in the Ingestor).
    @functools.cached_property
    def _image(self) -> ImageEncoder | None:
        return self._image_source() if callable(self._image_source) else self._image_source

    def _image_encoder(self) -> ImageEncoder | None:
        return self._image

    def _plan(self, store: WorkspaceStore, index: int, path: Path, name: str) -> FilePlan | FileReport:
        """The checks the local path makes before a parse, here before any task: a missing file,
        an unchanged one (sha256 and parser version), one that is not a PDF or over the limits."""
        try:
            from backend.ingest.pipeline import unchanged_report

            sha, unchanged = unchanged_report(store, path, name)
            if unchanged is not None:
                return unchanged
            with open_validated(path, self._settings.ingest, name) as pdf:
                pages = pdf.page_count
        except BadPdfError as exc:
            log.warning("%s failed: %s", log_name(name), exc.reason)
            return FileReport(file_name=name, status="failed", reason=exc.reason)
        except OSError as exc:
            return FileReport(file_name=name, status="failed", reason=f"could not read the file ({exc.strerror or 'input/output error'})")
        return FilePlan(index, path, name, sha, pages)


@dataclass(slots=True)
class _InFlight:
    plan: FilePlan
    attempt: int
    started: float
    data: object = None  # ObjectRef of the file's bytes
    outcome: object = None  # ObjectRef of the parse task's TaskOutcome
    parsed: object = None  # ObjectRef of its ParsedFile (None when it failed), left in the object store
    ranges: list = field(default_factory=list)  # ObjectRefs of its range tasks, for progress
    node: str = ""  # the node whose actor encodes it


class _Batch:
    """One batch on the cluster: files sent a window at a time, results taken as they come."""

    def __init__(self, ray, settings: Settings, store: WorkspaceStore, plans: list[FilePlan], finished_of: tuple[int, int], emit: ProgressSink,
                 status: ClusterProgress, image_encoder: Callable[[], ImageEncoder | None]) -> None:
        from backend.index.encoders import runtime_for

        self._ray = ray
        self._settings = settings
        self._store = store
        self._queue = deque(plans)
        self._stored, self._total = finished_of  # files finished before the cluster's work, files in the batch
        self._emit = emit
        self._status = status
        self._image_encoder = image_encoder
        runtime = runtime_for(store.encoder_signature, settings.index)  # the workspace keeps the precision it was built with
        encoder_settings = settings.model_copy(update={"index": settings.index.model_copy(update={"text_runtime": runtime})})
        self._pool = EncoderPool(ray, encoder_settings, (settings.workspace_root / "cache" / "onnx").resolve())
        ingest = settings.ingest.model_copy(update={"parse_processes": 1})  # a task has one CPU; the cluster is the parallelism
        self._ingest_json = ingest.model_dump_json()
        memory = min(ingest.parse_memory_mb, ingest.memory_budget_mb) * 2**20
        self._read_range = ray.remote(read_range).options(memory=memory, max_retries=TASK_RETRIES)
        self._parse_file = ray.remote(parse_file).options(memory=memory, max_retries=TASK_RETRIES, num_returns=2)
        self._window = max(2, FILES_PER_CPU * int(ray.cluster_resources().get("CPU", 1)))
        self._waiting: dict[object, tuple[str, _InFlight]] = {}  # ObjectRef -> (what it is, its file)
        self._reports: dict[int, FileReport] = {}

    def run(self) -> dict[int, FileReport]:
        self._pool.warm()
        while self._queue or self._waiting:
            while self._queue and self._files_in_flight() < self._window:
                self._submit(_InFlight(self._queue.popleft(), 1, time.perf_counter()))
            ready, _ = self._ray.wait(list(self._waiting), num_returns=1, timeout=WAIT_S, fetch_local=False)
            for ref in ready:
                kind, job = self._waiting.pop(ref)
                {"range": self._on_range, "parse": self._on_parsed, "encode": self._on_encoded}[kind](ref, job)
        return self._reports

    def _files_in_flight(self) -> int:
        return len({job.plan.index for _, job in self._waiting.values()})

    def _event(self, stage: str, job: _InFlight, done: int | None = None, total: int | None = None, note: str = "") -> None:
        self._emit(ProgressEvent(stage=stage, doc=job.plan.name, done=self._stored if done is None else done,
                                 total=self._total if total is None else total, message=note, cluster=self._status.snapshot()))

    def _submit(self, job: _InFlight) -> None:
        """Send one file's tasks: its ranges (a long file) and its parse."""
        plan, per_task = job.plan, self._settings.ingest.ray_pages_per_task
        job.data = job.data or self._ray.put(plan.path.read_bytes())
        job.ranges = []
        if plan.pages > per_task:
            job.ranges = [self._read_range.remote(job.data, plan.name, first, first + per_task, self._ingest_json)
                          for first in range(0, plan.pages, per_task)]
            for ref in job.ranges:
                self._waiting[ref] = ("range", job)
        job.outcome, job.parsed = self._parse_file.remote(job.data, plan.name, self._ingest_json, *job.ranges)
        self._waiting[job.outcome] = ("parse", job)
        self._status.running += len(job.ranges) + 1
        pieces = f"{len(job.ranges)} page ranges + 1 parse task" if job.ranges else "1 parse task"
        self._event("open", job, note=f"{plan.pages} pages, {pieces}" + (f", attempt {job.attempt}" if job.attempt > 1 else ""))

    def _lost(self, job: _InFlight, exc: Exception) -> None:
        """A task or actor of this file was lost (its node died past Ray's retries): the file
        starts again, or fails once it has been lost MAX_ATTEMPTS times."""
        for ref in [r for r, (_, j) in self._waiting.items() if j is job]:
            del self._waiting[ref]
            self._status.running -= 1
        log.warning("%s: the cluster lost its work (%s)", log_name(job.plan.name), type(exc).__name__)
        if job.attempt >= MAX_ATTEMPTS:
            self._fail(job, f"the cluster lost this file's tasks {MAX_ATTEMPTS} times (nodes died or left); ingest it again")
            return
        self._submit(_InFlight(job.plan, job.attempt + 1, job.started, data=job.data))

    def _on_range(self, ref, job: _InFlight) -> None:
        self._status.running -= 1
        self._status.done += 1
        finished = sum(1 for r in job.ranges if r not in self._waiting)
        self._event("extract", job, finished, len(job.ranges), note=f"page range {finished} of {len(job.ranges)} read")

    def _on_parsed(self, ref, job: _InFlight) -> None:
        from ray.exceptions import RayError

        self._status.running -= 1
        try:
            outcome: TaskOutcome = self._ray.get(ref)
        except RayError as exc:
            self._status.failed += 1
            self._lost(job, exc)
            return
        self._status.nodes.add(outcome.node)
        if outcome.reason is not None:
            self._status.failed += 1
            self._fail(job, outcome.reason)
            return
        self._status.done += 1
        self._send_encode(job, outcome.node)

    def _send_encode(self, job: _InFlight, node: str) -> None:
        job.node, actor = self._pool.pick(node)
        self._waiting[actor.encode.remote(job.parsed)] = ("encode", job)
        self._status.running += 1
        self._status.nodes.add(job.node)
        self._event("encode", job, note="parsed; encoding")

    def _on_encoded(self, ref, job: _InFlight) -> None:
        from ray.exceptions import RayActorError, RayError

        self._status.running -= 1
        try:
            encoded: EncodedFile = self._ray.get(ref)
        except RayActorError as exc:  # its node died: another node's actor encodes it
            self._status.failed += 1
            self._pool.drop(job.node)
            if job.attempt >= MAX_ATTEMPTS:
                self._lost(job, exc)
                return
            job.attempt += 1
            self._send_encode(job, job.node)
            return
        except RayError as exc:  # the parsed document was lost with its node and could not be made again
            self._status.failed += 1
            self._lost(job, exc)
            return
        self._status.done += 1
        self._store_file(job, encoded)

    def _store_file(self, job: _InFlight, encoded: EncodedFile) -> None:
        """One transaction per file (WorkspaceStore.add_document): crops first, then the rows."""
        self._event("store", job, note="storing")
        try:
            for rel, data in encoded.crops.items():
                target = self._store.root / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                tmp = target.with_name(target.name + ".tmp")
                tmp.write_bytes(data)
                os.replace(tmp, target)
            self._store.check_encoders(encoded.signature)
            image = self._image_encoder()
            self._store.check_image_encoder(image.name if image is not None else None)
            images = encode_figures(image, encoded.parsed.nodes, self._store.root) if image is not None else {}
            replaced = self._store.add_document(encoded.parsed, job.plan.path, encoded.embeddings, images, entity_extractor=encoded.extractor)
        except OSError as exc:
            log.warning("%s could not be stored: %s", log_name(job.plan.name), exc)
            self._fail(job, f"could not read or store the file ({exc.strerror or 'input/output error'})")
            return
        doc = encoded.parsed.document
        self._finish(job, FileReport(
            file_name=job.plan.name, status="replaced" if replaced is not None else "ingested", doc_id=doc.id, title=doc.title,
            pages=doc.pages, counts=_counts(encoded.parsed), warnings=doc.warnings,
        ))

    def _fail(self, job: _InFlight, reason: str) -> None:
        log.warning("%s failed: %s", log_name(job.plan.name), reason)
        self._finish(job, FileReport(file_name=job.plan.name, status="failed", reason=reason))

    def _finish(self, job: _InFlight, report: FileReport) -> None:
        report.seconds = round(time.perf_counter() - job.started, 3)
        self._reports[job.plan.index] = report
        self._stored += 1
        self._event("failed" if report.status == "failed" else "done", job, note=report.reason or report.status)


def _counts(parsed: ParsedDocument) -> dict[str, int]:
    from backend.ingest.pipeline import _counts as counts

    return counts(parsed)
