"""MiniLM through ONNX Runtime: exported at run time from the local copy (never downloaded), the
same vectors as sentence-transformers in fp32, close ones in int8, and whole-text token counts."""

from __future__ import annotations

import numpy as np
import pytest

from backend.config import IndexSettings
from backend.errors import ConfigError
from backend.index.encoders import OnnxTextEncoder, SentenceTransformerEncoder, build_encoders

pytest.importorskip("onnx", reason="the ONNX export needs the onnx package (requirements.txt)")

TEXTS = [
    "Net revenue rose 8% to $4.2 billion in the third quarter, driven by services.",
    "Press and hold the power button for three seconds to turn the monitor off.",
    "Table 3: Results on the development set, averaged over five runs.",
    "The committee approved the budget.",
    " ".join(["A long paragraph that runs past the encoder's trained length of word pieces."] * 30),
    "Operating expenses",
    "Germanwings flight 9525 crashed in the French Alps; the company's social media response is analysed.",
    "Graduate studies and professional learning programmes for working teachers.",
    "Cash and cash equivalents at the end of the period",
    "The hierarchy parser reads the outline first, then numbering, then font sizes.",
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture(scope="module")
def reference() -> np.ndarray:
    return SentenceTransformerEncoder(IndexSettings(device="cpu")).encode(TEXTS)


def test_fp32_onnx_gives_the_torch_vectors_and_keeps_its_name(cache, reference):
    enc = OnnxTextEncoder(IndexSettings(device="cpu"), cache)
    vecs = enc.encode(TEXTS)
    assert enc.file.is_file() and enc.file.parent == cache
    assert vecs.shape == reference.shape and vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert (vecs * reference).sum(axis=1).min() > 0.9999
    assert enc.name == SentenceTransformerEncoder(IndexSettings(device="cpu")).name  # workspaces mix safely
    # a query-sized batch (one thread) gives the same vector as the batch did
    assert float(vecs[2] @ enc.encode([TEXTS[2]])[0]) > 0.9999


def test_int8_onnx_is_close_and_is_another_encoder(cache, reference):
    enc = OnnxTextEncoder(IndexSettings(device="cpu"), cache, int8=True)
    vecs = enc.encode(TEXTS)
    cos = (vecs * reference).sum(axis=1)
    assert cos.min() > 0.95 and cos.mean() > 0.98
    assert "int8" in enc.name and enc.file.name.endswith("-int8.onnx")


def test_token_counts_are_whole_texts_not_truncated(cache):
    enc = OnnxTextEncoder(IndexSettings(device="cpu"), cache)
    torch_enc = SentenceTransformerEncoder(IndexSettings(device="cpu"))
    for text in (TEXTS[0], TEXTS[4]):
        assert enc.count_tokens(text) == torch_enc.count_tokens(text)
    assert enc.count_tokens(TEXTS[4]) > 256


def test_build_encoders_uses_onnx_only_with_a_cache_folder(cache):
    assert isinstance(build_encoders(IndexSettings(device="cpu"), onnx_cache=cache).text.inner, OnnxTextEncoder)
    assert isinstance(build_encoders(IndexSettings(device="cpu")).text.inner, SentenceTransformerEncoder)
    torch_set = build_encoders(IndexSettings(device="cpu", text_runtime="torch"), onnx_cache=cache)
    assert isinstance(torch_set.text.inner, SentenceTransformerEncoder)
    with pytest.raises(ConfigError, match="TEXT_RUNTIME"):
        build_encoders(IndexSettings(text_runtime="tensorrt"), onnx_cache=cache)


def test_an_export_that_cannot_run_falls_back_to_torch_for_fp32(tmp_path, monkeypatch):
    import backend.index.encoders as encoders

    def broken(*args, **kwargs):
        raise ImportError("No module named 'onnx'")

    monkeypatch.setattr(encoders, "_export_onnx", broken)
    fallback = build_encoders(IndexSettings(device="cpu"), onnx_cache=tmp_path / "empty")
    assert isinstance(fallback.text.inner, SentenceTransformerEncoder)
    with pytest.raises(ConfigError, match="onnx"):
        build_encoders(IndexSettings(device="cpu", text_runtime="onnx-int8"), onnx_cache=tmp_path / "empty")


def test_batches_hold_a_bounded_number_of_padded_word_pieces():
    """ONNX Runtime keeps its largest batch's activations for the session's life: batches are
    cut by padded word pieces, so long texts go in small batches and short ones in large."""
    from backend.index.encoders import ONNX_BATCH_TOKENS, ONNX_MAX_TOKENS, _token_batches

    lengths = [2000] * 40 + [40] * 200 + [400] * 30
    batches = _token_batches(lengths)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    for b in batches:
        longest = max(min(ONNX_MAX_TOKENS, lengths[i] // 4 + 2) for i in b)
        assert len(b) == 1 or len(b) * longest <= ONNX_BATCH_TOKENS
    sizes: dict[int, int] = {}
    for b in batches:
        sizes[lengths[b[0]]] = max(sizes.get(lengths[b[0]], 0), len(b))
    assert sizes[2000] == ONNX_BATCH_TOKENS // ONNX_MAX_TOKENS and sizes[40] > 100


def test_many_texts_of_mixed_lengths_get_the_vectors_of_one_at_a_time(cache):
    enc = OnnxTextEncoder(IndexSettings(device="cpu"), cache)
    texts = [t for t in TEXTS for _ in range(4)]
    many = enc.encode(texts)
    one = np.stack([enc.encode([t])[0] for t in TEXTS])
    assert (many[::4] * one).sum(axis=1).min() > 0.9999


def test_the_default_cpu_path_never_imports_torch(cache):
    """Deciding the device does not import torch where no NVIDIA driver loads: the ingest parent
    stays ~170 MiB smaller (that memory is the parse worker's share). A fresh process, since
    this one has torch already."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    OnnxTextEncoder(IndexSettings(device="cpu"), cache).dim  # the export itself needs torch: done here
    code = (
        "import json, sys\nfrom pathlib import Path\n"
        "from backend.config import IndexSettings\n"
        "from backend.index.encoders import build_encoders, cuda_driver_present\n"
        "enc = build_encoders(IndexSettings(), onnx_cache=Path(sys.argv[1]))\n"
        "enc.text.encode(['Net revenue rose.'] * 20); enc.sub.encode(['Net revenue rose.'] * 20)\n"
        "print(json.dumps(['torch' in sys.modules, cuda_driver_present(), type(enc.text.inner).__name__]))\n"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code, str(cache)], cwd=root, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    torch_imported, driver, runtime = json.loads(out.stdout.strip().splitlines()[-1])
    if driver:
        pytest.skip("an NVIDIA driver is here: torch decides the device")
    assert not torch_imported and runtime == "OnnxTextEncoder"


def test_the_export_shows_no_tracer_warnings(tmp_path):
    """A first start exports the graph; tracing the transformer warns about Python branches it
    bakes in, which is expected and said nothing to the person starting the app. The export keeps
    them to itself, and leaves the process's own warning filters as they were."""
    import warnings

    import torch

    from backend.index.encoders import _export_onnx, resolve_model_path

    before = list(warnings.filters)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        _export_onnx(resolve_model_path(IndexSettings().text_encoder), tmp_path / "m.onnx", int8=False)
        assert (tmp_path / "m.onnx").is_file()
        assert [str(w.message)[:120] for w in seen if issubclass(w.category, torch.jit.TracerWarning)] == []
        shown_by_default = [w for w in seen if not issubclass(w.category, (DeprecationWarning, PendingDeprecationWarning))]
        assert [(w.category.__name__, str(w.message)[:120]) for w in shown_by_default if "torch" in w.filename] == []
    assert warnings.filters == before
