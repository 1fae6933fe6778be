"""bench/flat_peers.py on a two-PDF corpus made here, run as a user runs it: the LlamaIndex and
LangChain default recipes (bench extras, skipped where they are not installed) and the page
baselines name the page that alone holds a question's answer, as 1-based page numbers even where
the PDF prints its own page labels; the built indexes are cached and a second run reuses them."""

from __future__ import annotations

import json

import pytest

from tests.bench.conftest import run_tool, write_toy_bench

pytest.importorskip("llama_index.core", reason="bench extra (requirements-bench.txt)")
pytest.importorskip("llama_index.embeddings.huggingface", reason="bench extra (requirements-bench.txt)")
pytest.importorskip("langchain_community", reason="bench extra (requirements-bench.txt)")
pytest.importorskip("langchain_huggingface", reason="bench extra (requirements-bench.txt)")
pytest.importorskip("langchain_text_splitters", reason="bench extra (requirements-bench.txt)")

pytestmark = pytest.mark.integration  # the tool runs in a subprocess with the real MiniLM

PAGES = {
    "Harbour_Annual_Report.pdf": [
        "Harbour Shipping annual report. The chairman thanks the crews of every vessel for a calm year at sea.",
        "Harbour Shipping revenue by segment. Container freight revenue was 912 million dollars in fiscal 2023, "
        "and tanker charter revenue was 204 million dollars.",
        "Harbour Shipping employees. The company employed 3,150 sailors and dock workers at the end of the year.",
    ],
    "Orchard_Cooperative.pdf": [
        "Orchard Cooperative grows apples and pears in the river valley; the harvest festival is held each October.",
    ],
}
# (id, question, gold doc, gold page): each answer is on that page only.
QUESTIONS = [
    ("q-0", "What was container freight revenue in fiscal 2023?", "Harbour_Annual_Report.pdf", 2),
    ("q-1", "How many sailors and dock workers did the company employ?", "Harbour_Annual_Report.pdf", 3),
    ("q-2", "When is the orchard harvest festival held?", "Orchard_Cooperative.pdf", 1),
]
RECIPES = ("llamaindex", "langchain")


def _page_labels(name, doc) -> None:
    if name.startswith("Harbour"):  # printed labels F-7, F-8, F-9: pypdf's page_label is not the page number
        doc.set_page_labels([{"startpage": 0, "prefix": "F-", "style": "D", "firstpagenum": 7}])


@pytest.fixture()
def toy_bench(tmp_path, score_script):
    bench = write_toy_bench(tmp_path, PAGES, QUESTIONS, _page_labels)
    (bench / "score.py").write_bytes(score_script.read_bytes())
    return bench


def test_recipes_name_the_answer_page_and_reuse_their_cache(toy_bench, tmp_path):
    cache, out, ranks = tmp_path / "cache", tmp_path / "preds", tmp_path / "ranks.jsonl"
    args = ("--bench", toy_bench, "--collections", "toy", "--cache", cache, "--out", out, "--ranks", ranks)
    done = run_tool("flat_peers", *args, timeout_s=600)
    assert done.returncode == 0, done.stderr
    gold = {i: (d, p) for i, _, d, p in QUESTIONS}
    for method in (*RECIPES, "page-dense", "page-bm25"):
        rows = [json.loads(line) for line in (out / f"toy.{method}.jsonl").read_text().splitlines()]
        assert {r["id"] for r in rows} == set(gold)  # every question, both halves, in one file
        for r in rows:
            assert r["answer"] is None and r["results"]
            pages = [(x["doc"], x["page"]) for x in r["results"]]
            assert len(pages) == len(set(pages))
            if method != "page-bm25":  # BM25 leaves out pages that share no word with the question
                assert len(pages) == 4  # every page of the corpus (fewer than 10), each once
            assert pages[0] == gold[r["id"]], (method, r["id"], pages)
    table = [line.split("|") for line in done.stdout.splitlines() if line.startswith("| toy |")]
    assert {(c[2].strip(), c[3].strip()) for c in table} == {(h, m) for h in ("tune", "check")
                                                            for m in (*RECIPES, "page-dense", "page-bm25")}
    assert all(c[5].strip() == "1.000" for c in table if c[4].strip() != "0")  # R@1 wherever the half has questions
    rank_rows = [json.loads(line) for line in ranks.read_text().splitlines()]
    assert {r["id"] for r in rank_rows} == set(gold)
    assert all(r[f"rank_{m}"] == 1 for r in rank_rows for m in RECIPES)
    # The built indexes are cached per collection: a second run loads them instead of embedding again
    # (here with the questions embedded by the ONNX export of the same MiniLM: the same pages come first).
    stamps = {p: p.stat().st_mtime_ns for p in (cache / "llamaindex" / "toy" / "index.key",
                                                cache / "langchain" / "toy" / "vectors.npy")}
    first = {r["id"]: r["results"][0] for r in map(json.loads, (out / "toy.langchain.jsonl").read_text().splitlines())}
    again = run_tool("flat_peers", *args, "--methods", ",".join(RECIPES), "--runtime", "onnx", timeout_s=600)
    assert again.returncode == 0, again.stderr
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps
    for r in map(json.loads, (out / "toy.langchain.jsonl").read_text().splitlines()):
        top = r["results"][0]
        assert (top["doc"], top["page"]) == (first[r["id"]]["doc"], first[r["id"]]["page"])
        assert top["score"] == pytest.approx(first[r["id"]]["score"], abs=1e-4)
    build_s = {c[3].strip(): c[11].strip() for c in (line.split("|") for line in again.stdout.splitlines()
                                                      if line.startswith("| toy |"))}
    assert build_s == {"llamaindex": "0", "langchain": "0"}
