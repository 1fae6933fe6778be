"""The in-memory layered graph of one workspace plus its indexes; read-only once loaded.

Layers: documents (doc cards), sections (section cards), components (paragraph/table/figure),
subcomponents (sentence/row/object). Each layer has a dense index (FAISS) and a BM25 index.
The optional image layer holds image vectors of figures and figure regions (when the workspace
was built with an image encoder).
Document links (file/URI link annotations that name another PDF of the corpus) are resolved
here, at load, so a link to a document ingested later still lands.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import logging
import os
import re
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote, urlparse

import numpy as np

from backend import heap
from backend.graph.edges import EdgeRow, EdgeTable, edge_rows
from backend.graph.entities import (
    MERGED_EDGE_IDENTITY,
    MergedEntities,
    derive_missing_entities,
    entity_index_text,
    merge_entities,
)
from backend.graph.store import StoredVectors, WorkspaceStore
from backend.index.lexical import BM25Index
from backend.index.texts import index_texts
from backend.index.vector import Approximate, VectorIndex
from backend.ingest.layout import printed_page_map
from backend.types import Document, Edge, EdgeKind, Layer, Node, NodeKind, Section

log = logging.getLogger(__name__)

T = TypeVar("T")

LAYER_NAMES = ("documents", "sections", "components", "subcomponents")


def _layer_of(node: Node) -> str:
    if node.kind == NodeKind.DOCUMENT:
        return "documents"
    if node.kind == NodeKind.SECTION:
        return "sections"
    if node.layer == Layer.COMPONENT:
        return "components"
    if node.layer == Layer.SUBCOMPONENT:
        return "subcomponents"
    return "entities"


@dataclass
class LayerIndex:
    name: str
    ids: list[str]
    dense: VectorIndex
    lexical: BM25Index


@dataclass
class ImageLayer:
    """Image vectors of figures and figure regions, from the image encoder named by `signature`."""

    ids: list[str]
    dense: VectorIndex
    signature: str


def _lexical(ids: list[str], texts: list[str], index_dir: Path | None, name: str) -> BM25Index:
    """A layer's BM25 index; with a workspace, read from (or saved to) its index folder."""
    if index_dir is None:
        return BM25Index(ids, texts)
    return BM25Index.cached(ids, texts, index_dir / "bm25" / name)


def _link_key(target: str) -> str:
    path = urlparse(target).path if "://" in target else target
    name = unquote(path.replace("\\", "/").rsplit("/", 1)[-1]).lower()
    return re.sub(r"\.pdf$", "", name)


def _layer_matrix(embeddings, members: list[Node], row: dict[str, int], dim: int, consume: bool) -> np.ndarray:
    """(len(members), dim) the members' vectors in row order. From a store's StoredVectors, the
    rows not read yet are read in one pass over their layer; consume: each row leaves
    `embeddings` once copied, and the freed heap goes back before the next layer."""
    if members:
        dim = len(embeddings[members[0].id])
    matrix = np.empty((len(members), dim), dtype=np.float32)
    if isinstance(embeddings, StoredVectors):
        for layer in dict.fromkeys(n.layer for n in members):
            embeddings.fill(matrix, row, layer)
        if consume:
            for n in members:
                del embeddings[n.id]
    else:
        take = embeddings.pop if consume else embeddings.__getitem__
        for r, n in enumerate(members):
            matrix[r] = take(n.id)
    if consume:
        heap.trim()  # the rows just copied are free: hand them back before the next layer's matrix
    return matrix


def _ids_digest(ids: list[str]) -> str:
    h = hashlib.sha256()
    for node_id in ids:
        h.update(node_id.encode())
        h.update(b"\x00")
    return h.hexdigest()[:32]


