"""Hostile and odd PDFs through ONE `python -m backend ingest` batch, and each file alone.

What is here: generators for every kind of file issue 12 names (broken xref, bit flips, non-PDF,
encrypted, truncated, 2,000 pages, a 20,000-pt page, a Flate bomb, an XObject fan-out bomb, a
page-tree bomb, an image-pixel bomb, a 2,000-level outline, script payloads, hostile names,
lone surrogates in metadata, 10,000 link annotations, 100,000 ruling lines), written with pymupdf
into a scratch folder; optionally the sample PDFs shipped in PDF libraries' own PyPI sdists
(`pip download --no-deps` into the scratch folder); a run of the batch while the whole process
tree's RSS is sampled; a per-file table and a summary against the memory budget.

The tests (tests/ingest/test_hostile*.py) import the generators with small sizes.

    timeout 1800 python bench/hostile.py --out /work/scratch/c/hostile [--pypi] [--alone]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tarfile
import threading
import time
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pymupdf

REPO_ROOT = Path(__file__).resolve().parents[1]
BUDGET_MB = 2048


# ---------------------------------------------------------------- generators (small by default)


def text_pdf(path: Path, pages: int = 1, lines: int = 3, size: tuple[float, float] = (612, 792)) -> Path:
    doc = pymupdf.open()
    for p in range(pages):
        page = doc.new_page(width=size[0], height=size[1])
        page.insert_text((72, 72), f"Harbour lantern survey, part {p + 1}", fontsize=18)
        for i in range(lines):
            page.insert_text((72, 120 + 16 * i), f"Line {i}: the harbour has {400 + i} lanterns along the quay.", fontsize=11)
    path.write_bytes(doc.tobytes())  # through Python: MuPDF cannot save to a name that is not UTF-8
    return path


def broken_xref(path: Path) -> Path:
    """Every xref offset points at the wrong byte (MuPDF has to rebuild the table by scanning)."""
    data = bytearray(text_pdf(path).read_bytes())
    start = data.find(b"\nxref\n") + 6
    end = data.find(b"trailer", start)
    table = bytes(data[start:end]).split(b"\n")
    table[1:] = [b"%010d 00000 n " % (7 + 13 * i) if line.endswith(b"n ") else line for i, line in enumerate(table[1:])]
    data[start:end] = b"\n".join(table)
    path.write_bytes(bytes(data))
    return path


def bit_flips(path: Path, seed: int = 0, flips: int = 40) -> Path:
    data = bytearray(text_pdf(path, pages=2).read_bytes())
    rng = random.Random(seed)
    for _ in range(flips):
        i = rng.randrange(16, len(data))
        data[i] ^= 1 << rng.randrange(8)
    path.write_bytes(bytes(data))
    return path


def not_pdf(path: Path) -> Path:
    path.write_text("These are meeting notes saved with the wrong extension.\n" * 20)
    return path


def encrypted(path: Path) -> Path:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "Confidential lantern budget")
    doc.save(path, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="user-secret", owner_pw="owner-secret")
    return path


def truncated(path: Path) -> Path:
    data = text_pdf(path, pages=4, lines=20).read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def many_pages(path: Path, pages: int = 2000) -> Path:
    return text_pdf(path, pages=pages, lines=2)


def huge_page(path: Path, side_pt: float = 20000) -> Path:
    return text_pdf(path, size=(side_pt, side_pt))


def flate_bomb(path: Path, decoded_bytes: int = 1_500_000_000, chunk: int = 1 << 24) -> Path:
    """One page whose content stream is `decoded_bytes` zeros, Flate-compressed, written chunk by
    chunk (after a full flush every chunk of zeros compresses to the same bytes)."""
    n_chunks = max(1, decoded_bytes // chunk)
    comp = zlib.compressobj(9)
    zeros = bytes(chunk)
    first = comp.compress(zeros) + comp.flush(zlib.Z_FULL_FLUSH)
    block = comp.compress(zeros) + comp.flush(zlib.Z_FULL_FLUSH)
    end = comp.flush()[:-4] + (((n_chunks * chunk) % 65521) << 16 | 1).to_bytes(4, "big")
    length = len(first) + (n_chunks - 1) * len(block) + len(end)
    head = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
    ]
    with path.open("wb") as f:
        offsets = []
        f.write(b"%PDF-1.7\n")
        for i, body in enumerate(head, 1):
            offsets.append(f.tell())
            f.write(b"%d 0 obj\n%s\nendobj\n" % (i, body))
        offsets.append(f.tell())
        f.write(b"4 0 obj\n<< /Length %d /Filter /FlateDecode >>\nstream\n" % length)
        f.write(first)
        for _ in range(n_chunks - 1):
            f.write(block)
        f.write(end + b"\nendstream\nendobj\n")
        xref = f.tell()
        f.write(b"xref\n0 5\n0000000000 65535 f \n" + b"".join(b"%010d 00000 n \n" % o for o in offsets))
        f.write(b"trailer\n<< /Size 5 /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % xref)
    return path


def _page_resources(doc: pymupdf.Document, page: pymupdf.Page) -> tuple[int, str]:
    """(xref, key prefix) to set a key of the page's resources, wherever they live."""
    kind, value = doc.xref_get_key(page.xref, "Resources")
    return (int(value.split()[0]), "") if kind == "xref" else (page.xref, "Resources/")


