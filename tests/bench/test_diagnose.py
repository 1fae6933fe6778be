"""bench/diagnose.py's pure parts: what 'finds' means, reading predictions, picking a subset."""

from __future__ import annotations

import json

from backend.eval.gold import BenchQuestion, GoldRef


def _question(qid: str, gold: list[tuple[str, int]]) -> BenchQuestion:
    return BenchQuestion(id=qid, question="?", gold=[GoldRef(doc=d, page=p) for d, p in gold])


def test_finds_means_a_gold_page_in_the_top_five(diagnose_mod):
    q = _question("q", [("a.pdf", 1), ("b.pdf", 2)])
    pages = [("x.pdf", 1), ("a.pdf", 1), ("y.pdf", 1), ("z.pdf", 1), ("w.pdf", 1), ("b.pdf", 2)]
    assert diagnose_mod.gold_hit(q, pages)
    assert not diagnose_mod.gold_hit(q, pages, every=True)  # b.pdf p2 is sixth
    assert diagnose_mod.gold_hit(q, pages[1:], every=True)
    assert not diagnose_mod.gold_hit(q, [("a.pdf", 2)] + pages[2:5])  # wrong page of a gold document
    assert diagnose_mod.first_gold_rank(q, pages) == 2 and diagnose_mod.first_gold_rank(q, pages[2:5]) == 0


def test_predictions_collapse_to_distinct_pages_and_keep_the_trace(diagnose_mod, tmp_path):
    path = tmp_path / "pred.jsonl"
    row = {"id": "q", "results": [{"doc": "corpus/a.pdf", "page": 1, "node_id": "n1"}, {"doc": "a.pdf", "page": 1, "node_id": "n2"},
                                  {"doc": "b.pdf", "page": 3, "node_id": "n3"}], "trace": {"method": "m", "steps": []}}
    path.write_text(json.dumps(row) + "\n")
    ranked = diagnose_mod.read_predictions(path)["q"]
    assert ranked.pages == [("a.pdf", 1), ("b.pdf", 3)]
    assert ranked.trace == {"method": "m", "steps": []}
    diagnose_mod.save_run({"q": ranked}, tmp_path / "again.jsonl")
    assert diagnose_mod.read_predictions(tmp_path / "again.jsonl")["q"].pages == ranked.pages


def test_subset_keeps_questions_whose_gold_it_holds(diagnose_mod, split_mod, tmp_path):
    coll = tmp_path / "toy"
    (coll / "corpus").mkdir(parents=True)
    rows = []
    for i in range(12):
        gold = [f"g{i}a.pdf", f"g{i}b.pdf"]
        distract = [f"d{i}_{j}.pdf" for j in range(3)]
        for name in gold + distract:
            (coll / "corpus" / name).write_bytes(b"%PDF-1.4")
        rows.append({"id": f"q-{i}", "question": "?", "answers": ["x"], "unanswerable": False,
                     "gold": [{"doc": d, "page": 1} for d in gold], "meta": {"context_docs": distract + gold}})
    (coll / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    docs, questions = diagnose_mod.pick_subset("toy", 12, "tune", tmp_path, gold_share=0.5)
    assert len(docs) == 12 and len(set(docs)) == 12
    tune = [r["id"] for r in rows if split_mod.split_of(r["id"]) == "tune"]
    assert [q.id for q in questions] == tune[:3]  # 6 gold documents: the first three tune questions
    assert all({g.doc for g in q.gold} <= set(docs) for q in questions)
    distractors = [d for d in docs if d.startswith("d")]
    assert len(distractors) == 6 and {d.split("_")[0] for d in distractors} == {f"d{q.id[2:]}" for q in questions}


def test_the_signal_probe_ranks_every_component_under_each_signal(diagnose_mod, service, sample_corpus):
    probe = diagnose_mod.SignalProbe(sample_corpus, service.encoders.text, 0.5)
    ranks, dense, qvec = probe.signal_ranks("What does the -c option do?")
    n = len(sample_corpus.layers["components"].ids)
    assert set(ranks) == {"bm25", "dense", "hybrid"} and all(len(r) == n for r in ranks.values())
    assert all(sorted(r.tolist()) == list(range(1, n + 1)) or sorted(r.tolist()) == list(range(n)) for r in ranks.values())
    assert dense.shape == (n,) and qvec.shape == (service.encoders.text.dim,)
    assert set(probe.texts) == set(sample_corpus.layers["components"].ids)
