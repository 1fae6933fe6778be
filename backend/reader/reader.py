"""The reader: from the packed evidence to an answer whose citations point at exact sentences,
table rows or figure regions.

It scores every subcomponent of the packed units against the question (its own cosine in the
subcomponent space, its component's cosine in the text-encoder space, and coverage of the
question's content words), notes which of the retriever's subqueries (when it decomposed the
question) each one covers best, hands the best ones (and the best unit of each subquery they
leave out, and a few units of the bridge pages: the pages that the best unit of a subquery other
than the asking one names by title, or for a question left unsplit the pages its best unit names,
and the pages a bridge page names by the role the asking subquery asks about) to the LLM
backend's typed ANSWER task (backend/reader/task.py), and turns the cited ids into citations with
document, page, box and section path. Abstains ("not enough evidence") when the backend does.
A table row's unit carries the row's cells (EvidenceUnit.row), which the rules read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from backend.graph.corpus import Corpus
from backend.index.texts import strip_qualifier
from backend.llm.base import LLMBackend
from backend.llm.text import QUESTION_WORDS, content_tokens
from backend.reader.context import follows, in_paragraph, lead
from backend.reader.evidence import AnswerPayload, EvidenceUnit
from backend.reader.questions import asked_tokens, asking_subquery
from backend.reader.rules import NOT_ENOUGH
from backend.reader.task import ANSWER
from backend.retrieval.titles import title_index
from backend.stages.references import named_in, question_references, reference_words
from backend.types import Answer, Citation, DecomposeStep, EvidencePack, NodeKind, Trace

MAX_EVIDENCE = 8
# "When was the star of the Netflix series born": a role of the bridge, asked about (reader.role_pages)
ROLE_OF_RE = re.compile(
    r"\bthe\s+(?P<role>[a-z][a-z-]{2,})\s+of\s+(?:the|a|an|this|that)\s+[^,]+?(?=\s+(?:born|die|died|found|founded|"
    r"establish|created|release|was|is|were|are|live|lived|located|based|start|begin|end)\w*\b|$)", re.I)
BRIDGE_UNITS = 3  # units of the bridge pages handed over besides the best ones
# evidence score = weights . (subcomponent cosine, component cosine, question coverage)
SUB_WEIGHT, COMPONENT_WEIGHT, COVERAGE_WEIGHT = 0.3, 0.3, 0.4


def subqueries_of(trace: Trace | None) -> list[str]:
    """The subqueries of the trace's last decomposition ([] when the retriever did not decompose)."""
    steps = [s for s in (trace.steps if trace else []) if isinstance(s, DecomposeStep)]
    return [q.text for q in steps[-1].subqueries] if steps else []


def _best_subquery(tokens: set[str], sub_tokens: Sequence[set[str]]) -> tuple[int | None, float]:
    """(index, coverage) of the subquery whose content words the unit covers most."""
    best: tuple[int | None, float] = (None, 0.0)
    for i, st in enumerate(sub_tokens):
        cov = len(tokens & st) / len(st) if st else 0.0
        if cov > best[1]:
            best = (i, cov)
    return best


def with_each_subquery(scored: list[EvidenceUnit], n_subqueries: int) -> list[EvidenceUnit]:
    """The MAX_EVIDENCE best units for the whole question, a few units of the bridge pages beyond
    them, and, for a decomposed question, the unit that best covers each subquery when none of
    those does (the last hop's fact shares few words with the whole question: "At the 2010 census, Summerlin's population was ..." for "What was
    the 2010 population of the community where Randall Cunningham II's high school is located?").
    Best first, as scored."""
    evidence = scored[:MAX_EVIDENCE]
    extra = [e for e in scored[MAX_EVIDENCE:] if e.bridge][:BRIDGE_UNITS]
    if n_subqueries < 2:
        return evidence + extra
    for i in range(n_subqueries):
        if any(e.subquery == i for e in evidence):
            continue
        best = max((e for e in scored[MAX_EVIDENCE:] if e.subquery == i), key=lambda e: (e.sub_coverage, e.score), default=None)
        if best is not None:
            extra.append(best)
    return evidence + sorted(extra, key=lambda e: (-e.score, e.id))


