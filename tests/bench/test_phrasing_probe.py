"""bench/phrasing_probe.py keeps to its half: a rewrite must rewrite a question of the probe's half
and keep its gold pages, a chain names no gold page of the other half, and the shipped probes name
only files of the collection's corpus."""

from __future__ import annotations

import json

import pytest


def _bench(tmp_path, split_mod):
    """A one-collection bench folder with a tune-half and a check-half question."""
    ids = [f"hotpot-{i}" for i in range(40)]
    tune = next(i for i in ids if split_mod.split_of(i) == "tune")
    check = next(i for i in ids if split_mod.split_of(i) == "check")
    folder = tmp_path / "bench" / "dev-hotpot-pdf"
    folder.mkdir(parents=True)
    rows = [{"id": i, "question": f"q {i}", "gold": [{"doc": "A.pdf" if i == tune else "Z.pdf", "page": 1}]} for i in (tune, check)]
    (folder / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder.parent, tune, check


def _probe(tmp_path, rows):
    path = tmp_path / "probe.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_a_rewrite_of_a_tune_question_with_its_gold_loads(tmp_path, split_mod, phrasing_probe_mod):
    bench, tune, _ = _bench(tmp_path, split_mod)
    probe = _probe(tmp_path, [{"id": "r", "kind": "rewrite", "of": tune, "question": "Q?", "gold": ["A.pdf"]},
                              {"id": "c", "kind": "3-page chain", "of": "", "question": "C?", "gold": ["A.pdf", "B.pdf", "C.pdf"]}])
    rows, originals = phrasing_probe_mod.load_probe(probe, bench)
    assert [r["id"] for r in rows] == ["r", "c"] and originals[tune]["question"] == f"q {tune}"


def test_a_chain_through_a_check_half_gold_page_is_refused(tmp_path, split_mod, phrasing_probe_mod):
    bench, _, _ = _bench(tmp_path, split_mod)  # Z.pdf is gold for the check-half question
    fine = _probe(tmp_path, [{"id": "c", "kind": "2-page chain", "of": "", "question": "C?", "gold": ["A.pdf", "B.pdf"]}])
    assert [r["id"] for r in phrasing_probe_mod.load_probe(fine, bench)[0]] == ["c"]
    leaky = _probe(tmp_path, [{"id": "c", "kind": "3-page chain", "of": "", "question": "C?", "gold": ["A.pdf", "B.pdf", "Z.pdf"]}])
    with pytest.raises(SystemExit, match="check-half"):
        phrasing_probe_mod.load_probe(leaky, bench)


@pytest.mark.parametrize("which, gold", [("check", ["A.pdf"]), ("tune", ["B.pdf"])])
def test_a_rewrite_of_a_check_question_or_with_other_gold_is_refused(tmp_path, split_mod, phrasing_probe_mod, which, gold):
    bench, tune, check = _bench(tmp_path, split_mod)
    probe = _probe(tmp_path, [{"id": "r", "kind": "rewrite", "of": tune if which == "tune" else check,
                               "question": "Q?", "gold": gold}])
    with pytest.raises(SystemExit):
        phrasing_probe_mod.load_probe(probe, bench)


def test_the_shipped_probe_keeps_to_the_tune_half_and_the_corpus(split_mod, phrasing_probe_mod):
    bench = split_mod.DEFAULT_BENCH
    corpus = bench / "dev-hotpot-pdf" / "corpus"
    if not corpus.is_dir():
        pytest.skip(f"no dev-hotpot-pdf at {bench}")
    rows, _ = phrasing_probe_mod.load_probe(phrasing_probe_mod.PROBE, bench)
    assert len(rows) == 100
    assert all((corpus / g).is_file() for r in rows for g in r["gold"])
    _composed_ask_their_chains_again(rows, 16)
    drawn = [r for r in rows if r["id"].startswith("drawn-")]
    assert len(drawn) == 12 and all(r["kind"].startswith("drawn") and 2 <= len(r["gold"]) <= 4 for r in drawn)


def _composed_ask_their_chains_again(rows: list[dict], n: int) -> None:
    """Each composed question asks one of the probe's chains again, with that chain's gold pages."""
    chains = {r["id"].removeprefix("chain-"): r for r in rows if r["id"].startswith("chain-")}
    composed = [r for r in rows if r["kind"].startswith("composed")]
    assert len(composed) == n
    for r in composed:
        chain = chains[r["id"].removeprefix("composed-")]
        assert r["gold"] == chain["gold"] and r["question"] != chain["question"], r["id"]


def test_a_check_probe_refuses_a_tune_page_and_accepts_a_check_page(tmp_path, split_mod, phrasing_probe_mod):
    bench, _, _ = _bench(tmp_path, split_mod)  # A.pdf is gold for the tune-half question, Z.pdf for the check one
    fine = _probe(tmp_path, [{"id": "c", "kind": "2-page chain", "of": "", "question": "C?", "gold": ["Z.pdf", "B.pdf"]}])
    assert [r["id"] for r in phrasing_probe_mod.load_probe(fine, bench, "check")[0]] == ["c"]
    leaky = _probe(tmp_path, [{"id": "c", "kind": "2-page chain", "of": "", "question": "C?", "gold": ["A.pdf", "B.pdf"]}])
    with pytest.raises(SystemExit, match="tune-half"):
        phrasing_probe_mod.load_probe(leaky, bench, "check")


def test_the_shipped_check_probe_keeps_to_the_check_half_and_away_from_the_tune_probe(split_mod, phrasing_probe_mod):
    bench = split_mod.DEFAULT_BENCH
    corpus = bench / "dev-hotpot-pdf" / "corpus"
    if not corpus.is_dir():
        pytest.skip(f"no dev-hotpot-pdf at {bench}")
    rows, _ = phrasing_probe_mod.load_probe(phrasing_probe_mod.PROBES["check"], bench, "check")
    tune_rows, _ = phrasing_probe_mod.load_probe(phrasing_probe_mod.PROBES["tune"], bench, "tune")
    assert len(rows) == 29 and not any(r["of"] for r in rows)
    _composed_ask_their_chains_again(rows, 13)
    assert all((corpus / g).is_file() for r in rows for g in r["gold"])
    assert not {g for r in rows for g in r["gold"]} & {g for r in tune_rows for g in r["gold"]}
