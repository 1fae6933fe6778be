"""The text each node is indexed by (dense and BM25), one function so ingest and load agree."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from backend.types import Document, Layer, Node, NodeKind, Section

SECTION_BODY_CHARS = 900


def index_texts(
    nodes: Iterable[Node], sections: dict[str, Section], documents: dict[str, Document], *, bodies_from: Iterable[Node] | None = None,
) -> dict[str, str]:
    """node id -> its index text. A section's text holds the opening of its components' texts,
    found among `nodes` (read twice then: a list or a view), or among `bodies_from` where given
    (a corpus asks for one layer at a time)."""
    body: dict[str, list[str]] = defaultdict(list)
    for n in nodes if bodies_from is None else bodies_from:
        if n.layer == Layer.COMPONENT and n.section:
            body[n.section].append(n.text)
    out: dict[str, str] = {}
    for n in nodes:
        if n.kind == NodeKind.DOCUMENT:
            doc = documents.get(n.doc)
            out[n.id] = f"{doc.card}\n{doc.summary}" if doc else n.text
        elif n.kind == NodeKind.SECTION:
            sec = sections.get(n.id)
            path = " > ".join(sec.path) if sec else n.text
            out[n.id] = f"{path}\n{' '.join(body.get(n.id, []))[:SECTION_BODY_CHARS]}"
        elif n.layer == Layer.COMPONENT:
            sec = sections.get(n.section or "")
            scope = " > ".join(sec.path[1:][-2:]) if sec else ""
            out[n.id] = f"{scope}\n{n.text}" if scope else n.text
        else:
            out[n.id] = n.text
    return out
