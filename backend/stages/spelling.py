"""A title the question names but mistypes, spelt as the corpus writes it: "hree Men on a Horse" is
read "Three Men on a Horse" (titles.NearTitles), so that every signal of a method, and the title
hops, read the name the user meant. A word counts as mistyped only when no unit of the corpus
writes it.

Not here: matching titles in text (backend/retrieval/titles.py).
"""

from __future__ import annotations

import re

from backend.llm.text import content_tokens
from backend.retrieval.titles import near_titles
from backend.types import Trace


def title_fixes(corpus, question: str) -> list[tuple[str, str]]:
    """(the word as the question writes it, as the title writes it) for each mistyped title word."""
    lexical = corpus.layers["components"].lexical
    return near_titles(corpus).corrections(question, lambda w: len(lexical.query_tokens(w)) == len(content_tokens(w)))


def spelt_as_titles(corpus, question: str, trace: Trace) -> str:
    """The question with each mistyped word of a title spelt as the title writes it; the trace says
    what was read."""
    fixes = title_fixes(corpus, question)
    for written, titled in fixes:
        question = re.sub(rf"(?<!\w){re.escape(written)}(?!\w)", titled, question, count=1)
    if fixes:
        read = ", ".join(f'"{w}" as "{t}"' for w, t in fixes)
        trace.notes.append(f"Read {read}: the question names a title of the corpus but for that word, which no unit writes.")
    return question
