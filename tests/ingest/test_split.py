"""The pages of one file read by two processes (split.py): the same ParsedDocument as one process,
whatever a helper does (dies, meets an OCR failure), and one process for a file with a page too
big for half the memory share."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pymupdf
import pytest

from backend.config import IngestSettings
from backend.ingest import extract, parser
from backend.ingest.parser import _open_pdf, page_processes, parse_pdf
from backend.ingest.split import split_map
from backend.types import NodeKind
from tests.fakes import ruled_table

needs_tesseract = pytest.mark.skipif(shutil.which("tesseract") is None, reason="tesseract is not installed")


def _picture_of(lines: list[str], width: float = 400, height: float = 200) -> pymupdf.Pixmap:
    art = pymupdf.open()
    canvas = art.new_page(width=width, height=height)
    for i, line in enumerate(lines):
        canvas.insert_text((30, 60 + 45 * i), line, fontsize=24)
    return canvas.get_pixmap(dpi=150)


def _mixed_pdf(path: Path) -> Path:
    """Seven pages: prose with headings, ruled tables, raster figures whose words exist only as
    pixels, and one scanned page with no text layer."""
    doc = pymupdf.open()
    for n in range(1, 7):
        page = doc.new_page()
        page.insert_text((72, 60), f"{n} Harbour section {n}", fontsize=16)
        page.insert_text((72, 90), f"The harbour authority reports on quay {n}; see Table {n} and Figure {n}.", fontsize=11)
        if n % 2:
            ruled_table(page, 120, [["Quay", "Ships", "Tonnes"], [f"North {n}", str(10 * n), str(700 + n)], ["South", "4", "310"]])
            page.insert_text((72, 200), f"Table {n}: traffic at quay {n}", fontsize=10)
        page.insert_image(pymupdf.Rect(72, 260, 472, 460), pixmap=_picture_of([f"Copper kettle {n}", "Gravel lanterns"]))
        page.insert_text((72, 480), f"Figure {n}: the lantern count at quay {n}", fontsize=10)
    scan = doc.new_page(width=420, height=260)
    scan.insert_image(scan.rect, pixmap=_picture_of(["Seventeen copper kettles", "Quarterly report"], 420, 260))
    doc.save(path)
    return path


def _comparable(parsed) -> str:
    parsed.stage_seconds = {}
    return parsed.model_dump_json()


@needs_tesseract
def test_two_processes_parse_exactly_what_one_does(tmp_path):
    pdf = _mixed_pdf(tmp_path / "mixed.pdf")
    told: list[int] = []
    one = parse_pdf(pdf, IngestSettings(ocr="tesseract", parse_processes=1), None)
    two = parse_pdf(pdf, IngestSettings(ocr="tesseract", parse_processes=2), None, tell_processes=told.append)
    assert told == [2], "the file was read by two processes"
    figures = " ".join(n.text for n in two.nodes if n.kind == NodeKind.FIGURE).lower()
    assert "kettle" in figures and "lanterns" in figures, "figure OCR ran (and in both processes)"
    assert "seventeen" in " ".join(n.text for n in two.nodes).lower(), "the scanned page was read with OCR"
    assert any(n.kind == NodeKind.TABLE for n in two.nodes), "find_tables ran"
    assert _comparable(two) == _comparable(one)


def _numbered(tmp_path: Path, pages: int) -> tuple[pymupdf.Document, Path]:
    path = tmp_path / "numbered.pdf"
    doc = pymupdf.open()
    for i in range(pages):
        doc.new_page().insert_text((72, 72), f"page body {i}")
    doc.save(path)
    return pymupdf.open(path), path


def test_results_come_back_in_order_and_from_the_helper(tmp_path):
    pdf, path = _numbered(tmp_path, 9)
    parent = os.getpid()
    seen: list[tuple[int, int]] = []
    out = split_map(pdf, path, list(range(9)), lambda doc, i: (doc[i].get_text().strip(), os.getpid()), processes=2,
                    opener=_open_pdf, report=lambda done, total: seen.append((done, total)))
    assert [text for text, _ in out] == [f"page body {i}" for i in range(9)]
    assert {pid for _, pid in out[1::2]} != {parent}, "every other item was read by a helper"
    assert seen[-1] == (9, 9) and [d for d, _ in seen] == sorted(d for d, _ in seen), "progress only moves forward"


def test_what_a_dead_helper_did_not_send_the_worker_reads(tmp_path):
    pdf, path = _numbered(tmp_path, 8)
    parent = os.getpid()

    def work(doc, i):
        if os.getpid() != parent and i >= 5:
            os._exit(3)  # the helper dies half-way (a crash, or its inherited memory limit)
        return doc[i].get_text().strip()

    assert split_map(pdf, path, list(range(8)), work, processes=2, opener=_open_pdf) == [f"page body {i}" for i in range(8)]


def test_an_ocr_failure_in_a_helper_turns_ocr_off_in_the_worker(tmp_path, monkeypatch):
    monkeypatch.setattr(extract, "_ocr_failure", [])
    pdf, path = _numbered(tmp_path, 4)
    parent = os.getpid()

    def work(doc, i):
        if os.getpid() != parent:
            extract._ocr_failure[:] = ["OCR with tesseract failed (std::bad_alloc)"]
        return i

    assert split_map(pdf, path, list(range(4)), work, processes=2, opener=_open_pdf) == [0, 1, 2, 3]
    assert extract.ocr_unusable() == "OCR with tesseract failed (std::bad_alloc)"


def test_a_page_too_big_for_half_the_share_is_read_in_one_process(tmp_path, monkeypatch):
    monkeypatch.setattr(parser, "resident_mb", lambda: 0)
    monkeypatch.setattr(parser, "PAGE_WORK_MB", 0)
    path = tmp_path / "photo.pdf"
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "a page of text")
    photo = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 3000, 3000), False)  # 9 MP
    doc.new_page().insert_image(pymupdf.Rect(0, 0, 500, 500), pixmap=photo)
    doc.save(path)
    settings = IngestSettings(parse_processes=2)
    with pymupdf.open(path) as pdf:
        # page_bounds allows share / 16 pixels: 9 MP fits a 256 MiB share (16 MP) but not half of it.
        assert page_processes(pdf, settings, 256) == 1
        assert page_processes(pdf, settings, 1024) == 2
        assert page_processes(pdf, settings.model_copy(update={"parse_processes": 1}), 1024) == 1


def test_a_worker_without_room_for_a_helper_reads_alone(tmp_path, monkeypatch):
    monkeypatch.setattr(parser, "resident_mb", lambda: 100)
    pdf, _ = _numbered(tmp_path, 4)
    settings = IngestSettings(parse_processes=2)
    room = 100 + 2 * parser.PAGE_WORK_MB  # what the worker holds now and what each process may add
    assert page_processes(pdf, settings, room - 1) == 1
    assert page_processes(pdf, settings, room) == 2
    assert page_processes(pdf, settings.model_copy(update={"parse_processes": 3}), room) == 2, "as many as fit"


def test_a_split_file_counts_each_page_once_and_reads_it_as_one_process_would(tmp_path, monkeypatch):
    """page_processes counts every page before it splits a file; the processes then read each page
    without counting it again, with the plan one process would give it (every page within the
    bounds of half the share is within the whole share's)."""
    monkeypatch.setattr(parser, "resident_mb", lambda: 0)
    pdf, path = _numbered(tmp_path, 6)
    log = tmp_path / "counted.txt"
    counted = extract.PageCoster.plan

    def plan(self, page):
        with log.open("a") as f:  # helpers are forked: a file sees what every process counted
            f.write(f"{page.number}\n")
        return counted(self, page)

    monkeypatch.setattr(extract.PageCoster, "plan", plan)
    settings = IngestSettings(parse_processes=2, find_tables=False)
    told: list[int] = []
    two = parse_pdf(path, settings, None, memory_mb=1024, tell_processes=told.append)
    assert told == [2]
    assert sorted(int(n) for n in log.read_text().split()) == list(range(6)), "each page counted once"
    assert all(counted(extract.PageCoster(pdf, parser.page_bounds(1024)), pdf[i]) == extract.PagePlan() for i in range(6))
    log.unlink()
    one = parse_pdf(path, settings.model_copy(update={"parse_processes": 1}), None, memory_mb=1024)
    assert sorted(int(n) for n in log.read_text().split()) == list(range(6)), "one process counts each page once too"
    assert _comparable(two) == _comparable(one)