class _DenseFiles:
    """The FAISS files of a workspace's layers (index/<layer>.faiss) and what they hold
    (index/meta.json: the store generation and, per layer, its rows and a digest of their ids).
    A file that holds exactly a layer's rows, as the kind of index the settings ask for (flat, or
    IVF over 8-bit codes above `approximate.rows`), is its vectors: the load reads it and never
    reads those rows from the store (half the load's reading at 100k pages, and no second copy of
    the layer while it is built). Any other layer is built from the store's rows and its file written."""

    def __init__(self, index_dir: Path | None, generation: int, approximate: Approximate) -> None:
        self.dir = index_dir
        self.generation = generation
        self.approximate = approximate
        self.saved: dict = {}
        meta = index_dir / "meta.json" if index_dir else None
        if meta is not None and meta.exists():
            try:
                self.saved = json.loads(meta.read_text())
            except (OSError, json.JSONDecodeError):
                self.saved = {}
        self.out: dict = {"generation": generation, "layers": {}}

    def index(self, name: str, ids: list[str], row: dict[str, int], matrix: Callable[[], np.ndarray], use_gpu: bool) -> VectorIndex:
        key = {"rows": len(ids), "ids": _ids_digest(ids), "kind": self.approximate.kind(len(ids))}
        self.out["layers"][name] = key
        path = self.dir / f"{name}.faiss" if self.dir else None
        saved = self.saved.get("layers", {}).get(name)
        # a meta.json from before approximate layers recorded no kind: its files are flat
        fresh = self.saved.get("generation") == self.generation and saved is not None and {"kind": "flat", **saved} == key
        if fresh and ids and path is not None and path.exists():
            try:
                return VectorIndex(ids, None, use_gpu=use_gpu, index=VectorIndex.read(path), row=row, approximate=self.approximate)
            except (RuntimeError, ValueError) as exc:  # unreadable, or not an index of these rows
                log.warning("%s unusable, rebuilding it from the store: %s", path, exc)
        dense = VectorIndex(ids, matrix(), use_gpu=use_gpu, row=row, approximate=self.approximate)
        if path is not None and ids:
            try:
                dense.save(path)
            except (OSError, RuntimeError) as exc:
                log.debug("could not write %s: %s", path, exc)
        return dense

    def write_meta(self) -> None:
        if self.dir is None or self.out == self.saved:
            return
        meta = self.dir / "meta.json"
        try:
            tmp = meta.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.out))
            os.replace(tmp, meta)
        except OSError as exc:
            log.debug("could not write %s: %s", meta, exc)


