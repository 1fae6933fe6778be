"""bench/paired_difference.py: per-question differences scored by score.py itself, a seeded
paired bootstrap, and the means it reports equal to score.py's over the same half."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bench.conftest import load_bench_module


@pytest.fixture(scope="module")
def pd_mod():
    return load_bench_module("paired_difference")


def _bench(root: Path, name: str, n: int) -> tuple[Path, list[str]]:
    """A collection of n one-page questions (q-i asks for page 1 of doc-q-i.pdf), one unanswerable."""
    folder = root / name
    folder.mkdir(parents=True)
    ids = [f"q-{i}" for i in range(n)]
    rows = [{"id": i, "question": f"question {i}?", "answers": ["x"], "answer_format": "str", "unanswerable": False,
             "gold": [{"doc": f"doc-{i}.pdf", "page": 1, "bbox": None, "text": None}], "modality": "text", "hops": 1,
             "source": "t", "meta": {}} for i in ids]
    rows.append({**rows[0], "id": "q-none", "unanswerable": True})  # score.py scores no retrieval for it
    (folder / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root, ids


def _predictions(path: Path, ids: list[str], rank_of: dict[str, int | None]) -> None:
    """Each question's gold page at rank_of[id] (1-based; None: not retrieved), fillers elsewhere."""
    lines = []
    for i in ids + ["q-none"]:
        results = [{"doc": f"filler-{j}.pdf", "page": 1} for j in range(10)]
        rank = rank_of.get(i)
        if rank is not None:
            results.insert(rank - 1, {"doc": f"doc-{i}.pdf", "page": 1})
        lines.append(json.dumps({"id": i, "results": results[:10]}))
    path.write_text("\n".join(lines) + "\n")


def test_means_are_score_py_s_and_wins_are_counted(pd_mod, split_mod, score_script, tmp_path):
    bench, ids = _bench(tmp_path / "bench", "toy", 40)
    check = [i for i in ids if split_mod.split_of(i) == "check"]
    assert len(check) >= 10
    preds = tmp_path / "preds"
    preds.mkdir()
    # A finds every check question at rank 1..3; B misses the first four of them and finds the rest at rank 8.
    _predictions(preds / "toy.a.jsonl", ids, {i: 1 + k % 3 for k, i in enumerate(ids)})
    _predictions(preds / "toy.b.jsonl", ids, {i: (None if i in check[:4] else 8) for i in ids})
    out = pd_mod.compare(preds, "a", "b", ["toy", "absent"], "check", "R@5", bench, score_script, resamples=2000)
    assert list(out) == ["toy"]  # a collection without predictions is left out
    r = out["toy"]
    assert r.n == len(check)
    for method, mean in (("a", r.mean_a), ("b", r.mean_b)):
        report, _ = split_mod.score_half(preds / f"toy.{method}.jsonl", "check", ["toy"], bench, score_script)
        assert mean == pytest.approx(report["overall"]["retrieval"]["R@5"])
    assert (r.mean_a, r.mean_b) == (1.0, 0.0)  # rank 8 is outside R@5
    assert r.diff == 1.0 and (r.a_better, r.b_better) == (len(check), 0)
    assert r.low == r.high == 1.0 and r.below == 0.0
    at10 = pd_mod.compare(preds, "a", "b", ["toy"], "check", "R@10", bench, score_script, resamples=2000)["toy"]
    assert at10.mean_b == pytest.approx((len(check) - 4) / len(check))
    assert at10.b_better == 0 and at10.a_better == 4
    assert at10.low <= at10.diff <= at10.high and at10.low > 0


def test_bootstrap_is_seeded_symmetric_and_covers_noise(pd_mod):
    # 100 questions: A wins 6, B wins 5, the rest tie; a one-question gap is noise.
    a = {f"q{i}": 1.0 if i < 6 else (0.0 if i < 11 else 0.5) for i in range(100)}
    b = {f"q{i}": 0.0 if i < 6 else (1.0 if i < 11 else 0.5) for i in range(100)}
    one = pd_mod.paired(a, b, resamples=4000)
    assert one == pd_mod.paired(a, b, resamples=4000)  # same seed, same figures
    assert one.diff == pytest.approx(0.01) and (one.a_better, one.b_better) == (6, 5)
    assert one.low < 0 < one.high and 0.2 < one.below < 0.8
    swapped = pd_mod.paired(b, a, resamples=4000)
    assert swapped.diff == pytest.approx(-one.diff) and (swapped.a_better, swapped.b_better) == (5, 6)
    with pytest.raises(ValueError):
        pd_mod.paired({"x": 1.0}, {"y": 1.0})


def test_main_prints_the_table_with_the_margin_and_fails_without_predictions(pd_mod, score_script, tmp_path, capsys):
    bench, ids = _bench(tmp_path / "bench", "toy", 30)
    (bench / "score.py").write_bytes(score_script.read_bytes())
    preds = tmp_path / "preds"
    preds.mkdir()
    _predictions(preds / "toy.a.jsonl", ids, {i: 1 for i in ids})
    _predictions(preds / "toy.b.jsonl", ids, {i: 2 for i in ids})
    assert pd_mod.main(["--predictions", str(preds), "--a", "a", "--b", "b", "--bench", str(bench),
                        "--collections", "toy", "--margin", "0.05", "--resamples", "500"]) == 0
    text = capsys.readouterr().out
    assert "| toy | check |" in text and "+0.000" in text and "interval above 0.05 |" in text
    assert text.strip().splitlines()[-1].endswith(" no |")  # equal at R@5: nothing clears the margin
    assert pd_mod.main(["--predictions", str(preds), "--a", "a", "--b", "zzz", "--bench", str(bench),
                        "--collections", "toy"]) == 1
