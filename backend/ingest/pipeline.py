"""The ingest pipeline for a batch of files: for each file, check (sha256: unchanged files are a
no-op), parse in the isolated worker, encode every node, store in one transaction. A file that
fails is recorded in the report and the batch goes on; the workspace keeps everything else.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from backend.config import Settings
from backend.errors import BadPdfError, clean_text, log_name
from backend.graph.entities import entity_index_text, extract_document_entities
from backend.graph.store import WorkspaceStore
from backend.index.encoders import EncoderSet
from backend.index.image import ImageEncoder, encode_figures
from backend.index.texts import index_texts
from backend.ingest.parser import PARSER_VERSION, file_sha256
from backend.ingest.worker import ParseWorker
from backend.llm.factory import build_llm
from backend.types import FileReport, IngestReport, Layer, ParsedDocument, ProgressEvent

log = logging.getLogger(__name__)

ProgressSink = Callable[[ProgressEvent], None]


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


class Ingestor:
    def __init__(self, settings: Settings, encoders: EncoderSet, image_encoder: ImageEncoder | None = None) -> None:
        self._settings = settings
        self._encoders = encoders
        self._image_encoder = image_encoder  # None: figures are represented by their text only

    def ingest(
        self,
        store: WorkspaceStore,
        files: list[Path],
        progress: ProgressSink | None = None,
        display_names: list[str] | None = None,
    ) -> IngestReport:
        emit = progress or (lambda ev: None)
        store.check_encoders(self._encoders.signature)
        store.check_image_encoder(self._image_encoder.name if self._image_encoder is not None else None)
        reports: list[FileReport] = []
        # Names as the user gave them, made valid Unicode (a non-UTF-8 name would break JSON);
        # log lines escape them further (log_name).
        names = [clean_text(n) for n in (display_names or [Path(f).name for f in files])]
        with ParseWorker(self._settings.ingest) as worker:
            for i, (path, name) in enumerate(zip(files, names)):
                t0 = time.perf_counter()
                emit(ProgressEvent(stage="open", doc=name, done=i, total=len(files), message=f"file {i + 1} of {len(files)}"))
                report = self._ingest_or_fail(store, worker, Path(path), name, emit)
                report.seconds = round(time.perf_counter() - t0, 3)
                reports.append(report)
                emit(ProgressEvent(stage="done" if report.status != "failed" else "failed", doc=name, done=i + 1, total=len(files), message=report.reason or report.status))
        return IngestReport(workspace=str(store.root), files=reports)

    def _ingest_or_fail(self, store: WorkspaceStore, worker: ParseWorker, path: Path, name: str, emit: ProgressSink) -> FileReport:
        """One file's report: a failure of that file is recorded with a reason a person can read
        (no exception class, no server path) and the batch goes on."""
        try:
            return self._ingest_one(store, worker, path, name, emit)
        except BadPdfError as exc:
            log.warning("%s failed: %s", log_name(name), exc.reason)
            return FileReport(file_name=name, status="failed", reason=exc.reason)
        except OSError as exc:
            log.warning("%s could not be read or stored: %s", log_name(name), exc)
            return FileReport(file_name=name, status="failed", reason=f"could not read or store the file ({exc.strerror or 'input/output error'})")
        except ValueError:  # a parsed document the encoders or the store refused (pydantic's errors are ValueErrors)
            log.exception("%s could not be indexed", log_name(name))
            return FileReport(file_name=name, status="failed", reason="the file was parsed but could not be indexed; the server log has the details")

    def _ingest_one(self, store: WorkspaceStore, worker: ParseWorker, path: Path, name: str, emit: ProgressSink) -> FileReport:
        if not path.is_file():
            raise BadPdfError(name, "file not found")
        sha = file_sha256(path)
        existing = store.document_by_sha(sha)
        if existing is not None and existing.parser_version == PARSER_VERSION:
            note = None if existing.file_name == name else f"the same file is already in the workspace as {existing.file_name}"
            return FileReport(
                file_name=name, status="unchanged", doc_id=existing.id, title=existing.title, pages=existing.pages, reason=note
            )

        def on_parse(stage: str, done: int, total: int) -> None:
            emit(ProgressEvent(stage=stage, doc=name, done=done, total=total))

        parsed = worker.parse(path, store.root / "crops", name, on_parse)
        emit(ProgressEvent(stage="encode", doc=name, done=0, total=len(parsed.nodes)))
        sections = {s.id: s for s in parsed.sections}
        texts = index_texts(parsed.nodes, sections, {parsed.document.id: parsed.document})
        embeddings = {}
        for encoder, nodes in (
            (self._encoders.text, [n for n in parsed.nodes if n.layer != Layer.SUBCOMPONENT]),
            (self._encoders.sub, [n for n in parsed.nodes if n.layer == Layer.SUBCOMPONENT]),
        ):
            vectors = encoder.encode([texts[n.id] for n in nodes])
            embeddings.update(zip((n.id for n in nodes), vectors))
        ids = list(embeddings)
        emit(ProgressEvent(stage="encode", doc=name, done=len(ids), total=len(ids)))
        parsed, entity_extractor = self._add_entities(parsed, embeddings, name, emit)
        emit(ProgressEvent(stage="store", doc=name, done=0, total=1))
        image_embeddings = encode_figures(self._image_encoder, parsed.nodes, store.root) if self._image_encoder is not None else {}
        replaced = store.add_document(parsed, path, embeddings, image_embeddings, entity_extractor=entity_extractor)
        emit(ProgressEvent(stage="store", doc=name, done=1, total=1))
        doc = parsed.document
        return FileReport(
            file_name=name, status="replaced" if replaced is not None else "ingested", doc_id=doc.id, title=doc.title,
            pages=doc.pages, counts=_counts(parsed), warnings=doc.warnings,
        )

    def _add_entities(
        self, parsed: ParsedDocument, embeddings: dict, name: str, emit: ProgressSink
    ) -> tuple[ParsedDocument, str]:
        """MMGraphRAG's entity layer of one document (backend/graph/entities.py): entity nodes with
        mention and relation edges, their name + description encoded in the subcomponent space
        (short strings, where the static encoder is as good and hundreds of times faster). With a
        model backend, the per-question call budget bounds the model calls per document; the
        rules extract the chunks past it. Returns the document with them and the extractor's name."""
        emit(ProgressEvent(stage="entities", doc=name, done=0, total=1))
        doc = parsed.document
        found = extract_document_entities(doc.id, doc.title, parsed.nodes, build_llm(self._settings))
        vectors = self._encoders.sub.encode([entity_index_text(n) for n in found.nodes])
        embeddings.update(zip((n.id for n in found.nodes), vectors))
        emit(ProgressEvent(stage="entities", doc=name, done=1, total=1, message=f"{len(found.nodes)} entities"))
        return parsed.model_copy(update={"nodes": parsed.nodes + found.nodes, "edges": parsed.edges + found.edges}), found.extractor
