"""The optional image encoder: a tiny CLIP built here from a config (random weights, a byte-level
tokenizer with no merges, 32-pixel images) stands in for a real CLIP/SigLIP folder, so nothing
is downloaded. Covered: encoding, ingest storing image vectors of figures and figure regions,
the encoder signature refusing mixed workspaces, retrieval through the image vectors (HiKEY's
visual term and MI-RAG's image-text KB), and the trace note when figures are matched by text.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from backend.config import IndexSettings, Settings
from backend.errors import ConfigError, WorkspaceError
from backend.graph.store import WorkspaceStore
from backend.index.image import (
    FIGURES_AS_TEXT_NOTE,
    DualImageEncoder,
    build_image_encoder,
    figure_images,
    region_crop,
)
from backend.service import Service
from backend.types import Layer, NodeKind, Trace

REPO_ROOT = Path(__file__).resolve().parents[2]
BRIEF = REPO_ROOT / "sample_corpus" / "policy_brief.pdf"  # 3 pages, one chart with text regions
DIM = 16


def _save_tiny_clip(folder: Path, seed: int) -> Path:
    import torch
    from tokenizers.pre_tokenizers import ByteLevel
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor, CLIPTokenizer

    vocab: dict[str, int] = {}
    for ch in sorted(ByteLevel.alphabet()):
        vocab[ch] = len(vocab)
        vocab[ch + "</w>"] = len(vocab)
    bos, eos = len(vocab), len(vocab) + 1
    vocab["<|startoftext|>"], vocab["<|endoftext|>"] = bos, eos
    tokenizer = CLIPTokenizer(vocab=vocab, merges=[])
    images = CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    CLIPProcessor(image_processor=images, tokenizer=tokenizer).save_pretrained(folder)
    torch.manual_seed(seed)
    config = CLIPConfig(
        text_config=dict(
            vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
            max_position_embeddings=64, bos_token_id=bos, eos_token_id=eos, pad_token_id=eos,
        ),
        vision_config=dict(image_size=32, patch_size=8, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2),
        projection_dim=DIM,
    )
    CLIPModel(config).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory) -> Path:
    return _save_tiny_clip(tmp_path_factory.mktemp("models") / "tiny-clip", seed=0)


@pytest.fixture(scope="module")
def image_service(service, tiny_clip, tmp_path_factory) -> Service:
    """The session's text encoders plus the tiny CLIP as image encoder."""
    settings = Settings(
        workspace_root=tmp_path_factory.mktemp("image_root"), load_sample=False,
        index=IndexSettings(image_encoder=str(tiny_clip), device="cpu"),
    )
    return Service(settings, encoder=service.encoder, sub_encoder=service.encoders.sub)


@pytest.fixture(scope="module")
def image_workspace(image_service, tmp_path_factory) -> Path:
    ws = tmp_path_factory.mktemp("image_ws") / "ws"
    report = image_service.ingest(ws, [BRIEF])
    assert not report.failed, [(f.file_name, f.reason) for f in report.failed]
    return ws


def _figure(corpus) -> str:
    return next(n.id for n in corpus.nodes.values() if n.kind == NodeKind.FIGURE)


# ---------------------------------------------------------------- the encoder


def test_encoder_gives_normalised_vectors_in_one_space(tiny_clip, tmp_path):
    enc = DualImageEncoder(str(tiny_clip), device="cpu")
    assert enc.name == "image=tiny-clip" and enc.dim == DIM
    red, blue = Image.new("RGB", (40, 30), (220, 30, 30)), Image.new("RGB", (12, 50), (20, 40, 230))
    blue.save(tmp_path / "blue.png")
    vecs = enc.encode_images([red, tmp_path / "blue.png"])  # a PIL image and a path
    assert vecs.shape == (2, DIM) and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert not np.allclose(vecs[0], vecs[1])
    assert np.allclose(enc.encode_images([blue])[0], vecs[1], atol=1e-5)
    texts = enc.encode_texts(["a red square", "a tall blue bar chart with a long caption " * 20])  # truncated, not an error
    assert texts.shape == (2, DIM) and np.allclose(np.linalg.norm(texts, axis=1), 1.0, atol=1e-5)
    assert not np.allclose(texts[0], texts[1])
    assert enc.encode_texts([]).shape == (0, DIM) and enc.encode_images([]).shape == (0, DIM)


def test_image_encoder_is_off_unless_configured(tmp_path):
    assert build_image_encoder(IndexSettings()) is None
    with pytest.raises(ConfigError) as err:
        build_image_encoder(IndexSettings(image_encoder=str(tmp_path / "no-such-model")))
    assert "no-such-model" in str(err.value) and "STRATA_INDEX__IMAGE_ENCODER" in str(err.value)


