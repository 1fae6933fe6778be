"""The reader: from the packed evidence to an answer whose citations point at exact sentences,
table rows or figure regions.

It scores every subcomponent of the packed units against the question (its own cosine in the
subcomponent space, its component's cosine in the text-encoder space, and coverage of the
question's content words), hands the best ones to the LLM
backend's 'answer' task, and turns the cited ids into citations with document, page, box and
section path. Abstains ("not enough evidence") when the backend does.
"""

from __future__ import annotations

import numpy as np

from backend.graph.corpus import Corpus
from backend.llm.base import ANSWER_PROMPT, LLMBackend
from backend.llm.rules import QUESTION_WORDS, content_tokens
from backend.types import Answer, Citation, EvidencePack

MAX_EVIDENCE = 8
# evidence score = weights . (subcomponent cosine, component cosine, question coverage)
SUB_WEIGHT, COMPONENT_WEIGHT, COVERAGE_WEIGHT = 0.3, 0.3, 0.4


class EvidenceReader:
    def __init__(self, corpus: Corpus, llm: LLMBackend, abstain_threshold: float) -> None:
        self.corpus = corpus
        self.llm = llm
        self.threshold = abstain_threshold

    def score_units(self, question: str, qvecs: tuple[np.ndarray, np.ndarray], pack: EvidencePack) -> list[dict]:
        """qvecs: the question in the component space and in the subcomponent space."""
        q_text, q_sub = qvecs
        subs = self.corpus.layers["subcomponents"]
        comps = self.corpus.layers["components"]
        q_tokens = content_tokens(question) - QUESTION_WORDS
        scored: list[dict] = []
        for unit in pack.units:
            if unit.role == "header":
                continue
            crow = comps.dense.row.get(unit.node_id)
            comp_cos = max(float(comps.dense.matrix[crow] @ q_text), 0.0) if crow is not None else 0.0
            for sid in self.corpus.subcomponents(unit.node_id) or [unit.node_id]:
                node = self.corpus.nodes[sid]
                row = subs.dense.row.get(sid)
                cos = float(subs.dense.matrix[row] @ q_sub) if row is not None else 0.0
                coverage = len(content_tokens(node.text) & q_tokens) / len(q_tokens) if q_tokens else 0.0
                score = SUB_WEIGHT * max(cos, 0.0) + COMPONENT_WEIGHT * comp_cos + COVERAGE_WEIGHT * coverage
                scored.append(
                    {"id": sid, "kind": node.kind.value, "text": node.text, "score": round(score, 4),
                     "cosine": round(cos, 4), "coverage": round(coverage, 4), "role": unit.role}
                )
        scored.sort(key=lambda e: (-e["score"], e["id"]))
        return scored

    def read(self, question: str, qvecs: tuple[np.ndarray, np.ndarray], pack: EvidencePack) -> Answer:
        evidence = self.score_units(question, qvecs, pack)[:MAX_EVIDENCE]
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
