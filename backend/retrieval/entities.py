"""Named entities in text, shared by the strategies that read names out of questions and evidence:
`entity_spans` (quoted strings and capitalised word runs), `bridge_entities` (the names a unit
writes that a subtask does not: the candidates for the entity a hop leads to), `compose` (a
dependent subtask with its bridge filled in) and `content_tokens`, memoised. FiF's rules, MMGraphRAG
and strata read them.

Not here: deciding what to do with a name (the strategies), or matching document titles (titles.py).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from backend.llm.text import QUESTION_WORDS, WORD_RE
from backend.llm.text import content_tokens as _content_tokens

PLACEHOLDER_RE = re.compile(r"\((?:i|ii|iii|iv|v|\d)\)")
CONNECTOR = r"(?:of|and|the|de|la|le|du|des|von|van|der|den|di|da|del|y|&|for|on|at|in)"
# A capitalised word; a dot only inside it ("U.S") or after a one-letter initial ("Roger O. Egeberg"),
# so that a name never runs on into the next sentence.
CAP_WORD = r"(?:[A-Z]\.(?=\s+[A-Z])|[A-Z][\w'’\-]*(?:\.[A-Za-z][\w'’\-]*)*)"
SPAN_RE = re.compile(rf"\"[^\"]+\"|“[^”]+”|{CAP_WORD}(?:\s+(?:{CONNECTOR}\s+)*{CAP_WORD})*")
# Capitalised words that start a sentence or a question without naming anything.
LEADING_WORDS = {
    "what", "which", "who", "whom", "whose", "when", "where", "why", "how", "the", "a", "an", "in", "on", "at", "this",
    "that", "these", "those", "is", "was", "are", "were", "did", "does", "do", "it", "he", "she", "they", "his", "her",
    "their", "its", "there", "after", "before", "during", "for", "from", "by", "with", "as", "and", "or", "but", "if",
    "since", "although", "while", "also", "both", "find", "retrieve", "identify", "aside", "besides", "according",
    "name", "of", "to", "has", "have", "had", "can", "could", "will", "would", "should", "may", "be", "being", "been",
}
NOT_NAMES = {
    "january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november",
    "december", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
}
ACRONYM_RUN_RE = re.compile(r"[A-Z][\w'’-]*(?:,?\s+(?:(?:of|the|and|for|de|&)\s+)*[A-Z][\w'’-]*)+")
SENTENCE_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"“(])")


@lru_cache(maxsize=1 << 16)
def _tokens(text: str) -> frozenset[str]:
    return frozenset(_content_tokens(text))


def content_tokens(text: str) -> set[str]:
    """Stemmed content words (the BM25 tokenizer), memoised: the same evidence is re-read at every
    decision, and tokenizing dominated the agent's time."""
    return set(_tokens(text))


def entity_spans(text: str) -> list[str]:
    """Named entities of a text: quoted strings and capitalised word runs (inner connectors
    such as 'of' and 'and' allowed), leading question/function words dropped, in text order."""
    out: list[str] = []
    for m in SPAN_RE.finditer(text):
        span = m.group(0).strip("\"“” ")
        words = span.split()
        while words and words[0].lower().strip("'’") in LEADING_WORDS:
            words = words[1:]
        while words and re.fullmatch(CONNECTOR, words[-1].lower()):
            words = words[:-1]
        span = " ".join(words).strip(" ,.;:")
        if span and content_tokens(span) - QUESTION_WORDS and span not in out:
            out.append(span)
    return out


def query_terms(text: str) -> tuple[set[str], list[frozenset[str]]]:
    """(content tokens, token sets of its named entities) of a subtask; question words and
    placeholders left out."""
    text = PLACEHOLDER_RE.sub(" ", text)
    tokens = content_tokens(text) - QUESTION_WORDS
    spans = [frozenset(content_tokens(s) & tokens) for s in entity_spans(text)]
    return tokens, list(dict.fromkeys(s for s in spans if s))


def compose(text: str, entity: str | None, prerequisite: str = "") -> str:
    """A dependent subtask with its prerequisite's answer filled in: the '(i)' placeholder, else the
    head phrase it shares with the prerequisite ('the director'), else the entity in front."""
    if not entity:
        return PLACEHOLDER_RE.sub("", text).strip()
    if PLACEHOLDER_RE.search(text):
        return re.sub(r"\s+", " ", PLACEHOLDER_RE.sub(entity, text, count=1)).strip()
    words = text.split()
    pre = [w.lower().strip(",.?\"“”") for w in prerequisite.split()]
    best: tuple[int, int, int] | None = None  # (content words, start, end) of the longest shared phrase
    for i in range(len(words)):
        for j in range(i + 1, len(words) + 1):
            phrase = [w.lower().strip(",.?\"“”") for w in words[i:j]]
            n = len(phrase)
            if not any(pre[k:k + n] == phrase for k in range(len(pre) - n + 1)):
                break
            n_content = len(content_tokens(" ".join(phrase)) - QUESTION_WORDS)
            if n_content and (best is None or (n_content, j - i) > (best[0], best[2] - best[1])):
                best = (n_content, i, j)
    if best is not None:
        _, i, j = best
        start = i - 1 if i > 0 and words[i - 1].lower() in ("the", "a", "an", "this", "that") else i
        return " ".join(words[:start] + [entity] + words[j:])
    return f"{entity} {text}".strip()


