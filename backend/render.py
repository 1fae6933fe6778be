"""Page drawing: a PDF page as a PIL image with boxes drawn on it (parse blocks coloured by
kind, a cited unit, a graph node), and the PNG bytes of such an image.

Not here: finding which PDF or boxes to draw (the service looks those up in the workspace) and
any HTML (ui/render.py).
"""

from __future__ import annotations

import io
from pathlib import Path

from backend.errors import WorkspaceError
from backend.types import Block, BlockKind, Highlight

BLOCK_COLORS = {
    BlockKind.TITLE: "#7b2cbf",
    BlockKind.HEADING: "#d00000",
    BlockKind.PARAGRAPH: "#1d4ed8",
    BlockKind.LIST_ITEM: "#0891b2",
    BlockKind.CAPTION: "#ea580c",
    BlockKind.TABLE: "#15803d",
    BlockKind.FIGURE: "#a16207",
    BlockKind.HEADER: "#9ca3af",
    BlockKind.FOOTER: "#9ca3af",
    BlockKind.PAGE_NUMBER: "#9ca3af",
    BlockKind.TOC: "#a78bfa",
    BlockKind.INDEX: "#c084fc",
    BlockKind.CODE: "#475569",
}
UNKNOWN_KIND_COLOR = "#000000"


def render_page(pdf_path: Path, page: int, highlights: list[Highlight] | None = None, dpi: int = 90, doc_id: str = ""):
    """Page `page` (1-based, clamped to the document) of the PDF as a PIL RGB image, each
    highlight drawn as an outlined, lightly filled box with its label above it."""
    import pymupdf
    from PIL import Image, ImageDraw

    if not Path(pdf_path).exists():
        raise WorkspaceError(f"The PDF of document '{doc_id or Path(pdf_path).name}' is missing from the workspace; ingest it again.")
    with pymupdf.open(pdf_path) as pdf:
        page = min(max(1, int(page)), pdf.page_count)
        pix = pdf[page - 1].get_pixmap(dpi=dpi)
        img = Image.frombytes("RGB", (pix.width, pix.height), pix.samples)
    scale = dpi / 72.0
    overlay = Image.new("RGBA", img.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(overlay)
    for hl in highlights or []:
        x0, y0, x1, y1 = (v * scale for v in hl.bbox)
        rgb = tuple(int(hl.color.lstrip("#")[i:i + 2], 16) for i in (0, 2, 4))
        draw.rectangle([x0 - 1, y0 - 1, x1 + 1, y1 + 1], outline=rgb + (255,), width=2, fill=rgb + (40,))
        if hl.label:
            draw.text((x0 + 2, max(0, y0 - 11)), hl.label, fill=rgb + (255,))
    return Image.alpha_composite(img.convert("RGBA"), overlay).convert("RGB")


def block_highlights(blocks: list[Block]) -> list[Highlight]:
    """One highlight per layout block, coloured by kind and labelled with its reading-order number."""
    return [
        Highlight(
            bbox=b.bbox, color=BLOCK_COLORS.get(b.kind, UNKNOWN_KIND_COLOR),
            label=f"{i + 1} {b.kind.value}" + (f" L{b.level}" if b.level else ""),
        )
        for i, b in enumerate(blocks)
    ]


def png_bytes(image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()
