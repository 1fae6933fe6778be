"""The scope filter: a question asked of chosen documents only ("What was the total equity in 2019?"
of one report). Reports, filings and papers often do not name themselves in the question; a person
who knows which report they mean says so, and the answer must come from it. It is the user's
filter, not a ranking heuristic: it runs whenever documents are chosen, whatever stages are asked
for, and the trace shows it as the `scope` stage.

Every method ranks the whole workspace as it always does, asked `SCOPE_WIDEN` times deeper; the
results in the chosen documents keep the method's order, and when they are fewer than asked the
rest of the chosen documents' components follow by the question's hybrid score over them
(min-max within the chosen documents; dense on a template corpus, as every method there), so a
scoped question always gets its results. The trace says how many came from each.

Not here: checking the documents named (backend/query.py's `checked_scope`), or changing what a
method does.
"""

from __future__ import annotations

import numpy as np

from backend.retrieval.graphwalk import graph_arrays
from backend.retrieval.scoring import fuse_minmax
from backend.retrieval.traits import TEMPLATE_ALPHA, is_template_corpus
from backend.types import RankStep, ScoredNode, Trace

SCOPE_WIDEN = 5  # a scoped question asks the method this many times deeper before keeping the scope's results
SCOPE_ALPHA = 0.5  # BM25 weight of the hybrid ranking that fills a scope (TEMPLATE_ALPHA on a template corpus)


def within_scope(corpus, hits: list[ScoredNode], scope: frozenset[str], question: str, qvec: np.ndarray,
                 k: int, trace: Trace, template: bool | None = None) -> list[ScoredNode]:
    """The first k results in the scope's documents: the method's own, in its order, then the
    scope's other components by the question's hybrid score. `template`: whether the corpus's
    documents share one boilerplate (the profile's word), None: measured (traits.is_template_corpus)."""
    kept = [h for h in hits if corpus.nodes.doc_of(h.node_id) in scope][:k]
    added: list[ScoredNode] = []
    if len(kept) < k:
        comps = corpus.layers["components"]
        ga = graph_arrays(corpus)
        parts = [ga.doc_components[d] for d in sorted(scope) if d in ga.doc_components]
        rows = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        placed = [ga.comp_row[h.node_id] for h in kept if h.node_id in ga.comp_row]
        rows = rows[~np.isin(rows, placed)]  # the method's own results are not added twice
        if rows.size:  # min-max over the scope's own rows, their exact cosines (an approximate layer has them too)
            alpha = TEMPLATE_ALPHA if (is_template_corpus(corpus) if template is None else template) else SCOPE_ALPHA
            lexical = np.asarray(comps.lexical.scores(question), dtype=np.float32)[rows]
            scores = fuse_minmax(lexical, comps.dense.scores_of(rows, qvec), alpha)
            order = np.lexsort((rows, -scores))[: k - len(kept)]
            added = [ScoredNode(node_id=comps.ids[rows[i]], score=round(float(scores[i]), 6),
                                why=f"in the chosen documents (hybrid alpha={alpha:g})") for i in order]
    trace.notes.append(f"Asked of {len(scope)} chosen document(s): {len(kept)} of the method's results are in them"
                       + (f", {len(added)} more from their hybrid ranking." if added else "."))
    out = kept + added
    trace.add(RankStep(label=f"Results in the {len(scope)} chosen document(s)", index="scope", candidates=out[:30]))
    return out