class Corpus:
    def __init__(
        self,
        documents: list[Document],
        sections: list[Section],
        nodes: list[Node],
        embeddings: MutableMapping[str, np.ndarray],
        edges: Iterable[Edge | EdgeRow],
        doc_links,
        *,
        dims: dict[str, int],
        use_gpu: bool = False,
        index_dir: Path | None = None,
        generation: int = 0,
        root: Path | None = None,
        image_embeddings: dict[str, np.ndarray] | None = None,
        image_signature: str | None = None,
        margin_blocks: dict[str, list[tuple[int, str, str]]] | None = None,
        encoder_signature: str | None = None,
        consume_embeddings: bool = False,
        approximate: Approximate | None = None,
    ) -> None:
        """edges: read once, in order (Corpus.load passes a stream from the store).
        margin_blocks: doc id -> (page, kind, text) of its furniture blocks (store.margin_blocks),
        from which each document's printed page numbers are fitted (backend.ingest.layout.printed_page_map),
        for questions that name a page (retrieval/references.py). consume_embeddings: the caller
        hands `embeddings` over, and each row leaves it once copied into its layer's matrix, so
        the per-row vectors and the matrices are not all held at once (Corpus.load: ~185 MB less
        at the peak of a 6k-page load). approximate: which layers are held as approximate indexes
        (None: every layer exact)."""
        self.root = root
        self.generation = generation
        self.encoder_signature = encoder_signature  # the text encoders its vectors come from (store.encoder_signature)
        merged = merge_entities(nodes, embeddings)  # MMGraphRAG: one entity node per name across documents
        nodes = merged.nodes
        self.documents: dict[str, Document] = {d.id: d for d in documents}
        # doc id -> printed page number -> the page positions that show it
        self.printed_pages: dict[str, dict[int, tuple[int, ...]]] = {
            d: printed_page_map(rows, self.documents[d].pages) for d, rows in (margin_blocks or {}).items() if d in self.documents
        }
        self.sections: dict[str, Section] = {s.id: s for s in sections}
        self.nodes: dict[str, Node] = {n.id: n for n in nodes}
        # The edges between nodes of the corpus (an end that is no node drops the edge), as arrays,
        # read one record at a time when `edges` is a stream (Corpus.load).
        links = self._resolve_doc_links(doc_links)
        self.edges = EdgeTable(
            (e for e in itertools.chain(merged.rewrite(edges), edge_rows(links)) if e[0] in self.nodes and e[1] in self.nodes),
            self.nodes, unique=MERGED_EDGE_IDENTITY,
        )
        self.children: dict[str, list[str]] = defaultdict(list)
        for src, dst in self.edges.ends(EdgeKind.CONTAINS):
            self.children[src].append(dst)
        self.components_by_doc: dict[str, list[str]] = defaultdict(list)
        for n in nodes:
            if n.layer == Layer.COMPONENT:
                self.components_by_doc[n.doc].append(n.id)
        self._index_dir = index_dir
        self.layers = self._build_layers(
            nodes, embeddings, dims, use_gpu, index_dir, generation, consume_embeddings, approximate or Approximate()
        )
        self.layers["entities"] = self._build_entity_layer(merged, dims.get("entities") or dims["subcomponents"])
        self._entities_without_vectors = merged.missing
        self._entity_lock = threading.Lock()
        self._derived: dict[Callable[[Any], Any], Any] = {}
        self._derived_lock = threading.RLock()
        # Optional: None when the workspace was built without an image encoder.
        self.image_layer = self._build_image_layer(image_embeddings or {}, image_signature)
        doc_row = {d: i for i, d in enumerate(self.layers["documents"].ids)}
        # (n_components,) row of each component's document in the documents layer
        self.component_doc_rows = np.array(
            [doc_row.get(self.nodes[c].doc, -1) for c in self.layers["components"].ids], dtype=np.int64
        )

    # ---------------------------------------------------------------- construction

    @classmethod
    def load(
        cls, store: WorkspaceStore, *, dims: dict[str, int], use_gpu: bool = False, approximate: Approximate | None = None
    ) -> Corpus:
        nodes, embs = store.all_nodes(read_layers=(Layer.ENTITY,))  # the layers' rows only where no FAISS file holds them
        # Documents ingested before entities existed get them here (rules, cached in the store).
        nodes, edges = derive_missing_entities(store, nodes, store.iter_edge_rows())
        return cls(
            store.documents(), store.all_sections(), nodes, embs, edges, store.all_doc_links(),
            dims=dims, use_gpu=use_gpu, index_dir=store.root / "index", generation=store.generation, root=store.root,
            image_embeddings=store.all_image_embeddings(), image_signature=store.image_encoder_signature,
            margin_blocks=store.margin_blocks(), encoder_signature=store.encoder_signature, consume_embeddings=True,
            approximate=approximate,
        )

    def _resolve_doc_links(self, doc_links) -> list[Edge]:
        by_key: dict[str, str] = {}
        for d in self.documents.values():
            by_key.setdefault(_link_key(d.file_name), d.id)
        out: list[Edge] = []
        seen: set[tuple[str, str]] = set()
        for doc_id, link in doc_links:
            target = by_key.get(_link_key(link.target))
            if target is None or target == doc_id:
                continue
            out.append(Edge(src=link.src, dst=target, kind=EdgeKind.LINK, provenance=f"{link.provenance}: {link.target}"))
            if (doc_id, target) not in seen:
                seen.add((doc_id, target))
                out.append(Edge(src=doc_id, dst=target, kind=EdgeKind.DOC_LINK, provenance=f"{link.provenance}: {link.target}"))
        return out

    def _build_image_layer(self, image_embeddings: dict[str, np.ndarray], signature: str | None) -> ImageLayer | None:
        ids = sorted(i for i in image_embeddings if i in self.nodes)
        if not ids or signature is None:
            return None
        # Few vectors (figures and their regions): an exact in-memory index, no FAISS file cache.
        return ImageLayer(ids=ids, dense=VectorIndex(ids, np.stack([image_embeddings[i] for i in ids])), signature=signature)

    def _build_entity_layer(self, merged: MergedEntities, dim: int) -> LayerIndex:
        """The entities layer (MMGraphRAG): BM25 and vectors of name + type + description, in the
        subcomponent encoder's space. Entities derived at load have no vector yet: their rows stay
        zero until `entity_layer(encoder)` encodes them. Small: exact in-memory index, no FAISS file."""
        ids = merged.entity_ids
        vectors = [merged.vectors.get(i) for i in ids]
        dim = next((len(v) for v in vectors if v is not None), dim)
        matrix = np.zeros((len(ids), dim), dtype=np.float32)  # (n_entities, dim)
        for row, v in enumerate(vectors):
            if v is not None:
                matrix[row] = v
        texts = [entity_index_text(self.nodes[i]) for i in ids]
        return LayerIndex(name="entities", ids=ids, dense=VectorIndex(ids, matrix), lexical=_lexical(ids, texts, self._index_dir, "entities"))

    def entity_layer(self, encoder) -> LayerIndex:
        """The entities layer with every vector present: entities derived at load are encoded
        once, on first use, with `encoder` (the subcomponent encoder), in memory."""
        with self._entity_lock:
            missing = self._entities_without_vectors
            if missing:
                layer = self.layers["entities"]
                vecs = encoder.encode([entity_index_text(self.nodes[i]) for i in missing])  # (n_missing, dim)
                matrix = layer.dense.vectors(np.arange(len(layer.ids)))
                if matrix.shape[1] != vecs.shape[1]:
                    matrix = np.zeros((len(layer.ids), vecs.shape[1]), dtype=np.float32)
                    missing = layer.ids
                    vecs = encoder.encode([entity_index_text(self.nodes[i]) for i in missing])
                for node_id, v in zip(missing, vecs):
                    matrix[layer.dense.row[node_id]] = v
                self.layers["entities"] = LayerIndex(name="entities", ids=layer.ids, dense=VectorIndex(layer.ids, matrix), lexical=layer.lexical)
                self._entities_without_vectors = []
            return self.layers["entities"]

    def derived(self, build: Callable[[Corpus], T]) -> T:
        """The value `build(self)`, computed once per loaded corpus and shared by every session.

        For arrays and figures strategies derive from the corpus (late-interaction row maps,
        template share, hop share): the corpus is read-only once loaded, so a value never goes
        stale. The lock makes concurrent first calls build it once; it is re-entrant, so a
        builder may ask for another derived value. Keyed by the builder function itself.
        """
        with self._derived_lock:
            if build not in self._derived:
                self._derived[build] = build(self)
            return self._derived[build]

    def _build_layers(
        self, nodes, embeddings, dims, use_gpu, index_dir, generation, consume, approximate: Approximate
    ) -> dict[str, LayerIndex]:
        texts = index_texts(nodes, self.sections, self.documents)
        by_layer: dict[str, list[Node]] = defaultdict(list)
        for n in nodes:
            by_layer[_layer_of(n)].append(n)
        cache = _DenseFiles(index_dir, generation, approximate)
        layers: dict[str, LayerIndex] = {}
        for name in LAYER_NAMES:
            members = [n for n in by_layer.get(name, []) if n.id in embeddings]
            ids = [n.id for n in members]
            row = {node_id: i for i, node_id in enumerate(ids)}
            matrix = functools.partial(_layer_matrix, embeddings, members, row, dims[name], consume)  # read only when no file holds the layer
            dense = cache.index(name, ids, row, matrix, use_gpu)
            lexical = _lexical(ids, [texts[i] for i in ids], index_dir, name)
            layers[name] = LayerIndex(name=name, ids=ids, dense=dense, lexical=lexical)
        cache.write_meta()
        return layers

    # ---------------------------------------------------------------- queries

    def node(self, node_id: str) -> Node:
        return self.nodes[node_id]

    def document_of(self, node_id: str) -> Document:
        return self.documents[self.nodes[node_id].doc]

    def section_path(self, node_id: str) -> list[str]:
        n = self.nodes[node_id]
        sec = self.sections.get(n.section or "") if n.kind != NodeKind.DOCUMENT else None
        if sec is None:
            doc = self.documents.get(n.doc)
            return [doc.title] if doc else []
        return list(sec.path)

    def subcomponents(self, component_id: str) -> list[str]:
        return [c for c in self.children.get(component_id, []) if self.nodes[c].layer == Layer.SUBCOMPONENT]

    def section_members(self, section_id: str) -> list[str]:
        return [c for c in self.children.get(section_id, []) if self.nodes[c].layer == Layer.COMPONENT]

    def neighbours(self, node_id: str, kinds: tuple[EdgeKind, ...] | None = None) -> list[tuple[Edge, str]]:
        return [(e, e.dst) for e in self.edges.out_of(node_id, kinds)] + [(e, e.src) for e in self.edges.into(node_id, kinds)]

    def neighbour_ids(self, node_id: str, kinds: tuple[EdgeKind, ...] | None = None) -> list[str]:
        """The other ends of `neighbours(node_id, kinds)`, in the same order, without the Edge records."""
        return self.edges.neighbour_ids(node_id, kinds)

    def component_of(self, node_id: str) -> str:
        """The component a node belongs to (itself for a component)."""
        n = self.nodes[node_id]
        if n.layer == Layer.SUBCOMPONENT and n.parent:
            return n.parent
        return node_id

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = defaultdict(int)
        for n in self.nodes.values():
            out[n.kind.value] += 1
        for kind, n in self.edges.counts().items():
            out[f"edge:{kind.value}"] += n
        return dict(out)
