"""The walk over the component graph that several strategies share: per-corpus arrays for
vectorised late interaction (`graph_arrays`), late interaction itself (`LateInteraction`: each
component's best match per subquery, LILaC's sim(q, C)), the edge score s(e) = sum over subqueries
of the better endpoint's match (`edge_scores`), and a component's neighbours one edge away
(`component_neighbours`, `best_of_document`).

A subquery's subcomponent similarities are read as a SparseColumn (scoring.py): in an approximate
layer only the rows with a score of their own are read. Components without subcomponents are
matched with their own text.

Not here: what a strategy does with the walk (LILaC's beam, strata's partners).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from backend.graph.corpus import Corpus
from backend.retrieval.base import Retriever
from backend.retrieval.scoring import QueryScores, SparseColumn
from backend.types import EdgeKind, NodeKind, SubQuery

NAV_EDGES = (EdgeKind.NEXT, EdgeKind.XREF, EdgeKind.CAPTION, EdgeKind.LINK)
MODALITY_KIND = {"table": NodeKind.ROW, "figure": NodeKind.OBJECT}


@dataclass
class GraphArrays:
    """Per-corpus arrays for vectorised late interaction, built once per loaded corpus."""

    comp_ids: list[str]
    comp_row: dict[str, int]
    sub_order: np.ndarray  # subcomponent rows sorted by their component
    seg_starts: np.ndarray  # start of each component's segment in sub_order
    seg_comp: np.ndarray  # component row of each segment
    has_subs: np.ndarray  # (n_comp,) bool
    sub_kind: np.ndarray  # (n_sub,) NodeKind value index
    doc_components: dict[str, np.ndarray]
    sub_parent: np.ndarray  # (n_sub,) component row of each subcomponent, -1 for none
    sub_count: np.ndarray  # (n_comp,) subcomponents of each component


def graph_arrays(corpus: Corpus) -> GraphArrays:
    """The corpus's late-interaction arrays (built once per loaded corpus, see Corpus.derived)."""
    return corpus.derived(build_graph_arrays)


def build_graph_arrays(corpus: Corpus) -> GraphArrays:
    comps = corpus.layers["components"]
    subs = corpus.layers["subcomponents"]
    comp_row = {c: i for i, c in enumerate(comps.ids)}
    parent_of, kind_of = corpus.nodes.parent_of, corpus.nodes.kind_of
    parent = np.array([comp_row.get(parent_of(s) or "", -1) for s in subs.ids], dtype=np.int64)
    valid = np.flatnonzero(parent >= 0)
    order = valid[np.argsort(parent[valid], kind="stable")]
    sorted_parent = parent[order]
    if len(order):
        starts = np.flatnonzero(np.r_[True, sorted_parent[1:] != sorted_parent[:-1]])
        seg_comp = sorted_parent[starts]
    else:
        starts = np.zeros(0, dtype=np.int64)
        seg_comp = np.zeros(0, dtype=np.int64)
    has_subs = np.zeros(len(comps.ids), dtype=bool)
    has_subs[seg_comp] = True
    kinds = [k for k in NodeKind]
    kind_index = {k: i for i, k in enumerate(kinds)}
    sub_kind = np.array([kind_index[kind_of(s)] for s in subs.ids], dtype=np.int64)
    doc_components = {
        d: np.array([comp_row[c] for c in cs if c in comp_row], dtype=np.int64) for d, cs in corpus.components_by_doc.items()
    }
    sub_count = np.bincount(parent[valid], minlength=len(comps.ids))
    return GraphArrays(comps.ids, comp_row, order, starts, seg_comp, has_subs, sub_kind, doc_components, parent, sub_count)


