"""LILaC: late-interaction beam search over the layered component graph (retriever.py) and the
offline rules of its decomposition prompt (rules.py)."""

from backend.retrieval.lilac.retriever import (
    LateInteraction,
    LILaCRetriever,
    best_of_document,
    component_neighbours,
    decompose,
    graph_arrays,
)

__all__ = ["LILaCRetriever", "LateInteraction", "best_of_document", "component_neighbours", "decompose", "graph_arrays"]
