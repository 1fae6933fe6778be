"""One PDF in, one ParsedDocument out: validate -> extract -> layout -> hierarchy -> components
-> links -> cards. Runs inside the parse worker process (worker.py), so a hostile file can only
take that process down. It does not encode or store anything (pipeline.py does).
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pymupdf

from backend.config import IngestSettings
from backend.errors import BadPdfError, clean_text, library_reason, log_name, without_paths
from backend.errors import display_name as kept_name
from backend.ingest.components import build_components
from backend.ingest.extract import PageBounds, PageCoster, PagePlan, RawPage, available_ocr_engine, extract_page, ocr_region, ocr_unusable
from backend.ingest.hierarchy import assign_sections, build_hierarchy
from backend.ingest.layout import LayoutBlock, layout_document
from backend.ingest.links import annotation_edges, xref_edges
from backend.ingest.split import resident_mb, split_map
from backend.types import BlockKind, Document, Layer, NodeKind, ParsedDocument

log = logging.getLogger(__name__)

# Bump when a change to ingest/ changes what a PDF parses into: a re-ingest then re-parses
# files whose bytes are unchanged instead of keeping their old nodes.
PARSER_VERSION = "6"
CARD_MAX_CHARS = 1500
MAX_OUTLINE_DEPTH = 64  # deeper outline levels are cut (a valid file may nest 2,000 deep)
MAX_OUTLINE_ENTRIES = 100_000
MAX_PAGE_WARNINGS = 20  # degraded pages past this are counted, not listed
# What reading pages may add to each process. Measured peaks over a fresh worker's 104 MiB, tree
# counted as the parent's watch counts it: a 23-slide scanned deck (page OCR at 200 dpi) 202 MiB
# in one process, 151 MiB in two together; a 40-page manual with OCR'd figures 98 and 119 MiB.
PAGE_WORK_MB = 160
ProgressFn = Callable[[str, int, int], None]


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def doc_id_for(sha256: str) -> str:
    return f"d{sha256[:15]}"


def _open_pdf(path: Path) -> pymupdf.Document:
    """pymupdf.open, also for a name that is not valid UTF-8 (MuPDF takes the name as UTF-8 and
    cannot find such a file): that one is opened through a link with a plain name, removed once
    MuPDF holds the file open."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        with tempfile.TemporaryDirectory(prefix="strata-open-") as tmp:
            link = Path(tmp) / "input.pdf"
            os.symlink(os.fsencode(path.resolve()), os.fsencode(link))
            return pymupdf.open(link, filetype="pdf")
    return pymupdf.open(path, filetype="pdf")


def open_validated(path: Path, settings: IngestSettings, name: str | None = None) -> pymupdf.Document:
    """Open a PDF or raise BadPdfError with a message that says why it cannot be used. `name` is
    the file as the user named it; messages never carry the server's path."""
    name = kept_name(name or path.name)
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
        doc = _open_pdf(path)
    except (RuntimeError, ValueError, OSError, pymupdf.mupdf.FzErrorBase) as exc:
        log.warning("MuPDF could not open %s: %s", log_name(name), without_paths(str(exc)))
        raise BadPdfError(name, f"damaged PDF that cannot be opened: {library_reason(exc)}") from None
    try:
        _check_opened(doc, name, tail, settings)
    except (RuntimeError, ValueError, pymupdf.mupdf.FzErrorBase) as exc:  # e.g. a page tree that claims 10^8 pages
        doc.close()
        log.warning("MuPDF could not count the pages of %s: %s", log_name(name), without_paths(str(exc)))
        raise BadPdfError(name, f"damaged PDF that cannot be opened: {library_reason(exc)}") from None
    return doc


def _check_opened(doc: pymupdf.Document, name: str, tail: bytes, settings: IngestSettings) -> None:
    """Refuse an opened file that is cut off, locked or has no (or too many) pages; closes it then."""
    reason = None
    if doc.is_repaired and b"%%EOF" not in tail:
        # MuPDF "repairs" a cut-off file into one whose later pages are silently blank.
        reason = "the PDF is truncated (it has no end-of-file marker); upload the complete file again"
    elif doc.needs_pass and not doc.authenticate(""):
        reason = "the PDF is encrypted with a password; remove the password and upload it again"
    elif doc.page_count == 0:
        reason = "the PDF has no pages (it may be truncated or damaged)"
    elif doc.page_count > settings.max_pages:
        reason = f"the PDF has {doc.page_count} pages, over the {settings.max_pages}-page limit (STRATA_INGEST__MAX_PAGES)"
    if reason is not None:
        doc.close()
        raise BadPdfError(name, reason)