@lru_cache(maxsize=1 << 16)
def _acronyms(text: str) -> frozenset[str]:
    """Lower-cased initials of each run of capitalised words (connectors and a comma inside the
    run skipped: "University of Nevada, Las Vegas" -> "unlv"), for runs of 2 to 6 words."""
    out = set()
    for m in ACRONYM_RUN_RE.finditer(text):
        initials = [w[0] for w in re.findall(r"[A-Z][\w'’-]*", m.group(0))]
        if 2 <= len(initials) <= 6:
            out.add("".join(initials).lower())
    return frozenset(out)


NEAR_WORDS = 3  # "beside a name": this many words either side


def _subjects_own(name: str, toks: set[str], known: set[str]) -> bool:
    """Whether a name is the subtask's own named entity written another way ("Randall Wade
    Cunningham" for "Randall Cunningham"): all its words are the subtask's names, or it starts with
    one and most of its words are. A relative who shares only the family name ("Vashti
    Cunningham", "the daughter of Randall Cunningham") is another entity."""
    if toks <= known:
        return True
    return bool(content_tokens(name.split()[0]) & known) and len(toks & known) * 2 >= len(toks)


def bridge_entities(subtask: str, unit: dict[str, Any], limit: int = 5) -> list[str]:
    """Entities a unit names that the subtask does not: the candidates for the subtask's answer.

    The unit's own page title comes first when the subtask does not name it (the page is then
    what the subtask describes: "the youngest daughter of X" finds her page); then the titles of
    the documents the unit links to (they are navigable) and other capitalised names, each ranked
    by how much of what the subtask asks the sentence around it holds (its relation and kind words).

    A name is the subtask's own, and skipped, when it is the subtask's named entity written another
    way (`_subjects_own`). A name that carries the subtask's other words ("Bishop Gorman High
    School" for "the community where X's high school is located", "Richmond River" for "the river
    the town is on") names the kind of thing the subtask asks about: it is what the hop is looking
    for."""
    tokens, spans = query_terms(subtask)
    known = set().union(*spans)
    asked = {t for t in tokens - known if not t.isdigit()}  # the subtask's kinds and relations
    own = content_tokens(unit.get("title", ""))
    text = unit.get("text", "")
    sentences = SENTENCE_RE.split(text) or [text]
    links = [t for t in unit.get("links", []) if t]
    # (not of the kind asked, -score, -near, -subject, first offset, name)
    scored: list[tuple[bool, float, int, int, int, str]] = []
    seen: set[str] = set()
    title = unit.get("title", "")
    first_names: list[str] = []
    if own and len(own & tokens) * 2 < len(own):
        first_names.append(title)
        seen.add(title.lower())
    for name in links + entity_spans(text):
        toks = content_tokens(name)
        key = name.lower()
        if not toks or key in seen or _subjects_own(name, toks, known) or toks <= own or key in NOT_NAMES:
            continue  # nothing, a repeat, or (mostly) a name the subtask or the page already is
        seen.add(key)
        around = [content_tokens(s) - toks for s in sentences if name.lower() in s.lower()]
        # How much of what the subtask asks (its kinds, relations and numbers) the sentence around the name
        # covers, the name's own words left out; then, to break ties, how much of the subtask's own
        # names. On the subject's own page every sentence is about the subject ("He played college
        # football at Oregon"), so its name marks no sentence out.
        overlap = max((len(s & (tokens - known)) for s in around), default=0) / max(1, len(tokens))
        subject = max((len(s & known) for s in around), default=0)
        linked = name in links
        if not around and not linked:
            continue
        first = text.lower().find(name.lower())
        # Several names in one sentence ("the brother of Sam Cunningham and the father of ... high
        # jumper Vashti Cunningham"): the one written beside the subtask's words comes first.
        beside = set()
        if first >= 0:
            words = WORD_RE.findall(text[:first])[-NEAR_WORDS:] + WORD_RE.findall(text[first + len(name):])[:NEAR_WORDS]
            beside = content_tokens(" ".join(words)) - toks
        near = len(beside & (tokens - known))
        score = overlap + (0.5 if linked else 0.0) + (0.15 if len(name.split()) > 1 else 0.0) - 0.3 * bool(toks & known)
        scored.append((not toks & asked, -score, -near, -subject, first if first >= 0 else len(text), name))
    # The kind asked about first, then by score, the subtask's words beside it, the subject's
    # sentence, the first occurrence.
    scored.sort()
    return (first_names + [name for *_, name in scored])[:limit]
