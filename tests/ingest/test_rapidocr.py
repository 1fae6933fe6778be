"""RapidOCR in the parse worker: one engine per process, its ONNX Runtime sessions on one thread,
and a failure inside ONNX Runtime degrades the file as a tesseract failure does.

On a 16-core GPU machine with no tesseract (bench/RESULTS.md, fifteenth session) ONNX Runtime's
default of a thread per core could not start its threads under the parse worker's address-space
limit: the library aborted and every file with a figure failed as "damaged or hostile". Once the
threads were bounded, a std::bad_alloc inside ONNX Runtime (a small share of the memory budget)
still failed the whole file, reported as "part of the file's internal structure is damaged"."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("rapidocr_onnxruntime")

from rapidocr_onnxruntime.utils.infer_engine import ONNXRuntimeError  # noqa: E402

from backend.config import IngestSettings  # noqa: E402
from backend.errors import library_reason  # noqa: E402
from backend.ingest import extract  # noqa: E402
from backend.ingest.parser import parse_pdf  # noqa: E402
from backend.types import NodeKind  # noqa: E402


def _sessions(engine) -> list:
    """The ONNX Runtime sessions of the detector, the classifier and the recogniser."""
    return [engine.text_det.infer.session, engine.text_cls.infer.session, engine.text_rec.session.session]


def test_each_process_makes_one_engine_whose_sessions_run_on_one_thread(monkeypatch):
    monkeypatch.setattr(extract, "_rapidocr_engines", {})
    engine = extract.rapidocr_engine()
    assert extract.rapidocr_engine() is engine, "the engine is made once, not per page"
    for session in _sessions(engine):
        options = session.get_session_options()
        assert (options.intra_op_num_threads, options.inter_op_num_threads) == (1, 1)
    pid = os.getpid()
    monkeypatch.setattr(os, "getpid", lambda: pid + 100_000)  # as in a forked page helper
    assert extract.rapidocr_engine() is not engine, "a forked process does not share its parent's sessions"


def test_a_figure_is_read_by_rapidocr_in_process(figure_pdf, monkeypatch):
    monkeypatch.setattr(extract, "_ocr_failure", [])
    parsed = parse_pdf(figure_pdf, IngestSettings(ocr="rapidocr", parse_processes=1), None)
    figure_text = " ".join(n.text for n in parsed.nodes if n.kind == NodeKind.FIGURE).lower()
    assert "kettle" in figure_text and "lanterns" in figure_text, figure_text


def test_an_onnx_runtime_failure_degrades_the_file_with_a_memory_reason(figure_pdf, monkeypatch):
    monkeypatch.setattr(extract, "_ocr_failure", [])

    def out_of_memory(_img):
        raise ONNXRuntimeError("Non-zero status code returned while running ReorderOutput node. "
                               "Name:'ReorderOutput_token_244' Status Message: std::bad_alloc")

    monkeypatch.setattr(extract, "rapidocr_engine", lambda: out_of_memory)
    parsed = parse_pdf(figure_pdf, IngestSettings(ocr="rapidocr", parse_processes=1), None)
    warnings = " ".join(parsed.document.warnings)
    assert "OCR with rapidocr failed (reading it needed more memory than the parser is allowed)" in warnings, warnings
    assert "annual report" in " ".join(n.text for n in parsed.nodes).lower(), "the text layer is kept"
    assert any(n.kind == NodeKind.FIGURE for n in parsed.nodes), "the figure stays a unit without OCR text"


def test_a_bad_alloc_reads_as_memory_not_as_damage():
    reason = library_reason(RuntimeError("running ReorderOutput node 'ReorderOutput_token_244': std::bad_alloc"))
    assert reason == "reading it needed more memory than the parser is allowed"
