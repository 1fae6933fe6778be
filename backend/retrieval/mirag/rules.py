"""Rules for MI-RAG's prompts (appendix C), the offline answers of tasks.py: the reasoning record, the
query expansion and the follow-up query generation, as deterministic rules over the evidence the
retriever hands in.

- mirag_record (prompt 4, "summarize correct and relevant information"): the record is the best
  facts of the newly retrieved knowledge, one line per fact, "[unit id] sentence": from each of
  the strongest units its best sentence not already cited, then the next best, up to max_facts.
- mirag_expand (prompt 2, question + reasoning record): the question plus the bridge terms of
  the latest record: names and titles in the cited facts that the question does not contain.
  "Where was the director of Glass Harbor born?" with the fact "Glass Harbor is a 1987 film
  directed by Maren Oduya." expands to "... born? Maren Oduya".
- mirag_generate (prompt 3, "two follow-up questions ... for additional information"): one
  query per bridge term not searched yet, made of the term and the words of the question the
  fact it came from does not cover ("Maren Oduya born").
Bridge terms that are the titles of knowledge-base pages a fact names (the retriever finds them
with titles.py's title index and hands them in with the fact) come first, then the rest by
score: a follow-up that names a page finds it, while a capitalised run may be a date, a nation or a
piece of a name (bench/RESULTS.md#stages).

What it does not do: paraphrase, answer the question (the reader does), or use any knowledge
that is not in the facts.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from backend.llm.text import QUESTION_WORDS, content_tokens
from backend.index.texts import strip_qualifier  # "Kiss and Tell (1945 film)" is written "Kiss and Tell"

MAX_EXPANSION_TERMS = 3
# Capitalised runs, allowing lower-case particles inside names ("University of Kansas",
# "Leonardo da Vinci"), and quoted titles.
NAME_SPAN_RE = re.compile(
    r"[A-Z][\w'’.&-]*(?:\s+(?:(?:of|de|da|di|del|der|van|von|la|le|du|y|bin)\s+)*[A-Z0-9][\w'’.&-]*)*"
)
QUOTED_RE = re.compile(r"[\"“]([^\"”]{2,80})[\"”]")
SENTENCE_END_RE = re.compile(r"(?<=[a-z0-9])(?<!\bSt)(?<!\bDr)(?<!\bMt)(?<!\bJr)(?<!\bSr)(?<!\bMr)(?<!\bMs)\.\s+")
ADJECTIVE_RE = re.compile(r"^[A-Z][a-z]+(?:ian|an|ese|ish|ch|ic|i)$")
MONTHS = {
    "january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
    "november", "december",
}
LEADING_STOP = {"the", "a", "an", "in", "on", "at", "it", "he", "she", "they", "this", "these", "those", "his", "her",
                "its", "their", "after", "before", "during", "when", "while", "as", "for", "from", "by", "with", "and"}


@functools.lru_cache(maxsize=8192)
def _tokens(text: str) -> frozenset[str]:
    # Memoised: the rules look at the same words many times (a pure function of the text).
    return frozenset(content_tokens(text))


def _clean_span(span: str) -> str:
    words = span.strip(" .,;:'’\"").split()
    while words and words[0].lower() in LEADING_STOP:
        words = words[1:]
    return " ".join(words).strip(" .,;:'’\"")


def candidate_terms(text: str) -> list[str]:
    """Names and titles in a fact, in reading order, each once: capitalised runs and quoted titles."""
    spans: list[tuple[int, str]] = [(m.start(1), m.group(1).strip()) for m in QUOTED_RE.finditer(text)]
    for m in NAME_SPAN_RE.finditer(text):
        # A run may cross a sentence end ("... by Maren Oduya. It follows"): split it there.
        offset = m.start()
        for piece in SENTENCE_END_RE.split(m.group(0)):
            span = _clean_span(piece)
            start = text.find(span, offset) if span else offset
            after = text[offset + len(piece):].split(None, 1)
            offset += len(piece) + 1
            if not span or not any(ch.isalpha() for ch in span) or span.split()[0].lower() in MONTHS and all(
                w.isdigit() for w in span.split()[1:]
            ):
                continue  # "March", "April 1952": dates are not bridge entities
            if " " not in span:
                # "Land surface temperature ...": any word is capitalised at a sentence start.
                if not text[:start].rstrip() or text[:start].rstrip()[-1] in ".!?:;-•–\"“":
                    continue
                # "American comedy film": a nationality adjective, not a name.
                if ADJECTIVE_RE.match(span) and after and after[0][:1].islower() and _tokens(after[0]):
                    continue
            spans.append((m.start(), span))
    out: list[str] = []
    for _, span in sorted(spans, key=lambda s: s[0]):
        if span not in out:
            out.append(span)
    return out


def bridge_terms(facts: list[dict[str, Any]], question: str, exclude: list[str] | tuple[str, ...] = ()) -> list[str]:
    """Terms of the facts (best first) that the question and `exclude` do not already contain,
    best first: the pages the facts name (their titles without a trailing qualifier), then the
    rest; each group by score: a term scores by the rank of the facts that name it, multi-word
    names twice."""
    known = set(_tokens(question))
    for text in exclude:
        known |= _tokens(text)
    scores: dict[str, float] = {}
    first_seen: dict[str, int] = {}
    spelled: dict[str, str] = {}
    paged: set[str] = set()
    for rank, fact in enumerate(facts):
        pages = [strip_qualifier(page).strip() for page in fact.get("pages", [])]
        for term in [*pages, *candidate_terms(fact.get("text", ""))]:
            tokens = _tokens(term)
            if not tokens or tokens <= known:
                continue
            key = " ".join(sorted(tokens))
            weight = (2.0 if len(term.split()) > 1 else 1.0) / (1 + rank)
            scores[key] = scores.get(key, 0.0) + weight
            first_seen.setdefault(key, len(first_seen))
            spelled.setdefault(key, term)
            if term in pages:
                paged.add(key)
    ranked = sorted(scores, key=lambda k: (k not in paged, -scores[k], first_seen[k]))
    # A term inside a better one ("Oduya" in "Maren Oduya") adds nothing.
    out: list[str] = []
    for key in ranked:
        if any(set(key.split()) <= set(k.split()) for k in (" ".join(sorted(_tokens(t))) for t in out)):
            continue
        out.append(spelled[key])
    return out


def open_words(question: str, fact_text: str) -> list[str]:
    """Words of the question (as written) that the fact does not cover: what is still asked."""
    covered = _tokens(fact_text)
    out: list[str] = []
    for word in re.findall(r"[\w'’-]+", question):
        tokens = _tokens(word)
        if tokens and not tokens & covered and not tokens & QUESTION_WORDS and word not in out:
            out.append(word)
    return out


def _fact_of(term: str, facts: list[dict[str, Any]]) -> dict[str, Any]:
    tokens = _tokens(term)
    return next((f for f in facts if tokens <= _tokens(f.get("text", ""))), facts[0])


def record(payload: dict[str, Any]) -> dict[str, Any]:
    """payload: question, knowledge [{id, score, sentences [{id, text, score}]}] best unit first,
    known [sentence ids already in earlier records], max_facts. Returns {record, facts}."""
    known = set(payload.get("known", []))
    max_facts = int(payload.get("max_facts", 3))
    per_unit: list[list[dict[str, Any]]] = []
    for unit in payload.get("knowledge", []):
        fresh = [s for s in unit.get("sentences", []) if s["id"] not in known and s.get("text", "").strip()]
        fresh.sort(key=lambda s: (-float(s.get("score", 0.0)), s["id"]))
        if fresh:
            per_unit.append(fresh)
    picked: list[dict[str, Any]] = []
    # Breadth first: the best sentence of each unit (the strongest of those first) before a second
    # sentence of any unit, so one long unit cannot fill the record.
    depth = 0
    while len(picked) < max_facts and any(len(u) > depth for u in per_unit):
        layer = [u[depth] for u in per_unit if depth < len(u)]
        layer.sort(key=lambda s: -float(s.get("score", 0.0)))  # stable: unit order breaks ties
        picked += layer[: max_facts - len(picked)]
        depth += 1
    lines = [f"[{s['id']}] {' '.join(s['text'].split())}" for s in picked]
    return {"record": "\n".join(lines), "facts": [s["id"] for s in picked]}


def expand(payload: dict[str, Any]) -> dict[str, Any]:
    """payload: question, record, facts [{id, text}] of the latest record. Returns {query}."""
    question = payload["question"].strip()
    terms = bridge_terms(payload.get("facts", []), question)[:MAX_EXPANSION_TERMS]
    return {"query": f"{question} {' '.join(terms)}".strip()}


def generate(payload: dict[str, Any]) -> dict[str, Any]:
    """payload: question, records [str], facts [{id, text}] of the latest record, asked [queries
    already searched], n. Returns {analysis, queries}."""
    question = payload["question"].strip()
    facts = payload.get("facts", [])
    n = int(payload.get("n", 2))
    asked = [q.lower() for q in payload.get("asked", [])]
    terms = bridge_terms(facts, question)
    queries: list[str] = []
    for term in terms:
        if len(queries) >= n:
            break
        if any(term.lower() in a for a in asked):
            continue
        rest = open_words(question, _fact_of(term, facts).get("text", ""))
        query = " ".join([term, *rest])
        if query.lower() not in asked and query not in queries:
            queries.append(query)
    if not facts:
        analysis = "No facts found yet; the question is searched as asked."
    else:
        still = open_words(question, " ".join(f.get("text", "") for f in facts))
        analysis = (
            f"The records cite {len(facts)} fact(s) naming {', '.join(terms[:4]) or 'nothing new'}; "
            f"not covered yet: {' '.join(still) or 'nothing'}."
        )
    return {"analysis": analysis, "queries": queries}