def test_region_crop_cuts_the_region_out_of_the_figure_crop():
    figure = Image.new("RGB", (200, 100), (255, 255, 255))
    figure.paste((0, 0, 0), (100, 50, 200, 100))  # the lower right quarter is black
    crop = region_crop(figure, (100.0, 100.0, 300.0, 200.0), (200.0, 150.0, 300.0, 200.0))
    assert crop.size == (100, 50) and crop.getpixel((10, 10)) == (0, 0, 0)
    assert region_crop(figure, (100.0, 100.0, 300.0, 200.0), (150.0, 150.0, 151.0, 151.0)) is None  # a tick label


# ---------------------------------------------------------------- ingest and the workspace


def test_ingest_stores_image_vectors_of_figures_and_regions(image_service, image_workspace, tiny_clip):
    store = WorkspaceStore(image_workspace, create=False)
    try:
        vectors = store.all_image_embeddings()
        assert store.image_encoder_signature == "image=tiny-clip"
    finally:
        store.close()
    corpus = image_service.corpus(image_workspace)
    figure = _figure(corpus)
    regions = [r for r in corpus.subcomponents(figure) if corpus.nodes[r].kind == NodeKind.OBJECT]
    assert figure in vectors and any(r in vectors for r in regions)
    assert {corpus.nodes[i].kind for i in vectors} <= {NodeKind.FIGURE, NodeKind.OBJECT}
    for vec in vectors.values():
        assert vec.shape == (DIM,) and abs(float(np.linalg.norm(vec)) - 1.0) < 1e-5
    # The stored vector is the encoder's vector of the figure's crop image.
    crop = Image.open(image_workspace / corpus.nodes[figure].crop)
    expected = DualImageEncoder(str(tiny_clip), device="cpu").encode_images([crop])[0]
    assert np.allclose(vectors[figure], expected, atol=1e-5)
    # The corpus exposes them as its image index.
    assert corpus.image_layer is not None and corpus.image_layer.signature == "image=tiny-clip"
    assert set(corpus.image_layer.ids) == set(vectors) and len(corpus.image_layer.dense) == len(vectors)
    ids, images = figure_images(list(corpus.nodes.values()), image_workspace)
    assert set(ids) == set(vectors) and len(images) == len(ids)


def test_removing_a_document_removes_its_image_vectors(image_service, image_workspace, tmp_path):
    ws = tmp_path / "ws"
    shutil.copytree(image_workspace, ws)
    doc = image_service.documents(ws)[0]
    image_service.remove_document(ws, doc.id)
    store = WorkspaceStore(ws, create=False)
    try:
        assert store.all_image_embeddings() == {}
    finally:
        store.close()


def test_mixing_image_encoders_is_refused(service, image_service, image_workspace, tmp_path):
    other_model = _save_tiny_clip(tmp_path / "other-clip", seed=1)
    other = Service(
        Settings(workspace_root=tmp_path, load_sample=False, index=IndexSettings(image_encoder=str(other_model), device="cpu")),
        encoder=service.encoder, sub_encoder=service.encoders.sub,
    )
    ws = tmp_path / "ws"
    shutil.copytree(image_workspace, ws)
    second = REPO_ROOT / "sample_corpus" / "data_annex.pdf"
    with pytest.raises(WorkspaceError) as err:
        other.ingest(ws, [second])
    assert "image=tiny-clip" in str(err.value) and "image=other-clip" in str(err.value)
    with pytest.raises(WorkspaceError) as err:  # a text-only run into an image workspace
        service.ingest(ws, [second])
    assert "image=tiny-clip" in str(err.value) and "STRATA_INDEX__IMAGE_ENCODER" in str(err.value)
    assert [d.file_name for d in image_service.documents(ws)] == [BRIEF.name]  # nothing was added


def test_the_store_records_the_image_encoder_once(image_workspace, tmp_path):
    store = WorkspaceStore(tmp_path / "text_ws")
    try:  # an empty workspace takes whatever the first ingest uses; text only here
        store.check_image_encoder(None)
        assert store.image_encoder_signature is None
        store.check_image_encoder(None)
        with pytest.raises(WorkspaceError) as err:
            store.check_image_encoder("image=tiny-clip")
        assert "'none'" in str(err.value) and "unset STRATA_INDEX__IMAGE_ENCODER" in str(err.value)
    finally:
        store.close()
    # A workspace from before image support (documents, no record) has no image vectors: it takes
    # text-only ingests and refuses an image encoder.
    legacy = tmp_path / "legacy"
    shutil.copytree(image_workspace, legacy)
    db = sqlite3.connect(legacy / "strata.sqlite")
    db.execute("DELETE FROM meta WHERE key='image_encoder'")
    db.commit()
    db.close()
    store = WorkspaceStore(legacy, create=False)
    try:
        with pytest.raises(WorkspaceError):
            store.check_image_encoder("image=tiny-clip")
        store.check_image_encoder(None)
        assert store.image_encoder_signature is None
    finally:
        store.close()


# ---------------------------------------------------------------- retrieval through image vectors


