"""Stage 6: navigational edges inside one document, and the links that leave it.

- cross-references in text ("Table 2", "Fig. 3b", "Figure 3", "Section 4.1", "§2", "Appendix A")
  resolved to the labelled unit or section;
- PDF link annotations: internal GoTo links to the unit at the destination; file (GoToR /
  Launch) and URI links become pending document links, resolved against the whole corpus when
  the document is stored (the target may be ingested later).
"""

from __future__ import annotations

import re
from collections import defaultdict

from backend.ingest.extract import RawLink, RawPage
from backend.types import BBox, Edge, EdgeKind, Layer, Node, NodeKind, PendingDocLink, Section

XREF_RE = re.compile(
    r"\b(?P<word>Tables?|Tab\.|Figures?|Figs?\.|Charts?|Exhibits?)\s+(?P<num>[A-Z]?\d+(?:[.\-]\d+)*[a-z]?)\b"
    r"|\b(?:Sections?|Sec\.|Chapter|Ch\.)\s+(?P<sec>\d+(?:\.\d+)*)\b"
    r"|§\s*(?P<para>\d+(?:\.\d+)*)"
    r"|\b(?:Appendix|Annex)\s+(?P<app>[A-Z](?:\.\d+)*)\b"
)


def _area(b: BBox) -> float:
    return max(0.0, b[2] - b[0]) * max(0.0, b[3] - b[1])


def _intersection(a: BBox, b: BBox) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    return ix * iy


def section_number_map(sections: list[Section]) -> dict[str, str]:
    out: dict[str, str] = {}
    for s in sections:
        if s.number:
            out.setdefault(s.number.lower(), s.id)
        m = re.match(r"^(?:appendix|annex)\s+([a-z](?:\.\d+)*)", s.title.lower())
        if m:
            out.setdefault(m.group(1), s.id)
    return out


def xref_edges(nodes: list[Node], labels: dict[tuple[str, str], str], sections: list[Section]) -> list[Edge]:
    sec_numbers = section_number_map(sections)
    edges: list[Edge] = []
    seen: set[tuple[str, str]] = set()
    for n in nodes:
        if n.kind != NodeKind.PARAGRAPH or n.role == "caption":
            continue
        for m in XREF_RE.finditer(n.text):
            target = None
            if m.group("word"):
                kind = "table" if m.group("word").lower().startswith("tab") else "figure"
                num = m.group("num").lower()
                target = labels.get((kind, num)) or labels.get((kind, num.rstrip("abcdefgh")))
            else:
                num = (m.group("sec") or m.group("para") or m.group("app") or "").lower()
                target = sec_numbers.get(num)
            if target and target != n.id and (n.id, target) not in seen:
                seen.add((n.id, target))
                edges.append(Edge(src=n.id, dst=target, kind=EdgeKind.XREF, provenance=m.group(0)))
    return edges


def _unit_at(units: list[Node], rect: BBox) -> Node | None:
    best, best_area = None, 0.0
    for u in units:
        if u.bbox is None:
            continue
        a = _intersection(u.bbox, rect)
        if a > best_area:
            best, best_area = u, a
    return best


def _target_unit(units: list[Node], y: float | None, x: float | None = None, width: float | None = None) -> Node | None:
    with_box = sorted((u for u in units if u.bbox is not None), key=lambda u: u.bbox[1])
    if not with_box:
        return None
    if x is not None and width:
        # On a two-column page the destination is in the half of the page its x falls in:
        # drop units that lie wholly in the other half.
        mid = width / 2
        same_half = [u for u in with_box if (u.bbox[0] < mid if x < mid else u.bbox[2] > mid)]
        with_box = same_half or with_box
    if y is None:
        return with_box[0]
    for u in with_box:
        # The destination is the first unit reaching clearly below y: a link to a caption set
        # just under the linking paragraph must not land on that paragraph (and be dropped).
        if u.bbox[3] > y + 2:
            return u
    return with_box[-1]


def annotation_edges(nodes: list[Node], pages: list[RawPage]) -> tuple[list[Edge], list[PendingDocLink]]:
    by_page: dict[int, list[Node]] = defaultdict(list)
    for n in nodes:
        if n.layer == Layer.COMPONENT or n.kind == NodeKind.SECTION:
            by_page[n.page].append(n)
    edges: list[Edge] = []
    pending: list[PendingDocLink] = []
    seen: set[tuple[str, str]] = set()
    widths = {p.number: p.width for p in pages}
    for page in pages:
        components = [n for n in by_page.get(page.number, []) if n.layer == Layer.COMPONENT]
        for ln in page.links:
            src = _unit_at(components, ln.rect)
            if src is None:
                continue
            if ln.target_page is not None:
                dst = _target_unit(by_page.get(ln.target_page, []), ln.target_y, ln.target_x, widths.get(ln.target_page))
                if dst is not None and dst.id != src.id and (src.id, dst.id) not in seen:
                    seen.add((src.id, dst.id))
                    edges.append(Edge(src=src.id, dst=dst.id, kind=EdgeKind.LINK, provenance=f"link to page {ln.target_page}"))
            else:
                target = ln.file or ln.uri or ""
                pending.append(PendingDocLink(src=src.id, target=target, provenance=_link_kind(ln)))
    return edges, pending


def _link_kind(ln: RawLink) -> str:
    return "uri link" if ln.uri else "file link"
