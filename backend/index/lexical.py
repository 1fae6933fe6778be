"""BM25 over node texts (bm25s, English stop words, Snowball stemming)."""

from __future__ import annotations

import logging

import bm25s
import numpy as np
import Stemmer

log = logging.getLogger(__name__)

_STEMMER = Stemmer.Stemmer("english")


def tokenize(texts: list[str]) -> list[list[str]]:
    return bm25s.tokenize(texts, stopwords="en", stemmer=_STEMMER, return_ids=False, show_progress=False)


class BM25Index:
    def __init__(self, ids: list[str], texts: list[str], k1: float = 1.5, b: float = 0.75) -> None:
        self.ids = ids
        self.row = {node_id: i for i, node_id in enumerate(ids)}
        self._bm25 = bm25s.BM25(k1=k1, b=b)
        if ids:
            tokens = tokenize(texts)
            # bm25s needs at least one token per corpus; an all-stop-word corpus indexes a placeholder.
            if not any(tokens):
                tokens = [["_"] for _ in tokens]
            self._bm25.index(tokens, show_progress=False)
            self._vocab = self._bm25.vocab_dict
        else:
            self._vocab = {}

    def __len__(self) -> int:
        return len(self.ids)

    def query_tokens(self, query: str) -> list[str]:
        return [t for t in tokenize([query])[0] if t in self._vocab]

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every row for the query: (n,)."""
        if not self.ids:
            return np.zeros(0, dtype=np.float32)
        toks = self.query_tokens(query)
        if not toks:
            return np.zeros(len(self.ids), dtype=np.float32)
        return np.asarray(self._bm25.get_scores(toks), dtype=np.float32)

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        s = self.scores(query)
        if not len(s) or k <= 0:
            return []
        k = min(k, len(s))
        top = np.argpartition(-s, k - 1)[:k]
        top = top[np.argsort(-s[top], kind="stable")]
        return [(self.ids[i], float(s[i])) for i in top if s[i] > 0]
