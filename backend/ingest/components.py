"""Stage 5: components and subcomponents (LILaC's layers) from the laid-out, sectioned blocks.

paragraph -> sentences (pysbd); code listing -> one subunit per line; table -> one row unit per data row with the header repeated;
figure -> crop image + caption + upper context (HiKEY) + the text found inside it (the text
layer's lines, or what parser.py read with OCR into the block's `inner`), and one
object region per text cluster inside the figure (or the whole figure). Every node has its page
and box. Also creates the hierarchical (`contains`), reading-order (`next`) and `caption` edges.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import pymupdf
import pysbd

from backend.ingest.hierarchy import Hierarchy
from backend.ingest.layout import LayoutBlock, join_lines
from backend.types import (
    FURNITURE_KINDS, NAVIGATION_KINDS, BBox, Block, BlockKind, Cell, Edge, EdgeKind, Layer, Node, NodeKind, Section, TableRow,
)

log = logging.getLogger(__name__)

MAX_TABLE_TEXT = 6000
CAPTION_MAX_GAP = 90.0  # points between a caption and its table/figure


@dataclass
class BuiltComponents:
    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    blocks: list[Block] = field(default_factory=list)
    block_node: dict[int, str] = field(default_factory=dict)  # block order -> component node id
    labels: dict[tuple[str, str], str] = field(default_factory=dict)  # ("table", "2") -> node id


def _union(boxes: list[BBox]) -> BBox:
    return (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes))


def _rounded(b: BBox | None) -> BBox | None:
    return None if b is None else tuple(round(float(v), 2) for v in b)


def _h_overlap(a: BBox, b: BBox) -> float:
    return max(0.0, min(a[2], b[2]) - max(a[0], b[0]))


def _attach_captions(blocks: list[LayoutBlock]) -> dict[int, LayoutBlock]:
    """caption block order -> the table/figure block it captions (nearest on the page, above or below)."""
    out: dict[int, LayoutBlock] = {}
    taken: set[int] = set()
    objects = [b for b in blocks if b.kind in (BlockKind.TABLE, BlockKind.FIGURE)]
    for cap in (b for b in blocks if b.kind == BlockKind.CAPTION):
        best, best_cost = None, CAPTION_MAX_GAP
        for obj in objects:
            if obj.page != cap.page or obj.order in taken or _h_overlap(obj.bbox, cap.bbox) <= 0:
                continue
            gap = max(obj.bbox[1] - cap.bbox[3], cap.bbox[1] - obj.bbox[3], 0.0)
            cost = gap + (0 if (cap.label_kind == "table") == (obj.kind == BlockKind.TABLE) else 40)
            if cost < best_cost:
                best, best_cost = obj, cost
        if best is not None:
            out[cap.order] = best
            taken.add(best.order)
    return out


def _sentences(seg: pysbd.Segmenter, text: str, spans: list[tuple[int, int, BBox]], fallback: BBox) -> list[tuple[str, BBox]]:
    pieces = seg.segment(text) if (". " in text or "? " in text or "! " in text) else None
    if not pieces:
        return [(text, fallback)]
    out: list[tuple[str, BBox]] = []
    for piece in pieces:
        sent = piece.sent.strip()
        if not sent:
            continue
        boxes = [bb for s, e, bb in spans if s < piece.end and e > piece.start]
        out.append((sent, _union(boxes) if boxes else fallback))
    return out or [(text, fallback)]


def _table_texts(label: str | None, header: list[str], rows: list[list[str]]) -> tuple[str, list[TableRow]]:
    """The table's text (a ' | '-joined line per row, header first, cut at MAX_TABLE_TEXT) and its
    data rows as TableRows: each non-empty cell under its header ("column 3" for an empty one)."""
    names = [h or f"column {i + 1}" for i, h in enumerate(header)]
    lines = [" | ".join(names)] + [" | ".join(r) for r in rows]
    table_text = "\n".join(lines)[:MAX_TABLE_TEXT]
    table_rows = [TableRow(table=label, cells=tuple(Cell(n, v) for n, v in zip(names, r) if v)) for r in rows]
    return table_text, table_rows


def _save_crop(pdf: pymupdf.Document, page_no: int, bbox: BBox, path: Path, dpi: int) -> bool:
    try:
        page = pdf[page_no - 1]
        clip = pymupdf.Rect(bbox) & page.rect
        if clip.is_empty or clip.width < 2 or clip.height < 2:
            return False
        page.get_pixmap(clip=clip, dpi=dpi).save(str(path))
        return True
    except (RuntimeError, ValueError) as exc:
        log.debug("crop failed on page %s: %s", page_no, exc)
        return False


@dataclass
class _Builder:
    """The state build_components carries through the blocks: sections, captions, the last
    paragraph and component of each section (for HiKEY's upper context and `next` edges)."""

    doc_id: str
    sections: list[Section]
    owner: dict[int, str]
    heading_section: dict[int, str]
    pdf: pymupdf.Document
    crops_dir: Path | None
    crop_rel_prefix: str
    crop_dpi: int
    captions: dict[int, LayoutBlock]
    caption_of: dict[int, LayoutBlock]
    out: BuiltComponents = field(default_factory=BuiltComponents)
    seg: pysbd.Segmenter = field(default_factory=lambda: pysbd.Segmenter(language="en", clean=False, char_span=True))
    last_paragraph_text: dict[str, str] = field(default_factory=dict)
    last_component: dict[str, str] = field(default_factory=dict)
    counter: int = 0
    section_by_id: dict[str, Section] = field(default_factory=dict)
    table_heads: dict[int, tuple[str | None, str]] = field(default_factory=dict)  # table order -> (label, context)

    def __post_init__(self) -> None:
        self.section_by_id = {s.id: s for s in self.sections}

    def structure(self, title: str) -> None:
        """Document and section nodes (the top layer with the section tree)."""
        doc_id, out = self.doc_id, self.out
        out.nodes.append(Node(id=doc_id, layer=Layer.DOCUMENT, kind=NodeKind.DOCUMENT, doc=doc_id, text=title, page=1))
        for s in self.sections:
            out.nodes.append(
                Node(
                    id=s.id, layer=Layer.DOCUMENT, kind=NodeKind.SECTION, doc=doc_id, text=s.title, section=s.id,
                    page=s.page, bbox=_rounded(s.bbox), parent=s.parent or doc_id, order=0,
                )
            )
            out.edges.append(Edge(src=s.parent or doc_id, dst=s.id, kind=EdgeKind.CONTAINS, provenance="section tree"))

    def add(self, b: LayoutBlock) -> None:
        sec_id = self.owner.get(b.order, self.sections[0].id)
        # Furniture, headings (their section node stands for them) and navigation (TOC lines,
        # index entries) are kept as blocks for the parse view but are not units of evidence.
        if b.kind in (*FURNITURE_KINDS, *NAVIGATION_KINDS, BlockKind.HEADING, BlockKind.TITLE):
            self._plain_block(b)
            return
        self.counter += 1
        if b.kind in (BlockKind.PARAGRAPH, BlockKind.LIST_ITEM, BlockKind.CAPTION):
            node_id = self._text_unit(b, sec_id)
        elif b.kind == BlockKind.CODE:
            node_id = self._code_unit(b, sec_id)
        elif b.kind in (BlockKind.TABLE, BlockKind.FIGURE):
            node_id = self._object_unit(b, sec_id)
        else:
            return
        out = self.out
        out.block_node[b.order] = node_id
        block_text = b.text or next(n.text for n in reversed(out.nodes) if n.id == node_id)
        out.blocks.append(Block(page=b.page, bbox=_rounded(b.bbox), kind=b.kind, text=block_text[:2000], order=b.order, node=node_id))
        out.edges.append(Edge(src=sec_id, dst=node_id, kind=EdgeKind.CONTAINS, provenance="section member"))
        if sec_id in self.last_component:
            out.edges.append(Edge(src=self.last_component[sec_id], dst=node_id, kind=EdgeKind.NEXT, provenance="reading order"))
        self.last_component[sec_id] = node_id

    def _plain_block(self, b: LayoutBlock) -> None:
        level = conf = node_id = None
        if b.kind == BlockKind.HEADING and b.order in self.heading_section:
            sec = self.section_by_id[self.heading_section[b.order]]
            level, conf, node_id = sec.level, sec.confidence, sec.id
        elif b.kind == BlockKind.TITLE:
            level, conf, node_id = 0, 1.0, self.sections[0].id
        self.out.blocks.append(
            Block(page=b.page, bbox=_rounded(b.bbox), kind=b.kind, text=b.text, order=b.order, level=level, confidence=conf, node=node_id)
        )

    def _subunits(self, parent: str, sec_id: str, page: int, order: int, subs: list[tuple[NodeKind, str | TableRow, BBox]]) -> None:
        """One node per subunit: a sentence's or region's text, or a table row (its text the row's index text)."""
        for i, (kind, sub, bbox) in enumerate(subs):
            sid = f"{parent}.{i}"
            row = sub if isinstance(sub, TableRow) else None
            self.out.nodes.append(
                Node(
                    id=sid, layer=Layer.SUBCOMPONENT, kind=kind, doc=self.doc_id, text=sub if row is None else row.index_text(),
                    section=sec_id, page=page, bbox=_rounded(bbox), parent=parent, order=order, row=row,
                )
            )
            self.out.edges.append(Edge(src=parent, dst=sid, kind=EdgeKind.CONTAINS, provenance=kind.value))

    def _text_unit(self, b: LayoutBlock, sec_id: str) -> str:
        """A paragraph, list item or caption: one component node, one sentence node per sentence."""
        node_id = f"{self.doc_id}:p{self.counter}"
        text, spans = join_lines(b.lines) if b.lines else (b.text, [])
        label = None
        if b.kind == BlockKind.CAPTION and b.order not in self.captions and b.label_kind:
            label = f"{b.label_kind.title()} {b.label_num}"
            self.out.labels.setdefault((b.label_kind, b.label_num), node_id)
        self.out.nodes.append(
            Node(
                id=node_id, layer=Layer.COMPONENT, kind=NodeKind.PARAGRAPH, doc=self.doc_id, text=text, section=sec_id,
                page=b.page, bbox=_rounded(b.bbox), parent=sec_id, role=b.kind.value, order=b.order, label=label,
            )
        )
        sentences = _sentences(self.seg, text, spans, b.bbox)
        self._subunits(node_id, sec_id, b.page, b.order, [(NodeKind.SENTENCE, sent, bbox) for sent, bbox in sentences])
        if b.kind != BlockKind.CAPTION:
            self.last_paragraph_text[sec_id] = text
        return node_id

    def _code_unit(self, b: LayoutBlock, sec_id: str) -> str:
        """A code listing: one component node (its text line by line, indentation kept), one
        subunit per line of code."""
        node_id = f"{self.doc_id}:c{self.counter}"
        self.out.nodes.append(
            Node(
                id=node_id, layer=Layer.COMPONENT, kind=NodeKind.CODE, doc=self.doc_id, text=b.text, section=sec_id,
                page=b.page, bbox=_rounded(b.bbox), parent=sec_id, role=b.kind.value, order=b.order,
            )
        )
        rows = [ln for ln in b.text.split("\n") if ln.strip()]
        boxes = [ln.bbox for ln in b.lines]
        if len(boxes) != len(rows):  # lines set side by side make one row of text: each row gets the listing's box
            boxes = [b.bbox] * len(rows)
        self._subunits(node_id, sec_id, b.page, b.order, [(NodeKind.SENTENCE, row.strip(), bb) for row, bb in zip(rows, boxes)])
        return node_id

    def _object_unit(self, b: LayoutBlock, sec_id: str) -> str:
        """A table (one row node per data row) or a figure (one object node per text region)."""
        is_table = b.kind == BlockKind.TABLE
        node_id = f"{self.doc_id}:{'t' if is_table else 'f'}{self.counter}"
        cap = self.caption_of.get(b.order)
        label = f"{cap.label_kind.title()} {cap.label_num}" if cap is not None and cap.label_kind else None
        if cap is not None and cap.label_kind:
            self.out.labels.setdefault((cap.label_kind, cap.label_num), node_id)
        upper = self.last_paragraph_text.get(sec_id, "")[:400]
        context = cap.text if cap is not None else upper
        if b.continues in self.table_heads and cap is None:  # a table run on from the page before: its label and caption
            label, context = self.table_heads[b.continues]
        if is_table:
            self.table_heads[b.order] = (label, context)
        crop_rel = None
        if self.crops_dir is not None:
            name = f"{node_id.split(':')[-1]}.png"
            if _save_crop(self.pdf, b.page, b.bbox, self.crops_dir / name, self.crop_dpi):
                crop_rel = f"{self.crop_rel_prefix}/{name}"
        if is_table:
            table_text, table_rows = _table_texts(label, b.table.header, b.table.rows)
            text = f"{context}\n{table_text}" if context else table_text
            subs = [(NodeKind.ROW, row, rb) for row, rb in zip(table_rows, b.table.row_bboxes)]
        else:
            text, subs = self._figure_texts(b, cap, upper)
        self.out.nodes.append(
            Node(
                id=node_id, layer=Layer.COMPONENT, kind=NodeKind.TABLE if is_table else NodeKind.FIGURE, doc=self.doc_id,
                text=text, section=sec_id, page=b.page, bbox=_rounded(b.bbox), parent=sec_id, crop=crop_rel,
                label=label, order=b.order, context=context,
            )
        )
        self._subunits(node_id, sec_id, b.page, b.order, subs)
        return node_id

    def _figure_texts(self, b: LayoutBlock, cap: LayoutBlock | None, upper: str) -> tuple[str, list[tuple[NodeKind, str | TableRow, BBox]]]:
        inner_text = " ".join(t for _, t in b.inner)
        parts = [p for p in (cap.text if cap is not None else "", inner_text, "" if cap is not None else upper) if p]
        text = "\n".join(parts) or "(figure without text)"
        subs = [(NodeKind.OBJECT, t, bb) for bb, t in b.inner if t.strip()]
        if not subs:
            subs = [(NodeKind.OBJECT, cap.text if cap is not None else (upper or "figure region"), b.bbox)]
        return text, subs

    def caption_edges(self) -> None:
        for cap_order, obj in self.captions.items():
            cap_node = self.out.block_node.get(cap_order)
            obj_node = self.out.block_node.get(obj.order)
            if cap_node and obj_node:
                self.out.edges.append(Edge(src=cap_node, dst=obj_node, kind=EdgeKind.CAPTION, provenance="caption"))


def build_components(
    *,
    doc_id: str,
    blocks: list[LayoutBlock],
    hier: Hierarchy,
    sections: list[Section],
    owner: dict[int, str],
    heading_section: dict[int, str],
    pdf: pymupdf.Document,
    crops_dir: Path | None,
    crop_rel_prefix: str,
    crop_dpi: int,
) -> BuiltComponents:
    captions = _attach_captions(blocks)
    block_at = {b.order: b for b in blocks}
    builder = _Builder(
        doc_id=doc_id, sections=sections, owner=owner, heading_section=heading_section, pdf=pdf, crops_dir=crops_dir,
        crop_rel_prefix=crop_rel_prefix, crop_dpi=crop_dpi,
        captions=captions, caption_of={obj.order: block_at[cap_order] for cap_order, obj in captions.items()},
    )
    builder.structure(hier.title)
    for b in blocks:
        builder.add(b)
    builder.caption_edges()
    return builder.out
