"""The workspace on disk: one folder with SQLite (documents, sections, nodes with their
embeddings, edges, layout blocks, pending document links, saved runs, and image vectors of
figures when an image encoder is configured), the source PDFs, crop images and FAISS index files.

Atomicity: SQLite is the single source of truth and every document is written in one
transaction, so a crash or kill mid-ingest leaves the previous state readable. FAISS files are
a cache stamped with the database generation; a stale or missing one is rebuilt from the stored
embeddings on open (no re-encoding). Files (PDF copy, crops) are written before the commit and
named by content hash, so a crash can only leave unreferenced files behind.

A row node's record holds its cells (`Node.row`). A workspace written before rows carried cells
loads as it is: its rows have `row` None, the readers of cells treat them as rows without cells
(no row label, no cell arithmetic; their text is read like a sentence's), and the load logs a
warning that says so and how to give them cells (re-ingest). Their text is never parsed back
into cells.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sqlite3
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from backend.errors import WorkspaceError
from backend.graph.edges import EdgeRow
from backend.graph.nodes import own_string
from backend.types import EDGE_JSON, FURNITURE_KINDS, NODE_JSON, SECTION_JSON, Block, Document, Edge, EdgeKind, Layer, Node, NodeKind, ParsedDocument, PendingDocLink, Section

log = logging.getLogger(__name__)

SCHEMA_VERSION = "1"
DB_NAME = "strata.sqlite"
ENTITY_SEQ_BASE = 1_000_000  # derived entity nodes sort after a document's own nodes
NO_IMAGE_ENCODER = "none"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (id TEXT PRIMARY KEY, file_name TEXT NOT NULL UNIQUE, sha256 TEXT NOT NULL,
    added REAL NOT NULL, json TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sections (id TEXT PRIMARY KEY, doc TEXT NOT NULL, json TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS nodes (id TEXT PRIMARY KEY, doc TEXT NOT NULL, layer INTEGER NOT NULL, seq INTEGER NOT NULL,
    json TEXT NOT NULL, emb BLOB);
CREATE TABLE IF NOT EXISTS edges (doc TEXT NOT NULL, src TEXT NOT NULL, dst TEXT NOT NULL, kind TEXT NOT NULL, json TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS blocks (doc TEXT NOT NULL, page INTEGER NOT NULL, json TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS doc_links (doc TEXT NOT NULL, json TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS entity_runs (doc TEXT PRIMARY KEY, extractor TEXT NOT NULL, entities INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS runs (id TEXT PRIMARY KEY, created REAL NOT NULL, question TEXT NOT NULL, method TEXT NOT NULL,
    json TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS sections_doc ON sections(doc);
CREATE INDEX IF NOT EXISTS nodes_doc ON nodes(doc);
CREATE INDEX IF NOT EXISTS edges_doc ON edges(doc);
CREATE INDEX IF NOT EXISTS blocks_doc_page ON blocks(doc, page);
CREATE INDEX IF NOT EXISTS doc_links_doc ON doc_links(doc);
CREATE TABLE IF NOT EXISTS images (id TEXT PRIMARY KEY, doc TEXT NOT NULL, emb BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS images_doc ON images(doc);
"""


class StoredVectors(MutableMapping):
    """node id -> vector (float32, read-only view), held as the stored bytes. A float32 view per
    row would be a small Python object each (~300k per 10k pages), made between the nodes and
    freed once the corpus has copied the rows: the freed slots stay spread over the heap, held by
    the nodes around them (~30 MB at 10k pages, measured with sys._debugmallocstats). Bytes of a
    vector's size come from malloc instead, and go back to it whole."""

    def __init__(self, store: WorkspaceStore | None = None) -> None:
        self._rows: dict[str, bytes | np.ndarray] = {}
        # Nodes known to have a vector that was not read (all_nodes(read_layers=...)): read from
        # `store` when asked for, one by one or a layer at a time (`fill`).
        self._unread: set[str] = set()
        self._store = store

    def __getitem__(self, node_id: str) -> np.ndarray:
        row = self._rows.get(node_id)
        if row is None:
            if node_id not in self._unread or self._store is None:
                raise KeyError(node_id)
            row = self._store.node_vector(node_id)
        return np.frombuffer(row, dtype=np.float32) if isinstance(row, bytes) else row

    def __setitem__(self, node_id: str, row: bytes | np.ndarray) -> None:
        self._unread.discard(node_id)
        self._rows[node_id] = row

    def __delitem__(self, node_id: str) -> None:
        if node_id in self._unread:
            self._unread.discard(node_id)
        else:
            del self._rows[node_id]

    def __iter__(self) -> Iterator[str]:
        yield from self._rows
        yield from self._unread

    def __len__(self) -> int:
        return len(self._rows) + len(self._unread)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._rows or node_id in self._unread

    def mark_unread(self, node_id: str) -> None:
        self._unread.add(node_id)

    def fill(self, matrix: np.ndarray, row: Mapping[str, int], layer: Layer) -> None:
        """matrix[row[id]] = the vector of id, for every id of `row` (nodes of that Layer), read
        in one pass over the layer's stored rows where they were not read before."""
        if self._store is not None and any(i in self._unread for i in row):
            for node_id, emb in self._store.layer_vectors(layer):
                r = row.get(node_id)
                if r is not None and node_id not in self._rows:
                    matrix[r] = np.frombuffer(emb, dtype=np.float32)
        for node_id, r in row.items():
            if node_id in self._rows:
                matrix[r] = self[node_id]


