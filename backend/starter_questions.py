"""Example questions about a session's own documents, made from their headings by rules (no
model): "What does <document> say about <heading>?" for the first top-level headings that read
as topics, taken in turn from each document. A question is kept short enough to show whole on an
example button (MAX_QUESTION_CHARS): the document is named by its title, else its file name, else
"the document", else the heading alone is asked. The Ask tab offers them in place of the sample
corpus's questions once a session has uploaded documents.

It does not check that a document answers the question; a heading is only a topic it covers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from backend.types import Document, Section

MAX_TITLE_WORDS = 8  # a longer document title is named by its file name instead
MAX_QUESTION_CHARS = 60  # Gradio's example buttons cut a longer text with "..."
MIN_HEADING_WORDS, MAX_HEADING_WORDS = 1, 10
# Headings that name a part of any document, not a topic of this one.
GENERIC_HEADINGS = frozenset({
    "abstract", "acknowledgements", "acknowledgments", "appendix", "bibliography", "contents", "foreword", "glossary",
    "index", "introduction", "notes", "preface", "references", "summary", "table of contents", "overview", "conclusion",
    "conclusions", "list of figures", "list of tables", "about this manual", "copyright", "disclaimer",
})
NUMBER_PREFIX_RE = re.compile(r"^\s*(?:(?:chapter|section|part|appendix)\s+)?[\dIVXivx]+(?:[.\-]\d+)*[.):]?\s+", re.I)
DOT_LEADER_RE = re.compile(r"(?:\s*\.{2,}\s*\d*|\s+\d+)\s*$")  # "Safety ........ 12", "Safety 12" (a contents line)


def clean_heading(title: str) -> str | None:
    """A heading as a topic ("2.1 Replacing the battery" -> "replacing the battery"), or None
    when it is generic, too short or too long to read as one."""
    text = DOT_LEADER_RE.sub("", NUMBER_PREFIX_RE.sub("", " ".join(title.split()))).strip(" .:;-")
    words = text.split()
    if not (MIN_HEADING_WORDS <= len(words) <= MAX_HEADING_WORDS) or text.casefold() in GENERIC_HEADINGS:
        return None
    if not any(ch.isalpha() for ch in text):
        return None
    first = words[0]
    if first[:1].isupper() and first[1:].islower():  # "Replacing" -> "replacing"; keeps "USB", "iPhone", "X200"
        words[0] = first.lower()
    return " ".join(words)


def document_names(doc: Document) -> list[str]:
    """How a question may name the document, longest first: its title when short, its file name."""
    title = " ".join(doc.title.split())
    names = [f"“{title}”"] if title and len(title.split()) <= MAX_TITLE_WORDS and title.casefold() != doc.file_name.casefold() else []
    return names + [doc.file_name]


def topic_question(names: list[str], topic: str) -> str:
    """The first of "What does <name> say about <topic>?" (for each name, then "the document")
    that fits MAX_QUESTION_CHARS, else the topic asked alone."""
    for name in [*names, "the document"]:
        question = f"What does {name} say about {topic}?"
        if len(question) <= MAX_QUESTION_CHARS:
            return question
    return topic[:1].upper() + topic[1:] + "?"


def questions_for(doc: Document, sections: Sequence[Section]) -> list[str]:
    """Questions about one document from its top-level headings (then second-level ones), in page order."""
    names = document_names(doc)
    out: list[str] = []
    for section in sorted((s for s in sections if s.level >= 1), key=lambda s: (s.level, s.page)):
        topic = clean_heading(section.title) if section.title.strip() != doc.title.strip() else None
        if topic is None:
            continue
        question = section.title.strip() if section.title.strip().endswith("?") else topic_question(names, topic)
        if question not in out:
            out.append(question)
    about = next((q for q in (f"What is {n} about?" for n in names) if len(q) <= MAX_QUESTION_CHARS), "What is it about?")
    return out or [about]


def starter_questions(docs: Sequence[Document], sections_of: dict[str, Sequence[Section]], limit: int = 4) -> list[str]:
    """Up to `limit` questions, one from each document in turn (the first document's best first)."""
    per_doc = [questions_for(d, sections_of.get(d.id, ())) for d in docs]
    out: list[str] = []
    depth = 0
    while len(out) < limit and any(depth < len(q) for q in per_doc):
        out += [q[depth] for q in per_doc if depth < len(q)][: limit - len(out)]
        depth += 1
    return out
