"""Bad input fails alone: each bad file goes through Service.ingest in a batch with one good PDF
(the bad one first). The good one must be ingested, the bad one must fail with a reason that
says why, and the documents already in the workspace must still be there.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pymupdf
import pytest

from backend.graph.store import WorkspaceStore
from backend.service import Service
from tests.fixtures.hostile_pdfs import flate_bomb, raw_pdf, slow_pages

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLE_DIR = REPO_ROOT / "sample_corpus"


# ---------------------------------------------------------------- file makers


def _text_pdf(path: Path, lines: list[str], pages: int = 1) -> Path:
    doc = pymupdf.open()
    for p in range(pages):
        page = doc.new_page()
        page.insert_text((72, 72), f"Harbour lantern survey, part {p + 1}", fontsize=18)
        for i, line in enumerate(lines):
            page.insert_text((72, 120 + 16 * i), line, fontsize=11)
    doc.save(path)
    return path


def _good_pdf(tmp_path: Path) -> Path:
    return _text_pdf(
        tmp_path / "good.pdf",
        ["The harbour has 412 lanterns along the quay.", "Each lantern was repainted in spring."],
    )


def _not_a_pdf(tmp_path: Path) -> Path:
    path = tmp_path / "notes.pdf"
    path.write_text("These are meeting notes saved with the wrong extension.\n" * 20)
    return path


def _empty(tmp_path: Path) -> Path:
    path = tmp_path / "empty.pdf"
    path.write_bytes(b"")
    return path


def _encrypted(tmp_path: Path) -> Path:
    path = tmp_path / "locked.pdf"
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "Confidential lantern budget")
    doc.save(path, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="user-secret", owner_pw="owner-secret")
    assert pymupdf.open(path).needs_pass, "fixture check: the file needs a password"
    return path


def _zero_pages(tmp_path: Path) -> Path:
    path = tmp_path / "zero_pages.pdf"
    path.write_bytes(raw_pdf([b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [] /Count 0 >>"]))
    return path


def _truncated(tmp_path: Path) -> Path:
    path = tmp_path / "truncated.pdf"
    data = (SAMPLE_DIR / "cool_streets_report.pdf").read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


BAD_FILES = {
    "not a pdf": (_not_a_pdf, ("not a pdf",)),
    "empty": (_empty, ("empty",)),
    "encrypted": (_encrypted, ("encrypted", "password")),
    "zero pages": (_zero_pages, ("no pages",)),
    "truncated": (_truncated, ("truncated",)),
}


# ---------------------------------------------------------------- helpers


def _service(service: Service, **ingest) -> Service:
    """A Service with other ingest settings that shares the session's loaded encoders."""
    settings = service.settings.model_copy(update={"ingest": service.settings.ingest.model_copy(update=ingest)})
    return Service(settings, encoder=service.encoders.text, sub_encoder=service.encoders.sub)


def _snapshot(workspace: Path) -> dict[str, tuple[str, int]]:
    """doc id -> (file name, node count) from the database itself."""
    db = sqlite3.connect(workspace / "strata.sqlite")
    try:
        docs = db.execute("SELECT id, file_name FROM documents").fetchall()
        return {d: (name, db.execute("SELECT COUNT(*) FROM nodes WHERE doc=?", (d,)).fetchone()[0]) for d, name in docs}
    finally:
        db.close()


def _check_batch(svc: Service, workspace: Path, bad: Path, good: Path, words: tuple[str, ...]) -> str:
    before = _snapshot(workspace)
    assert len(before) == 4
    report = svc.ingest(workspace, [bad, good])
    by_name = {f.file_name: f for f in report.files}
    assert [f.file_name for f in report.files] == [bad.name, good.name]
    failed, ok = by_name[bad.name], by_name[good.name]
    assert ok.status == "ingested", ok
    assert failed.status == "failed" and failed.doc_id is None
    reason = failed.reason or ""
    for w in words:
        assert w.lower() in reason.lower(), f"reason {reason!r} does not mention {w!r}"
    after = _snapshot(workspace)
    assert {d: v for d, v in after.items() if d in before} == before, "earlier documents changed"
    assert set(after) - set(before) == {ok.doc_id}
    assert after[ok.doc_id][1] > 0
    return reason


