"""bench/diagnose.py: a subset of a collection that holds its questions' gold, and a comparison of
two methods' predictions that shows the gold page's units under each signal."""

from __future__ import annotations

import json

from tests.bench.conftest import halves, run_tool, write_collection


def test_subset_keeps_questions_whose_gold_it_holds(tmp_path):
    bench = tmp_path / "bench"
    ids = [f"q-{i}" for i in range(12)]
    write_collection(bench, "toy", ids, gold=lambda i: [(f"g{i[2:]}a.pdf", 1), (f"g{i[2:]}b.pdf", 1)])
    rows = [json.loads(x) for x in (bench / "toy" / "questions.jsonl").read_text().splitlines()]
    (bench / "toy" / "corpus").mkdir()
    for row in rows:
        distract = [f"d{row['id'][2:]}_{j}.pdf" for j in range(3)]
        row["meta"] = {"context_docs": distract + [g["doc"] for g in row["gold"]]}
        for name in row["meta"]["context_docs"]:
            (bench / "toy" / "corpus" / name).write_bytes(b"%PDF-1.4")
    (bench / "toy" / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    tune = halves(bench, "toy", tmp_path / "halves")["tune"]

    out = tmp_path / "subset"
    done = run_tool("diagnose", "subset", "--bench", bench, "--collection", "toy", "--docs", 12, "--gold-share", 0.5, "--out", out)
    assert done.returncode == 0, done.stderr
    docs = [line.rsplit("/", 1)[1] for line in (out / "files.txt").read_text().split()]
    picked = [json.loads(x) for x in (out / "questions.jsonl").read_text().splitlines()]
    assert len(docs) == len(set(docs)) == 12
    assert [q["id"] for q in picked] == tune[:3]  # 6 gold documents: the first three tune questions
    assert all({g["doc"] for g in q["gold"]} <= set(docs) for q in picked)
    assert sorted(p.name for p in (out / "corpus").iterdir()) == sorted(docs)


def test_compare_reports_the_question_one_side_finds(tmp_path, sample_workspace):
    questions = tmp_path / "questions.jsonl"
    gold = {"doc": "policy_brief.pdf", "page": 1}
    questions.write_text(json.dumps({"id": "q-1", "question": "What recommendations does the policy brief make?",
                                     "answers": ["x"], "gold": [gold]}) + "\n")
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(json.dumps({"id": "q-1", "results": [gold]}) + "\n")
    b.write_text(json.dumps({"id": "q-1", "results": [{"doc": "data_annex.pdf", "page": 2}]}) + "\n")
    done = run_tool("diagnose", "compare", "--workspace", sample_workspace, "--questions", questions,
                    "--a", "A", "--b", "B", "--a-pred", a, "--b-pred", b, "--out", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("# A against B on ")
    assert "q-1" in done.stdout and "policy_brief.pdf" in done.stdout
    for signal in ("bm25", "dense", "hybrid"):
        assert signal in done.stdout
    [found] = [json.loads(x) for x in (tmp_path / "out" / "diagnose.A.B.jsonl").read_text().splitlines()]
    assert (found["id"], found["found_by"], found["missed_by"]) == ("q-1", "A", "B")
    assert found["gold"] and found["top_pages"]["B"] == [["data_annex.pdf", 2]]