class EvidenceReader:
    def __init__(self, corpus: Corpus, llm: LLMBackend, abstain_threshold: float) -> None:
        self.corpus = corpus
        self.llm = llm
        self.threshold = abstain_threshold

    def score_units(
        self, question: str, qvecs: tuple[np.ndarray, np.ndarray], pack: EvidencePack, subqueries: Sequence[str] = ()
    ) -> list[EvidenceUnit]:
        """qvecs: the question in the component space and in the subcomponent space."""
        q_text, q_sub = qvecs
        subs = self.corpus.layers["subcomponents"]
        comps = self.corpus.layers["components"]
        q_tokens = asked_tokens(question)
        sub_tokens = [content_tokens(s) - QUESTION_WORDS for s in subqueries] if len(subqueries) > 1 else []
        refs = question_references(question)
        place_tokens = (content_tokens(reference_words(question)) - QUESTION_WORDS) & q_tokens if refs else set()
        named: dict[str, tuple[set[int], set[str]]] = {}  # doc -> its named pages and units
        scored: list[EvidenceUnit] = []
        for unit in pack.units:
            if unit.role == "header":
                continue
            unit_node = self.corpus.nodes[unit.node_id]
            if place_tokens and unit_node.doc not in named:
                named[unit_node.doc] = named_in(self.corpus, unit_node.doc, refs)
            pages, units = named.get(unit_node.doc, (set(), set()))
            # A unit on a page the question names covers the words that name it ("page 104").
            covered = place_tokens if unit_node.page in pages or unit.node_id in units else set()
            crow = comps.dense.row.get(unit.node_id)
            comp_cos = max(float(comps.dense.vector(crow) @ q_text), 0.0) if crow is not None else 0.0
            for sid in self.corpus.subcomponents(unit.node_id) or [unit.node_id]:
                node = self.corpus.nodes[sid]
                row = subs.dense.row.get(sid)
                cos = float(subs.dense.vector(row) @ q_sub) if row is not None else 0.0
                tokens = content_tokens(node.text)
                coverage = len(tokens & q_tokens) / len(q_tokens) if q_tokens else 0.0
                # the words naming its page count for the score, not as words the unit shares with the question
                placed = len((tokens | covered) & q_tokens) / len(q_tokens) if q_tokens else 0.0
                score = SUB_WEIGHT * max(cos, 0.0) + COMPONENT_WEIGHT * comp_cos + COVERAGE_WEIGHT * placed
                sq, sq_cov = _best_subquery(tokens, sub_tokens)
                scored.append(EvidenceUnit(
                    id=sid, kind=node.kind.value, text=node.text, score=round(score, 4), cosine=round(cos, 4),
                    coverage=round(coverage, 4), role=unit.role, subquery=sq, sub_coverage=round(sq_cov, 4), row=node.row,
                    **self.reading_context(sid, node.kind),
                ))
        scored.sort(key=lambda e: (-e.score, e.id))
        return self.on_bridge_pages(question, scored, subqueries)

    def reading_context(self, unit_id: str, kind: NodeKind) -> dict[str, str]:
        """A paragraph sentence's lead and what it announces (context.py); none for tables, rows,
        figures and objects."""
        if kind not in (NodeKind.SENTENCE, NodeKind.PARAGRAPH) or not in_paragraph(self.corpus, unit_id):
            return {}
        text = self.corpus.nodes[unit_id].text
        return {"lead": lead(self.corpus, unit_id, text), "follows": follows(self.corpus, unit_id, text)}

    def on_bridge_pages(self, question: str, scored: list[EvidenceUnit], subqueries: Sequence[str]) -> list[EvidenceUnit]:
        """Marks the units of the bridge pages: the documents that the best unit of each subquery
        other than the asking one names by title (titles.py), when that unit scores at least the
        abstain threshold, and that the question does not name. A question the retriever did not
        split has one candidate hop, its best unit; the rules read its bridge pages only when that
        unit lacks the asked type ("... a play by a playwright born in which year?").
        "the woman who portrayed Corliss Archer in Kiss and Tell" is best covered by Kiss and Tell's
        "... starring Shirley Temple as Corliss Archer"; the government position she held is read
        on Shirley Temple's page, in a sentence that shares no word with the question."""
        asking = asking_subquery(subqueries)
        if asking is None:  # not split: the best unit is the only hop there may be
            hops = scored[:1]
        else:
            hops = [max((e for e in scored if e.subquery == i), key=lambda e: (e.sub_coverage, e.score), default=None)
                    for i in range(len(subqueries)) if i != asking]
        titles = title_index(self.corpus)
        named = set(titles.mentioned(question, limit=20))
        bridges: dict[str, str] = {}
        for best in hops:
            if best is None or best.score < self.threshold:
                continue  # a hop the reader would not answer from names no bridge
            own = self.corpus.nodes[best.id].doc
            for doc in titles.mentioned(best.text, exclude=own, limit=4):
                if doc not in named:
                    bridges.setdefault(doc, self.bridge_name(doc))
        if not bridges:
            return scored
        hop_of = dict.fromkeys(bridges, 1)
        if asking is not None:
            for doc in self.role_pages(subqueries[asking], scored, bridges, titles):
                if doc not in named and doc not in bridges:
                    bridges[doc] = self.bridge_name(doc)
                    hop_of[doc] = 2
        return [e.model_copy(update={"bridge": bridges[doc], "hop": hop_of[doc]}) if (doc := self.corpus.nodes[e.id].doc) in bridges
                else e for e in scored]

    def bridge_name(self, doc: str) -> str:
        """The name a bridge page is about: its title without a qualifier or a comma's rest."""
        return strip_qualifier(self.corpus.documents[doc].title).partition(",")[0]

    def role_pages(self, asking: str, scored: list[EvidenceUnit], bridges: dict[str, str], titles) -> list[str]:
        """The pages one hop past the bridge pages when the asking subquery asks something of a role
        the bridge holds: "When was the star of the Netflix series born" asks the birth of the
        series' star, who is named on the series' page ("starring Ellie Kemper"); her page is read
        too. The role is "the R of the ..." with a word of the asking subquery left outside it; the
        pages are those a bridge-page unit names after a word spelt like the role (its first four
        letters: star, starring)."""
        m = ROLE_OF_RE.search(asking)
        if m is None or not (content_tokens(asking[:m.start()] + " " + asking[m.end():]) - QUESTION_WORDS - content_tokens(m.group(0))):
            return []
        stem = m.group("role")[:4].lower()
        found: list[str] = []
        for e in scored:
            doc = self.corpus.nodes[e.id].doc
            at = re.search(rf"\b{re.escape(stem)}\w*", e.text, re.I) if doc in bridges else None
            if at is not None:
                found += titles.mentioned(e.text[at.end():at.end() + 80], exclude=doc, limit=2)
        return list(dict.fromkeys(found))[:4]

    def read(
        self, question: str, qvecs: tuple[np.ndarray, np.ndarray], pack: EvidencePack, subqueries: Sequence[str] = ()
    ) -> Answer:
        evidence = with_each_subquery(self.score_units(question, qvecs, pack, subqueries), len(subqueries))
        payload = AnswerPayload(question=question, evidence=evidence, threshold=self.threshold, context=pack.text,
                                subqueries=list(subqueries))
        out = self.llm.run(ANSWER, payload)
        known = [node_id for node_id in dict.fromkeys(out.citations) if node_id in self.corpus.nodes]
        citations = [self.citation(i + 1, node_id) for i, node_id in enumerate(known)]
        abstained = out.abstain or not citations
        return Answer(
            text=out.answer if not abstained or out.abstain else NOT_ENOUGH,
            abstained=abstained,
            citations=citations,
            confidence=out.confidence,
            reason=out.reason,
        )

    def citation(self, n: int, node_id: str) -> Citation:
        node = self.corpus.nodes[node_id]
        return Citation(
            n=n, node_id=node_id, doc=self.corpus.documents[node.doc].file_name, page=node.page, bbox=node.bbox,
            kind=node.kind, section_path=self.corpus.section_path(node_id), text=node.text,
        )
