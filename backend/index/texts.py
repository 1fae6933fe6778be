"""The text each node is indexed by (dense and BM25), one function so ingest and load agree."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from backend.types import Document, Layer, Node, NodeKind, Section

SECTION_BODY_CHARS = 900


def index_texts(nodes: list[Node], sections: dict[str, Section], documents: dict[str, Document]) -> dict[str, str]:
    """node id -> its index text. A section's text holds the opening of its components' texts,
    found among `nodes` (read twice: a list or a view)."""
    body = section_bodies(nodes)
    return {n.id: index_text(n, sections, documents, body) for n in nodes}


def section_bodies(nodes: Iterable[Node]) -> dict[str, str]:
    """section id -> the opening SECTION_BODY_CHARS of its components' texts joined by spaces, in
    the order given; a section's later texts are not kept once its opening is full."""
    parts: dict[str, list[str]] = defaultdict(list)
    length: dict[str, int] = defaultdict(int)
    for n in nodes:
        if n.layer == Layer.COMPONENT and n.section and length[n.section] <= SECTION_BODY_CHARS:  # joined: length - 1
            parts[n.section].append(n.text)
            length[n.section] += len(n.text) + 1
    return {sec: " ".join(texts)[:SECTION_BODY_CHARS] for sec, texts in parts.items()}


def index_text(n: Node, sections: dict[str, Section], documents: dict[str, Document], bodies: dict[str, str]) -> str:
    """The text one node is indexed by (bodies: section_bodies, read for sections only)."""
    if n.kind == NodeKind.DOCUMENT:
        doc = documents.get(n.doc)
        return f"{doc.card}\n{doc.summary}" if doc else n.text
    if n.kind == NodeKind.SECTION:
        sec = sections.get(n.id)
        path = " > ".join(sec.path) if sec else n.text
        return f"{path}\n{bodies.get(n.id, '')}"
    if n.layer == Layer.COMPONENT:
        sec = sections.get(n.section or "")
        scope = " > ".join(sec.path[1:][-2:]) if sec else ""
        return f"{scope}\n{n.text}" if scope else n.text
    return n.text
