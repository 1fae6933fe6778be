"""One PDF in, one ParsedDocument out: validate -> extract -> layout -> hierarchy -> components
-> links -> cards. Runs inside the parse worker process (worker.py), so a hostile file can only
take that process down. It does not encode or store anything (pipeline.py does).
"""

from __future__ import annotations

import hashlib
import logging
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import pymupdf

from backend.config import IngestSettings
from backend.errors import BadPdfError
from backend.ingest.components import build_components
from backend.ingest.extract import available_ocr_engine, extract_page
from backend.ingest.hierarchy import assign_sections, build_hierarchy
from backend.ingest.layout import layout_document
from backend.ingest.links import annotation_edges, xref_edges
from backend.types import Document, Layer, NodeKind, ParsedDocument

log = logging.getLogger(__name__)

# Bump when a change to ingest/ changes what a PDF parses into: a re-ingest then re-parses
# files whose bytes are unchanged instead of keeping their old nodes.
PARSER_VERSION = "4"
CARD_MAX_CHARS = 1500
ZLIB_MAX_RATIO = 1032  # deflate cannot inflate more than this
ProgressFn = Callable[[str, int, int], None]


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def doc_id_for(sha256: str) -> str:
    return f"d{sha256[:15]}"


def open_validated(path: Path, settings: IngestSettings) -> pymupdf.Document:
    """Open a PDF or raise BadPdfError with a message that says why it cannot be used."""
    name = path.name
    if not path.is_file():
        raise BadPdfError(name, "file not found")
    size = path.stat().st_size
    if size == 0:
        raise BadPdfError(name, "the file is empty (0 bytes)")
    if size > settings.max_file_mb * 1024 * 1024:
        raise BadPdfError(
            name, f"the file is {size / 2**20:.1f} MiB, over the {settings.max_file_mb:g} MiB limit (STRATA_INGEST__MAX_FILE_MB)"
        )
    with path.open("rb") as f:
        head = f.read(1024)
        f.seek(max(0, size - 2048))
        tail = f.read()
    if b"%PDF-" not in head:
        raise BadPdfError(name, "not a PDF: the file does not start with a %PDF- header")
    try:
        doc = pymupdf.open(path, filetype="pdf")
    except (pymupdf.FileDataError, RuntimeError, ValueError) as exc:
        raise BadPdfError(name, f"damaged PDF that cannot be opened ({exc})") from exc
    if doc.is_repaired and b"%%EOF" not in tail:
        # MuPDF "repairs" a cut-off file into one whose later pages are silently blank.
        doc.close()
        raise BadPdfError(name, "the PDF is truncated (it has no end-of-file marker); upload the complete file again")
    if doc.needs_pass and not doc.authenticate(""):
        doc.close()
        raise BadPdfError(name, "the PDF is encrypted with a password; remove the password and upload it again")
    if doc.page_count == 0:
        doc.close()
        raise BadPdfError(name, "the PDF has no pages (it may be truncated or damaged)")
    if doc.page_count > settings.max_pages:
        n = doc.page_count
        doc.close()
        raise BadPdfError(name, f"the PDF has {n} pages, over the {settings.max_pages}-page limit (STRATA_INGEST__MAX_PAGES)")
    return doc


def _check_content_size(pdf: pymupdf.Document, page: pymupdf.Page, name: str, memory_mb: int) -> None:
    """Fail a page whose Flate content stream inflates to more than half the worker's memory
    limit (a decompression bomb). MuPDF interprets content as a stream, several times per page
    (text, drawings, tables), so such a page would not hit the memory limit: it would burn the
    whole time limit and then ingest as an empty page. Counting is bounded: it stops at the limit."""
    limit = memory_mb * 2**20 // 2
    for xref in page.get_contents():
        if "FlateDecode" not in pdf.xref_get_key(xref, "Filter")[1]:
            continue
        raw = pdf.xref_stream_raw(xref)
        if len(raw) * ZLIB_MAX_RATIO <= limit:
            continue  # cannot inflate past the limit
        inflater, data, total = zlib.decompressobj(), raw, 0
        try:
            while data and total <= limit:
                total += len(inflater.decompress(data, 1 << 24))
                data = inflater.unconsumed_tail
        except zlib.error:
            continue  # damaged stream: MuPDF decides what is left of it
        if total > limit:
            raise BadPdfError(
                name,
                f"page {page.number + 1}'s content inflates to more than {limit // 2**20} MiB, past what the parser's "
                f"{memory_mb} MiB memory limit allows (STRATA_INGEST__PARSE_MEMORY_MB); the file looks like a decompression bomb",
            )


def _doc_card(title: str, sections, toc_entries: list[str]) -> str:
    parts = [title]
    for s in sections[1:]:
        if s.level <= 2:
            parts.append(" > ".join(s.path[1:]))
    parts.extend(toc_entries)
    card, seen = [], set()
    for p in parts:
        key = p.lower()
        if p and key not in seen:
            seen.add(key)
            card.append(p)
    return "\n".join(card)[:CARD_MAX_CHARS]