# ---------------------------------------------------------------- tests


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_file_fails_alone(service, workspace_copy, tmp_path, case):
    make, words = BAD_FILES[case]
    _check_batch(service, workspace_copy, make(tmp_path), _good_pdf(tmp_path), words)


def test_over_the_page_limit(service, workspace_copy, tmp_path):
    long_pdf = _text_pdf(tmp_path / "long.pdf", ["A page of the long survey."], pages=5)
    reason = _check_batch(_service(service, max_pages=3), workspace_copy, long_pdf, _good_pdf(tmp_path), ("5 pages", "3-page limit"))
    assert "MAX_PAGES" in reason


def test_over_the_size_limit(service, workspace_copy, tmp_path):
    big = _text_pdf(tmp_path / "big.pdf", [f"Line {i} of the lantern inventory, with some filler words." for i in range(40)], pages=40)
    good = _good_pdf(tmp_path)
    assert big.stat().st_size > 60 * 1024 > good.stat().st_size, "fixture check: sizes"
    reason = _check_batch(_service(service, max_file_mb=0.05), workspace_copy, big, good, ("MiB", "limit"))
    assert "MAX_FILE_MB" in reason


@pytest.mark.slow
def test_parse_timeout(service, workspace_copy, tmp_path):
    # 200 pages that share one stream of 50,000 spans: each page is inside every per-page bound and
    # takes seconds, the whole file minutes, so only the time limit stops it. (A Flate bomb here
    # raced the stream bound: on a fast machine its size was read within the limit, and the file
    # failed for its size instead.)
    slow = slow_pages(tmp_path / "slow.pdf", pages=200, text_ops=50_000)
    assert slow.stat().st_size < 2**20, "fixture check: the slow file is small"
    svc = _service(service, parse_timeout_s=6.0)
    reason = _check_batch(svc, workspace_copy, slow, _good_pdf(tmp_path), ("longer than 6 s", "PARSE_TIMEOUT_S"))
    assert "stopped" in reason


@pytest.mark.slow
def test_decompression_bomb_is_bounded_by_memory(service, workspace_copy, tmp_path):
    bomb = flate_bomb(tmp_path / "bomb.pdf", 1_500_000_000)
    assert bomb.stat().st_size < 3 * 2**20, "fixture check: the bomb is small on disk"
    # A budget large enough that the worker share is the 600 MiB cap whatever this test process holds.
    svc = _service(service, parse_memory_mb=600, memory_budget_mb=16384)
    reason = _check_batch(svc, workspace_copy, bomb, _good_pdf(tmp_path), ("memory",))
    assert "600 MiB" in reason and "PARSE_MEMORY_MB" in reason


def test_markup_in_pdf_text_is_stored_verbatim(service, workspace_copy, tmp_path):
    script = "<script>alert(1)</script>"
    img = "<img src=x onerror=alert(2)>"
    hostile = _text_pdf(tmp_path / "markup.pdf", [f"Before {script} after.", f"An image {img} here."])
    report = service.ingest(workspace_copy, [hostile, _good_pdf(tmp_path)])
    assert [f.status for f in report.files] == ["ingested", "ingested"], report
    store = WorkspaceStore(workspace_copy, create=False)
    try:
        nodes, _ = store.all_nodes()
        doc_id = report.files[0].doc_id
        texts = [n.text for n in nodes if n.doc == doc_id]
        blocks = [b.text for b in store.blocks(doc_id)]
    finally:
        store.close()
    assert any(script in t for t in texts) and any(img in t for t in texts), texts
    assert not any("&lt;" in t for t in texts), "the backend must not escape; the UI does"
    assert any(script in t for t in blocks)
    assert len(_snapshot(workspace_copy)) == 6
