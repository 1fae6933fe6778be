"""A failed OCR call degrades the file instead of failing it. Tesseract inside MuPDF can fail in
ways that leave the process unable to OCR again (a std::bad_alloc under the worker's memory
limit leaves Leptonica marked as in use: every later call raises "Attempt to use Leptonica from
2 threads at once!"); one such failure used to fail every later file with a figure in the same
worker (seen on dev-docugami-10q). Here a real failure of the real library is caused with a
Tesseract language that is not installed."""

from __future__ import annotations

import shutil

import pytest

from backend.config import IngestSettings
from backend.ingest import extract
from backend.ingest.parser import parse_pdf
from backend.ingest.worker import ParseWorker
from backend.types import NodeKind

pytestmark = pytest.mark.skipif(shutil.which("tesseract") is None, reason="tesseract is not installed")


def _figure_text(parsed) -> str:
    return " ".join(n.text for n in parsed.nodes if n.kind == NodeKind.FIGURE).lower()


def test_a_figure_is_read_with_ocr_when_tesseract_works(figure_pdf):
    with ParseWorker(IngestSettings(ocr="tesseract")) as worker:
        parsed = worker.parse(figure_pdf, None, "fig.pdf")
    assert "kettle" in _figure_text(parsed) and "lanterns" in _figure_text(parsed), _figure_text(parsed)


def test_failed_figure_ocr_keeps_the_file_and_the_next_file_gets_a_fresh_worker(figure_pdf):
    with ParseWorker(IngestSettings(ocr="tesseract", ocr_language="xx-not-installed")) as worker:
        parsed = worker.parse(figure_pdf, None, "fig.pdf")
        first = worker._proc.pid
        assert any("OCR with tesseract failed" in w for w in parsed.document.warnings), parsed.document.warnings
        assert "annual report" in " ".join(n.text for n in parsed.nodes).lower(), "the text layer is kept"
        assert any(n.kind == NodeKind.FIGURE for n in parsed.nodes), "the figure stays a unit without OCR text"
        again = worker.parse(figure_pdf, None, "fig-again.pdf")
        assert worker._proc.pid != first, "a worker whose OCR failed is replaced before the next file"
        assert again.document.file_name == "fig-again.pdf"


def test_after_one_failure_ocr_is_skipped_for_the_rest_of_the_process(figure_pdf, monkeypatch):
    monkeypatch.setattr(extract, "_ocr_failure", [])  # this test process's OCR state, restored after
    broken = parse_pdf(figure_pdf, IngestSettings(ocr="tesseract", ocr_language="xx-not-installed"), None)
    assert extract.ocr_unusable() is not None
    assert any("were not read with OCR" in w for w in broken.document.warnings), broken.document.warnings
    # Even with a working language, this process no longer calls tesseract (its state may be stuck).
    later = parse_pdf(figure_pdf, IngestSettings(ocr="tesseract"), None)
    assert "kettle" not in _figure_text(later)
    assert any("were not read with OCR" in w for w in later.document.warnings), later.document.warnings
