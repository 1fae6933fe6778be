"""MI-RAG: iterative multi-query search over the text and image-text knowledge bases
(retriever.py) and the offline rules of its expansion, generation and record prompts (rules.py)."""

from backend.retrieval.mirag.retriever import MIRAGRetriever

__all__ = ["MIRAGRetriever"]
