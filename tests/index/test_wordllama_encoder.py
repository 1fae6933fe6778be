"""The subcomponent encoder pools WordLlama's static embeddings itself, batched by length: the same
vector as WordLlama.embed for every text, and memory that a run-on text cannot blow up."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from backend.index.encoders import WordLlamaEncoder, _load_wordllama

TEXTS = [
    "The harbour has 412 lanterns along the quay.",
    "Revenue | 2019: 1,204 | 2018: 1,116",
    "a",
    "Figure 3: lantern counts by district, 2015-2019 (source: harbour office).",
    "Überseehafen Straße — café résumé naïve",
    "word " * 300,
    "Total liabilities $909 $1,305",
] * 5


def test_vectors_equal_wordllamas_own_bit_for_bit():
    ours = WordLlamaEncoder().encode(TEXTS)
    theirs = np.asarray(_load_wordllama(256).embed(TEXTS, norm=True), dtype=np.float32)
    assert ours.dtype == np.float32 and ours.shape == (len(TEXTS), 256)
    assert np.array_equal(ours, theirs)


def test_small_blocks_split_batches_and_long_texts_without_changing_vectors(monkeypatch):
    reference = WordLlamaEncoder().encode(TEXTS + ["lantern " * 2000])
    monkeypatch.setattr(WordLlamaEncoder, "TOKEN_BLOCK", 64)  # most batches hold one text; the long one is summed in blocks
    blocked = WordLlamaEncoder().encode(TEXTS + ["lantern " * 2000])
    assert np.array_equal(blocked[: len(TEXTS)], reference[: len(TEXTS)])
    np.testing.assert_allclose(blocked[-1], reference[-1], atol=2e-5)  # only the order of the long text's 4,000 adds differs


def test_an_empty_text_is_a_zero_vector_not_nan():
    out = WordLlamaEncoder().encode(["", "The harbour has lanterns."])
    assert np.isnan(_load_wordllama(256).embed([""], norm=True)).all(), "fixture check: embed divides 0 by 0"
    assert not np.isnan(out).any()
    assert np.linalg.norm(out[0]) == 0
    assert np.linalg.norm(out[1]) == pytest.approx(1.0, abs=1e-6)


def test_a_run_on_text_does_not_pad_its_batch():
    # 30,000 tokens in a batch of 16: WordLlama.embed padded every text to it and peaked at 941 MiB
    # (16 x 30,000 x 256 floats, gathered then masked); batched by length it is 30 MiB.
    texts = ["A short sentence."] * 15 + ["lantern " * 15_000]
    enc = WordLlamaEncoder()
    enc.encode(texts[:2])  # load the weights outside the measurement
    tracemalloc.start()
    try:
        out = enc.encode(texts)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 150 * 2**20, f"peak {peak / 2**20:.0f} MiB"
    assert np.array_equal(out[0], enc.encode(["A short sentence."])[0])
    assert np.linalg.norm(out[-1]) == pytest.approx(1.0, abs=1e-6)