def outline(pdf: pymupdf.Document, max_depth: int = MAX_OUTLINE_DEPTH) -> tuple[list[list], bool]:
    """The outline as get_toc(simple=True) gives it ([level, title, page]), walked without
    recursion (get_toc recurses once per level: a 2,000-level outline raises RecursionError).
    Entries deeper than max_depth are left out; the flag says whether any were."""
    entries: list[list] = []
    cut = False
    stack = [(pdf.outline, 1)]
    while stack and len(entries) < MAX_OUTLINE_ENTRIES:
        item, level = stack.pop()
        if not item or not item.this.m_internal:
            continue
        stack.append((item.next, level))
        if level > max_depth:
            cut = True
            continue
        page = -1
        if not item.is_external and item.uri:
            page = pdf.resolve_link(item.uri)[0] + 1 if item.page == -1 else item.page + 1
        entries.append([level, clean_text(item.title or " "), page])
        stack.append((item.down, level + 1))
    return entries, cut or bool(stack)


def page_bounds(memory_mb: int) -> PageBounds:
    """Per-page bounds that fit the worker's memory share: a decoded image needs up to 4 bytes a
    pixel and MuPDF may hold a few at once; one content stream may take half the share."""
    share = memory_mb * 2**20
    return PageBounds(max_image_pixels=share // 16, max_stream_bytes=share // 2)


@dataclass(slots=True)
class _PageRead:
    """One page's extraction, as it travels back from whichever process read it."""

    raw: RawPage | None  # None: MuPDF could not read the page
    warnings: list[str]
    degraded: bool = False
    reasons: tuple[str, ...] = ()


def _page_reader(name: str, settings: IngestSettings, bounds: PageBounds, ocr_engine: str | None,
                 within_bounds: bool = False) -> Callable[[pymupdf.Document, int], _PageRead]:
    """The per-page work of extraction, for split_map: each process plans its pages with its own
    PageCoster over its own handle (the same counts, so the same plans as one process).
    within_bounds: page_processes already counted every page within the bounds of a part of the
    share, so within `bounds` (the whole share's, larger): each page is read whole, the plan a
    PageCoster would give it, without counting its content streams a second time."""
    costers: dict[int, PageCoster] = {}

    def read(pdf: pymupdf.Document, i: int) -> _PageRead:
        coster = costers.setdefault(id(pdf), PageCoster(pdf, bounds))
        try:
            page = pdf.load_page(i)
            plan = PagePlan() if within_bounds else coster.plan(page)
            raw, page_warnings = extract_page(
                page, find_tables=settings.find_tables, max_tables=settings.max_tables_per_page,
                table_layout_model=settings.table_layout_model,
                ocr_engine=ocr_engine, ocr_language=settings.ocr_language, ocr_dpi=settings.ocr_dpi, plan=plan, bounds=bounds,
            )
        except (RuntimeError, ValueError, pymupdf.mupdf.FzErrorBase) as exc:
            log.warning("page %d of %s: %s", i + 1, log_name(name), without_paths(str(exc)))
            return _PageRead(None, [f"page {i + 1} could not be read and was skipped: {library_reason(exc)}"])
        return _PageRead(raw, page_warnings, plan.degraded, plan.reasons)

    return read


def read_page_range(path: Path, settings: IngestSettings, memory_mb: int, first: int, stop: int, name: str) -> list[_PageRead]:
    """Pages first..stop-1 (0-based) of one file read in this process, as parse_pdf reads them in
    one process: the part of a parse that a cluster task does for a range of a long file."""
    name = clean_text(name)
    reader = _page_reader(name, settings, page_bounds(memory_mb), available_ocr_engine(settings.ocr))
    pdf = open_validated(path, settings, name)
    try:
        return [reader(pdf, i) for i in range(first, min(stop, pdf.page_count))]
    finally:
        pdf.close()


def page_processes(pdf: pymupdf.Document, settings: IngestSettings, memory_mb: int) -> int:
    """How many processes read this file's pages: settings.parse_processes when the share holds
    what the worker holds now plus PAGE_WORK_MB for each, and every page fits the bounds of an
    equal part of the share (so processes side by side stay inside it); else fewer, down to one.
    A page over those bounds is read in one process, as before splitting existed. More than one
    also says every page is within page_bounds(memory_mb): _page_reader does not count them again."""
    processes = min(settings.parse_processes, pdf.page_count)
    while processes > 1 and resident_mb() + processes * PAGE_WORK_MB > memory_mb:
        processes -= 1  # each process may add PAGE_WORK_MB to what the worker holds now
    if processes < 2:
        return 1
    coster = PageCoster(pdf, page_bounds(memory_mb // processes))
    try:
        if any(coster.plan(pdf.load_page(i)).degraded for i in range(pdf.page_count)):
            return 1
    except (RuntimeError, ValueError, pymupdf.mupdf.FzErrorBase):
        return 1
    return processes


def _extract_pages(pdf: pymupdf.Document, path: Path, name: str, settings: IngestSettings, memory_mb: int, processes: int,
                   report: ProgressFn, page_reads: list[_PageRead] | None = None) -> tuple[list, list[str]]:
    """Extract every page within its bounds. A page over a bound is degraded (warnings say how);
    a page MuPDF cannot read is skipped; a file with nothing readable fails with the reason.
    page_reads: every page already read elsewhere (read_page_range, in order): only checked here."""
    ocr_engine = available_ocr_engine(settings.ocr)
    if page_reads is not None:
        reads = page_reads
    else:
        reader = _page_reader(name, settings, page_bounds(memory_mb), ocr_engine, within_bounds=processes > 1)
        reads = split_map(pdf, path, range(pdf.page_count), reader,
                          processes=processes, opener=_open_pdf, report=lambda done, total: report("extract", done, total))
    warnings: list[str] = []
    raw_pages = []
    degraded = 0
    for read in reads:
        if read.raw is None:
            warnings.extend(read.warnings)
            continue
        degraded += read.degraded
        warnings.extend(w for w in read.warnings if not (read.degraded and w in read.reasons and degraded > MAX_PAGE_WARNINGS))
        raw_pages.append(read.raw)
    n_pages = pdf.page_count
    if degraded > MAX_PAGE_WARNINGS:
        warnings.append(f"{degraded} pages in all were over the parser's per-page bounds (the first {MAX_PAGE_WARNINGS} are listed)")
    if not raw_pages:
        raise BadPdfError(name, "no page of the PDF could be read (damaged or truncated file)")
    if degraded == n_pages and not any(p.blocks for p in raw_pages):
        first = next(w for w in warnings if w.startswith("page ")).split("; ")[0]
        raise BadPdfError(name, f"every page is over the parser's bounds and no text could be read ({first})")
    if not any(p.blocks for p in raw_pages):
        warnings.append("no text found on any page" + ("" if ocr_engine else " and no OCR engine is installed (install tesseract-ocr)"))
    return raw_pages, warnings


def _ocr_figures(pdf: pymupdf.Document, path: Path, blocks: list[LayoutBlock], engine: str | None, settings: IngestSettings,
                 processes: int, report: ProgressFn) -> None:
    """The text inside raster figures (chart labels, screenshots), read with OCR into each figure
    block's `inner` before the components are built; shared among the page processes."""
    figures = [b for b in blocks if b.kind == BlockKind.FIGURE and not b.inner]
    if engine is None or not settings.ocr_figures or not figures:
        return

    def read(doc: pymupdf.Document, b: LayoutBlock) -> list:
        return ocr_region(doc[b.page - 1], b.bbox, engine, settings.ocr_language)

    found = split_map(pdf, path, figures, read, processes=processes, opener=_open_pdf,
                      report=lambda done, total: report("components", done, total))
    for b, inner in zip(figures, found):
        b.inner = inner


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


def page_sizes(raw_pages: list[RawPage], n_pages: int) -> list[tuple[float, float]]:
    """(width, height) of every page, from the pages extraction read: a page MuPDF could not load
    (a damaged page tree: its warning names it) takes the size of the readable page before it,
    or after it for leading pages, so the file keeps the pages that load without loading any again."""
    read = {p.number: (round(p.width, 2), round(p.height, 2)) for p in raw_pages}
    first = read[min(read)] if read else (612.0, 792.0)
    sizes: list[tuple[float, float]] = []
    for number in range(1, n_pages + 1):
        sizes.append(read.get(number, sizes[-1] if sizes else first))
    return sizes


def _document(pdf: pymupdf.Document, path: Path, name: str, sha: str, doc_id: str, hier, sections, nodes, warnings: list[str],
              raw_pages: list[RawPage]) -> Document:
    """The Document record: card and summary written into it and into the document node."""
    body = [n.text for n in nodes if n.kind == NodeKind.PARAGRAPH and n.role == "paragraph" and n.page <= 2]
    card = _doc_card(hier.title, sections, hier.toc_entries)
    for n in nodes:
        if n.kind == NodeKind.DOCUMENT:
            n.text = card
    document = Document(
        id=doc_id, file_name=name, title=clean_text(hier.title), pages=pdf.page_count, sha256=sha, bytes=path.stat().st_size,
        card=card, summary=" ".join(body)[:600], hierarchy_source=hier.source, parser_version=PARSER_VERSION,
        page_sizes=page_sizes(raw_pages, pdf.page_count),
        warnings=warnings,
    )
    if not any(n.layer == Layer.COMPONENT for n in nodes):
        document.warnings.append("no paragraphs, tables or figures were found")
    return document


def parse_pdf(
    path: Path,
    settings: IngestSettings,
    crops_root: Path | None,
    progress: ProgressFn | None = None,
    display_name: str | None = None,
    memory_mb: int | None = None,
    tell_processes: Callable[[int], None] | None = None, page_reads: list[_PageRead] | None = None,
) -> ParsedDocument:
    """Parse one PDF. Crops go to crops_root/<doc id>/ when crops_root is given. display_name: the
    file as the user named it (messages and the document's name); memory_mb: the memory share of
    the process (settings.parse_memory_mb when None), which sizes the per-page bounds; tell_processes(n):
    how many processes read the pages (page_processes); page_reads: every page, read by read_page_range."""
    name = kept_name(display_name or path.name)
    report = progress or (lambda stage, done, total: None)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    sha = file_sha256(path)
    doc_id = doc_id_for(sha)
    pdf = open_validated(path, settings, name)
    timings["open"] = time.perf_counter() - t0
    try:
        t = time.perf_counter()
        memory_mb = memory_mb or settings.parse_memory_mb
        processes = page_processes(pdf, settings, memory_mb)
        if tell_processes is not None:
            tell_processes(processes)
        raw_pages, warnings = _extract_pages(pdf, path, name, settings, memory_mb, processes, report, page_reads)
        timings["extract"] = time.perf_counter() - t
        ocr_engine = available_ocr_engine(settings.ocr)
        n_pages = pdf.page_count

        t = time.perf_counter()
        blocks, body_size = layout_document(raw_pages)
        timings["layout"] = time.perf_counter() - t
        report("layout", n_pages, n_pages)

        t = time.perf_counter()
        toc, cut = outline(pdf)
        if cut:
            warnings.append(f"the outline nests deeper than {MAX_OUTLINE_DEPTH} levels (or has over {MAX_OUTLINE_ENTRIES:,} entries); the rest of it was left out")
        title = clean_text((pdf.metadata or {}).get("title") or "")
        blocks, hier = build_hierarchy(blocks, toc, title, clean_text(Path(name).stem), body_size)
        sections, owner, heading_section = assign_sections(blocks, hier, doc_id)
        timings["hierarchy"] = time.perf_counter() - t
        report("hierarchy", n_pages, n_pages)

        t = time.perf_counter()
        _ocr_figures(pdf, path, blocks, ocr_engine, settings, processes, report)
        timings["figure OCR"] = time.perf_counter() - t
        t = time.perf_counter()
        crops_dir = crops_root / doc_id if crops_root is not None else None
        if crops_dir is not None:
            crops_dir.mkdir(parents=True, exist_ok=True)
        built = build_components(
            doc_id=doc_id, blocks=blocks, hier=hier, sections=sections, owner=owner, heading_section=heading_section,
            pdf=pdf, crops_dir=crops_dir, crop_rel_prefix=f"crops/{doc_id}", crop_dpi=settings.crop_dpi,
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

        document = _document(pdf, path, name, sha, doc_id, hier, sections, built.nodes, warnings, raw_pages)
        if ocr_engine and any(p.ocr_engine for p in raw_pages):
            document.warnings.append(f"{sum(1 for p in raw_pages if p.ocr_engine)} page(s) read with OCR ({ocr_engine})")
        if ocr_engine and (broken := ocr_unusable()) is not None:
            document.warnings.append(f"{broken}; figures and scanned pages after it were not read with OCR")
        return ParsedDocument(
            document=document, sections=sections, nodes=built.nodes, edges=edges, blocks=built.blocks,
            doc_links=pending, stage_seconds=timings,
        )
    finally:
        pdf.close()
