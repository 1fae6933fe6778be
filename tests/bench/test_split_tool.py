"""bench/split.py: halves decided by sha256 of the question id; they partition every collection and
score alone."""

from __future__ import annotations

import json

from tests.bench.conftest import halves, run_tool, write_collection


def test_halves_are_fixed_by_sha256_not_by_python_hash(tmp_path):
    bench = tmp_path / "bench"
    write_collection(bench, "toy", [f"q-{i}" for i in range(4)] + ["hotpot-5a8c7595554299585d9e36b6"])
    # Known values: sha256 parity of the first 8 bytes; they must never change between runs or versions.
    for seed in ("1", "12345"):
        done = run_tool("split", "--bench", bench, "--collections", "toy", "--out", tmp_path / seed, PYTHONHASHSEED=seed)
        assert done.returncode == 0, done.stderr
        assert (tmp_path / seed / "toy.check.ids").read_text().split() == ["q-0", "q-2"]
        assert (tmp_path / seed / "toy.tune.ids").read_text().split() == ["q-1", "q-3", "hotpot-5a8c7595554299585d9e36b6"]


def test_halves_are_balanced_and_partition_a_collection(tmp_path):
    bench = tmp_path / "bench"
    ids = [f"synthetic-{i:05d}" for i in range(2000)]
    write_collection(bench, "toy", ids)
    got = halves(bench, "toy", tmp_path / "out")
    assert set(got["tune"]).isdisjoint(got["check"]) and sorted(got["tune"] + got["check"]) == sorted(ids)
    assert 0.45 < len(got["tune"]) / len(ids) < 0.55  # binomial sd 0.011: a biased rule fails this
    written = [json.loads(x)["id"] for x in (tmp_path / "out" / "check" / "toy" / "questions.jsonl").read_text().splitlines()]
    assert written == got["check"]


def test_a_half_is_scored_against_its_own_questions(tmp_path, score_script):
    bench = tmp_path / "bench"
    ids = [f"toy-{i}" for i in range(60)]
    write_collection(bench, "toy", ids)
    (bench / "score.py").write_bytes(score_script.read_bytes())
    got = halves(bench, "toy", tmp_path / "out")
    tune = set(got["tune"])
    # Predictions for every question; the tune questions' gold at rank 1, the check questions' never.
    preds = tmp_path / "pred.jsonl"
    rows = [{"id": i, "results": [{"doc": f"doc-{i}.pdf" if i in tune else "other.pdf", "page": 1}], "answer": None} for i in ids]
    preds.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for half, r1 in (("tune", 1.0), ("check", 0.0)):
        done = run_tool("split", "--bench", bench, "--collections", "toy", "score", preds, "--half", half)
        assert done.returncode == 0, done.stderr
        overall = json.loads(done.stdout[: done.stdout.rindex("}") + 1])
        assert overall["retrieval"]["n"] == len(got[half]) and overall["retrieval"]["R@1"] == r1
        assert done.stdout.strip().splitlines()[-1].startswith(f"SUMMARY {half} half:")


def test_an_unknown_half_is_refused(tmp_path):
    write_collection(tmp_path, "toy", ["a", "b"])
    done = run_tool("split", "--bench", tmp_path, "score", tmp_path / "p.jsonl", "--half", "dev")
    assert done.returncode != 0 and "invalid choice: 'dev'" in done.stderr
