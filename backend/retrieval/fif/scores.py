"""FiF's node scores for one question: the hybrid of the repository per layer (alpha * min-max
BM25 + (1 - alpha) * min-max cosine over every row at once), and the max-over-descendants vectors
at each granularity, cached per text for the question's lifetime."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from backend.retrieval.fif.memory import DocumentRowMaps, TextScores, max_into, max_into_column
from backend.retrieval.scoring import QueryScores


class QuestionScores:
    """Scores of texts against the three layers, cached for one question (one per retrieve call)."""

    def __init__(
        self, corpus, view: DocumentRowMaps, alpha: float,
        embed: Callable[[str], np.ndarray], embed_sub: Callable[[list[str]], np.ndarray],
        shared: QueryScores | None = None,
    ) -> None:
        """shared: the question's QueryScores (the BM25 and cosine passes; None: a private one)."""
        self.corpus = corpus
        self.view = view
        self.alpha = alpha
        self.embed = embed
        self.embed_sub = embed_sub
        self.shared = shared if shared is not None else QueryScores()
        self._text_scores: dict[str, TextScores] = {}

    def scores(self, text: str) -> TextScores:
        cached = self._text_scores.get(text)
        if cached is not None:
            return cached
        layers, alpha = self.corpus.layers, self.alpha
        qvec, qsub = self.embed(text), self.embed_sub([text])[0]

        def hybrid(name: str, vec: np.ndarray) -> np.ndarray:
            return self.shared.hybrid(layers[name], text, vec, alpha).astype(np.float32)

        sub = self.shared.sparse_hybrid_many(layers["subcomponents"], [text], qsub[None, :], alpha)[0]
        scores = TextScores(doc=hybrid("documents", qvec), comp=hybrid("components", qvec), sub=sub)
        self._text_scores[text] = scores
        return scores

    def doc_scores(self, text: str, granularity: int) -> np.ndarray:
        """(n_docs,) SCORE_vec(q, d; g): the summary's own score (g=0), the max over the document's
        components (g=1) or over its subcomponents (g=2)."""
        s = self.scores(text)
        if granularity == 0:
            return s.doc
        key = ("doc", granularity)
        if key not in s.derived:
            n = len(self.view.doc_ids)
            s.derived[key] = (max_into(s.comp, self.view.comp_doc_row, n) if granularity == 1
                              else max_into_column(s.sub, self.view.sub_doc_row, self.view.subs_per_doc))
        return s.derived[key]

    def comp_scores(self, text: str, granularity: int) -> np.ndarray:
        """(n_comps,) component scores at granularity max(g, 1): the component's own score, or the
        max over its subcomponents (its own score where it has none)."""
        s = self.scores(text)
        if granularity < 2:
            return s.comp
        key = ("comp", 2)
        if key not in s.derived:
            view = self.view
            s.derived[key] = np.where(view.comp_has_subs, max_into_column(s.sub, view.sub_comp_row, view.subs_per_comp), s.comp)
        return s.derived[key]
