"""bench/paired_difference.py: per-question differences scored by score.py itself, a seeded paired
bootstrap, and a table whose means are score.py's over the same half."""

from __future__ import annotations

import json
from pathlib import Path

from tests.bench.conftest import halves, run_tool, write_collection


def _predictions(path: Path, ids: list[str], rank_of: dict[str, int | None]) -> None:
    """Each question's gold page at rank_of[id] (1-based; None: not retrieved), fillers elsewhere."""
    lines = []
    for i in ids:
        results = [{"doc": f"filler-{j}.pdf", "page": 1} for j in range(10)]
        rank = rank_of.get(i)
        if rank is not None:
            results.insert(rank - 1, {"doc": f"doc-{i}.pdf", "page": 1})
        lines.append(json.dumps({"id": i, "results": results[:10]}))
    path.write_text("\n".join(lines) + "\n")


def _rows(stdout: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in stdout.splitlines() if line.startswith("| toy")]


def _setup(tmp_path: Path, score_script: Path, n: int) -> tuple[Path, Path, list[str], list[str]]:
    bench = tmp_path / "bench"
    ids = [f"q-{i}" for i in range(n)]
    write_collection(bench, "toy", ids)
    (bench / "score.py").write_bytes(score_script.read_bytes())
    preds = tmp_path / "preds"
    preds.mkdir()
    return bench, preds, ids, halves(bench, "toy", tmp_path / "halves")["check"]


def test_means_wins_and_interval_on_the_check_half(tmp_path, score_script):
    bench, preds, ids, check = _setup(tmp_path, score_script, 40)
    assert len(check) >= 10
    # A finds every question at rank 1..3; B misses the first four check questions and finds the rest at rank 8.
    _predictions(preds / "toy.a.jsonl", ids, {i: 1 + k % 3 for k, i in enumerate(ids)})
    _predictions(preds / "toy.b.jsonl", ids, {i: (None if i in check[:4] else 8) for i in ids})
    args = ("--predictions", preds, "--a", "a", "--b", "b", "--bench", bench, "--collections", "toy,absent", "--resamples", 2000)
    done = run_tool("paired_difference", *args)
    assert done.returncode == 0, done.stderr
    [row] = _rows(done.stdout)  # a collection without predictions is left out
    assert row[:9] == ["toy", "check", str(len(check)), "1.000", "0.000", "+1.000", "[+1.000, +1.000]", str(len(check)), "0"]
    at10 = run_tool("paired_difference", *args, "--metric", "R@10")
    [row] = _rows(at10.stdout)
    assert row[4] == f"{(len(check) - 4) / len(check):.3f}" and row[7:9] == ["4", "0"]
    low, high = (float(x) for x in row[6].strip("[]").split(","))
    assert 0 < low <= float(row[5]) <= high
    assert run_tool("paired_difference", *args, "--metric", "R@10").stdout == at10.stdout  # seeded: the same figures


def test_the_margin_column_and_no_predictions(tmp_path, score_script):
    bench, preds, ids, _ = _setup(tmp_path, score_script, 30)
    _predictions(preds / "toy.a.jsonl", ids, {i: 1 for i in ids})
    _predictions(preds / "toy.b.jsonl", ids, {i: 2 for i in ids})
    done = run_tool("paired_difference", "--predictions", preds, "--a", "a", "--b", "b", "--bench", bench,
                    "--collections", "toy", "--margin", "0.05", "--resamples", "500")
    assert done.returncode == 0, done.stderr
    assert "interval above 0.05 |" in done.stdout and "+0.000" in done.stdout
    assert done.stdout.strip().splitlines()[-1].endswith(" no |")  # equal at R@5: nothing clears the margin
    missing = run_tool("paired_difference", "--predictions", preds, "--a", "a", "--b", "zzz", "--bench", bench, "--collections", "toy")
    assert missing.returncode == 1 and "No collection has predictions of both a and zzz" in missing.stderr