def fanout_bomb(path: Path, levels: int = 7, fan: int = 10, text: bool = True) -> Path:
    """Forms that draw the next one `fan` times over `levels` levels: fan**levels draws from a few
    KB (10**7 with the defaults). With text=True the page also shows a line of its own."""
    doc = pymupdf.open()
    page = doc.new_page()
    if text:
        page.insert_text((72, 72), "Fan-out page: the heading survives", fontsize=14)
    child = doc.get_new_xref()
    doc.update_object(child, "<< /Type /XObject /Subtype /Form /BBox [0 0 10 10] >>")
    doc.update_stream(child, b"0 0 1 1 re f")
    for _ in range(levels - 1):
        x = doc.get_new_xref()
        doc.update_object(x, f"<< /Type /XObject /Subtype /Form /BBox [0 0 10 10] /Resources << /XObject << /X {child} 0 R >> >> >>")
        doc.update_stream(x, b" ".join([b"/X Do"] * fan))
        child = x
    holder, prefix = _page_resources(doc, page)
    doc.xref_set_key(holder, prefix + "XObject", f"<< /XB {child} 0 R >>")
    contents = page.get_contents()
    draws = b"\nq " + b" ".join([b"/XB Do"] * fan) + b" Q\n"
    if contents:
        doc.update_stream(contents[0], doc.xref_stream(contents[0]) + draws)
    else:
        cx = doc.get_new_xref()
        doc.update_object(cx, "<< >>")
        doc.update_stream(cx, draws)
        doc.xref_set_key(page.xref, "Contents", f"{cx} 0 R")
    doc.save(path, deflate=True)
    return path


def page_tree_bomb(path: Path, levels: int = 8, fan: int = 10) -> Path:
    """A page tree whose Pages nodes list the same child `fan` times: fan**levels pages claimed."""
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    n = 2 + levels
    objects.append(b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join([b"3 0 R"] * fan), fan**levels))
    for lv in range(1, levels):
        kid = 3 + lv
        objects.append(b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join([b"%d 0 R" % kid] * fan), fan ** (levels - lv)))
    objects.append(b"<< /Type /Page /MediaBox [0 0 612 792] >>")
    assert len(objects) == n
    path.write_bytes(raw_pdf(objects))
    return path


