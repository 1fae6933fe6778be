"""Rules for LILaC's query prompts (appendix F): QUERY DECOMPOSITION and MODALITY SELECTION
(the offline answer of tasks.DECOMPOSE).

Decomposition follows the prompt's guidelines as rules: the smallest set (1-5) of subqueries,
each aimed at one component; every content word of the question appears in some subquery;
prerequisites first (a relative clause or an "X of Y" phrase that names the bridge entity
comes before the clause that asks about it; so does a named thing's role written in front of its
name, "the Green performer"); comparisons ("A or B", "both A and B") give one
subquery per compared entity with the compared attribute; no split when nothing calls for one.
Modality selection applies the prompt's heuristics (numeric totals, percentages, year-by-year
figures -> table; appearance, colours, logos, charts -> figure; everything else -> text).

What it does not do: resolve a bridge entity (that needs the evidence; FiF and MI-RAG do it
from what they found) or paraphrase.
"""

from __future__ import annotations

import re
from typing import Any

from backend.llm.text import QUESTION_WORDS, content_tokens

MAX_SUBQUERIES = 5
# A name: capitalised words, an ampersand between two of them ("Filthy Rich & Catflap", "Procter & Gamble").
NAME_WORD = r"[A-Z0-9][\w'’.&-]*"
NAME = NAME_WORD + r"(?:\s+(?:&\s+)?" + NAME_WORD + ")*"
RELATIVE_RE = re.compile(r"\s(who|whom|whose|which|that|where)\s", re.I)
# "the director of the film X", "the capital of the country that ..."
OF_BRIDGE_RE = re.compile(
    r"\b((?i:the|a|an|this|its|his|her|their)\s+(?:[a-z-]+\s+){0,2}?[a-z-]+)\s+(of|for|from|by|in)\s+"
    r"((?:the\s+)?(?:[\w'’.-]+\s+){0,6}?(?:\"[^\"]+\"|“[^”]+”|" + NAME + "))",
)
# An of-phrase that ends in a number names a time or a place in the document, not an entity.
NUMBER_NAME_RE = re.compile(r"(?:^|\s)[$€£]?\d[\d,.]*%?$")
# "the Green performer", "the Blue Monday record label": a named work or thing, then the role of the
# entity the question is about (a Wikidata relation written as a description, as MuSiQue composes
# its questions). A capitalised word that is a demonym ("the British author") is no name.
ROLE_NOUNS = (
    "performer|singer|band|director|author|writer|screenwriter|creator|producer|founder|owner|developer|publisher|"
    "manufacturer|composer|lyricist|artist|designer|architect|distributor|operator|record label|label|network|"
    "builder|inventor|illustrator|narrator|editor|presenter|headquarters|parent company"
)
ATTRIBUTIVE_RE = re.compile(
    r"\b(?i:the)\s+(?P<name>\"[^\"]+\"|“[^”]+”|" + NAME_WORD + r"(?:(?:\s+(?:of|the|and|de|&))*\s+" + NAME_WORD + ")*?)"
    r"\s+(?P<role>" + ROLE_NOUNS + r")\b"
)
# "When was the institute that owned The Collegian founded?": a question whose main clause waits
# for its verb ("When was the institute ... founded") ends with that verb, after the relative clause.
AWAITS_VERB_RE = re.compile(
    r"^(?i:(?:in\s+)?(?:when|where|what\s+year|which\s+year|what|which|who|how)\s+"
    r"(?:was|were|is|are|did|does|do|has|have|had)\s)"
)
TRAILING_VERBS = frozenset((
    "born founded established formed created released built opened published written located launched introduced "
    "discovered died made produced directed designed named held signed elected married buried started begun began "
    "completed ended closed incorporated headquartered based form die start end begin open close win join become "
    "leave move retire marry found establish release debut premiere air premiered aired debuted"
).split())
AUXILIARIES = frozenset("is was are were be been being has have had".split())
DEMONYM_RE = re.compile(r"^[A-Z][a-z]+(?:an|ish|ese|ch|i)$")
COMPARE_OR_RE = re.compile(
    r"^(?P<pre>.*?)(?P<a>(?:\"[^\"]+\"|[A-Z0-9][\w'’.&-]*(?:\s+(?:of|the|and|de|la|van|von|&|[A-Z0-9][\w'’.&-]*))*)(?:\s*\([^)]*\))?)"
    r"\s*,?\s+or\s+(?P<b>(?:\"[^\"]+\"|[A-Z0-9][\w'’.&-]*(?:\s+(?:of|the|de|la|van|von|&|[A-Z0-9][\w'’.&-]*))*)(?:\s*\([^)]*\))?)"
    r"(?P<post>.*)$"
)
BOTH_RE = re.compile(
    r"^(?P<pre>(?:are|were|is|was|do|did|does|have|has)\s+(?:both\s+)?)(?P<a>.+?)\s+and\s+(?P<b>.+?)\s+(?P<post>(?:both|each|the same|from|of|in|located|born|considered|known|an?|American|British)\b.*)$",
    re.I,
)
TABLE_CUES = re.compile(
    r"\b(how (many|much)|total|sum|percentage|percent|%|ratio|average|median|growth|increase|decrease|change|"
    r"year[- ]over[- ]year|per (year|quarter|month)|revenue|income|expenses?|profit|margin|amount|number of|"
    r"rate|share|price|cost|fiscal|quarter(ly)?|balance|assets|liabilities|cash)\b",
    re.I,
)
FIGURE_CUES = re.compile(
    r"\b(look(s)? like|colou?r|logo|image|photo|picture|figure|fig\.|chart|graph|plot|diagram|map|icon|shown|"
    r"drawn|illustrat\w+|visual|appearance|shape|slide)\b",
    re.I,
)


