"""Word-level helpers the offline rules of every task share: content tokens (BM25's tokenizer,
stop words out) and the question words that never count as content."""

from __future__ import annotations

import re

from backend.index.lexical import tokenize
from backend.types import TableRow

WORD_RE = re.compile(r"[\w'’-]+")  # a word with its apostrophes and hyphens ("Wayne's", "Jean-Luc")
QUESTION_WORDS = {"mani", "much", "how", "what", "which", "when", "who", "whom", "whose", "where", "why"}


def content_tokens(text: str) -> set[str]:
    return set(tokenize([text])[0])


def content_tokens_each(texts: list[str]) -> list[set[str]]:
    """content_tokens of each text, in one tokenizer call (a call per word costs ~25 us each)."""
    return [set(tokens) for tokens in tokenize(texts)] if texts else []


BRACKETED_RE = re.compile(r"\([^()]*\)")


def row_label(row: TableRow | None) -> str:
    """A table row's label, its first cell's value ("Operating expenses" of the row whose cells are
    column 1: Operating expenses, 2019: 261,264, ...); "" for a row without cells (or no row)."""
    return row.label if row is not None else ""


def named_label(label: str, words: set[str]) -> bool:
    """Does a question whose content tokens are `words` write every word of a table row's label (and
    the label hold a word, not only figures)? What the label says in brackets qualifies it and need
    not be written: "Gross profit (in thousands)", "Deferred tax assets (see Note 16)", "Other items(1)"."""
    label = BRACKETED_RE.sub(" ", label)
    tokens = content_tokens(label) - QUESTION_WORDS
    return bool(tokens) and any(c.isalpha() for c in label) and tokens <= words