class WorkspaceStore:
    """Read/write access to one workspace folder."""

    def __init__(self, root: Path, *, create: bool = True) -> None:
        self.root = Path(root)
        db = self.root / DB_NAME
        if not db.exists() and not create:
            raise WorkspaceError(f"No workspace at '{self.root}'. Ingest a PDF first or set STRATA_WORKSPACE.")
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            (self.root / "files").mkdir(exist_ok=True)
            (self.root / "crops").mkdir(exist_ok=True)
            (self.root / "index").mkdir(exist_ok=True)
        except OSError as exc:
            raise WorkspaceError(f"Cannot create the workspace folder '{self.root}': {exc}") from exc
        self._db = sqlite3.connect(db, isolation_level=None, check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode=DELETE")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(_SCHEMA)
        version = self._meta("schema_version")
        if version is None:
            self._set_meta("schema_version", SCHEMA_VERSION)
            self._set_meta("generation", "0")
        elif version != SCHEMA_VERSION:
            raise WorkspaceError(
                f"The workspace '{self.root}' was written by another Strata version (schema {version}, "
                f"this one reads {SCHEMA_VERSION}). Re-ingest the PDFs into a new workspace."
            )

    # ---------------------------------------------------------------- basics

    def close(self) -> None:
        self._db.close()

    def _meta(self, key: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def _set_meta(self, key: str, value: str) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    @property
    def generation(self) -> int:
        return int(self._meta("generation") or 0)

    def check_encoders(self, signature: str) -> None:
        """Record the encoders a workspace is built with; refuse to mix vectors of other encoders
        (the same fp32 model on a GPU and on a CPU is the same encoder: encoders.device_blind)."""
        from backend.index.encoders import device_blind

        stored = self._meta("encoders")
        if stored is None:
            self._set_meta("encoders", signature)
        elif device_blind(stored) != device_blind(signature):
            raise WorkspaceError(
                f"The workspace '{self.root}' was built with other encoders ({stored}); this run uses {signature}. "
                "Ingest into a new workspace, or set STRATA_INDEX__* back to the encoders it was built with."
            )

    def check_image_encoder(self, signature: str | None) -> None:
        """Record the image encoder (None: no images) a workspace is built with; refuse to mix in
        vectors of another model, or documents without image vectors into an image workspace and
        the reverse (the image index would silently cover only part of the figures)."""
        wanted = signature or NO_IMAGE_ENCODER
        stored = self._meta("image_encoder")
        if stored is None:
            has_docs = self._db.execute("SELECT 1 FROM documents LIMIT 1").fetchone() is not None
            if not has_docs or wanted == NO_IMAGE_ENCODER:
                self._set_meta("image_encoder", wanted)
                return
            stored = NO_IMAGE_ENCODER  # documents from before image support: they have no image vectors
        if stored != wanted:
            fix = "unset STRATA_INDEX__IMAGE_ENCODER" if stored == NO_IMAGE_ENCODER else f"set STRATA_INDEX__IMAGE_ENCODER back to the {stored.removeprefix('image=')} model"
            raise WorkspaceError(
                f"The workspace '{self.root}' was built with image encoder '{stored}'; this run uses '{wanted}'. "
                f"Ingest into a new workspace, or {fix}."
            )

    @property
    def encoder_signature(self) -> str | None:
        """The text encoders the workspace's vectors come from (EncoderSet.signature; None: none yet)."""
        return self._meta("encoders")

    @property
    def image_encoder_signature(self) -> str | None:
        """The image encoder the workspace's image vectors come from (None: no images)."""
        stored = self._meta("image_encoder")
        return None if stored in (None, NO_IMAGE_ENCODER) else stored

    @contextmanager
    def _transaction(self, bump: bool = True) -> Iterator[sqlite3.Connection]:
        """bump=False for caches derived from what is stored (entities of old workspaces): the
        graph the generation stamps has not changed."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        if bump:
            self._set_meta("generation", str(self.generation + 1))
        self._db.execute("COMMIT")

    # ---------------------------------------------------------------- documents

    def documents(self) -> list[Document]:
        rows = self._db.execute("SELECT json FROM documents ORDER BY added, file_name").fetchall()
        return [Document.model_validate_json(r[0]) for r in rows]

    def document(self, doc_id: str) -> Document | None:
        row = self._db.execute("SELECT json FROM documents WHERE id=?", (doc_id,)).fetchone()
        return Document.model_validate_json(row[0]) if row else None

    def document_by_file(self, file_name: str) -> Document | None:
        row = self._db.execute("SELECT json FROM documents WHERE file_name=?", (file_name,)).fetchone()
        return Document.model_validate_json(row[0]) if row else None

    def document_by_sha(self, sha256: str) -> Document | None:
        row = self._db.execute("SELECT json FROM documents WHERE sha256=?", (sha256,)).fetchone()
        return Document.model_validate_json(row[0]) if row else None

    def pdf_path(self, doc_id: str) -> Path:
        return self.root / "files" / f"{doc_id}.pdf"

    def add_document(
        self,
        parsed: ParsedDocument,
        source: Path,
        embeddings: dict[str, np.ndarray],
        image_embeddings: dict[str, np.ndarray] | None = None,
        entity_extractor: str | None = None,
    ) -> Document | None:
        """Store one parsed document in one transaction; a document with the same file name is
        replaced. image_embeddings: figure/region id -> image vector. entity_extractor: what extracted
        the entity nodes among parsed.nodes (recorded, so that load does not derive them again).
        Returns the replaced document, if any."""
        doc = parsed.document
        pdf_copy = self.pdf_path(doc.id)
        if not pdf_copy.exists():
            tmp = pdf_copy.with_suffix(f".tmp{uuid.uuid4().hex[:6]}")
            shutil.copyfile(source, tmp)
            os.replace(tmp, pdf_copy)
        old = self.document_by_file(doc.file_name)
        with self._transaction() as db:
            if old is not None:
                self._delete_rows(db, old.id)
            if doc.id != (old.id if old else None):
                self._delete_rows(db, doc.id)  # same content under another name: keep one copy
            db.execute(
                "INSERT INTO documents(id, file_name, sha256, added, json) VALUES (?, ?, ?, ?, ?)",
                (doc.id, doc.file_name, doc.sha256, time.time(), doc.model_dump_json()),
            )
            db.executemany("INSERT INTO sections(id, doc, json) VALUES (?, ?, ?)", [(s.id, doc.id, SECTION_JSON.dump_json(s).decode()) for s in parsed.sections])
            db.executemany(
                "INSERT INTO nodes(id, doc, layer, seq, json, emb) VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (n.id, doc.id, int(n.layer), i, NODE_JSON.dump_json(n).decode(), _blob(embeddings.get(n.id)))
                    for i, n in enumerate(parsed.nodes)
                ],
            )
            db.executemany(
                "INSERT INTO edges(doc, src, dst, kind, json) VALUES (?, ?, ?, ?, ?)",
                [(doc.id, e.src, e.dst, e.kind.value, EDGE_JSON.dump_json(e).decode()) for e in parsed.edges],
            )
            db.executemany("INSERT INTO blocks(doc, page, json) VALUES (?, ?, ?)", [(doc.id, b.page, b.model_dump_json()) for b in parsed.blocks])
            db.executemany("INSERT INTO doc_links(doc, json) VALUES (?, ?)", [(doc.id, p.model_dump_json()) for p in parsed.doc_links])
            if entity_extractor is not None:
                n_entities = sum(1 for n in parsed.nodes if n.layer == Layer.ENTITY)
                db.execute("INSERT INTO entity_runs(doc, extractor, entities) VALUES (?, ?, ?)", (doc.id, entity_extractor, n_entities))
            db.executemany(
                "INSERT INTO images(id, doc, emb) VALUES (?, ?, ?)", [(i, doc.id, _blob(v)) for i, v in (image_embeddings or {}).items()]
            )
        if old is not None and old.id != doc.id:
            self._delete_files(old.id)
        return old

    def remove_document(self, doc_id: str) -> Document:
        doc = self.document(doc_id)
        if doc is None:
            raise WorkspaceError(f"No document with id '{doc_id}' in workspace '{self.root}'.")
        with self._transaction() as db:
            self._delete_rows(db, doc_id)
        self._delete_files(doc_id)
        return doc

    def _delete_rows(self, db: sqlite3.Connection, doc_id: str) -> None:
        for table in ("documents", "sections", "nodes", "blocks", "doc_links", "entity_runs"):
            db.execute(f"DELETE FROM {table} WHERE {'id' if table == 'documents' else 'doc'}=?", (doc_id,))
        db.execute("DELETE FROM edges WHERE doc=?", (doc_id,))
        db.execute("DELETE FROM images WHERE doc=?", (doc_id,))

    def _delete_files(self, doc_id: str) -> None:
        self.pdf_path(doc_id).unlink(missing_ok=True)
        shutil.rmtree(self.root / "crops" / doc_id, ignore_errors=True)

    # ---------------------------------------------------------------- entities (MMGraphRAG layer)

    def entity_runs(self) -> dict[str, str]:
        """doc id -> the extractor its entities came from, for documents that have been through one."""
        return dict(self._db.execute("SELECT doc, extractor FROM entity_runs"))

    def put_entities(self, batches: list[tuple[str, list[Node], list[Edge]]], extractor: str) -> None:
        """Replace the entities of documents already stored (derived at load for workspaces built
        before entities existed), in one transaction that leaves the generation alone: they are
        a cache of what the stored documents say. Documents removed meanwhile are skipped."""
        with self._transaction(bump=False) as db:
            present = {r[0] for r in db.execute("SELECT id FROM documents")}
            for doc_id, nodes, edges in batches:
                if doc_id not in present:
                    continue
                db.execute("DELETE FROM nodes WHERE doc=? AND layer=?", (doc_id, int(Layer.ENTITY)))
                db.execute("DELETE FROM edges WHERE doc=? AND kind IN (?, ?)", (doc_id, EdgeKind.MENTIONS.value, EdgeKind.RELATION.value))
                db.executemany(
                    "INSERT OR REPLACE INTO nodes(id, doc, layer, seq, json, emb) VALUES (?, ?, ?, ?, ?, NULL)",
                    [(n.id, doc_id, int(n.layer), ENTITY_SEQ_BASE + i, NODE_JSON.dump_json(n).decode()) for i, n in enumerate(nodes)],
                )
                db.executemany(
                    "INSERT INTO edges(doc, src, dst, kind, json) VALUES (?, ?, ?, ?, ?)",
                    [(doc_id, e.src, e.dst, e.kind.value, EDGE_JSON.dump_json(e).decode()) for e in edges],
                )
                db.execute("INSERT OR REPLACE INTO entity_runs(doc, extractor, entities) VALUES (?, ?, ?)", (doc_id, extractor, len(nodes)))

    # ---------------------------------------------------------------- bulk reads for the in-memory corpus

    def all_sections(self) -> list[Section]:
        return [SECTION_JSON.validate_json(r[0]) for r in self._db.execute("SELECT json FROM sections")]

    def all_nodes(self, read_layers: tuple[Layer, ...] | None = None) -> tuple[list[Node], StoredVectors]:
        """Every node, and the text vector of those that have one. The vectors stay the bytes
        SQLite returned until asked for (each then a float32 view), keyed by the node's own id
        string: a loaded corpus copies them into its layers and lets them go, and what it lets
        go leaves no hole among the nodes (see StoredVectors). read_layers: read only the
        vectors of nodes of those layers now; the others are read when asked for (a corpus whose
        FAISS files are fresh never reads them: Corpus.load)."""
        embs = StoredVectors(self)
        return list(self.iter_nodes(embs, read_layers)), embs

    def iter_nodes(
        self, embs: StoredVectors, read_layers: tuple[Layer, ...] | None = None, layers: tuple[Layer, ...] | None = None,
    ) -> Iterator[Node]:
        """Every node (of `layers`), read as the caller takes it (all_nodes' order); each one's
        vector goes to `embs` as all_nodes says. A node's id is a string of its own, not the one
        parsed with its record: `embs` and the corpus's NodeTable keep it, and the record with its
        other strings dies whole once the table has read it (see backend.graph.nodes)."""
        def among(chosen: tuple[Layer, ...]) -> str:
            return f"layer IN ({','.join(str(int(x)) for x in chosen) or 'NULL'})"

        wanted = "1" if read_layers is None else among(read_layers)
        where = "1" if layers is None else among(layers)
        query = f"SELECT json, emb IS NOT NULL, CASE WHEN {wanted} THEN emb END FROM nodes WHERE {where} ORDER BY doc, seq"  # noqa: S608 - ints only
        without_cells = 0
        for js, has_emb, emb in self._db.execute(query):
            node = NODE_JSON.validate_json(js)
            node.id = own_string(node.id)
            if emb is not None:
                embs[node.id] = emb
            elif has_emb:
                embs.mark_unread(node.id)
            without_cells += node.row is None and node.kind is NodeKind.ROW
            yield node
        if without_cells:
            log.warning("%d table rows of the workspace '%s' were stored without their cells (written by an older "
                        "Strata): they are read as text, without row labels or cell arithmetic. Re-ingest the PDFs "
                        "into a new workspace to give them cells.", without_cells, self.root)

    def node_vector(self, node_id: str) -> bytes:
        row = self._db.execute("SELECT emb FROM nodes WHERE id=? AND emb IS NOT NULL", (node_id,)).fetchone()
        if row is None:
            raise KeyError(node_id)
        return row[0]

    def layer_vectors(self, layer: Layer) -> Iterator[tuple[str, bytes]]:
        """(id, vector bytes) of every node of that Layer that has a vector, streamed."""
        yield from self._db.execute("SELECT id, emb FROM nodes WHERE layer=? AND emb IS NOT NULL", (int(layer),))

    def all_image_embeddings(self) -> dict[str, np.ndarray]:
        """Image vectors of figures and figure regions: node id -> (dim,)."""
        return {i: np.frombuffer(emb, dtype=np.float32) for i, emb in self._db.execute("SELECT id, emb FROM images ORDER BY doc, id")}

    def all_edges(self) -> list[Edge]:
        return list(self.iter_edges())

    def iter_edges(self) -> Iterator[Edge]:
        """Every stored edge as a record, read as the caller takes it."""
        for (js,) in self._db.execute("SELECT json FROM edges ORDER BY rowid"):
            yield EDGE_JSON.validate_json(js)

    def iter_edge_rows(self) -> Iterator[EdgeRow]:
        """Every stored edge as an EdgeRow (src, dst, kind, weight, provenance), streamed: what a
        corpus load puts in its EdgeTable, without a record per edge (validated when written;
        SQLite's JSON functions read the two fields the columns do not hold). The order is
        iter_edges' order."""
        yield from self._db.execute(
            "SELECT src, dst, kind, COALESCE(json_extract(json, '$.weight'), 1.0), "
            "COALESCE(json_extract(json, '$.provenance'), '') FROM edges ORDER BY rowid"
        )

    def all_doc_links(self) -> list[tuple[str, PendingDocLink]]:
        return [(d, PendingDocLink.model_validate_json(js)) for d, js in self._db.execute("SELECT doc, json FROM doc_links")]

    def margin_blocks(self) -> dict[str, list[tuple[int, str, str]]]:
        """doc id -> (page, kind, text) of its furniture blocks (page numbers, running headers and
        footers): where printed page numbers are read from (retrieval/references.py)."""
        kinds = {k.value for k in FURNITURE_KINDS}
        out: dict[str, list[tuple[int, str, str]]] = defaultdict(list)
        rows = self._db.execute(
            "SELECT doc, page, json FROM blocks WHERE " + " OR ".join("json LIKE ?" for _ in kinds),
            [f'%"kind":"{k}"%' for k in sorted(kinds)],
        )
        for doc, page, js in rows:
            b = Block.model_validate_json(js)
            if b.kind.value in kinds:
                out[doc].append((page, b.kind.value, b.text))
        return dict(out)

    def blocks(self, doc_id: str, page: int | None = None) -> list[Block]:
        if page is None:
            rows = self._db.execute("SELECT json FROM blocks WHERE doc=?", (doc_id,))
        else:
            rows = self._db.execute("SELECT json FROM blocks WHERE doc=? AND page=?", (doc_id, page))
        return sorted((Block.model_validate_json(r[0]) for r in rows), key=lambda b: b.order)

    # ---------------------------------------------------------------- runs

    def save_run(self, run_json: dict) -> str:
        run_id = uuid.uuid4().hex[:12]
        with self._transaction() as db:
            db.execute(
                "INSERT INTO runs(id, created, question, method, json) VALUES (?, ?, ?, ?, ?)",
                (run_id, time.time(), run_json.get("question", ""), run_json.get("method", ""), json.dumps(run_json)),
            )
        return run_id

    def run(self, run_id: str) -> dict | None:
        row = self._db.execute("SELECT json FROM runs WHERE id=?", (run_id,)).fetchone()
        return json.loads(row[0]) if row else None


def _blob(vec: np.ndarray | None) -> bytes | None:
    return None if vec is None else np.asarray(vec, dtype=np.float32).tobytes()
