"""Fixtures shared by the ingest tests."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest


@pytest.fixture
def figure_pdf(tmp_path: Path) -> Path:
    """One page: a paragraph in the text layer and a raster figure whose words ("Copper kettle
    output", "Gravel harbour lanterns") exist only as pixels."""
    art = pymupdf.open()
    canvas = art.new_page(width=400, height=200)
    canvas.insert_text((30, 90), "Copper kettle output", fontsize=26)
    canvas.insert_text((30, 140), "Gravel harbour lanterns", fontsize=26)
    pix = canvas.get_pixmap(dpi=150)
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "Annual report of the harbour authority. The figure below shows the output.", fontsize=11)
    page.insert_image(pymupdf.Rect(72, 120, 472, 320), pixmap=pix)
    path = tmp_path / "fig.pdf"
    doc.save(path)
    return path
