"""Documents a question names: "How has Apple's total net sales changed over time?" is about
Apple's filings, whatever the other filings say about net sales.

A document's names are the words that are its own: its NAMES_PER_DOC words of highest
tf x idf (units of the document using the word x log(documents / documents using it)), among the
words at least NAME_MIN_COUNT of its units use that at most MAX_DOC_SHARE of the documents use.
They are counted from the components layer's BM25 postings (its index texts, its stemmed tokens),
not by tokenising every text again, so the first question over a large workspace does not wait for
them. In a pile of 10-Q filings "Apple", "iPhone" and "NVIDIA" are names (NVIDIA's cover names it only in a
logo); "Services" or "Center", which several companies' filings use, are not. A question word
names documents only when it is capitalised in the question, not the first word of a sentence
("... in FY 2021? Answer in millions.") and not the word of a page reference ("in Page 5"), as
names are written.

A document is also named by its identity: the words of its file name and title ("ADOBE_2015_10K.pdf"
names Adobe's filing for 2015), those that at most MAX_DOC_SHARE of the documents' identities use
("10K" names none in a pile of 10-Ks). A question names by its capitalised words, by two or three of
them run together ("Best Buy" -> BESTBUY), by an acronym that begins a name ("JPM" -> JPMORGAN,
"MGM" -> MGMRESORTS) and by the years it writes ("FY2015", "2023 Q2"). The documents it names most
come first, a year counting after the words; of two named as often, the one whose own file name or
title carries more of the names.

Where it acts (stage `named_documents`, backend/stages/__init__.py): the named documents' units go
first in the method's own order, then the rest, on the profile kinds where names decide:
- `template`: documents that share one boilerplate differ by whose they are (issuer, period), and
  a question names whose it asks about; the filings are interchangeable to a similarity score;
- `long_separate`: long documents that do not lead to one another (reports, papers, filings,
  manuals). A question picks one by name ("for COSTCO in FY2021", "RAPTOR", "Lufthansa"), and the
  other reports say the same things about their own subjects.
Elsewhere nothing changes: in a web of pages the second hop of a bridge question is a document the
question does not name, and in a pile of one-table reports the capitalised words are table rows
("Deferred charges", "EBITDA"), whose documents are look-alikes (bench/RESULTS.md#stages).
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from backend.index.lexical import tokenize
from backend.stages.references import PAGE_RE
from backend.types import RankStep, ScoredNode, Trace

NAMES_PER_DOC = 25  # a document's names: its words of highest count x log(documents / documents using it)
NAME_MIN_COUNT = 3
MAX_DOC_SHARE = 0.5  # a word used in more than half the documents names none of them
WORD = re.compile(r"[^\W_]+", re.UNICODE)
SENTENCE_START = re.compile(r"^\W*$|.*[.?!:;\n][\s\"'`(\[]*$", re.DOTALL)  # nothing but a sentence end before the word
MIN_WORD_CHARS = 3


YEAR = re.compile(r"(?<!\d)(?:19|20)\d{2}(?!\d)")
IDENTITY_PART = re.compile(r"[^\W\d_]+|\d+", re.UNICODE)  # letters or digits: "2021Q1" -> 2021, Q1
MIN_ACRONYM_CHARS = 3
MAX_RUN_WORDS = 3  # "American Water Works" -> americanwaterworks


@dataclass(frozen=True, slots=True)
class DocumentNames:
    """Name word (BM25's stemmed token) -> the documents it names: from the words their units use
    (by_word) and from their file names and titles (by_identity)."""

    by_word: dict[str, tuple[str, ...]]
    by_identity: dict[str, tuple[str, ...]] = field(default_factory=dict)


def document_names(corpus) -> DocumentNames:
    """The corpus's name words, counted once per loaded corpus (it is read-only)."""
    return corpus.derived(_count_names)


def identity_words(file_name: str, title: str) -> set[str]:
    """The stemmed words of a document's file name (without its extension) and title, split where
    letters meet digits or anything else ("JPMORGAN_2021Q1_10Q.pdf" -> jpmorgan, 2021)."""
    stem = file_name.rsplit(".", 1)[0] if "." in file_name else file_name
    words = IDENTITY_PART.findall(f"{stem} {title}")
    return {t for tokens in (tokenize(words) if words else []) for t in tokens if len(t) >= MIN_WORD_CHARS or YEAR.fullmatch(t)}


def _identity_names(corpus) -> dict[str, tuple[str, ...]]:
    """Identity word -> the documents whose file name or title carries it, for the words at most
    MAX_DOC_SHARE of the documents carry."""
    docs: dict[str, list[str]] = defaultdict(list)
    for doc_id, doc in corpus.documents.items():
        for word in identity_words(doc.file_name, doc.title or ""):
            docs[word].append(doc_id)
    limit = MAX_DOC_SHARE * max(len(corpus.documents), 1)
    return {w: tuple(sorted(ds)) for w, ds in docs.items() if len(ds) <= limit}


def _count_names(corpus) -> DocumentNames:
    """Every document's names, counted from the components layer's BM25 postings: a word's count
    in a document is the number of its units that use it (index texts, BM25's stemmed tokens)."""
    comps = corpus.layers["components"]
    n_rows = len(corpus.layers["documents"].ids)
    words, spread, token, doc, count = comps.lexical.group_counts(corpus.component_doc_rows, n_rows, NAME_MIN_COUNT)
    n_docs = len(np.unique(corpus.component_doc_rows[corpus.component_doc_rows >= 0]))
    if not len(token):
        return DocumentNames({}, _identity_names(corpus))
    long_enough = np.array([len(w) >= MIN_WORD_CHARS for w in words], dtype=bool)
    keep = long_enough[token] & (spread[token] <= MAX_DOC_SHARE * n_docs)
    token, doc, count = token[keep], doc[keep], count[keep]
    weight = count * np.log(n_docs / spread[token])
    alphabetical = np.empty(len(words), dtype=np.int64)
    alphabetical[np.argsort(np.array(words, dtype=object), kind="stable")] = np.arange(len(words))
    order = np.lexsort((alphabetical[token], -weight, doc))  # per document: highest weight first, ties by word
    doc, token = doc[order], token[order]
    first = np.r_[0, np.flatnonzero(np.diff(doc)) + 1]
    rank = np.arange(len(doc)) - np.repeat(first, np.diff(np.r_[first, len(doc)]))
    top = rank < NAMES_PER_DOC
    doc_ids = corpus.layers["documents"].ids
    by_word: dict[str, list[str]] = defaultdict(list)
    for t, d in zip(token[top].tolist(), doc[top].tolist()):
        by_word[words[t]].append(doc_ids[d])
    return DocumentNames({w: tuple(sorted(ds)) for w, ds in by_word.items()}, _identity_names(corpus))


def question_names(question: str) -> dict[str, str]:
    """The question's words written as names (with a capital letter, not the first word of a
    sentence, not the word of a page reference): BM25's stemmed token -> the word as the question
    writes it ("appl" -> "Apple"). "... in FY 2021? Answer in millions." and "in Page 5" name
    nothing: a question often ends with an instruction, and pages are found by references.py."""
    text = PAGE_RE.sub(" ", question)
    matches = [m for m in WORD.finditer(text) if any(ch.isupper() for ch in m.group(0)) and not SENTENCE_START.match(text[: m.start()])]
    words = [m.group(0) for m in matches]
    out: dict[str, str] = {}
    for word, tokens in zip(words, tokenize(words) if words else [], strict=True):
        for t in tokens:
            if len(t) >= MIN_WORD_CHARS:
                out.setdefault(t, word)
    for year in YEAR.findall(text):  # "FY2015", "2023 Q2": a year names the filings of that year
        out.setdefault(year, year)
    runs = _runs(text, matches)
    for run, tokens in zip(runs, tokenize(runs) if runs else [], strict=True):
        if tokens:
            out.setdefault(tokens[0], run)
    return out


def _runs(text: str, matches: list[re.Match]) -> list[str]:
    """Two or three capitalised words in a row, run together ("Best Buy" -> "BestBuy"): a file
    name writes a name without its spaces."""
    out = []
    for i in range(len(matches)):
        for n in range(2, MAX_RUN_WORDS + 1):
            part = matches[i:i + n]
            if len(part) == n and all(text[a.end():b.start()].strip() == "" for a, b in zip(part, part[1:])):
                out.append("".join(m.group(0) for m in part))
    return out


def named_documents(corpus, question: str) -> tuple[dict[str, list[str]], set[str]]:
    """(the question's name words that name some documents, as it writes them -> those
    documents; the union of those documents)."""
    names = document_names(corpus)
    found: dict[str, list[str]] = {}
    for t, word in question_names(question).items():
        docs = set(names.by_word.get(t, ())) | set(_identity_docs(names.by_identity, t, word))
        if docs:
            found[word] = sorted(docs)
    return found, {d for docs in found.values() for d in docs}


def _identity_docs(by_identity: dict[str, tuple[str, ...]], token: str, word: str) -> list[str]:
    """The documents whose identity carries the question's name word; an acronym the question
    writes in capitals ("JPM") also names the identity words it begins ("jpmorgan")."""
    if token in by_identity:
        return list(by_identity[token])
    if word.isupper() and word.isalpha() and len(word) >= MIN_ACRONYM_CHARS:
        prefix = word.lower()
        return [d for w, docs in by_identity.items() if w.startswith(prefix) for d in docs]
    return []


def naming_strength(corpus, question: str) -> dict[str, tuple[int, int, int]]:
    """doc id -> (how many of the question's names that are not years name it, how many of its
    years do, how many of those names its own file name or title carries), for the documents the
    question names: those named most go first. A year is a weaker name than a word: "debit card
    users in India in 2015" is asked of the report on India, not of a filing for 2015; of two
    filings of the company a question names, the year picks one."""
    names = document_names(corpus)
    strength: dict[str, tuple[int, int, int]] = {}
    for t, word in question_names(question).items():
        own = set(_identity_docs(names.by_identity, t, word))
        year = YEAR.fullmatch(t) is not None
        for d in own | set(names.by_word.get(t, ())):
            words, years, by_identity = strength.get(d, (0, 0, 0))
            strength[d] = (words + (not year), years + year, by_identity + (d in own))
    return strength


def named_first(corpus, question: str, hits: list[ScoredNode], trace: Trace, corpus_kind: str = "Template corpus",
                named: tuple[dict[str, list[str]], set[str]] | None = None) -> list[ScoredNode]:
    """`hits` with the units of the documents the question names first, each part in the
    strategy's order; unchanged when it names none (or only documents the hits do not hold).
    corpus_kind: why this corpus is one where names decide, for the trace's note. named: what
    named_documents gives for the question, when the caller has it already."""
    found, docs = named if named is not None else named_documents(corpus, question)
    if not docs:
        return hits
    strength = naming_strength(corpus, question)
    first = [h for h in hits if corpus.nodes.doc_of(h.node_id) in docs]
    if not first or (len(first) == len(hits) and len({strength.get(d) for d in docs}) < 2):
        return hits
    first.sort(key=lambda h: strength.get(corpus.nodes.doc_of(h.node_id), (0, 0, 0)), reverse=True)  # stable: the strategy's order within
    rest = [h for h in hits if corpus.nodes.doc_of(h.node_id) not in docs]
    out, floor = [], float("inf")
    for h in first + rest:  # scores stay non-increasing
        floor = min(floor, h.score)
        out.append(h.model_copy(update={"score": floor}))
    files = sorted({corpus.documents[d].file_name for d in docs})
    trace.add(RankStep(label="Units of the documents the question names, first", index="names", candidates=out[:len(first)][:30]))
    trace.notes.append(
        f"{corpus_kind}: the question names {', '.join(repr(w) for w in found)}, a name of {len(files)} document(s) "
        f"({', '.join(files[:6])}{' ...' if len(files) > 6 else ''}); their units go first, those of the documents "
        f"named most (then by their file name or title) before the others."
    )
    return out
