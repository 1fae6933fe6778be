"""Corpus.load hands the per-row vectors it read over to the corpus, which lets each row go once
it is copied into its layer's matrix (and hands the freed heap back between layers): the same
layers as a corpus that leaves its input alone, with a lower peak while loading."""

from __future__ import annotations

import numpy as np

from backend.graph.corpus import LAYER_NAMES, Corpus
from backend.graph.entities import derive_missing_entities
from backend.graph.store import WorkspaceStore


def _build(store: WorkspaceStore, dims: dict[str, int], consume: bool) -> tuple[Corpus, dict]:
    nodes, embs = store.all_nodes()
    nodes, edges = derive_missing_entities(store, nodes, store.all_edges())
    corpus = Corpus(store.documents(), store.all_sections(), nodes, embs, edges, store.all_doc_links(), dims=dims,
                    consume_embeddings=consume)
    return corpus, embs


def test_consumed_rows_leave_the_input_and_give_the_same_layers(service, sample_workspace):
    dims = {name: service.encoders.for_layer(name).dim for name in LAYER_NAMES}
    store = WorkspaceStore(sample_workspace)
    try:
        kept, kept_input = _build(store, dims, consume=False)
        consumed, consumed_input = _build(store, dims, consume=True)
    finally:
        store.close()
    for name in LAYER_NAMES:
        a, b = kept.layers[name], consumed.layers[name]
        assert a.ids == b.ids and len(a.ids)
        assert np.array_equal(a.dense.matrix, b.dense.matrix)
        assert not any(i in consumed_input for i in b.ids), f"{name} rows still held"
        assert all(i in kept_input for i in a.ids), "a corpus that does not consume leaves its input alone"


def test_stored_vectors_read_as_float32_rows_and_go_when_taken(sample_workspace):
    store = WorkspaceStore(sample_workspace)
    try:
        nodes, vectors = store.all_nodes()
    finally:
        store.close()
    with_vector = [n.id for n in nodes if n.id in vectors]
    assert with_vector and len(vectors) == len(with_vector)
    first = vectors[with_vector[0]]
    assert first.dtype == np.float32 and first.ndim == 1 and abs(float(np.linalg.norm(first)) - 1) < 1e-3
    assert np.array_equal(vectors.pop(with_vector[0]), first) and with_vector[0] not in vectors
    assert next(n.id for n in nodes if n.id in vectors) is next(iter(vectors)), "keyed by the node's own id string"
