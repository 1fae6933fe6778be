"""bench/page_baselines.py on a two-PDF corpus made here, run as a user runs it: score.py-format
predictions per half, ranked by the real MiniLM (page-dense) and bm25s (page-bm25), and a page cache
that a second run reads instead of encoding again."""

from __future__ import annotations

import json

import pytest

from tests.bench.conftest import run_tool, write_toy_bench

pytestmark = pytest.mark.integration  # the tool runs in a subprocess with the real models

PAGES = {
    "Zorblax_Quintet.pdf": ["Zorblax Quintet is a jazz ensemble formed in Oslo by five cellists in 1987.",
                            "The band released the album Purple Static in 1999 on an independent label from Bergen."],
    "Marigold_Lighthouse.pdf": ["Marigold Lighthouse stands on a rocky cape and was built in 1871 from grey granite blocks."],
}
# (id, question, gold doc, gold page); ids q-0..q-3 fall in check, tune, check, tune (bench/split.py).
QUESTIONS = [
    ("q-0", "Which city was the jazz ensemble of five cellists formed in?", "Zorblax_Quintet.pdf", 1),
    ("q-1", "Which album did the band release in 1999 on an independent label?", "Zorblax_Quintet.pdf", 2),
    ("q-2", "When was the lighthouse on the rocky cape built?", "Marigold_Lighthouse.pdf", 1),
    ("q-3", "What stone is the lighthouse built from?", "Marigold_Lighthouse.pdf", 1),
]


def _title(name, doc) -> None:
    if name.startswith("Marigold"):
        doc.set_metadata({"title": "The Marigold Light"})  # a metadata title wins over the file name


@pytest.fixture()
def toy_bench(tmp_path):
    return write_toy_bench(tmp_path, PAGES, QUESTIONS, _title)


def test_pages_carry_the_title_and_predictions_come_per_half(toy_bench, tmp_path, score_script):
    (toy_bench / "score.py").write_bytes(score_script.read_bytes())
    cache = tmp_path / "cache"
    done = run_tool("page_baselines", "--bench", toy_bench, "--collections", "toy", "--cache", cache)
    assert done.returncode == 0, done.stderr
    pages = [json.loads(x) for x in (cache / "pages" / "toy" / "pages.jsonl").read_text().splitlines()]
    assert [(p["doc"], p["page"]) for p in pages] == [("Marigold_Lighthouse.pdf", 1), ("Zorblax_Quintet.pdf", 1), ("Zorblax_Quintet.pdf", 2)]
    assert pages[0]["text"].startswith("The Marigold Light\nMarigold Lighthouse stands")
    assert pages[2]["text"].startswith("Zorblax Quintet\nThe band released")  # file name as the title, '_' as spaces
    halves = {"tune": {"q-1", "q-3"}, "check": {"q-0", "q-2"}}  # bench/split.py's rule (tests/bench/test_split.py)
    for half, want in halves.items():
        for method in ("page-dense", "page-bm25"):
            rows = [json.loads(line) for line in (cache / "preds" / f"toy.{method}.{half}.jsonl").read_text().splitlines()]
            assert {r["id"] for r in rows} == want
            for r in rows:
                assert r["answer"] is None and 1 <= len(r["results"]) <= 3
                assert all(set(x) >= {"doc", "page", "text", "bbox"} and isinstance(x["page"], int) for x in r["results"])
                gold = next((d, pg) for i, _, d, pg in QUESTIONS if i == r["id"])
                assert (r["results"][0]["doc"], r["results"][0]["page"]) == gold, (method, r)
    table = [line for line in done.stdout.splitlines() if line.startswith("| toy |")]
    assert len(table) == 4 and all(line.split("|")[5].strip() == "1.000" for line in table)  # R@1 on every half and method
    # The vectors were cached, keyed by the texts and the model: a second run reads them.
    stamp = (cache / "pages" / "toy" / "vectors.npy").stat().st_mtime_ns
    again = run_tool("page_baselines", "--bench", toy_bench, "--collections", "toy", "--cache", cache)
    assert again.returncode == 0, again.stderr
    assert (cache / "pages" / "toy" / "vectors.npy").stat().st_mtime_ns == stamp
