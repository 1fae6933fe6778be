"""bench/phrasing_probe.py keeps to its half: a rewrite must rewrite a question of the probe's half
and keep its gold pages, a chain names no gold page of the other half, and the shipped probes load
against the collection and name only files of its corpus. Each case runs the tool with no method,
so it only loads the probe."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bench.conftest import REPO, SCORE_SCRIPT, halves, run_tool, write_collection

PROBES = REPO / "bench" / "probes"

pytestmark = pytest.mark.integration  # the tool runs in subprocesses, each importing the service


def _bench(tmp_path: Path) -> tuple[Path, str, str]:
    """A one-collection bench folder with a tune-half question (gold A.pdf) and a check-half one (gold Z.pdf)."""
    ids = [f"hotpot-{i}" for i in range(40)]
    got = halves(write_collection(tmp_path / "probe_ids", "dev-hotpot-pdf", ids).parent, "dev-hotpot-pdf", tmp_path / "h")
    tune, check = got["tune"][0], got["check"][0]
    write_collection(tmp_path / "bench", "dev-hotpot-pdf", [tune, check], gold=lambda i: [("A.pdf" if i == tune else "Z.pdf", 1)])
    return tmp_path / "bench", tune, check


def _load(tmp_path: Path, bench: Path, rows: list[dict], half: str = "tune"):
    probe = tmp_path / "probe.jsonl"
    probe.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return run_tool("phrasing_probe", "--workspace", tmp_path / "no-workspace", "--bench", bench, "--probe", probe,
                    "--half", half, "--methods", ",")


def test_a_rewrite_of_a_tune_question_with_its_gold_loads(tmp_path):
    bench, tune, _ = _bench(tmp_path)
    done = _load(tmp_path, bench, [{"id": "r", "kind": "rewrite", "of": tune, "question": "Q?", "gold": ["A.pdf"]},
                                   {"id": "c", "kind": "3-page chain", "of": "", "question": "C?", "gold": ["A.pdf", "B.pdf", "C.pdf"]}])
    assert done.returncode == 0, done.stderr
    assert "originals R@5 / All@10 (n=1)" in done.stdout and "of which 3-page (n=1)" in done.stdout


def test_a_chain_through_a_gold_page_of_the_other_half_is_refused(tmp_path):
    bench, _, _ = _bench(tmp_path)
    leaky = _load(tmp_path, bench, [{"id": "c", "kind": "3-page chain", "of": "", "question": "C?", "gold": ["A.pdf", "B.pdf", "Z.pdf"]}])
    assert leaky.returncode != 0 and "gold for check-half questions" in leaky.stderr
    fine = _load(tmp_path, bench, [{"id": "c", "kind": "2-page chain", "of": "", "question": "C?", "gold": ["Z.pdf", "B.pdf"]}], "check")
    assert fine.returncode == 0, fine.stderr
    leaky = _load(tmp_path, bench, [{"id": "c", "kind": "2-page chain", "of": "", "question": "C?", "gold": ["A.pdf", "B.pdf"]}], "check")
    assert leaky.returncode != 0 and "gold for tune-half questions" in leaky.stderr


@pytest.mark.parametrize("which, gold, message", [("check", ["A.pdf"], "not on the tune half"), ("tune", ["B.pdf"], "its gold is not its original's")])
def test_a_rewrite_of_a_check_question_or_with_other_gold_is_refused(tmp_path, which, gold, message):
    bench, tune, check = _bench(tmp_path)
    done = _load(tmp_path, bench, [{"id": "r", "kind": "rewrite", "of": tune if which == "tune" else check, "question": "Q?", "gold": gold}])
    assert done.returncode != 0 and message in done.stderr


def _rows(half: str) -> list[dict]:
    return [json.loads(x) for x in (PROBES / f"dev-hotpot-{half}.jsonl").read_text().splitlines() if x.strip()]


def _composed_ask_their_chains_again(rows: list[dict], n: int) -> None:
    """Each composed question asks one of the probe's chains again, with that chain's gold pages."""
    chains = {r["id"].removeprefix("chain-"): r for r in rows if r["id"].startswith("chain-")}
    composed = [r for r in rows if r["kind"].startswith("composed")]
    assert len(composed) == n
    for r in composed:
        chain = chains[r["id"].removeprefix("composed-")]
        assert r["gold"] == chain["gold"] and r["question"] != chain["question"], r["id"]


def test_the_shipped_probes_keep_to_their_halves_and_the_corpus():
    bench = SCORE_SCRIPT.parent
    corpus = bench / "dev-hotpot-pdf" / "corpus"
    if not corpus.is_dir():
        pytest.skip(f"no dev-hotpot-pdf at {bench}")
    for half in ("tune", "check"):
        done = run_tool("phrasing_probe", "--workspace", "/no-workspace", "--bench", bench, "--half", half, "--methods", ",")
        assert done.returncode == 0, done.stderr
    tune, check = _rows("tune"), _rows("check")
    assert len(tune) == 100 and len(check) == 29 and not any(r["of"] for r in check)
    _composed_ask_their_chains_again(tune, 16)
    _composed_ask_their_chains_again(check, 13)
    drawn = [r for r in tune if r["id"].startswith("drawn-")]
    assert len(drawn) == 12 and all(r["kind"].startswith("drawn") and 2 <= len(r["gold"]) <= 4 for r in drawn)
    assert all((corpus / g).is_file() for r in tune + check for g in r["gold"])
    assert not {g for r in check for g in r["gold"]} & {g for r in tune for g in r["gold"]}
