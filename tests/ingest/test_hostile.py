"""Hostile and odd files of issue 12's "Alone" list, each generated small in a tmp folder by the
generators of tests/fixtures/hostile_pdfs.py (bench/hostile.py runs them at full size). Valid files
parse (degraded, never refused), messages are written for people (no exception class names, no
MuPDF codes, no server paths), names are escaped in log lines, and pathological pages keep their
text while their graphics are skipped.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path

import pymupdf
import pytest

from backend.config import IngestSettings
from backend.errors import library_reason, log_name
from backend.graph.store import WorkspaceStore
from backend.ingest import parser as parser_mod
from backend.ingest.extract import PageBounds, PageCoster
from backend.ingest.parser import parse_pdf
from tests.fixtures import hostile_pdfs as hostile

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLE_PDFS = sorted((REPO_ROOT / "sample_corpus").glob("*.pdf"))
# What a person must never read in a reason: a Python class name, a MuPDF error code.
INTERNAL_RE = re.compile(r"\b\w*(Error|Exception)\b|code=\d|\bFz\w+|Traceback")


def _node_texts(workspace: Path, doc_id: str) -> str:
    store = WorkspaceStore(workspace, create=False)
    try:
        nodes, _ = store.all_nodes()
        return "\n".join(n.text for n in nodes if n.doc == doc_id)
    finally:
        store.close()


def _assert_plain(reason: str, tmp_path: Path) -> None:
    assert not INTERNAL_RE.search(reason), f"internal words in {reason!r}"
    assert str(tmp_path) not in reason and "/tmp" not in reason, f"a server path in {reason!r}"


def test_hostile_names_are_ingested_and_escaped_in_log_lines(service, tmp_path, caplog):
    folder = tmp_path / "in"
    folder.mkdir()
    files = [hostile.hostile_name(folder, key) for key in hostile.HOSTILE_NAMES]
    bad = folder / "bad\n\u202ename.pdf"
    hostile.not_pdf(bad)
    with caplog.at_level(logging.WARNING, logger="backend.ingest"):
        report = service.ingest(tmp_path / "ws", [*files, bad])
    report.model_dump_json()  # a non-UTF-8 name must not break serialisation
    statuses = [f.status for f in report.files]
    assert statuses == ["ingested"] * len(files) + ["failed"], report
    assert report.files[0].file_name == "caf\\xe9 r\\xe9sum\\xe9.pdf"  # kept, the bytes that are not UTF-8 escaped
    lines = [r.getMessage() for r in caplog.records if "failed" in r.getMessage()]
    assert lines and all("\n" not in line and "\u202e" not in line for line in lines), lines
    assert any("bad\\n\\u202ename.pdf" in line for line in lines), lines


def test_lone_surrogates_in_metadata_do_not_break_serialisation(service, tmp_path):
    path = hostile.surrogate_metadata(tmp_path / "meta.pdf")
    title = pymupdf.open(path).metadata["title"]
    assert any("\ud800" <= c <= "\udfff" for c in title), "fixture check: MuPDF hands on the lone surrogates"
    report = service.ingest(tmp_path / "ws", [path])
    assert report.files[0].status == "ingested", report
    doc = service.documents(tmp_path / "ws")[0]
    assert not any("\ud800" <= c <= "\udfff" for c in doc.title + doc.card)
    doc.model_dump_json()


def test_a_2000_level_outline_parses_with_its_outline_cut(tmp_path):
    parsed = parse_pdf(hostile.deep_outline(tmp_path / "deep.pdf", depth=2000), IngestSettings(), None)
    assert any("outline" in w and "64 levels" in w for w in parsed.document.warnings), parsed.document.warnings
    assert max(s.level for s in parsed.sections) <= parser_mod.MAX_OUTLINE_DEPTH
    assert any("Chapter 3" in n.text for n in parsed.nodes)


def test_failure_reasons_have_no_class_names_codes_or_server_paths(service, tmp_path):
    upload = tmp_path / "uploads" / "3f9c2a"  # how a server stores uploads: its own folder and names
    upload.mkdir(parents=True)
    made = {
        "garbage.pdf": lambda p: p.write_bytes(b"%PDF-1.7\n" + bytes(range(256)) * 8),
        "tree.pdf": hostile.page_tree_bomb,
        "flipped.pdf": hostile.bit_flips,
        "cut.pdf": hostile.truncated,
        "locked.pdf": hostile.encrypted,
        "notes.pdf": hostile.not_pdf,
    }
    files, names = [], []
    for i, (user_name, make) in enumerate(made.items()):
        path = upload / f"tmp{i:04d}.pdf"
        make(path)
        files.append(path)
        names.append(user_name)
    report = service.ingest(tmp_path / "ws", files, display_names=names)
    assert [f.file_name for f in report.files] == names
    failed = report.failed
    assert {f.file_name for f in failed} >= {"garbage.pdf", "tree.pdf", "cut.pdf", "locked.pdf", "notes.pdf"}, report
    for f in failed:
        _assert_plain(f.reason or "", tmp_path)
        assert "tmp0" not in (f.reason or ""), f.reason
    assert "damaged" in report.files[0].reason and "page tree" in report.files[1].reason


def test_a_library_error_on_one_page_is_a_plain_warning(tmp_path, monkeypatch):
    path = hostile.text_pdf(tmp_path / "two.pdf", pages=2)
    real = parser_mod.extract_page

    def failing(page, **kwargs):
        if page.number == 0:
            raise pymupdf.mupdf.FzErrorFormat("code=7: cannot find object in xref (12 0 R)")
        return real(page, **kwargs)

    monkeypatch.setattr(parser_mod, "extract_page", failing)
    parsed = parse_pdf(path, IngestSettings(), None)
    skipped = [w for w in parsed.document.warnings if w.startswith("page 1 ")]
    assert skipped and "damaged" in skipped[0], parsed.document.warnings
    _assert_plain(skipped[0], tmp_path)


def test_an_unexpected_parser_error_reaches_the_user_in_plain_words(tmp_path, monkeypatch, capsys):
    from backend.ingest import worker

    def broken(*args, **kwargs):
        raise TypeError("object of type 'NoneType' has no len()")

    monkeypatch.setattr(parser_mod, "parse_pdf", broken)
    worker._parse_one('["/srv/uploads/x.pdf", null, "report.pdf"]\n', IngestSettings(), 512)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == '["recycle"]', "whatever state the library was left in goes with this worker"
    reply = lines[-1]
    assert len(lines) == 2 and reply.startswith('["error"') and "could not read" in reply, lines
    _assert_plain(reply, tmp_path)


def test_library_reason_maps_exceptions_to_plain_words():
    assert library_reason(RecursionError("maximum recursion depth exceeded")) == "its structure is nested too deeply to read"
    assert "damaged" in library_reason(RuntimeError("code=7: cannot find object in xref (5 0 R)"))
    assert "memory" in library_reason(MemoryError())
    assert not INTERNAL_RE.search(library_reason(TypeError("'NoneType' has no len()")))


def test_log_name_escapes_line_breaks_tabs_bidi_and_bad_bytes():
    assert log_name("a\nb\tc\u202ed.pdf") == "a\\nb\\tc\\u202ed.pdf"
    assert log_name(os.fsdecode(b"caf\xe9.pdf")) == "caf\\xe9.pdf"
    assert log_name("plain name.pdf") == "plain name.pdf"


@pytest.mark.parametrize(
    ("make", "bound_words", "kept"),
    [
        (lambda p: hostile.many_annotations(p, n=3000), "annotations", "must survive the links"),
        (lambda p: hostile.ruling_lines(p, n=12000), "vector paths", "must survive the drawings"),
        (lambda p: hostile.image_bomb(p, side_px=20000), "pixels", "very large picture"),
        (lambda p: hostile.fanout_bomb(p, levels=6), "nested form draws", "the heading survives"),
    ],
    ids=["10k-links", "ruling-lines", "image-pixels", "xobject-fanout"],
)
def test_a_page_over_a_bound_keeps_its_text(tmp_path, make, bound_words, kept):
    parsed = parse_pdf(make(tmp_path / "page.pdf"), IngestSettings(), None)
    assert any(bound_words in w and "bound" in w for w in parsed.document.warnings), parsed.document.warnings
    assert any(kept in n.text for n in parsed.nodes), [n.text for n in parsed.nodes]


def test_the_sample_corpus_is_not_degraded():
    """The bounds must not bite on ordinary pages (reports with tables, figures and links)."""
    for path in SAMPLE_PDFS:
        with pymupdf.open(path) as pdf:
            coster = PageCoster(pdf, PageBounds())
            assert [p.number + 1 for p in pdf if coster.plan(p).degraded] == [], path.name


def test_the_fanout_bomb_is_counted_before_it_runs(tmp_path):
    with pymupdf.open(hostile.fanout_bomb(tmp_path / "fan.pdf", levels=7)) as pdf:
        plan = PageCoster(pdf, PageBounds()).plan(pdf[0])
    assert not plan.graphics and plan.text_top_level_only
    assert "11,111,110 nested form draws" in plan.reasons[0]


def test_a_bomb_fails_alone_and_the_next_file_is_ingested(service, tmp_path):
    bomb = hostile.fanout_bomb(tmp_path / "bomb.pdf", levels=7, text=False)
    assert bomb.stat().st_size < 10_000, "fixture check: 10^7 draws from a few KB"
    with_text = hostile.fanout_bomb(tmp_path / "bomb_with_heading.pdf", levels=7)
    good = hostile.text_pdf(tmp_path / "good.pdf")
    report = service.ingest(tmp_path / "ws", [bomb, with_text, good])
    by_name = {f.file_name: f for f in report.files}
    assert by_name["bomb.pdf"].status == "failed"
    assert "every page is over the parser's bounds" in by_name["bomb.pdf"].reason
    _assert_plain(by_name["bomb.pdf"].reason, tmp_path)
    assert by_name["bomb_with_heading.pdf"].status == "ingested"
    assert any("nested form draws" in w for w in by_name["bomb_with_heading.pdf"].warnings)
    assert "the heading survives" in _node_texts(tmp_path / "ws", by_name["bomb_with_heading.pdf"].doc_id)
    assert by_name["good.pdf"].status == "ingested"
    assert "lanterns along the quay" in _node_texts(tmp_path / "ws", by_name["good.pdf"].doc_id)
