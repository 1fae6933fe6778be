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
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
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
    entities_to_derive,
    entity_index_text,
    merge_entities,
)
from backend.graph.nodes import NodeTable, own_string
from backend.graph.store import StoredVectors, WorkspaceStore
from backend.index.lexical import BM25Index
from backend.index.texts import index_text, section_bodies
from backend.index.vector import Approximate, VectorIndex
from backend.ingest.layout import printed_page_map
from backend.types import Document, Edge, EdgeKind, Layer, Node, NodeKind, Section

log = logging.getLogger(__name__)

T = TypeVar("T")

LAYER_NAMES = ("documents", "sections", "components", "subcomponents")
# the stored Layer of each index layer's nodes (documents and sections are both Layer.DOCUMENT)
_STORED_LAYER = {"documents": Layer.DOCUMENT, "sections": Layer.DOCUMENT, "components": Layer.COMPONENT,
                 "subcomponents": Layer.SUBCOMPONENT}


def _layer_rows(nodes: NodeTable, name: str) -> list[int]:
    """The table rows of a layer's nodes, in node order."""
    if name == "documents":
        return nodes.rows_of_kind(NodeKind.DOCUMENT)
    if name == "sections":
        return nodes.rows_of_kind(NodeKind.SECTION)
    return nodes.rows_of_layer(Layer.COMPONENT if name == "components" else Layer.SUBCOMPONENT)


def _set_aside(nodes: Iterable[Node], layer: Layer, aside: list[Node]) -> Iterator[Node]:
    """The nodes not of `layer`, as they come; those of `layer` go to `aside`."""
    for n in nodes:
        if n.layer == layer:
            aside.append(n)
        else:
            yield n


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


def _lexical(ids: list[str], texts: list[str] | Callable[[], Iterable[str]], index_dir: Path | None, name: str) -> BM25Index:
    """A layer's BM25 index; with a workspace, read from (or saved to) its index folder."""
    if index_dir is None:
        return BM25Index(ids, list(texts()) if callable(texts) else texts)
    return BM25Index.cached(ids, texts, index_dir / "bm25" / name)


def _link_key(target: str) -> str:
    path = urlparse(target).path if "://" in target else target
    name = unquote(path.replace("\\", "/").rsplit("/", 1)[-1]).lower()
    return re.sub(r"\.pdf$", "", name)


