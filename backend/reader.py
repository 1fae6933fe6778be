"""The reader: from the packed evidence to an answer whose citations point at exact sentences,
table rows or figure regions.

It scores every subcomponent of the packed units against the question (dense cosine from the
stored embeddings + coverage of the question's content words), hands the best ones to the LLM
backend's 'answer' task, and turns the cited ids into citations with document, page, box and
section path. Abstains ("not enough evidence") when the backend does.
"""

from __future__ import annotations

import numpy as np

from backend.graph.corpus import Corpus
from backend.llm.base import ANSWER_PROMPT, LLMBackend
from backend.llm.rules import content_tokens
from backend.types import Answer, Citation, EvidencePack

MAX_EVIDENCE = 8
DENSE_WEIGHT = 0.5


class EvidenceReader:
    def __init__(self, corpus: Corpus, llm: LLMBackend, abstain_threshold: float) -> None:
        self.corpus = corpus
        self.llm = llm
        self.threshold = abstain_threshold

    def score_units(self, question: str, qvec: np.ndarray, pack: EvidencePack) -> list[dict]:
        subs = self.corpus.layers["subcomponents"]
        q_tokens = content_tokens(question)
        scored: list[dict] = []
        for unit in pack.units:
            if unit.role == "header":
                continue
            for sid in self.corpus.subcomponents(unit.node_id) or [unit.node_id]:
                node = self.corpus.nodes[sid]
                row = subs.dense.row.get(sid)
                cos = float(subs.dense.matrix[row] @ qvec) if row is not None else 0.0
                coverage = len(content_tokens(node.text) & q_tokens) / len(q_tokens) if q_tokens else 0.0
                score = DENSE_WEIGHT * max(cos, 0.0) + (1 - DENSE_WEIGHT) * coverage
                scored.append(
                    {"id": sid, "kind": node.kind.value, "text": node.text, "score": round(score, 4),
                     "cosine": round(cos, 4), "coverage": round(coverage, 4), "role": unit.role}
                )
        scored.sort(key=lambda e: (-e["score"], e["id"]))
        return scored

    def read(self, question: str, qvec: np.ndarray, pack: EvidencePack) -> Answer:
        evidence = self.score_units(question, qvec, pack)[:MAX_EVIDENCE]
        out = self.llm.complete_json(
            "answer",
            ANSWER_PROMPT.format(context=pack.text, question=question),
            {"question": question, "evidence": evidence, "threshold": self.threshold},
        )
        citations = [self.citation(i + 1, node_id) for i, node_id in enumerate(out.get("citations", [])) if node_id in self.corpus.nodes]
        abstained = bool(out.get("abstain")) or not citations
        return Answer(
            text=out["answer"] if not abstained or out.get("abstain") else "not enough evidence",
            abstained=abstained,
            citations=citations,
            confidence=float(out.get("confidence", 0.0)),
            reason=str(out.get("reason", "")),
        )

    def citation(self, n: int, node_id: str) -> Citation:
        node = self.corpus.nodes[node_id]
        return Citation(
            n=n, node_id=node_id, doc=self.corpus.documents[node.doc].file_name, page=node.page, bbox=node.bbox,
            kind=node.kind, section_path=self.corpus.section_path(node_id), text=node.text,
        )