class LateInteraction:
    """sim(q, c) for every subquery and subcomponent, and the best per component: (n_comp, n_q)."""

    def __init__(
        self, retriever: Retriever, subqueries: list[SubQuery], alpha: float, modality_bonus: float, granularity: float = 1.0,
        scores: QueryScores | None = None,
    ) -> None:
        """scores: the question's score cache (one pass over each layer for every subquery at
        once; the whole query's scores are shared with the ranking that ran before).

        A subquery's subcomponent similarities are a SparseColumn: in an approximate layer only
        the rows with a score of their own are read, and each component's best is a max over
        those rows (`np.maximum.at`) plus the shared score where some of its subcomponents have
        none of their own: the numbers of a max over every row, without the pass over 1.77M rows
        per subquery at 100k pages."""
        corpus = retriever.corpus
        sc = scores if scores is not None else retriever.question_scores()
        self.arrays = ga = graph_arrays(corpus)
        subs = corpus.layers["subcomponents"]
        comps = corpus.layers["components"]
        self.sub_ids = subs.ids
        texts = [s.text for s in subqueries]
        n_q = len(texts)
        self.columns: list[SparseColumn] = []
        best = np.zeros((len(comps.ids), n_q), dtype=np.float32)
        if len(subs.ids) and n_q:
            q_sub = sc.encode(retriever.sub_encoder, texts)  # (n_q, d_sub)
            for j, col in enumerate(sc.sparse_hybrid_many(subs, texts, q_sub, alpha)):
                kind = MODALITY_KIND.get(subqueries[j].modality)
                if kind is not None and modality_bonus:
                    col = _with_bonus(col, ga.sub_kind, list(NodeKind).index(kind), modality_bonus)
                self.columns.append(col)
                best[:, j] = _best_per_component(ga, col)
        # The component's own match backs its best subcomponent (weight 1 - granularity); components
        # without subcomponents are matched with their own text only.
        own = sc.hybrid_many(comps, texts, sc.encode(retriever.encoder, texts), alpha)  # (n_comp, n_q)
        best = np.where(ga.has_subs[:, None], granularity * best + (1 - granularity) * own, own).astype(np.float32)
        self.best = best

    def winner(self, comp: int, j: int) -> tuple[str, float]:
        """The subcomponent of a component that wins the max for subquery j (the component itself
        when it has none)."""
        ga = self.arrays
        if not ga.has_subs[comp]:
            return ga.comp_ids[comp], float(self.best[comp, j])
        seg = int(np.searchsorted(ga.seg_comp, comp))
        start = ga.seg_starts[seg]
        end = ga.seg_starts[seg + 1] if seg + 1 < len(ga.seg_starts) else len(ga.sub_order)
        rows = ga.sub_order[start:end]
        sims = self.columns[j].at(rows)
        k = int(np.argmax(sims))
        return self.sub_ids[rows[k]], float(sims[k])


def _with_bonus(col: SparseColumn, sub_kind: np.ndarray, kind: int, bonus: float) -> SparseColumn:
    """A column with `bonus` added to the subcomponents of one kind (the subquery's modality),
    every row of that kind then holding its own score."""
    of_kind = sub_kind == kind
    own = of_kind.copy()
    own[col.rows] = True
    rows = np.flatnonzero(own)
    values = np.full(len(rows), col.rest if col.rest is not None else 0.0, dtype=np.float32)
    values[np.searchsorted(rows, col.rows)] = col.values
    values = (values + bonus * of_kind[rows]).astype(np.float32)
    return SparseColumn(col.n, rows, values, col.rest if len(rows) < col.n else None)


def _best_per_component(ga: GraphArrays, col: SparseColumn) -> np.ndarray:
    """(n_comp,) each component's best subcomponent score in a column (0 for a component with no
    subcomponent): a max over the rows with their own score, and the column's shared score for a
    component with some subcomponent among the others."""
    out = np.where(ga.has_subs, np.float32(-np.inf), np.float32(0.0)).astype(np.float32)
    parent = ga.sub_parent[col.rows]
    mine = parent >= 0
    parent, values = parent[mine], col.values[mine]
    if col.rest is not None:
        held = np.bincount(parent, minlength=len(out))
        out[held < ga.sub_count] = col.rest
    np.maximum.at(out, parent, values)
    return out


def component_neighbours(corpus: Corpus, comp_id: str, li: LateInteraction, per_doc: int) -> list[tuple[int, str]]:
    """Component rows one edge away from a component, with the edge kind. A link to a document
    (either direction) reaches that document's `per_doc` best components for this query."""
    ga = li.arrays
    out: dict[int, str] = {}
    nodes = corpus.nodes
    for edge, other in corpus.neighbours(comp_id, NAV_EDGES):
        if other not in nodes:
            continue
        if other in ga.comp_row:
            out.setdefault(ga.comp_row[other], edge.kind.value)
        elif nodes.kind_of(other) == NodeKind.DOCUMENT:
            for r in best_of_document(ga, li, other, per_doc):
                out.setdefault(int(r), "doc_link")
        elif (parent := nodes.parent_of(other)) in ga.comp_row:  # a link landing on a subcomponent
            out.setdefault(ga.comp_row[parent], edge.kind.value)
    # Links between documents also count from the other side: components elsewhere that link to
    # this component's document.
    doc = corpus.nodes.doc_of(comp_id)
    for edge in corpus.edges.into(doc, (EdgeKind.LINK,)):
        if edge.src in ga.comp_row and corpus.nodes.doc_of(edge.src) != doc:
            out.setdefault(ga.comp_row[edge.src], "doc_link")
    out.pop(ga.comp_row[comp_id], None)
    return sorted(out.items())


def best_of_document(ga: GraphArrays, li: LateInteraction, doc: str, k: int) -> np.ndarray:
    """Rows of a document's `k` best components for this query (all of them when it has at most k)."""
    rows = ga.doc_components.get(doc)
    if rows is None or not len(rows):
        return np.zeros(0, dtype=np.int64)
    if len(rows) <= k:
        return rows
    total = li.best[rows].sum(axis=1)
    return rows[np.argsort(-total, kind="stable")[:k]]


def edge_scores(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """s(e) for edges whose ends match the subqueries as `left` and `right` ((n, n_q) each, or one
    (n_q,) row broadcast): the sum over subqueries of the better end's match. (n,)"""
    return np.maximum(left, right).sum(axis=1)