def parse_pdf(
    path: Path,
    settings: IngestSettings,
    crops_root: Path | None,
    progress: ProgressFn | None = None,
    display_name: str | None = None,
) -> ParsedDocument:
    """Parse one PDF. Crops go to crops_root/<doc id>/ when crops_root is given."""
    name = display_name or path.name
    report = progress or (lambda stage, done, total: None)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    sha = file_sha256(path)
    doc_id = doc_id_for(sha)
    pdf = open_validated(path, settings)
    timings["open"] = time.perf_counter() - t0
    try:
        ocr_engine = available_ocr_engine(settings.ocr)
        warnings: list[str] = []
        raw_pages = []
        t = time.perf_counter()
        n_pages = pdf.page_count
        for i in range(n_pages):
            try:
                page = pdf.load_page(i)
                _check_content_size(pdf, page, name, settings.parse_memory_mb)
                raw, page_warnings = extract_page(
                    page, find_tables=settings.find_tables, max_tables=settings.max_tables_per_page,
                    table_layout_model=settings.table_layout_model,
                    ocr_engine=ocr_engine, ocr_language=settings.ocr_language, ocr_dpi=settings.ocr_dpi,
                )
            except (RuntimeError, ValueError) as exc:
                warnings.append(f"page {i + 1} could not be read and was skipped: {exc}")
                continue
            warnings.extend(page_warnings)
            raw_pages.append(raw)
            report("extract", i + 1, n_pages)
        if not raw_pages:
            raise BadPdfError(name, "no page of the PDF could be read (damaged or truncated file)")
        timings["extract"] = time.perf_counter() - t
        if not any(p.blocks for p in raw_pages):
            warnings.append("no text found on any page" + ("" if ocr_engine else " and no OCR engine is installed (install tesseract-ocr)"))

        t = time.perf_counter()
        blocks, body_size = layout_document(raw_pages)
        timings["layout"] = time.perf_counter() - t
        report("layout", n_pages, n_pages)

        t = time.perf_counter()
        toc = pdf.get_toc(simple=True)
        blocks, hier = build_hierarchy(blocks, toc, pdf.metadata.get("title", "") if pdf.metadata else "", path.stem, body_size)
        sections, owner, heading_section = assign_sections(blocks, hier, doc_id)
        timings["hierarchy"] = time.perf_counter() - t
        report("hierarchy", n_pages, n_pages)

        t = time.perf_counter()
        crops_dir = None
        if crops_root is not None:
            crops_dir = crops_root / doc_id
            crops_dir.mkdir(parents=True, exist_ok=True)
        built = build_components(
            doc_id=doc_id, blocks=blocks, hier=hier, sections=sections, owner=owner, heading_section=heading_section,
            pdf=pdf, crops_dir=crops_dir, crop_rel_prefix=f"crops/{doc_id}", crop_dpi=settings.crop_dpi,
            ocr_engine=ocr_engine if settings.ocr_figures else None, ocr_language=settings.ocr_language,
        )
        timings["components"] = time.perf_counter() - t
        report("components", n_pages, n_pages)

        t = time.perf_counter()
        edges = list(built.edges)
        edges += xref_edges(built.nodes, built.labels, sections)
        link_edges, pending = annotation_edges(built.nodes, raw_pages)
        edges += link_edges
        timings["links"] = time.perf_counter() - t
        report("links", n_pages, n_pages)

        body = [n.text for n in built.nodes if n.kind == NodeKind.PARAGRAPH and n.role == "paragraph" and n.page <= 2]
        summary = " ".join(body)[:600]
        card = _doc_card(hier.title, sections, hier.toc_entries)
        for n in built.nodes:
            if n.kind == NodeKind.DOCUMENT:
                n.text = card
        document = Document(
            id=doc_id, file_name=name, title=hier.title, pages=n_pages, sha256=sha, bytes=path.stat().st_size,
            card=card, summary=summary, hierarchy_source=hier.source, parser_version=PARSER_VERSION,
            page_sizes=[(round(pdf[i].rect.width, 2), round(pdf[i].rect.height, 2)) for i in range(n_pages)],
            warnings=warnings,
        )
        if ocr_engine and any(p.ocr_engine for p in raw_pages):
            document.warnings.append(f"{sum(1 for p in raw_pages if p.ocr_engine)} page(s) read with OCR ({ocr_engine})")
        if not any(n.layer == Layer.COMPONENT for n in built.nodes):
            document.warnings.append("no paragraphs, tables or figures were found")
        return ParsedDocument(
            document=document, sections=sections, nodes=built.nodes, edges=edges, blocks=built.blocks,
            doc_links=pending, stage_seconds=timings,
        )
    finally:
        pdf.close()
