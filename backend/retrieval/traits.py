"""Measured properties of a loaded corpus, each computed once per corpus (Corpus.derived: the
corpus is read-only). The corpus profile (backend/stages/profile.py) is chosen by them, and strata
reads them to pick its recipe.

- template_share: the fraction of sampled components whose nearest neighbour in another document
  is a near copy (cosine >= TEMPLATE_COSINE). Filings of one form share one boilerplate; reports,
  papers and wiki pages do not. On such a corpus BM25 pulls towards whichever document repeats the
  question's words (the `template` profile scores hybrids dense: TEMPLATE_ALPHA).
- mean pages per document and hop share (the fraction of components that link to or name another
  document): a web of named pages (a wiki) against piles of separate documents. A corpus of short
  separate documents (mean pages <= SHORT_DOC_PAGES, hop share < HOP_SHARE: one-table reports)
  answers each question from one document whose best direct match is the strongest signal, and
  look-alike documents pull a traversal away.
The thresholds sit between the values measured on the collections in bench/RESULTS.md#stages.
"""

from __future__ import annotations

import numpy as np

from backend.retrieval.titles import title_index
from backend.types import EdgeKind

TEMPLATE_SAMPLE = 400
TEMPLATE_COSINE = 0.95
TEMPLATE_BLOCK = 16
TEMPLATE_SHARE = 0.3  # at and above: a template corpus (bench/RESULTS.md#stages)
TEMPLATE_ALPHA = 0.0  # BM25 weight of hybrid scores on a template corpus, unless a call sets it
SHORT_DOC_PAGES = 3.0  # mean pages per document at and below which documents are short (set with strata's flat switch)
HOP_SAMPLE = 2000  # components sampled for the hop share
HOP_SHARE = 0.1  # hop share at and above which pages form a web (bench/RESULTS.md#stages)


def template_share(corpus) -> float:
    """Fraction of (up to 400 sampled) components whose nearest neighbour in another document
    is a near copy. Computed once per loaded corpus (it is read-only)."""
    return corpus.derived(_measure_template_share)


def _measure_template_share(corpus) -> float:
    comps = corpus.layers["components"]
    share = 0.0
    if len(corpus.documents) > 1 and len(comps.ids) > 1:
        docs = np.array([corpus.nodes.doc_of(i) for i in comps.ids])
        rng = np.random.default_rng(0)  # deterministic sample
        idx = rng.choice(len(comps.ids), size=min(TEMPLATE_SAMPLE, len(comps.ids)), replace=False)
        nearest = np.empty(len(idx), dtype=np.float32)
        # In blocks of sampled rows: a (400, n) similarity matrix is 2.9 GB at 1.8M components.
        for start in range(0, len(idx), TEMPLATE_BLOCK):
            rows = idx[start:start + TEMPLATE_BLOCK]
            sims = comps.dense.scores_many(comps.dense.vectors(rows))  # (n, block)
            sims[docs[rows][None, :] == docs[:, None]] = -1.0
            nearest[start:start + len(rows)] = sims.max(axis=0)
        share = float((nearest >= TEMPLATE_COSINE).mean())
    return share


def is_template_corpus(corpus, threshold: float = TEMPLATE_SHARE) -> bool:
    return template_share(corpus) >= threshold



def mean_pages(corpus) -> float:
    """Mean pages per document, counted once per loaded corpus."""
    return corpus.derived(_count_mean_pages)


def _count_mean_pages(corpus) -> float:
    docs = corpus.documents.values()
    return sum(d.pages for d in docs) / max(1, len(docs))


def hop_share(corpus) -> float:
    """Fraction of (up to 2,000 sampled) components that lead to another document of the corpus:
    a PDF link to it, or its title named in their text. A web of named pages (Wikipedia) has
    many; a pile of separate reports has few. Measured with the title index the partner walk
    uses, so a corpus whose PDFs carry no link annotations measures the same as one that does."""
    return corpus.derived(_measure_hop_share)


def _measure_hop_share(corpus) -> float:
    comps = corpus.layers["components"].ids
    if len(corpus.documents) < 2 or not comps:
        return 0.0
    linked = {e.src for e in corpus.edges.of_kind((EdgeKind.LINK,))}  # a unit with a PDF link to another document
    titles = title_index(corpus)
    rng = np.random.default_rng(0)  # deterministic sample
    sample = [comps[i] for i in rng.choice(len(comps), size=min(HOP_SAMPLE, len(comps)), replace=False)]
    hops = sum(1 for c in sample if c in linked or titles.mentioned(corpus.nodes.text_of(c), exclude=corpus.nodes.doc_of(c), limit=1))
    return hops / len(sample)


def is_separate_corpus(corpus) -> bool:
    """Documents that rarely lead to one another (hop share < HOP_SHARE), long or short: reports,
    papers, filings; not a web of pages."""
    return hop_share(corpus) < HOP_SHARE


def is_long_separate_corpus(corpus) -> bool:
    """Long documents (mean pages > SHORT_DOC_PAGES) that rarely lead to one another (hop share
    < HOP_SHARE): reports, papers and filings a question picks by name ("for COSTCO in FY2021"),
    not a web of pages, whose second hop is in a document the question does not name."""
    return mean_pages(corpus) > SHORT_DOC_PAGES and is_separate_corpus(corpus)


def is_web_of_pages(corpus) -> bool:
    """Short documents (mean pages <= SHORT_DOC_PAGES) that lead to one another (hop share >=
    HOP_SHARE): a web of named pages, one entity each (Wikipedia), not linked reports."""
    return mean_pages(corpus) <= SHORT_DOC_PAGES and not is_separate_corpus(corpus)


def is_short_separate_corpus(corpus) -> bool:
    """Short documents (mean pages <= SHORT_DOC_PAGES) that rarely lead to one another (hop share
    < HOP_SHARE): separate one-table reports, not a web of pages."""
    return mean_pages(corpus) <= SHORT_DOC_PAGES and is_separate_corpus(corpus)