def modality_of(text: str) -> str:
    """The LILaC modality heuristics: figure cues first (explicit), then table cues, else text."""
    if FIGURE_CUES.search(text):
        return "figure"
    if TABLE_CUES.search(text):
        return "table"
    return "text"


def _clean(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip(" ,;:?.")
    return text


def _comparison(q: str) -> list[str] | None:
    m = COMPARE_OR_RE.match(q)
    if m and (m.group("pre").strip() or m.group("post").strip()):
        attr = _clean(f"{m.group('pre')} {m.group('post')}")
        attr = re.sub(r"^(which|who|what)\s+(one\s+)?(is|was|are|were|has|had|did|does)?\s*", "", attr, flags=re.I)
        return [_clean(f"{m.group('a')} {attr}"), _clean(f"{m.group('b')} {attr}")]
    m = BOTH_RE.match(q)
    if m:
        post = _clean(m.group("post"))
        post = re.sub(r"^(both|each)\s+", "", post, flags=re.I)
        return [_clean(f"{m.group('a')} {post}"), _clean(f"{m.group('b')} {post}")]
    return None


def _relative_bridge(q: str) -> list[str] | None:
    """'What position was held by the woman who portrayed X in Y' ->
    ['the woman who portrayed X in Y', 'What position was held by the woman']."""
    for m in RELATIVE_RE.finditer(q):
        start = m.start()
        before = q[:start]
        # The head noun phrase: the last 1-4 words before the pronoun, from its last determiner ("the
        # nickname of the city where ...": the clause is the city's, and the nickname is asked of it).
        head = re.search(
            r"(\b(?i:the|a|an|this|that)\s+(?:(?!(?i:the|a|an|of)\s)[\w'’-]+\s+){0,3}[\w'’-]+|\b[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)*)$",
            before.strip()
        )
        if head is None or len(before.split()) < 2 or _clean(before).lower() == head.group(1).lower():
            continue  # a subject relative ("The manager who ... managed X"): its end is unknown without a parser
        clause = q[m.end():]
        if len(clause.split()) < 2:
            continue
        main = _clean(before)
        words = clause.split()
        if AWAITS_VERB_RE.match(main) and len(words) > 2 and words[-1].lower().strip("?.,") in TRAILING_VERBS \
                and words[-2].lower() not in AUXILIARIES:  # "... where X is located": the clause's own verb
            main, clause = f"{main} {words[-1]}", " ".join(words[:-1])
        bridge = _clean(f"{head.group(1)} {m.group(1)} {clause}")
        main = _clean(main)
        if len(content_tokens(main) - QUESTION_WORDS) == 0:
            continue
        return [bridge, main]
    return None


def _asks_beyond(main: str, phrase: str) -> bool:
    """Whether the question left after taking out a bridge asks about something beyond the phrase
    that stands for the bridge (a content word that is neither the phrase's nor a question word)."""
    return bool(content_tokens(main) - content_tokens(phrase) - QUESTION_WORDS)


def _attributive_bridge(q: str) -> list[str] | None:
    """'Who is the spouse of the Green performer' -> ['the performer of Green', 'Who is the spouse
    of the performer']: the named thing's role is the bridge, asked first; the question then asks
    about whoever holds it (FiF composes the found name into 'the performer')."""
    m = ATTRIBUTIVE_RE.search(q)
    if m is None or DEMONYM_RE.match(m.group("name")):
        return None
    role, name = m.group("role"), re.sub(r"['’]s$", "", m.group("name"))  # "the Stanley Clarke Band's performer"
    main = _clean(f"{q[: m.start()]}the {role}{q[m.end():]}")
    if not _asks_beyond(main, role):
        return None  # nothing is asked about the role's holder beyond the phrase itself
    return [f"the {role} of {name}", main]


def _of_bridge(q: str) -> list[str] | None:
    """'The director of the romantic comedy "Big Stone Gap" is based in what city' ->
    ['the director of the romantic comedy "Big Stone Gap"', 'The director is based in what city']."""
    m = next((m for m in OF_BRIDGE_RE.finditer(q) if not NUMBER_NAME_RE.search(m.group(3))), None)
    if not m:
        return None  # "the percentage change in X from 2018 to 2019": a year or a page is no bridge
    rest = _clean(q[: m.start()] + m.group(1) + q[m.end():])
    bridge = _clean(m.group(0))
    if not _asks_beyond(rest, m.group(1)):
        return _inner_of_bridge(q, m)  # nothing is asked beyond the phrase: a chain ("the sibling of the author of X")?
    return [bridge, rest]


INNER_OF_RE = re.compile(
    r"\b(?i:the)\s+(?P<noun>[a-z-]+(?:\s+of\s+[a-z-]+|\s+[a-z-]+)?)\s+of\s+(?:the\s+)?(?:(?!of\b)[a-z-]+\s+){0,2}?"
    r"(?P<name>\"[^\"]+\"|“[^”]+”|" + NAME + ")"
)


def _inner_of_bridge(q: str, outer: re.Match) -> list[str] | None:
    """'Who is the sibling of the author of Kapalkundala' -> ['the author of Kapalkundala', 'Who is
    the sibling of the author']: in a chain of of-phrases the innermost one, ending at the name,
    is the first hop, and the question is then asked of its holder."""
    m = INNER_OF_RE.search(outer.group(3))
    if m is None:
        return None
    start = outer.start(3) + m.start()
    main = _clean(f"{q[:start]}the {m.group('noun')}{q[outer.start(3) + m.end():]}")
    if not _asks_beyond(main, m.group("noun")):
        return None
    return [_clean(m.group(0)), main]


def decompose(question: str) -> list[dict[str, Any]]:
    q = _clean(question)
    parts: list[str] | None = None
    dependent = False
    if (parts := _comparison(q)) is None:
        parts = _attributive_bridge(q) or _relative_bridge(q) or _of_bridge(q)
        dependent = parts is not None
    if not parts:
        parts = [q]
    # Remove redundancy: drop empty or duplicate subqueries.
    seen: set[str] = set()
    uniq: list[str] = []
    for p in parts:
        key = p.lower()
        if p and key not in seen and content_tokens(p):
            seen.add(key)
            uniq.append(p)
    parts = uniq[:MAX_SUBQUERIES] or [q]
    # Coverage: every content word of the question appears in some subquery.
    covered = set().union(*(content_tokens(p) for p in parts))
    missing = [w for w in re.findall(r"[\w'’-]+", q) if (content_tokens(w) - QUESTION_WORDS) and not content_tokens(w) <= covered]
    if missing:
        parts[-1] = _clean(parts[-1] + " " + " ".join(dict.fromkeys(missing)))
    out = []
    for i, p in enumerate(parts):
        deps = list(range(i)) if dependent and i > 0 else []
        out.append({"text": p, "modality": modality_of(p), "depends_on": deps})
    return out


def decompose_answer(question: str) -> dict[str, Any]:
    """The decomposition task's answer: {"subqueries": [...], "reason": ...}."""
    subs = decompose(question)
    kind = "single" if len(subs) == 1 else ("bridge" if any(s["depends_on"] for s in subs) else "parallel")
    return {"subqueries": subs, "reason": f"{kind} decomposition by rules ({len(subs)} subquer{'y' if len(subs) == 1 else 'ies'})"}