def raw_pdf(objects: list[bytes]) -> bytes:
    """A PDF written by hand from its object bodies (object i + 1 = objects[i])."""
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for i, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (i, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def image_bomb(path: Path, side_px: int = 60000) -> Path:
    """A page with text and one gray image of side_px x side_px pixels (zeros, Flate: a few MB)."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "A page with a very large picture", fontsize=14)
    img = doc.get_new_xref()
    comp = zlib.compressobj(9)
    row_block = bytes(side_px * 64)
    data = b"".join(comp.compress(row_block) for _ in range(side_px // 64)) + comp.flush()
    doc.update_object(img, f"<< /Type /XObject /Subtype /Image /Width {side_px} /Height {side_px} /ColorSpace /DeviceGray /BitsPerComponent 8 >>")
    doc.update_stream(img, data, compress=0)
    doc.xref_set_key(img, "Filter", "/FlateDecode")
    holder, prefix = _page_resources(doc, page)
    doc.xref_set_key(holder, prefix + "XObject", f"<< /Im0 {img} 0 R >>")
    cx = page.get_contents()[0]
    doc.update_stream(cx, doc.xref_stream(cx) + b"\nq 400 0 0 400 100 200 cm /Im0 Do Q\n")
    doc.save(path)
    return path


def deep_outline(path: Path, depth: int = 2000) -> Path:
    doc = pymupdf.open()
    for i in range(3):
        doc.new_page().insert_text((72, 72), f"Chapter {i + 1} of the nested report", fontsize=14)
    doc.set_toc([[i + 1, f"Level {i + 1}", 1 + i % 3] for i in range(depth)])
    doc.save(path)
    return path


def script_payload(path: Path) -> Path:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "Before <script>alert(1)</script> after.", fontsize=11)
    page.insert_text((72, 100), "An image <img src=x onerror=alert(2)> here.", fontsize=11)
    js = doc.get_new_xref()
    doc.update_object(js, "<< /S /JavaScript /JS (app.alert\\('opened'\\);) >>")
    doc.xref_set_key(doc.pdf_catalog(), "OpenAction", f"{js} 0 R")
    doc.save(path)
    return path


def surrogate_metadata(path: Path) -> Path:
    """Title and author are UTF-16 strings with lone surrogates (MuPDF hands them on as such)."""
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "Metadata with broken UTF-16 strings", fontsize=14)
    info = doc.get_new_xref()
    doc.update_object(info, "<< /Title <FEFFDC000041DC01> /Author <FEFFDC00> >>")
    doc.xref_set_key(-1, "Info", f"{info} 0 R")
    doc.save(path)
    return path


def many_annotations(path: Path, n: int = 10000) -> Path:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "A page with very many links", fontsize=14)
    page.insert_text((72, 100), "Its text must survive the links being skipped.", fontsize=11)
    for i in range(n):
        x, y = 20 + (i % 50) * 11, 150 + (i // 50) % 50 * 11
        page.insert_link({"kind": pymupdf.LINK_URI, "from": pymupdf.Rect(x, y, x + 10, y + 10), "uri": f"https://example.org/{i}"})
    doc.save(path)
    return path


def ruling_lines(path: Path, n: int = 100000) -> Path:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 60), "A page ruled very many times", fontsize=14)
    page.insert_text((72, 80), "Its text must survive the drawings being skipped.", fontsize=11)
    ops = [b"0.1 w"]
    for i in range(n):
        y = 100 + (i % 600)
        ops.append(b"50 %d m 550 %d l S" % (y, y))
    cx = page.get_contents()[0]
    doc.update_stream(cx, doc.xref_stream(cx) + b"\n" + b"\n".join(ops))
    doc.save(path, deflate=True)
    return path


HOSTILE_NAMES = {
    "non_utf8": b"caf\xe9 r\xe9sum\xe9.pdf",
    "rtl": "invoice\u202efdp.exe.pdf".encode(),
    "newline": b"line\nbreak.pdf",
    "tab": b"tab\there.pdf",
}


def hostile_name(folder: Path, key: str) -> Path:
    """A small valid PDF under a hostile name (bytes, so non-UTF-8 names are real on disk)."""
    target = os.fsdecode(os.path.join(os.fsencode(folder), HOSTILE_NAMES[key]))
    return text_pdf(Path(target))
