"""Gold evidence: parsing what a person types, hit/miss per result, the per-question figures
(checked against ../shared/bench/score.py, the referee), and unpacking an uploaded benchmark zip
safely."""

from __future__ import annotations

import importlib.util
import json
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from backend.errors import StrataError
from backend.eval.gold import GoldRef, load_questions, parse_gold, ranked_pages, result_hits, score_question
from backend.eval.folders import _extract, list_benchmarks, unpack_benchmark_zip

SCORE_PY = Path(__file__).resolve().parents[3] / "shared" / "bench" / "score.py"


@dataclass
class Hit:
    doc: str
    page: int | None


# ---------------------------------------------------------------- parsing and matching


@pytest.mark.parametrize(
    "text, expected",
    [
        ("report.pdf p.3", [GoldRef(doc="report.pdf", page=3)]),
        ("report.pdf page 3", [GoldRef(doc="report.pdf", page=3)]),
        ("report.pdf:3; annex.pdf#12", [GoldRef(doc="report.pdf", page=3), GoldRef(doc="annex.pdf", page=12)]),
        ("my report.pdf p 2\nannex.pdf", [GoldRef(doc="my report.pdf", page=2), GoldRef(doc="annex.pdf", page=None)]),
        ('[{"doc": "a.pdf", "page": 4, "bbox": null, "text": "x"}, {"doc": "b.pdf", "page": null}]',
         [GoldRef(doc="a.pdf", page=4), GoldRef(doc="b.pdf", page=None)]),
        ("  ", []),
    ],
)
def test_parse_gold_accepts_what_people_type(text, expected):
    assert parse_gold(text) == expected


@pytest.mark.parametrize("text", ["page 3 of the report", "report.pdf p.0", '[{"page": 2}]', "[not json"])
def test_parse_gold_rejects_items_it_cannot_read_with_a_message(text):
    with pytest.raises(StrataError) as err:
        parse_gold(text)
    assert "gold" in str(err.value).lower() or "page" in str(err.value).lower()


def test_result_hits_match_doc_and_page_and_document_level_gold():
    gold = [GoldRef(doc="a.pdf", page=2), GoldRef(doc="corpus/b.pdf", page=None)]
    results = [Hit("a.pdf", 1), Hit("x/a.pdf", 2), Hit("b.pdf", 7), Hit("c.pdf", 2), Hit("a.pdf", 2)]
    assert result_hits(results, gold) == [False, True, True, False, True]
    assert result_hits(results, []) == [False] * 5


def test_ranked_pages_keep_the_first_of_each_page():
    results = [Hit("a.pdf", 1), Hit("dir/a.pdf", 1), Hit("b.pdf", 1), Hit("a.pdf", 2), Hit("a.pdf", 1)]
    assert ranked_pages(results) == [("a.pdf", 1), ("b.pdf", 1), ("a.pdf", 2)]


def test_score_question_counts_pages_not_units():
    gold = [GoldRef(doc="a.pdf", page=2), GoldRef(doc="b.pdf", page=1)]
    # a.pdf p.2 is the 3rd distinct page (the two x.pdf units share a page); b.pdf p.1 is the 12th.
    results = [Hit("x.pdf", 1), Hit("x.pdf", 1), Hit("y.pdf", 1), Hit("a.pdf", 2)] + [Hit(f"z{i}.pdf", 1) for i in range(8)] + [Hit("b.pdf", 1)]
    s = score_question(results, gold)
    assert s.recall == {1: 0.0, 5: 0.5, 10: 0.5}
    assert s.mrr == pytest.approx(1 / 3)
    assert s.all_found == 0.0 and s.doc_recall == 0.5
    assert score_question(results, []) is None


@pytest.mark.skipif(not SCORE_PY.is_file(), reason="../shared/bench/score.py is not here")
def test_per_question_figures_agree_with_score_py():
    spec = importlib.util.spec_from_file_location("bench_score", SCORE_PY)
    score = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(score)
    cases = [
        ([("a.pdf", 2), ("b.pdf", None)], [("b.pdf", 9), ("a.pdf", 1), ("a.pdf", 2)]),
        ([("a.pdf", 2)], [("c.pdf", 1)] * 3 + [("d.pdf", i) for i in range(1, 12)] + [("a.pdf", 2)]),
        ([("a.pdf", 5), ("a.pdf", 5), ("c.pdf", 1)], [("a.pdf", 5), ("c.pdf", 1)]),
        ([("doc one.pdf", 1)], []),
    ]
    for gold, ranked in cases:
        question = {"gold": [{"doc": d, "page": p} for d, p in gold]}
        pred = {"results": [{"doc": d, "page": p} for d, p in ranked]}
        theirs, _ = score.score_retrieval(question, pred)
        ours = score_question([Hit(d, p) for d, p in ranked], [GoldRef(doc=d, page=p) for d, p in gold])
        assert {f"R@{k}": ours.recall[k] for k in (1, 5, 10)} == {k: theirs[k] for k in ("R@1", "R@5", "R@10")}
        assert (ours.mrr, ours.all_found, ours.doc_recall) == (theirs["MRR@10"], theirs["All@10"], theirs["DocR@10"])