def _layer_matrix(embeddings, ids: list[str], layer: Layer, row: Mapping[str, int], dim: int, consume: bool) -> np.ndarray:
    """(len(ids), dim) the vectors of a layer's nodes in row order. From a store's StoredVectors,
    the rows not read yet are read in one pass over their stored `layer`; consume: each row leaves
    `embeddings` once copied, and the freed heap goes back before the next layer."""
    if ids:
        dim = len(embeddings[ids[0]])
    matrix = np.empty((len(ids), dim), dtype=np.float32)
    if isinstance(embeddings, StoredVectors):
        embeddings.fill(matrix, row, layer)
        if consume:
            for node_id in ids:
                del embeddings[node_id]
    else:
        take = embeddings.pop if consume else embeddings.__getitem__
        for r, node_id in enumerate(ids):
            matrix[r] = take(node_id)
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

    def index(self, name: str, ids: list[str], row: Mapping[str, int], matrix: Callable[[], np.ndarray], use_gpu: bool) -> VectorIndex:
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
        """nodes, edges: each read once, in order (Corpus.load passes streams from the store: no
        Node record outlives its row in the table, see NodeTable).
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
        self.documents: dict[str, Document] = {d.id: d for d in documents}
        # doc id -> printed page number -> the page positions that show it
        self.printed_pages: dict[str, dict[int, tuple[int, ...]]] = {
            d: printed_page_map(rows, self.documents[d].pages) for d, rows in (margin_blocks or {}).items() if d in self.documents
        }
        self.sections: dict[str, Section] = {s.id: s for s in sections}
        entity_ids, entity_matrix, missing = self._read_graph(
            nodes, embeddings, edges, doc_links, consume_embeddings, dims.get("entities") or dims["subcomponents"]
        )
        self.components_by_doc: dict[str, list[str]] = defaultdict(list)
        for r in self.nodes.rows_of_layer(Layer.COMPONENT):
            self.components_by_doc[self.nodes.doc_at(r)].append(self.nodes.ids[r])
        self._index_dir = index_dir
        self.layers = self._build_layers(
            embeddings, dims, use_gpu, index_dir, generation, consume_embeddings, approximate or Approximate()
        )
        self.layers["entities"] = self._build_entity_layer(entity_ids, entity_matrix)
        del entity_matrix  # the layer's index holds its copy
        self._entities_without_vectors = missing
        self._entity_lock = threading.Lock()
        self._derived: dict[Callable[[Any], Any], Any] = {}
        self._derived_lock = threading.RLock()
        # Optional: None when the workspace was built without an image encoder.
        self.image_layer = self._build_image_layer(image_embeddings or {}, image_signature)
        doc_row = {d: i for i, d in enumerate(self.layers["documents"].ids)}
        # (n_components,) row of each component's document in the documents layer
        self.component_doc_rows = np.array(
            [doc_row.get(self.nodes.doc_of(c), -1) for c in self.layers["components"].ids], dtype=np.int64
        )

    # ---------------------------------------------------------------- construction

    @classmethod
    def load(
        cls, store: WorkspaceStore, *, dims: dict[str, int], use_gpu: bool = False, approximate: Approximate | None = None
    ) -> Corpus:
        # The layers' vectors are read only where no FAISS file holds them (entities have no file).
        if entities_to_derive(store):
            # Documents ingested before entities existed get them here (rules, cached in the store).
            nodes, embs = store.all_nodes(read_layers=(Layer.ENTITY,))
            nodes, edges = derive_missing_entities(store, nodes, store.iter_edge_rows())
        else:
            # Entities last: their records live until they are merged, and read after the other
            # nodes they do not sit among what the corpus keeps (see NodeTable). No vector is read
            # here: the merge reads each entity's as it averages them, a name at a time; holding
            # them all until then would be a large share of a big corpus's load peak.
            embs = StoredVectors(store)
            others = tuple(x for x in Layer if x != Layer.ENTITY)
            nodes = itertools.chain(store.iter_nodes(embs, (), others), store.iter_nodes(embs, (), (Layer.ENTITY,)))
            edges = store.iter_edge_rows()
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

    def _read_graph(
        self, nodes: Iterable[Node], embeddings, edges, doc_links, consume: bool, dim: int
    ) -> tuple[list[str], np.ndarray, list[str]]:
        """self.nodes and self.edges from the streams. The nodes as columns (a Node is made when
        one is asked for); entities merged across documents (MMGraphRAG) once the others are read;
        the edges between nodes (an end that is no node drops the edge) as arrays numbered by the
        nodes' rows. Returns the merged entities' ids, their (n_entities, dim) vectors (zero rows
        for those without one) and the ids of those without one. Nothing of the merge outlives
        this call: its records then leave the memory whole (see NodeTable)."""
        entities: list[Node] = []
        merging: list[MergedEntities] = []

        def merged_entities() -> Iterator[Node]:
            merged = merge_entities(entities, embeddings)
            if consume:
                for n in entities:
                    if n.id in embeddings:
                        del embeddings[n.id]  # in its merged entity's vector now
            entities.clear()
            merging.append(merged)
            for n in merged.nodes:
                n.id = own_string(n.id)  # not a string made among the merge's records
                yield n

        self.nodes = NodeTable(itertools.chain(_set_aside(nodes, Layer.ENTITY, entities), merged_entities()))
        merged = merging.pop()
        links = self._resolve_doc_links(doc_links)
        rows = self.nodes.rows
        self.edges = EdgeTable(
            (e for e in itertools.chain(merged.rewrite(edges), edge_rows(links)) if e[0] in rows and e[1] in rows),
            unique=MERGED_EDGE_IDENTITY, numbering=(rows, self.nodes.ids),
        )
        ids = [self.nodes.canonical(i) for i in merged.entity_ids]
        vectors = [merged.vectors.get(i) for i in ids]
        dim = next((len(v) for v in vectors if v is not None), dim)
        matrix = np.zeros((len(ids), dim), dtype=np.float32)  # (n_entities, dim)
        for row, v in enumerate(vectors):
            if v is not None:
                matrix[row] = v
        return ids, matrix, [self.nodes.canonical(i) for i in merged.missing]

    def _build_entity_layer(self, ids: list[str], matrix: np.ndarray) -> LayerIndex:
        """The entities layer (MMGraphRAG): BM25 and vectors of name + type + description, in the
        subcomponent encoder's space. Entities derived at load have no vector yet: their rows stay
        zero until `entity_layer(encoder)` encodes them. Small: exact in-memory index, no FAISS file."""
        texts = functools.partial(self._entity_texts, ids)
        return LayerIndex(name="entities", ids=ids, dense=VectorIndex(ids, matrix), lexical=_lexical(ids, texts, self._index_dir, "entities"))

    def _entity_texts(self, ids: list[str]) -> list[str]:
        return [entity_index_text(self.nodes[i]) for i in ids]

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
        self, embeddings, dims, use_gpu, index_dir, generation, consume, approximate: Approximate
    ) -> dict[str, LayerIndex]:
        # Every layer's rows first, then its indexes: the row numbers are kept and the index
        # texts are not, so the texts come after them and go back to the system whole.
        members = {name: [i for i in map(self.nodes.ids.__getitem__, _layer_rows(self.nodes, name)) if i in embeddings]
                   for name in LAYER_NAMES}
        rows = {name: self.nodes.layer_rows(ids) for name, ids in members.items()}
        cache = _DenseFiles(index_dir, generation, approximate)
        layers: dict[str, LayerIndex] = {}
        for name, ids in members.items():
            # read only when no file holds the layer
            matrix = functools.partial(_layer_matrix, embeddings, ids, _STORED_LAYER[name], rows[name], dims[name], consume)
            dense = cache.index(name, ids, rows[name], matrix, use_gpu)
            lexical = _lexical(ids, functools.partial(self._index_texts, name, ids), index_dir, name)
            layers[name] = LayerIndex(name=name, ids=ids, dense=dense, lexical=lexical)
        cache.write_meta()
        return layers

    def _index_texts(self, name: str, ids: list[str]) -> Iterator[str]:
        """The index texts of a layer's nodes, in row order, each made as it is read (a section's
        from its components' too): a load hashes them to find its BM25 files and holds none."""
        bodies = section_bodies(self.nodes.node(r) for r in _layer_rows(self.nodes, "components")) if name == "sections" else {}
        for node_id in ids:
            yield index_text(self.nodes[node_id], self.sections, self.documents, bodies)

    # ---------------------------------------------------------------- queries

    def node(self, node_id: str) -> Node:
        return self.nodes[node_id]

    def document_of(self, node_id: str) -> Document:
        return self.documents[self.nodes.doc_of(node_id)]

    def section_path(self, node_id: str) -> list[str]:
        n = self.nodes[node_id]
        sec = self.sections.get(n.section or "") if n.kind != NodeKind.DOCUMENT else None
        if sec is None:
            doc = self.documents.get(n.doc)
            return [doc.title] if doc else []
        return list(sec.path)

    def children(self, node_id: str) -> list[str]:
        """The nodes `node_id` contains (hierarchy edges), in the order added."""
        return self.edges.targets(node_id, (EdgeKind.CONTAINS,))

    def subcomponents(self, component_id: str) -> list[str]:
        layer_of = self.nodes.layer_of
        return [c for c in self.children(component_id) if layer_of(c) == Layer.SUBCOMPONENT]

    def section_members(self, section_id: str) -> list[str]:
        layer_of = self.nodes.layer_of
        return [c for c in self.children(section_id) if layer_of(c) == Layer.COMPONENT]

    def neighbours(self, node_id: str, kinds: tuple[EdgeKind, ...] | None = None) -> list[tuple[Edge, str]]:
        return [(e, e.dst) for e in self.edges.out_of(node_id, kinds)] + [(e, e.src) for e in self.edges.into(node_id, kinds)]

    def neighbour_ids(self, node_id: str, kinds: tuple[EdgeKind, ...] | None = None) -> list[str]:
        """The other ends of `neighbours(node_id, kinds)`, in the same order, without the Edge records."""
        return self.edges.neighbour_ids(node_id, kinds)

    def component_of(self, node_id: str) -> str:
        """The component a node belongs to (itself for a component)."""
        parent = self.nodes.parent_of(node_id)
        if parent and self.nodes.layer_of(node_id) == Layer.SUBCOMPONENT:
            return parent
        return node_id

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = defaultdict(int)
        for kind, n in self.nodes.kind_counts().items():
            out[kind.value] += n
        for kind, n in self.edges.counts().items():
            out[f"edge:{kind.value}"] += n
        return dict(out)
