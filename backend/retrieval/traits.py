"""Measured properties of a loaded corpus that strategies adapt to, each computed once per corpus
(Corpus.derived: the corpus is read-only).

- template_share: the fraction of sampled components whose nearest neighbour in another document
  is a near copy (cosine >= 0.95). SEC 10-Q filings share one boilerplate (0.64 on
  dev-docugami-10q); reports, papers and Wikipedia pages do not (0.02-0.03 on the other dev
  collections). On such a corpus BM25 pulls towards whichever filing repeats the question's words:
  strata ranks densely there, and every strategy's hybrid scores default to the dense side
  (`TEMPLATE_ALPHA`, see Retriever.resolve_params).
"""

from __future__ import annotations

import numpy as np

TEMPLATE_SAMPLE = 400
TEMPLATE_COSINE = 0.95
TEMPLATE_BLOCK = 16
TEMPLATE_SHARE = 0.3  # at and above: a template corpus (0.64 against <= 0.03 on the dev collections)
TEMPLATE_ALPHA = 0.0  # BM25 weight of hybrid scores on a template corpus, unless a call sets it


def template_share(corpus) -> float:
    """Fraction of (up to 400 sampled) components whose nearest neighbour in another document
    is a near copy. Computed once per loaded corpus (it is read-only)."""
    return corpus.derived(_measure_template_share)


def _measure_template_share(corpus) -> float:
    comps = corpus.layers["components"]
    share = 0.0
    if len(corpus.documents) > 1 and len(comps.ids) > 1:
        matrix = comps.dense.matrix
        docs = np.array([corpus.nodes[i].doc for i in comps.ids])
        rng = np.random.default_rng(0)  # deterministic sample
        idx = rng.choice(len(matrix), size=min(TEMPLATE_SAMPLE, len(matrix)), replace=False)
        nearest = np.empty(len(idx), dtype=np.float32)
        # In blocks of sampled rows: a (400, n) similarity matrix is 2.9 GB at 1.8M components.
        for start in range(0, len(idx), TEMPLATE_BLOCK):
            rows = idx[start:start + TEMPLATE_BLOCK]
            sims = comps.dense.scores_many(matrix[rows])  # (n, block)
            sims[docs[rows][None, :] == docs[:, None]] = -1.0
            nearest[start:start + len(rows)] = sims.max(axis=0)
        share = float((nearest >= TEMPLATE_COSINE).mean())
    return share


def is_template_corpus(corpus, threshold: float = TEMPLATE_SHARE) -> bool:
    return template_share(corpus) >= threshold
