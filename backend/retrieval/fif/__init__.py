"""FiF ("Failure is Feedback"): the agent (retriever.py), its prompts and reply schemas
(prompts.py), its memory and strategy tuple (memory.py) and the offline rules behind its prompts
(rules.py)."""

from backend.retrieval.fif.memory import strategy_of
from backend.retrieval.fif.retriever import FiFRetriever

__all__ = ["FiFRetriever", "strategy_of"]
