"""Small hand-built corpora for algorithm tests: documents of paragraphs, each paragraph split
into sentences, encoded with the session's real encoders, with links between documents."""

from __future__ import annotations

import hashlib
import re

from backend.graph.corpus import Corpus
from backend.types import Document, Edge, EdgeKind, Layer, Node, NodeKind, PendingDocLink, Section


def _id(*parts: str) -> str:
    return hashlib.sha1("/".join(parts).encode()).hexdigest()[:12]


def build_corpus(service, docs: dict[str, list[str]], links: list[tuple[str, int, str]] = ()) -> Corpus:
    """docs: file name -> paragraphs; links: (file, paragraph index, target file)."""
    documents, sections, nodes, edges, doc_links = [], [], [], [], []
    texts: dict[str, list[str]] = {"text": [], "sub": []}
    owners: dict[str, list[str]] = {"text": [], "sub": []}
    for name, paragraphs in docs.items():
        doc_id = _id(name)
        title = name.removesuffix(".pdf").replace("_", " ")
        documents.append(Document(
            id=doc_id, file_name=name, title=title, pages=1, sha256=_id(name, "sha"), bytes=1, card=title,
            summary=paragraphs[0] if paragraphs else "", hierarchy_source="flat", page_sizes=[(612.0, 792.0)],
        ))
        sec_id = f"{doc_id}:s0"
        sections.append(Section(id=sec_id, doc=doc_id, title=title, level=0, parent=None, path=[title], page=1, bbox=None,
                                confidence=1.0, source="root"))
        nodes.append(Node(id=doc_id, layer=Layer.DOCUMENT, kind=NodeKind.DOCUMENT, doc=doc_id, text=title))
        nodes.append(Node(id=sec_id, layer=Layer.DOCUMENT, kind=NodeKind.SECTION, doc=doc_id, text=title, section=sec_id))
        edges.append(Edge(src=doc_id, dst=sec_id, kind=EdgeKind.CONTAINS))
        texts["text"] += [title, title]
        owners["text"] += [doc_id, sec_id]
        prev = None
        for i, para in enumerate(paragraphs):
            pid = f"{doc_id}:p{i}"
            y = 72.0 + 60 * i
            nodes.append(Node(id=pid, layer=Layer.COMPONENT, kind=NodeKind.PARAGRAPH, doc=doc_id, text=para, section=sec_id,
                              bbox=(72.0, y, 540.0, y + 50), order=i))
            edges.append(Edge(src=sec_id, dst=pid, kind=EdgeKind.CONTAINS))
            if prev:
                edges.append(Edge(src=prev, dst=pid, kind=EdgeKind.NEXT))
            prev = pid
            texts["text"].append(para)
            owners["text"].append(pid)
            for j, sent in enumerate(s for s in re.split(r"(?<=[.!?])\s+", para) if s.strip()):
                sid = f"{pid}:s{j}"
                nodes.append(Node(id=sid, layer=Layer.SUBCOMPONENT, kind=NodeKind.SENTENCE, doc=doc_id, text=sent,
                                  section=sec_id, parent=pid, bbox=(72.0, y + 10 * j, 540.0, y + 10 * j + 10), order=j))
                edges.append(Edge(src=pid, dst=sid, kind=EdgeKind.CONTAINS))
                texts["sub"].append(sent)
                owners["sub"].append(sid)
    for name, para, target in links:
        doc_id = _id(name)
        doc_links.append((doc_id, PendingDocLink(src=f"{doc_id}:p{para}", target=target, provenance="file link")))
    embeddings = {}
    for space, encoder in (("text", service.encoders.text), ("sub", service.encoders.sub)):
        vecs = encoder.encode(texts[space])
        embeddings.update(dict(zip(owners[space], vecs)))
    dims = {"documents": service.encoders.text.dim, "sections": service.encoders.text.dim,
            "components": service.encoders.text.dim, "subcomponents": service.encoders.sub.dim}
    return Corpus(documents, sections, nodes, embeddings, edges, doc_links, dims=dims)


def doc_of(corpus: Corpus, node_id: str) -> str:
    return corpus.documents[corpus.nodes[node_id].doc].file_name
