"""bench/page_baselines.py on a two-PDF corpus made here: score.py-format predictions per half,
ranked by the real MiniLM (page-dense) and bm25s (page-bm25)."""

from __future__ import annotations

import json

import pymupdf
import pytest

PAGES = {
    "Zorblax_Quintet.pdf": ["Zorblax Quintet is a jazz ensemble formed in Oslo by five cellists in 1987.",
                            "The band released the album Purple Static in 1999 on an independent label from Bergen."],
    "Marigold_Lighthouse.pdf": ["Marigold Lighthouse stands on a rocky cape and was built in 1871 from grey granite blocks."],
}
# (id, question, gold doc, gold page); ids q-0..q-3 fall in check, tune, check, tune (bench/split.py).
QUESTIONS = [
    ("q-0", "Which city was the jazz ensemble of five cellists formed in?", "Zorblax_Quintet.pdf", 1),
    ("q-1", "Which album did the band release in 1999 on an independent label?", "Zorblax_Quintet.pdf", 2),
    ("q-2", "When was the lighthouse on the rocky cape built?", "Marigold_Lighthouse.pdf", 1),
    ("q-3", "What stone is the lighthouse built from?", "Marigold_Lighthouse.pdf", 1),
]


@pytest.fixture()
def toy_bench(tmp_path):
    corpus = tmp_path / "bench" / "toy" / "corpus"
    corpus.mkdir(parents=True)
    for name, texts in PAGES.items():
        doc = pymupdf.open()
        for text in texts:
            doc.new_page().insert_textbox(pymupdf.Rect(50, 50, 550, 300), text, fontsize=11)
        if name.startswith("Marigold"):
            doc.set_metadata({"title": "The Marigold Light"})  # a metadata title wins over the file name
        doc.save(corpus / name)
        doc.close()
    rows = [{"id": i, "question": q, "answers": ["x"], "answer_format": "str", "unanswerable": False,
             "gold": [{"doc": d, "page": p, "bbox": None, "text": None}], "modality": "text", "hops": 1, "source": "t",
             "meta": {}} for i, q, d, p in QUESTIONS]
    (corpus.parent / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path / "bench"


def test_pages_carry_the_title(toy_bench, page_baselines_mod):
    pb = page_baselines_mod
    pages = pb.read_pages(toy_bench / "toy" / "corpus")
    assert [(p.doc, p.page) for p in pages] == [("Marigold_Lighthouse.pdf", 1), ("Zorblax_Quintet.pdf", 1), ("Zorblax_Quintet.pdf", 2)]
    assert pages[0].text.startswith("The Marigold Light\nMarigold Lighthouse stands")
    assert pages[2].text.startswith("Zorblax Quintet\nThe band released")  # file name as the title, '_' as spaces


def test_predictions_per_half_in_score_format(toy_bench, tmp_path, score_script, page_baselines_mod, split_mod):
    pb, split = page_baselines_mod, split_mod
    cache = tmp_path / "cache"
    assert pb.main(["--bench", str(toy_bench), "--collections", "toy", "--cache", str(cache)]) == 0
    score = split.score_module(score_script)
    for half in ("tune", "check"):
        want = {i for i, *_ in QUESTIONS if split.split_of(i) == half}
        assert want
        for method in ("page-dense", "page-bm25"):
            path = cache / "preds" / f"toy.{method}.{half}.jsonl"
            rows = [json.loads(line) for line in path.read_text().splitlines()]
            assert {r["id"] for r in rows} == want
            for r in rows:
                assert r["answer"] is None and 1 <= len(r["results"]) <= 3
                assert all(set(x) >= {"doc", "page", "text", "bbox"} and isinstance(x["page"], int) for x in r["results"])
            preds = score.load_predictions(str(path))[0]
            assert set(preds) == want
            report, _ = split.score_half(path, half, ["toy"], toy_bench, score_script)
            assert report["overall"]["missing"] == 0
            assert report["overall"]["retrieval"]["R@1"] == 1.0, (method, half, rows)
    # The vectors were cached, keyed by the texts and the model: a second run encodes nothing.
    encoder = pb.MiniLM()
    pages = pb.load_pages(toy_bench / "toy", cache / "pages" / "toy")
    _, seconds = pb.page_vectors(pages, encoder, cache / "pages" / "toy")
    assert seconds == 0.0 and encoder._model is None


class _CountingEncoder:
    """Deterministic stand-in for MiniLM that records how many texts each call encodes."""

    path = "counting-encoder"

    def __init__(self, fail_after: int | None = None) -> None:
        self.calls: list[int] = []
        self.fail_after = fail_after

    def encode(self, texts):
        import numpy as np

        if self.fail_after is not None and len(self.calls) >= self.fail_after:
            raise KeyboardInterrupt("stopped by the time limit")
        self.calls.append(len(texts))
        return np.array([[len(t), t.count("a")] for t in texts], dtype=np.float32)


def test_page_vectors_resume_after_a_stopped_run(page_baselines_mod, tmp_path, monkeypatch):
    pb = page_baselines_mod
    monkeypatch.setattr(pb, "ENCODE_CHUNK", 4)
    pages = [pb.Page("a.pdf", i + 1, "a" * (i + 1)) for i in range(10)]
    with pytest.raises(KeyboardInterrupt):
        pb.page_vectors(pages, _CountingEncoder(fail_after=2), tmp_path)
    resumed = _CountingEncoder()
    vecs, _ = pb.page_vectors(pages, resumed, tmp_path)
    assert resumed.calls == [2]  # only the last chunk was left
    assert vecs[:, 0].tolist() == [float(i + 1) for i in range(10)]
    again = _CountingEncoder()
    assert pb.page_vectors(pages, again, tmp_path)[0].shape == (10, 2) and again.calls == []
    changed = _CountingEncoder()
    pb.page_vectors(pages[:9], changed, tmp_path)  # other texts: the cache does not apply
    assert sum(changed.calls) == 9