class AlignedTextTower:
    """The tiny CLIP with one query answered by a known image vector. Random weights cannot tell a
    chart from a caption, so the test fixes the text side of one query to a figure's stored
    vector: it checks that retrieval goes through the image index, not that the model is good."""

    def __init__(self, inner: DualImageEncoder, query: str, vector: np.ndarray) -> None:
        self.inner, self.name, self.query, self.vector = inner, inner.name, query, vector

    @property
    def dim(self) -> int:
        return self.inner.dim

    def encode_images(self, images):
        return self.inner.encode_images(images)

    def encode_texts(self, texts):
        out = self.inner.encode_texts(texts)
        for i, text in enumerate(texts):
            if text == self.query:
                out[i] = self.vector
        return out


QUERY = "a picture of warm orange bars"  # no word of the figure's caption, OCR text or context


def _retrieve(service, corpus, method, image_encoder, params=None, top_k=5):
    retriever = service.retriever(method, corpus)
    retriever.image_encoder = image_encoder
    trace = Trace(method=method)
    return [h.node_id for h in retriever.retrieve(QUERY, top_k, dict(params or {}), trace)], trace


@pytest.mark.parametrize("method", ["mirag", "hikey"])
def test_a_query_retrieves_a_figure_through_its_image_vector(method, image_service, image_workspace, tiny_clip):
    corpus = image_service.corpus(image_workspace)
    figure = _figure(corpus)
    aligned = AlignedTextTower(DualImageEncoder(str(tiny_clip), device="cpu"), QUERY, corpus.image_layer.dense.matrix[corpus.image_layer.dense.row[figure]])
    # The image path alone: on this corpus of short separate documents MI-RAG would otherwise fuse
    # its ranking with the question's text matches (traits.is_short_separate_corpus).
    params = {"seed_weight": 0.0} if method == "mirag" else None
    without, trace_without = _retrieve(image_service, corpus, method, None, params)
    assert FIGURES_AS_TEXT_NOTE in trace_without.notes or figure not in without
    hits, trace = _retrieve(image_service, corpus, method, aligned, params)
    assert figure not in without[:3], without
    assert figure in hits[:2], hits
    assert FIGURES_AS_TEXT_NOTE not in trace.notes
    if method == "hikey":
        assert trace.params["gamma"] == image_service.settings.retrieval.hikey_gamma > 0
        assert trace_without.params["gamma"] == 0.0
    else:
        # The question's own search ranks the figure first, by its image (the text KB has no match).
        first = next(s for s in trace.steps if s.kind == "iteration")
        assert first.found[0].node_id == figure and "image" in first.found[0].why


def test_an_encoder_of_another_model_is_not_used_on_the_image_index(image_service, image_workspace, tiny_clip, tmp_path):
    corpus = image_service.corpus(image_workspace)
    figure = _figure(corpus)
    vector = corpus.image_layer.dense.matrix[corpus.image_layer.dense.row[figure]]
    aligned = AlignedTextTower(DualImageEncoder(str(tiny_clip), device="cpu"), QUERY, vector)
    aligned.name = "image=some-other-model"
    hits, trace = _retrieve(image_service, corpus, "hikey", aligned)
    assert trace.params["gamma"] == 0.0


# ---------------------------------------------------------------- without an image encoder


@pytest.mark.parametrize("method", ["mirag", "hikey"])
def test_figures_ranked_without_an_image_encoder_carry_a_note(method, image_service, image_workspace):
    corpus = image_service.corpus(image_workspace)
    figure = _figure(corpus)
    question = "heat-related ambulance call-outs per 10,000 residents chart"
    retriever = image_service.retriever(method, corpus)
    retriever.image_encoder = None  # as when STRATA_INDEX__IMAGE_ENCODER is empty
    trace = Trace(method=method)
    hits = retriever.retrieve(question, 5, {}, trace)
    assert figure in [h.node_id for h in hits]
    assert trace.notes.count(FIGURES_AS_TEXT_NOTE) == 1
    # With the encoder the figure is scored by its pixels too, and there is nothing to note.
    retriever = image_service.retriever(method, corpus)
    trace = Trace(method=method)
    retriever.retrieve(question, 5, {}, trace)
    assert FIGURES_AS_TEXT_NOTE not in trace.notes
    # Results without a figure get no note.
    retriever.image_encoder = None
    trace = Trace(method=method)
    hits = retriever.retrieve("What should the city do about shade in schools?", 2, {}, trace)
    assert not any(corpus.nodes[h.node_id].kind in (NodeKind.FIGURE, NodeKind.OBJECT) for h in hits)
    assert FIGURES_AS_TEXT_NOTE not in trace.notes


def test_layers_of_the_text_corpus_are_unchanged_by_the_image_index(image_service, image_workspace):
    corpus = image_service.corpus(image_workspace)
    for node_id in corpus.image_layer.ids:
        node = corpus.nodes[node_id]
        assert node.layer in (Layer.COMPONENT, Layer.SUBCOMPONENT)
        assert node_id in corpus.layers["components"].ids or node_id in corpus.layers["subcomponents"].ids
