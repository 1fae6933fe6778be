"""The decomposition of a question into modality-labelled subqueries that LILaC's paper defines
(appendix F: QUERY DECOMPOSITION and MODALITY SELECTION): the LLM task (task.py), its offline
rules (rules.py) and `decompose`, which runs it. LILaC and strata decompose with it; FiF's planner
reads its rules.
"""

from __future__ import annotations

from backend.llm.base import LLMBackend
from backend.retrieval.decompose.task import DECOMPOSE, DecomposePayload
from backend.types import SubQuery

__all__ = ["DECOMPOSE", "DecomposePayload", "decompose"]


def decompose(llm: LLMBackend, question: str) -> tuple[list[SubQuery], str]:
    """The question as modality-labelled subqueries (falls back to the whole question)."""
    out = llm.run(DECOMPOSE, DecomposePayload(question=question))
    subs: list[SubQuery] = []
    for i, s in enumerate(out.subqueries):
        text = s.text.strip()
        if not text:
            continue
        modality = "figure" if s.modality == "image" else s.modality
        deps = [d for d in s.depends_on if 0 <= d < i]
        subs.append(SubQuery(text=text, modality=modality, depends_on=deps))
    if not subs:
        subs = [SubQuery(text=question)]
    return subs[:5], out.reason
