"""LILaC: late-interaction beam search over the layered component graph (retriever.py). Its
decomposition is backend/retrieval/decompose/, its late interaction backend/retrieval/graphwalk.py."""

from backend.retrieval.lilac.retriever import LILaCRetriever

__all__ = ["LILaCRetriever"]
