"""bench/split.py: halves decided by sha256 of the question id; they partition every collection."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _write_collection(root: Path, name: str, ids: list[str]) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    rows = [{"id": i, "question": f"question {i}?", "answers": ["x"], "answer_format": "str", "unanswerable": False,
             "gold": [{"doc": f"{i}.pdf", "page": 1, "bbox": None, "text": None}], "modality": "text", "hops": 1,
             "source": "t", "meta": {}} for i in ids]
    (folder / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


def test_split_is_fixed_by_sha256_not_by_python_hash(split_mod):
    # Known values: sha256 parity of the first 8 bytes; they must never change between runs or versions.
    assert split_mod.split_of("hotpot-5a8c7595554299585d9e36b6") == "tune"
    assert [split_mod.split_of(f"q-{i}") for i in range(4)] == ["check", "tune", "check", "tune"]
    ids = [f"synthetic-{i}" for i in range(200)]
    here = [split_mod.split_of(i) for i in ids]
    code = ("import sys, json; sys.path.insert(0, sys.argv[1]); import split; "
            "print(json.dumps([split.split_of(f'synthetic-{i}') for i in range(200)]))")
    for seed in ("1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", code, str(BENCH)], capture_output=True, text=True, env=env, check=True)
        assert json.loads(out.stdout) == here


def test_split_is_balanced_on_synthetic_ids(split_mod):
    ids = [f"synthetic-{i:05d}" for i in range(4000)]
    tune = sum(split_mod.split_of(i) == "tune" for i in ids)
    assert 0.46 < tune / len(ids) < 0.54  # binomial sd 0.008: a biased rule fails this
    # Balanced within a prefix family too (ids of one collection share a prefix).
    for prefix in ("hotpot-", "tatqa-", "mmlb-"):
        share = sum(split_mod.split_of(f"{prefix}{i}") == "tune" for i in range(1000)) / 1000
        assert 0.43 < share < 0.57, (prefix, share)


def test_halves_partition_the_questions_and_score_alone(split_mod, score_script, tmp_path):
    ids = [f"toy-{i}" for i in range(60)]
    _write_collection(tmp_path / "bench", "toy", ids)
    bench = tmp_path / "bench"
    tune = [q.id for q in split_mod.load_questions("toy", "tune", bench)]
    check = [q.id for q in split_mod.load_questions("toy", "check", bench)]
    assert set(tune).isdisjoint(check) and sorted(tune + check) == sorted(ids)
    assert tune and check
    assert split_mod.half_ids("toy", "check", bench) == check
    counts = split_mod.count_halves("toy", bench)
    assert (counts.tune, counts.check, counts.total) == (len(tune), len(check), 60)

    # Predictions for every question; the tune questions' gold at rank 1, the check questions' never.
    preds = tmp_path / "pred.jsonl"
    rows = [{"id": i, "results": [{"doc": f"{i}.pdf" if i in tune else "other.pdf", "page": 1}], "answer": None} for i in ids]
    preds.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report, line = split_mod.score_half(preds, "tune", ["toy"], bench, score_script)
    assert report["overall"]["retrieval"]["n"] == len(tune) and report["overall"]["retrieval"]["R@1"] == 1.0
    assert line.startswith("SUMMARY tune half:")
    report, _ = split_mod.score_half(preds, "check", ["toy"], bench, score_script)
    assert report["overall"]["retrieval"]["n"] == len(check) and report["overall"]["retrieval"]["R@1"] == 0.0

    kept = split_mod.filter_predictions(preds, tmp_path / "check.jsonl", "check")
    assert kept == len(check)
    assert {json.loads(x)["id"] for x in (tmp_path / "check.jsonl").read_text().splitlines()} == set(check)

    root = split_mod.write_half_bench(tmp_path / "halves", "check", ["toy"], bench)
    written = [json.loads(x)["id"] for x in (root / "toy" / "questions.jsonl").read_text().splitlines()]
    assert written == check
    assert (tmp_path / "halves" / "toy.check.ids").read_text().split() == check


def test_unknown_half_is_refused(split_mod, tmp_path):
    _write_collection(tmp_path, "toy", ["a", "b"])
    with pytest.raises(ValueError, match="Unknown half 'dev'"):
        split_mod.load_questions("toy", "dev", tmp_path)
