"""bench/lexical_ties.py: a miss is a tie only when a ranked non-gold page holds every question
word the gold page holds, read from the real PDFs."""

from __future__ import annotations

import json
from pathlib import Path

import pymupdf
import pytest

from tests.bench.conftest import load_bench_module


@pytest.fixture(scope="module")
def lt_mod():
    return load_bench_module("lexical_ties")


def _pdf(path: Path, text: str) -> None:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), text)
    doc.save(path)
    doc.close()


def test_ties_are_told_from_misses_the_words_could_settle(lt_mod, split_mod, tmp_path):
    bench = tmp_path / "bench"
    corpus = bench / "toy" / "corpus"
    corpus.mkdir(parents=True)
    _pdf(corpus / "acme.pdf", "Acme Corp. Inventory 2019 2018 Total")
    _pdf(corpus / "rival.pdf", "Inventory 2019 2018 Total")
    _pdf(corpus / "cash.pdf", "Cash and equivalents")
    asks = {  # question -> (gold doc, ranked docs)
        "What was the Inventory in 2019?": ("acme.pdf", ["rival.pdf", "cash.pdf"]),  # a tie: acme adds no word
        "What was Acme's Inventory in 2019?": ("acme.pdf", ["rival.pdf", "cash.pdf"]),  # not a tie: only acme holds 'acme'
        "What was the total Inventory?": ("acme.pdf", ["acme.pdf", "rival.pdf"]),  # found: no miss
        "What was the cash?": ("cash.pdf", []),  # nothing ranked: a miss, and no page to tie with
    }
    rows, preds = [], []
    n = 0
    for question, (gold, ranked) in asks.items():
        while True:  # an id in the tune half for each question
            qid = f"t-{n}"
            n += 1
            if split_mod.split_of(qid) == "tune":
                break
        rows.append({"id": qid, "question": question, "answers": ["x"], "answer_format": "str", "unanswerable": False,
                     "gold": [{"doc": gold, "page": 1, "bbox": None, "text": None}], "modality": "table", "hops": 1,
                     "source": "t", "meta": {}})
        preds.append({"id": qid, "results": [{"doc": f"corpus/{d}", "page": 1} for d in ranked]})
    (bench / "toy" / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    pred_file = tmp_path / "toy.m.jsonl"
    pred_file.write_text("".join(json.dumps(p) + "\n" for p in preds))
    t = lt_mod.lexical_ties(pred_file, "toy", "tune", bench, show=5)
    assert (t.questions, t.misses, t.ties) == (4, 3, 1)
    assert len(t.examples) == 1 and t.examples[0].startswith("- What was the Inventory in 2019?")
    assert t.examples[0].endswith("holds every word it holds: 2019, inventory)")  # the question's words, not the page's