def test_load_questions_reads_the_bench_format_and_names_a_bad_line(tmp_path):
    rows = [
        {"id": "q1", "question": "How many?", "answers": ["4"], "unanswerable": False, "modality": "table", "hops": 1,
         "gold": [{"doc": "a.pdf", "page": 2, "bbox": [0, 0, 1, 1], "text": "4"}], "source": "t", "meta": {"x": 1}},
        {"id": "q2", "question": "Who?", "answers": [], "unanswerable": True, "gold": [], "modality": None, "hops": None},
    ]
    (tmp_path / "questions.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    qs = load_questions(tmp_path)
    assert [q.id for q in qs] == ["q1", "q2"]
    assert qs[0].gold == [GoldRef(doc="a.pdf", page=2)] and qs[0].scored and not qs[1].scored
    assert [q.id for q in load_questions(tmp_path, limit=1)] == ["q1"]
    (tmp_path / "questions.jsonl").write_text(json.dumps(rows[0]) + "\n{\"id\": \"q3\"}\n")
    with pytest.raises(StrataError, match="line 2"):
        load_questions(tmp_path)


# ---------------------------------------------------------------- benchmark zips


def _zip(path: Path, entries: dict[str, bytes], links: dict[str, str] | None = None) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
        for name, target in (links or {}).items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            zf.writestr(info, target)
    return path


def _bench_entries(prefix: str = "") -> dict[str, bytes]:
    q = {"id": "q1", "question": "?", "answers": ["x"], "unanswerable": False, "gold": [{"doc": "a.pdf", "page": 1}]}
    return {f"{prefix}questions.jsonl": (json.dumps(q) + "\n").encode(), f"{prefix}corpus/a.pdf": b"%PDF-1.4 tiny"}


@pytest.mark.parametrize("prefix", ["", "my-bench/"])
def test_a_plain_benchmark_zip_unpacks_to_its_collection_folder(tmp_path, prefix):
    archive = _zip(tmp_path / "bench.zip", _bench_entries(prefix) | {"__MACOSX/._a.pdf": b"junk"})
    bench = unpack_benchmark_zip(archive, tmp_path / "out", max_unpacked_mb=1)
    assert (bench / "questions.jsonl").is_file() and (bench / "corpus" / "a.pdf").read_bytes() == b"%PDF-1.4 tiny"
    assert bench.is_relative_to(tmp_path / "out")
    if prefix:
        assert bench.name == "my-bench"
    assert list_benchmarks(bench.parent if prefix else bench) == [bench]


@pytest.mark.parametrize(
    "name, why",
    [("/etc/evil.txt", "absolute path"), ("../evil.txt", "'..'"), ("corpus/../../evil.txt", "'..'"), ("C:/evil.txt", "absolute path")],
)
def test_zip_entries_that_leave_the_folder_are_refused_before_anything_is_written(tmp_path, name, why):
    archive = _zip(tmp_path / "bad.zip", _bench_entries() | {name: b"pwned"})
    out = tmp_path / "deep" / "out"
    with pytest.raises(StrataError, match=why):
        unpack_benchmark_zip(archive, out, max_unpacked_mb=1)
    assert not out.exists() and not (tmp_path / "evil.txt").exists() and not (tmp_path / "deep" / "evil.txt").exists()


def test_zip_symlinks_are_refused(tmp_path):
    archive = _zip(tmp_path / "link.zip", _bench_entries(), links={"corpus/b.pdf": "/etc/passwd"})
    with pytest.raises(StrataError, match="symbolic link"):
        unpack_benchmark_zip(archive, tmp_path / "out", max_unpacked_mb=1)
    assert not (tmp_path / "out").exists()


def test_oversize_and_crowded_zips_are_refused(tmp_path):
    bomb = _zip(tmp_path / "bomb.zip", _bench_entries() | {"corpus/big.pdf": b"\0" * (3 * 2**20)})
    assert bomb.stat().st_size < 2**20  # small on the wire, 3 MiB unpacked
    with pytest.raises(StrataError, match="unpacks to 3 MiB"):
        unpack_benchmark_zip(bomb, tmp_path / "out", max_unpacked_mb=2)
    crowded = _zip(tmp_path / "crowded.zip", _bench_entries() | {f"corpus/{i}.txt": b"" for i in range(30)})
    with pytest.raises(StrataError, match="entries"):
        unpack_benchmark_zip(crowded, tmp_path / "out", max_unpacked_mb=1, max_entries=10)
    assert not (tmp_path / "out").exists()


def test_the_byte_counter_stops_an_archive_whose_headers_understate_its_size(tmp_path):
    archive = _zip(tmp_path / "b.zip", {"corpus/big.pdf": b"x" * 4096})
    with zipfile.ZipFile(archive) as zf, pytest.raises(StrataError, match="more than"):
        _extract(zf, zf.infolist(), tmp_path / "out", limit_bytes=1000, archive_name="b.zip")


@pytest.mark.parametrize(
    "entries, message",
    [({"readme.txt": b"hi"}, "no benchmark folder"), ({"questions.jsonl": b"{}\n", "corpus/": b""}, "no PDFs")],
)
def test_zips_without_a_benchmark_say_what_is_missing(tmp_path, entries, message):
    archive = _zip(tmp_path / "x.zip", entries)
    with pytest.raises(StrataError, match=message):
        unpack_benchmark_zip(archive, tmp_path / "out", max_unpacked_mb=1)


def test_a_file_that_is_not_a_zip_is_refused(tmp_path):
    path = tmp_path / "bench.zip"
    path.write_bytes(b"%PDF-1.4 not a zip")
    with pytest.raises(StrataError, match="not a zip"):
        unpack_benchmark_zip(path, tmp_path / "out", max_unpacked_mb=1)

