"""The text each node is indexed by (dense and BM25), one function so ingest and load agree.

A component is indexed by its text after its section path below the title (the last two
headings). A component right under its document's title has no such path; when its text does
not write the title either, the title goes before it. A Wikipedia paragraph from the middle of an
article ("In 1969 she was appointed ...") says nothing else of what it is about, and a question
names its subject: with the title, every method finds such pages more often, and pages that name
their subject rank as before (bench/RESULTS.md#defaults)."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable

from backend.types import Document, Layer, Node, NodeKind, Section

SECTION_BODY_CHARS = 900
# The parenthetical qualifier ending a title, "Kiss and Tell (1945 film)" -> "Kiss and Tell": the
# pattern `\s*\([^()]*\)\s*$`, matched on the reversed title. Substituting the pattern itself
# searched every start and was O(n^2) on a run of spaces (11 s for 32,000), and PDF metadata titles
# are not whitespace-collapsed.
_QUALIFIER_REVERSED_RE = re.compile(r"\s*\)[^()]*\(\s*")


def strip_qualifier(title: str) -> str:
    """The title without a parenthetical qualifier at its end (and the spaces around it)."""
    m = _QUALIFIER_REVERSED_RE.match(title[::-1])
    return title[: len(title) - m.end()] if m else title


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
        if not scope:
            doc = documents.get(n.doc)
            if doc and doc.title and not names_title(n.text, doc.title):
                scope = doc.title  # a unit right under its title that never writes it: the title says what it is about
        return f"{scope}\n{n.text}" if scope else n.text
    return n.text


def title_forms(title: str) -> list[str]:
    """The ways a text writes a title: whole, without its parenthetical qualifier, and the part
    before its comma ("Summerlin, Nevada" -> "Summerlin"); distinct, non-empty, in that order."""
    bare = strip_qualifier(title)
    return list(dict.fromkeys(t.strip() for t in (title, bare, bare.split(",")[0]) if t.strip()))


def names_title(text: str, title: str) -> bool:
    """Whether `text` writes one of the title's forms as whole words (case-insensitive). Found
    with str.find: it runs for every unit under a title each time a corpus is loaded (a pattern
    per title would be compiled anew)."""
    low = text.lower()
    for form in {t.lower() for t in title_forms(title)}:
        start = low.find(form)
        while start >= 0:
            end = start + len(form)
            if (start == 0 or not low[start - 1].isalnum()) and (end == len(low) or not low[end].isalnum()):
                return True
            start = low.find(form, start + 1)
    return False
