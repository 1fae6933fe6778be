"""bench/page_orders.py: each page order moves the pages it says and no other, the results keep
their units under the new order, and the scores are score.py's own over the half."""

from __future__ import annotations

import json

import pytest

from tests.bench.conftest import load_bench_module


@pytest.fixture(scope="module")
def po():
    return load_bench_module("page_orders")


RANKED = [("a.pdf", 1), ("b.pdf", 1), ("c.pdf", 1), ("a.pdf", 2), ("d.pdf", 1), ("b.pdf", 2)]


def test_document_pages_adds_the_first_documents_other_pages_after_their_first(po):
    counts = {"a.pdf": 3, "b.pdf": 2, "c.pdf": 1, "d.pdf": 1}
    assert po.document_pages(RANKED, 1, counts) == [
        ("a.pdf", 1), ("a.pdf", 2), ("a.pdf", 3), ("b.pdf", 1), ("c.pdf", 1), ("d.pdf", 1), ("b.pdf", 2)]
    assert po.document_pages(RANKED, 2, counts)[:5] == [("a.pdf", 1), ("a.pdf", 2), ("a.pdf", 3), ("b.pdf", 1), ("b.pdf", 2)]
    assert po.document_pages(RANKED, 0, counts) == RANKED


def test_document_spread_puts_second_pages_after_every_first_within_its_depth(po):
    assert po.document_spread(RANKED, 6) == [
        ("a.pdf", 1), ("b.pdf", 1), ("c.pdf", 1), ("d.pdf", 1), ("a.pdf", 2), ("b.pdf", 2)]
    assert po.document_spread(RANKED, 3) == RANKED  # no second page within the first three


def test_siblings_move_up_to_their_lead_only_from_within_the_window(po):
    assert po.siblings(RANKED, 1, 10)[:2] == [("a.pdf", 1), ("a.pdf", 2)]
    assert po.siblings(RANKED, 1, 3) == RANKED  # a's second page stands fourth, outside the window
    assert po.siblings(RANKED, 2, 10) == [
        ("a.pdf", 1), ("a.pdf", 2), ("b.pdf", 1), ("b.pdf", 2), ("c.pdf", 1), ("d.pdf", 1)]


def test_reordered_keeps_each_pages_units_in_their_order(po):
    results = [{"doc": "a.pdf", "page": 1, "text": "1"}, {"doc": "b.pdf", "page": 1, "text": "2"},
               {"doc": "a.pdf", "page": 1, "text": "3"}]
    out = po.reordered(results, [("b.pdf", 1), ("a.pdf", 1), ("a.pdf", 2)])
    assert [r["text"] for r in out] == ["2", "1", "3", ""]
    assert (out[-1]["doc"], out[-1]["page"]) == ("a.pdf", 2)


def test_scores_are_score_pys_over_the_half(po, split_mod, score_script, tmp_path):
    # q-0 asks for both pages of a.pdf; the method ranks page 2 sixth, behind four other reports.
    q = {"id": "q-0", "question": "?", "answers": ["x"], "unanswerable": False,
         "gold": [{"doc": "a.pdf", "page": 1}, {"doc": "a.pdf", "page": 2}]}
    ranked = [("a.pdf", 1), ("b.pdf", 1), ("c.pdf", 1), ("d.pdf", 1), ("e.pdf", 1), ("a.pdf", 2)]
    pred = tmp_path / "p.jsonl"
    pred.write_text(json.dumps({"id": "q-0", "results": [{"doc": d, "page": p} for d, p in ranked]}) + "\n")
    score = split_mod.score_module(score_script)
    named = po.orders({"a.pdf": 2, "b.pdf": 1, "c.pdf": 1, "d.pdf": 1, "e.pdf": 1})
    figures = po.score_orders(pred, [q], named, score, "R@5")
    assert figures["base"] == 0.5
    assert figures["document-pages-1"] == 1.0
    assert figures["document-spread-10"] == 0.5
    assert figures["siblings-1-10"] == 1.0
    assert po.score_orders(pred, [{**q, "id": "q-missing"}], named, score, "R@5")["base"] == 0.0
