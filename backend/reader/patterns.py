"""What the reader's rules look for in a unit's text: years, dates, numbers, names, places, the
words that open a sentence, whether a text ends its sentence and whether it is a line of code. Patterns only; what a question asks is backend/reader/questions.py."""

from __future__ import annotations

import re

YEAR_RE = re.compile(r"\b(?:19|20)\d{2}\b")
DATE_YEAR_RE = re.compile(r"\b(?:1[5-9]|20)\d{2}\b")  # the year of a date DATE_RE found ("June 25, 1887")

ENTITY_RE = re.compile(r"\b[A-Z][\w'’.-]*(?:\s+(?:(?:of|the|and|de|for|in)\s+)?[A-Z][\w'’.-]*)*")

NUMBER_RE = re.compile(r"[-−]?[$€£]?\(?\d[\d,]*(?:\.\d+)?\)?\s?(?:%|percent|million|billion|thousand|bn|m\b|k\b)?", re.I)
MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec"
MONTH_RE = re.compile(rf"(?:{MONTHS})\.?")
DATE_RE = re.compile(
    rf"\b(?:(?:\d{{1,2}}\s+)?(?:{MONTHS})\.?\s+(?:\d{{1,2}},?\s+)?\d{{4}}|(?:{MONTHS})\s+\d{{1,2}}|\d{{4}}-\d{{2}}-\d{{2}}|(?:1[5-9]|20)\d{{2}})\b"
)
NAME_RE = re.compile(r"\b((?:[A-Z]\.\s*)+[A-Z][a-zA-Z'’\-]+|[A-Z][a-zA-Z'’\-]+(?:\s+(?:[A-Z]\.\s*)?[A-Z][a-zA-Z'’\-]+)+)")
ADJECTIVE_USE_RE = re.compile(r"\s+(?!(?:of|the|and|de|for|in|is|was|are|were|has|had|who|which|that|a|an|to|on|at|by|from|with|as)\b)[a-z]")
COMPOUND_RE = re.compile(r"-[a-z]+$")

SENTENCE_OPENERS = frozenset(
    "she he it they we i you his her its their our this that these those there thus however after before in on at by "
    "from with as when while although though since during following later also then today a an the "
    # prepositions, quantifiers and participles that open a sentence ("Along with Kapaun Mt. Carmel ...")
    "along despite according among amongst between through throughout against around upon unlike besides within "
    "both each every many most some several another other originally currently formerly located based born founded".split())
FOOTNOTE_RE = re.compile(r"\(\d\)")
FOOTNOTE_LEAD_RE = re.compile(r"^\(\d{1,2}\)\s+(?=[A-Z])")  # "(2) Original Equipment Manufacturers ...": a note's label

BY_NAME_RE = re.compile(r"\bby (?:the )?([A-Z][\w'’-]+(?:\s+(?:(?:of|and|&|for)\s+)?(?:[A-Z]\.|[A-Z][\w'’-]+))*)")
PLACE_RE = re.compile(r"\b(?:in|at|from|near)\s+((?:[A-Z][\w'’-]+)(?:\s+[A-Z][\w'’-]+)*)")
# A sentence ends on a full stop, question or exclamation mark, a list item on a semicolon (a closing
# quote or bracket may follow).
ENDED_RE = re.compile(r"[.!?;][\"'”’)\]]*$")
DOTFILE_SPLIT_RE = re.compile(r"\b(?:called|named|file|directory|folder|in|to|from)\s+\.$", re.I)
CODE_LINE_RE = re.compile(r"^\s*(?:[>$%#]\s|[\w.$]+\s*(?:<-|=|->)\s|[\w.]+\([^()]*\)\s*;?\s*$)")


def ended(text: str) -> bool:
    """Whether a text ends its sentence ("... is" and "... as follows:" do not)."""
    text = text.rstrip()
    # "... written to a file called ." / "RData5 in the current directory": a split before a dot-file's name
    return bool(ENDED_RE.search(text)) and not text.endswith(":") and not DOTFILE_SPLIT_RE.search(text)


def code_line(text: str) -> bool:
    """A line of code or a command ("> help(solve)", "$ cd work", "x <- c(1, 2)")."""
    return bool(CODE_LINE_RE.match(text))
