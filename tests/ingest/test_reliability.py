"""What a hostile user meets on a shared server: a damaged page tree keeps the pages that load, a
name that is not UTF-8 is kept (escaped, never replaced) and the stored file is what later steps
open, and a refused file logs one line with no traceback and no server path.

The page-tree-cycle generator is written here (bench/hostile.py holds the others)."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import pytest

from backend.config import IngestSettings, cache_folder
from backend.errors import display_name, without_paths
from backend.ingest import parser as parser_mod
from backend.ingest.parser import open_validated, parse_pdf
from backend.ingest.speed import SpeedModel
from backend.errors import BadPdfError
from tests.fixtures.hostile_pdfs import raw_pdf, text_pdf

REPO_ROOT = Path(__file__).resolve().parents[2]
LATIN1_NAME = b"latin1-\xe9\xff-not-utf8.pdf"
LATIN1_TWIN = b"latin1-\xe9\xfe-not-utf8.pdf"  # differs from LATIN1_NAME in one byte that is not UTF-8


def _text_stream(text: bytes) -> bytes:
    ops = b"BT /F1 14 Tf 72 720 Td (%s) Tj ET" % text
    return b"<< /Length %d >>\nstream\n%s\nendstream" % (len(ops), ops)


def page_tree_cycle(path: Path) -> Path:
    """Three readable pages; the page tree's inner node lists its own parent among its kids, so
    MuPDF counts four pages and raises 'cycle in page tree' on loading the fourth."""
    page = b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Contents %d 0 R /Resources << /Font << /F1 10 0 R >> >> >>"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R 4 0 R 5 0 R] /Count 4 >>",
        page % (2, 7),
        page % (2, 8),
        b"<< /Type /Pages /Parent 2 0 R /Kids [6 0 R 2 0 R] /Count 2 >>",
        page % (5, 9),
        _text_stream(b"The looping report opens with the harbour budget"),
        _text_stream(b"The second page lists the lantern repairs"),
        _text_stream(b"The third page sits under the loop"),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    path.write_bytes(raw_pdf(objects))
    return path


# ---------------------------------------------------------------- 4. read what can be read


def test_a_page_tree_cycle_keeps_the_pages_that_load(tmp_path):
    parsed = parse_pdf(page_tree_cycle(tmp_path / "page-tree-cycle.pdf"), IngestSettings(), None)
    doc = parsed.document
    texts = " ".join(n.text for n in parsed.nodes)
    assert "harbour budget" in texts and "lantern repairs" in texts and "under the loop" in texts
    assert doc.pages == 4 and len(doc.page_sizes) == 4 and doc.page_sizes[3] == (612.0, 792.0)
    lost = [w for w in doc.warnings if w.startswith("page 4 ")]
    assert lost and "page tree" in lost[0], doc.warnings
    assert not any(w.startswith(("page 1 ", "page 2 ", "page 3 ")) for w in doc.warnings), doc.warnings


def test_page_sizes_fill_a_lost_page_from_its_neighbour():
    from backend.ingest.extract import RawPage

    pages = [RawPage(number=2, width=500.0, height=700.0), RawPage(number=3, width=612.0, height=792.0)]
    assert parser_mod.page_sizes(pages, 4) == [(500.0, 700.0), (500.0, 700.0), (612.0, 792.0), (612.0, 792.0)]


def test_the_page_tree_cycle_is_ingested_through_the_worker(service, tmp_path):
    report = service.ingest(tmp_path / "ws", [page_tree_cycle(tmp_path / "page-tree-cycle.pdf")])
    f = report.files[0]
    assert f.status == "ingested", f
    assert f.pages == 4 and any(w.startswith("page 4 ") for w in f.warnings), f


# ---------------------------------------------------------------- 3. names kept


def _named(folder: Path, raw_name: bytes, lines: int) -> Path:
    """A small PDF under a name given as bytes (a name that is not UTF-8 is real on disk)."""
    return text_pdf(Path(os.fsdecode(os.path.join(os.fsencode(folder), raw_name))), lines=lines)


def test_display_name_escapes_bytes_that_are_not_utf8_and_keeps_the_rest():
    assert display_name(os.fsdecode(LATIN1_NAME)) == "latin1-\\xe9\\xff-not-utf8.pdf"
    assert display_name("caf\u00e9 \u202e.pdf") == "caf\u00e9 \u202e.pdf"
    assert display_name("lone \ud800 surrogate") == "lone \\ud800 surrogate"


def test_names_that_are_not_utf8_stay_apart_and_the_stored_file_is_reopened(service, tmp_path, caplog):
    folder = tmp_path / "in"
    folder.mkdir()
    files = [_named(folder, LATIN1_NAME, 3), _named(folder, LATIN1_TWIN, 4)]
    with caplog.at_level(logging.WARNING):
        report = service.ingest(tmp_path / "ws", files)
    report.model_dump_json()
    assert [(f.file_name, f.status) for f in report.files] == [
        ("latin1-\\xe9\\xff-not-utf8.pdf", "ingested"), ("latin1-\\xe9\\xfe-not-utf8.pdf", "ingested")
    ], report
    assert sorted(d.file_name for d in service.documents(tmp_path / "ws")) == [
        "latin1-\\xe9\\xfe-not-utf8.pdf", "latin1-\\xe9\\xff-not-utf8.pdf"
    ]
    assert not [r for r in caplog.records if "ingest speed" in r.getMessage()], "the speed record opens the stored copy"
    assert SpeedModel(cache_folder(service.settings)).measured
    estimate = service.estimate_ingest(tmp_path / "ws", files)
    assert [f.file_name for f in estimate.files] == [f.file_name for f in report.files]
    assert {f.status for f in estimate.files} == {"unchanged"}


# ---------------------------------------------------------------- 6. logs fit for a shared server


def test_an_unexpected_parser_error_logs_one_line_and_the_traceback_only_at_debug(tmp_path, monkeypatch, capsys, caplog):
    from backend.ingest import worker

    def broken(*args, **kwargs):
        raise TypeError("object of type 'NoneType' has no len()")

    monkeypatch.setattr(parser_mod, "parse_pdf", broken)
    with caplog.at_level(logging.DEBUG, logger="backend.ingest.worker"):
        worker._parse_one('["/srv/uploads/x.pdf", null, "report.pdf"]\n', IngestSettings(), 512)
    capsys.readouterr()
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and warnings[0].exc_info is None, [(r.levelname, r.getMessage()) for r in caplog.records]
    assert "report.pdf" in warnings[0].getMessage() and "could not read" in warnings[0].getMessage()
    assert any(r.levelno == logging.DEBUG and r.exc_info for r in caplog.records), "the traceback is kept for DEBUG"


def test_a_file_mupdf_cannot_open_logs_no_server_path(tmp_path, caplog):
    upload = tmp_path / "uploads" / "3f9c2a"
    upload.mkdir(parents=True)
    path = upload / "garbage.pdf"
    path.write_bytes(b"%PDF-1.7\n" + bytes(range(256)) * 8)
    with caplog.at_level(logging.WARNING, logger="backend.ingest"), pytest.raises(BadPdfError) as err:
        open_validated(path, IngestSettings(), "garbage.pdf")
    lines = [r.getMessage() for r in caplog.records]
    assert lines and any("garbage.pdf" in line for line in lines), lines
    assert not any(str(tmp_path) in line or "/tmp/" in line for line in lines), lines
    assert str(tmp_path) not in err.value.reason


def test_without_paths_cuts_absolute_paths_and_leaves_urls():
    assert without_paths("Failed to open file '/srv/up/3f/x.pdf' as type pdf.") == "Failed to open file '.../x.pdf' as type pdf."
    assert without_paths("serving http://127.0.0.1:7860/ now") == "serving http://127.0.0.1:7860/ now"
    assert without_paths("docs/readme.md and ./a/b stay") == "docs/readme.md and ./a/b stay"


def test_logged_tracebacks_name_no_server_folder(capsys):
    from backend.logs import configure_logging

    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        configure_logging("DEBUG")
        try:
            open("/srv/strata/missing/file.pdf", "rb")
        except OSError:
            logging.getLogger("strata.test").debug("reading failed", exc_info=True)
        logging.getLogger("strata.test").warning("workspaces under %s", REPO_ROOT / ".strata")
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    err = capsys.readouterr().err
    assert "Traceback" in err and "file.pdf" in err and "workspaces under .../.strata" in err, err
    for folder in (str(REPO_ROOT), sys.prefix, "/srv/strata"):
        assert folder not in err, f"{folder} in {err}"
