"""Word-level helpers the offline rules of every task share: content tokens (BM25's tokenizer,
stop words out) and the question words that never count as content."""

from __future__ import annotations

import re

from backend.index.lexical import tokenize

WORD_RE = re.compile(r"[\w'’-]+")  # a word with its apostrophes and hyphens ("Wayne's", "Jean-Luc")
QUESTION_WORDS = {"mani", "much", "how", "what", "which", "when", "who", "whom", "whose", "where", "why"}


def content_tokens(text: str) -> set[str]:
    return set(tokenize([text])[0])


def content_tokens_each(texts: list[str]) -> list[set[str]]:
    """content_tokens of each text, in one tokenizer call (a call per word costs ~25 us each)."""
    return [set(tokens) for tokens in tokenize(texts)] if texts else []
