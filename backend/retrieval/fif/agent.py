"""FiF's agent for one question: the loop TRAVERSE / PLAN / STOP over memory, its traversers,
evaluator and reranker calls, and the cost of every step.

One FiFAgent is built per retrieve() call and holds everything that call changes (the run's
parameters, the LLM calls spent, the score cache), so a FiFRetriever keeps no per-call state.
Every LLM call is a typed task of tasks.py.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np

from backend.llm.base import LLMBackend
from backend.retrieval.fif import tasks as T
from backend.retrieval.fif.memory import (
    FOUND_IN_TRACE,
    GRANULARITY_NAMES,
    MAX_DECISIONS_PER_STEP,
    HopRecord,
    Memory,
    FiFParams,
    strategy_of,
)
from backend.retrieval.fif.scores import QuestionScores
from backend.retrieval.scoring import SEED_WHY, filled_with_seeds, fused_with_seeds, top_ordered, top_rows
from backend.types import AgentStep, DecomposeStep, ScoredNode, Strategy, SubQuery, Trace

log = logging.getLogger(__name__)

Usage = tuple[int, int, float]  # (calls, tokens, seconds) of the LLM at a moment


class FiFAgent:
    """One question's run of the FiF agent (see the package docstring of retriever.py)."""

    def __init__(self, corpus, llm: LLMBackend, cfg: FiFParams, scores: QuestionScores) -> None:
        self.corpus = corpus
        self.llm = llm
        self.cfg = cfg
        self.scores = scores
        self.view = scores.view
        self.calls0 = llm.usage.snapshot()[0]

    # ------------------------------------------------------------ loop

    def run(self, query: str, top_k: int, trace: Trace) -> list[ScoredNode]:
        memory = Memory(query=query, subqueries=self._decompose(query, trace))
        stop_reason = "step budget spent"
        decisions = 0
        usage0 = self._usage()  # a step is charged every call since the previous step (decisions included)
        while memory.steps < self.cfg.max_steps:
            if self._calls_left() < 2:  # a decision and an evaluation
                stop_reason = "LLM call budget spent"
                break
            decisions += 1
            if decisions > MAX_DECISIONS_PER_STEP * self.cfg.max_steps:
                stop_reason = "the orchestrator kept deciding without acting"
                break
            t0 = time.perf_counter()
            action = self._orchestrate(memory)
            for i in action.abandon:
                if 0 <= i < len(memory.subqueries) and memory.subqueries[i].status == "open":
                    memory.subqueries[i].status = "failed"
            kind = action.next_action
            if kind == "replan":
                self._replan(memory, trace, action, usage0)
            elif kind == "search" and action.next_retrieval_subtask:
                self._traverse_step(memory, trace, action, usage0)
            elif kind == "stop" or all(s.status != "open" for s in memory.subqueries):
                stop_reason = action.reason or "the orchestrator stopped"
                break
            else:
                continue  # a decision that only abandoned a subquery: its cost goes to the next step
            usage0 = self._usage()
            log.debug("fif step %d (%s) took %.3fs", memory.steps, kind, time.perf_counter() - t0)
        return self._stop(memory, trace, top_k, stop_reason, usage0)

    def _calls_left(self) -> int:
        return self.cfg.max_llm_calls - (self.llm.usage.snapshot()[0] - self.calls0)

    def _usage(self) -> Usage:
        calls, tokens = self.llm.usage.snapshot()
        return calls, tokens, float(getattr(self.llm.usage, "seconds", 0.0))

    def _cost(self, usage0: Usage) -> dict[str, Any]:
        """A step's cost as AgentStep fields. `seconds` is the time its model calls took: the cost
        that matters with a model, 0 under the rules, so identical questions give identical traces."""
        calls, tokens, seconds = self._usage()
        return {"llm_calls": calls - usage0[0], "llm_tokens": tokens - usage0[1], "seconds": round(seconds - usage0[2], 4)}

    # ------------------------------------------------------------ PLAN

    def _decompose(self, query: str, trace: Trace) -> list[SubQuery]:
        """The initial plan: FiF's decomposition task (the question alone when it gives nothing)."""
        out = self.llm.run(T.DECOMPOSE, T.DecomposePayload(question=query))
        subs: list[SubQuery] = []
        for s in out.subqueries:
            if not s.text.strip():
                continue
            modality = s.modality if s.modality in ("text", "table", "figure", "any") else "any"
            deps = [d for d in s.depends_on if 0 <= d < len(subs)]
            subs.append(SubQuery(text=s.text.strip(), modality=modality, depends_on=deps))
        subs = subs or [SubQuery(text=query)]
        trace.add(DecomposeStep(subqueries=subs, backend=self.llm.name, reason=out.reason))
        return subs

    def _replan(self, memory: Memory, trace: Trace, action: T.FiFAction, usage0: Usage) -> None:
        memory.steps += 1
        memory.replans += 1
        out = self.llm.run(T.PLAN, T.PlanPayload(query=memory.query, subtasks=memory.subtasks(), memory=memory.history))
        resolved = all(s.status == "answered" for s in memory.subqueries)  # the new tasks only extend the plan
        added: list[str] = []
        for j, text in enumerate(out.tasks):
            if not text.strip():
                continue
            deps = out.depends_on[j] if j < len(out.depends_on) else []
            deps = [d for d in deps if 0 <= d < len(memory.subqueries)]
            names = out.answers[j] if j < len(out.answers) else []
            if deps and names:  # the bridge entities the new task builds on, most likely first
                memory.answers[deps[-1]] = list(names)
            if resolved:
                memory.extensions.add(len(memory.subqueries))
            memory.subqueries.append(SubQuery(text=text.strip(), depends_on=deps))
            added.append(text.strip())
        memory.history.append(T.PlanRecord(step=memory.steps, tasks=added))
        reason = action.reason if action.reason is not None else "replan"
        trace.add(AgentStep(step=memory.steps, action="plan", outcome="planned",
                            reason=f"{reason}; added {added}", **self._cost(usage0)))
        trace.add(DecomposeStep(subqueries=memory.subqueries, backend=self.llm.name, reason=out.reason))

    # ------------------------------------------------------------ orchestrator

    def _orchestrate(self, memory: Memory) -> T.FiFAction:
        last_docs = memory.hops[-1].docs if memory.hops else []
        neighbours = dict.fromkeys(self.corpus.documents[n].title for d in last_docs for n in self.view.neighbours(d))
        payload = T.OrchestratePayload(
            query=memory.query, subtasks=memory.subtasks(), memory=memory.history,
            neighbor_docs=list(neighbours)[:30], steps_left=self.cfg.max_steps - memory.steps,
            llm_calls_left=self._calls_left() - 1, replans=memory.replans,
        )
        return self.llm.run(T.ORCHESTRATE, payload).action

    # ------------------------------------------------------------ TRAVERSE

    def _traverse_step(self, memory: Memory, trace: Trace, action: T.FiFAction, usage0: Usage) -> None:
        memory.steps += 1
        strategy = strategy_of(action.document_search_mode, action.component_search_mode, action.vector_granularity)
        target, entity = str(action.next_retrieval_subtask), action.entity or None
        index = action.subtask_index
        if index is None or not 0 <= index < len(memory.subqueries):
            open_ = [i for i, s in enumerate(memory.subqueries) if s.status == "open"]
            index = open_[0] if open_ else len(memory.subqueries) - 1
        by_step = {h.step: h for h in memory.hops}
        anchor_step = action.anchor if action.anchor in by_step else None
        anchor_hop = by_step.get(anchor_step) if anchor_step is not None else None
        # Without an anchor a hop starts from the documents last retrieved (the naive continuation).
        anchor_docs = anchor_hop.docs if anchor_hop else (memory.hops[-1].docs if memory.hops else [])
        previous = memory.hops[-1].step if memory.hops else None
        backtrack_to = anchor_step if anchor_step is not None and anchor_step != previous else None
        # A composed hop must reach somewhere new, not the page its entity was read from; an
        # uncomposed local hop leaves its anchor documents.
        if entity and anchor_hop and anchor_hop.evidence_doc:
            exclude = [anchor_hop.evidence_doc]
        else:
            exclude = [] if entity else list(anchor_docs)

        docs, found, note = self._traverse(memory.query, target, strategy, anchor_docs, exclude)
        source = [self.corpus.documents[d].file_name for d in exclude] if entity else []
        verdict = self._evaluate(memory, index, target, entity, found, source)
        hop = self._record_hop(memory, index, target, entity, strategy, anchor_step, docs, found, verdict)
        reason = "; ".join(r for r in (action.reason or "", note, verdict.reason) if r)
        trace.add(AgentStep(
            step=memory.steps, action="traverse", subquery=target, strategy=strategy,
            anchor=list(anchor_docs) if strategy.hop == "local" or backtrack_to is not None else [],
            outcome=hop.outcome, found=found[:FOUND_IN_TRACE], backtrack_to=backtrack_to, reason=reason, **self._cost(usage0),
        ))

    def _record_hop(
        self, memory: Memory, index: int, target: str, entity: str | None, strategy: Strategy, anchor_step: int | None,
        docs: list[str], found: list[ScoredNode], verdict: T.EvaluateAnswer,
    ) -> HopRecord:
        """Apply the evaluator's verdict to the subquery statuses and remember the hop."""
        success = verdict.status == "answerable" and bool(found)
        for upd in verdict.updated_subtasks:
            j = upd.index - 1
            if 0 <= j < len(memory.subqueries) and memory.subqueries[j].status == "open":
                memory.subqueries[j].status = "answered"
                answers = [upd.answer.strip(), *(a.strip() for a in upd.alternatives)]
                memory.answers[j] = [a for a in answers if a]
        if success and memory.subqueries[index].status == "open":
            memory.subqueries[index].status = "answered"
        hop = HopRecord(
            step=memory.steps, subtask=index, target=target, entity=entity, strategy=strategy, anchor=anchor_step,
            outcome="success" if success else "failure", dead_end=verdict.dead_end, docs=docs, found=found,
            entities=list(verdict.entities),
            evidence_doc=_evidence_doc(self.corpus, found, verdict.evidence) if success else None,
        )
        memory.hops.append(hop)
        memory.history.append(hop.serialise(self.corpus, self.view))
        return hop

    def _traverse(
        self, query: str, target: str, strategy: Strategy, anchor_docs: list[str], exclude: list[str]
    ) -> tuple[list[str], list[ScoredNode], str]:
        """Document-level then component-level traverser. Returns (documents, units, note)."""
        view = self.view
        g = strategy.granularity
        doc_sc = self.scores.doc_scores(target, g)  # (n_docs,)
        if strategy.hop == "local":
            skip = set(exclude)
            cand = [n for n in dict.fromkeys(n for d in anchor_docs for n in view.neighbours(d)) if n not in skip]
            if not cand:
                return [], [], "no neighbour documents around the anchor"
            rows = np.array([view.doc_row[d] for d in cand], dtype=np.int64)
        else:
            rows = np.arange(len(view.doc_ids))
        docs = self._choose_docs(query, target, strategy, doc_sc, rows)
        comp_rows = np.array([view.comp_row[c] for d in docs for c in self.corpus.components_by_doc.get(d, []) if c in view.comp_row],
                             dtype=np.int64)
        if not len(comp_rows):
            return docs, [], "the chosen documents have no components"
        return docs, self._choose_units(query, target, strategy, doc_sc, comp_rows), ""

    def _choose_docs(self, query: str, target: str, strategy: Strategy, doc_sc: np.ndarray, rows: np.ndarray) -> list[str]:
        """The documents a hop keeps: the best by vector score, or the LLM's pick from the shortlist."""
        view, cfg, docs = self.view, self.cfg, self.corpus.documents
        shortlist = top_ordered(doc_sc, rows, cfg.shortlist)  # document rows, best first
        chosen = [int(r) for r in shortlist[: cfg.docs_per_hop]]
        if strategy.reasoning == "both" and self._calls_left() >= 3:  # this call, the components', the evaluator's
            cands = [T.DocCandidate(index=i, filename=docs[view.doc_ids[r]].file_name, title=docs[view.doc_ids[r]].title,
                                    summary=docs[view.doc_ids[r]].summary[:400], score=round(float(doc_sc[r]), 4))
                     for i, r in enumerate(shortlist)]
            payload = T.SelectDocsPayload(original_query=query, subtask_query=target, vector_granularity=GRANULARITY_NAMES[strategy.granularity],
                                          candidates=cands, max_results=cfg.docs_per_hop)
            out = self.llm.run(T.SELECT_DOCS, payload)
            chosen = [int(shortlist[i]) for i in _picked(out.selection, len(shortlist), cfg.docs_per_hop)] or chosen
        return [view.doc_ids[r] for r in chosen]

    def _choose_units(self, query: str, target: str, strategy: Strategy, doc_sc: np.ndarray, comp_rows: np.ndarray) -> list[ScoredNode]:
        """The components a hop keeps: by the mix of their own and their document's score, or the LLM's pick."""
        corpus, view, cfg, g = self.corpus, self.view, self.cfg, strategy.granularity
        # A unit's score mixes its own (component level) and its document's (document level).
        unit = 0.5 * self.scores.comp_scores(target, g)[comp_rows] + 0.5 * doc_sc[view.comp_doc_row[comp_rows]]
        order = np.lexsort((comp_rows, -unit))[: cfg.shortlist]
        ranked = [int(o) for o in order[: cfg.units_per_hop]]
        if strategy.reasoning != "none" and self._calls_left() >= 2:  # this call and the evaluator's
            cands = []
            for i, o in enumerate(order):
                node = corpus.nodes[view.comp_ids[comp_rows[o]]]
                cands.append(T.ComponentCandidate(index=i, filename=corpus.documents[node.doc].file_name, title=corpus.documents[node.doc].title,
                                                  component_id=node.id, text=node.text[:600], score=round(float(unit[o]), 4)))
            payload = T.SelectComponentsPayload(original_query=query, subtask_query=target, vector_granularity=GRANULARITY_NAMES[g],
                                                candidates=cands, max_results=cfg.units_per_hop)
            out = self.llm.run(T.SELECT_COMPONENTS, payload)
            ranked = [int(order[i]) for i in _picked(out.selection, len(order), cfg.units_per_hop)] or ranked
        return [ScoredNode(node_id=view.comp_ids[comp_rows[o]], score=round(float(unit[o]), 6), why=f"{strategy.hop} g{g}")
                for o in ranked]

    def _evaluate(
        self, memory: Memory, index: int, target: str, entity: str | None, found: list[ScoredNode], source_files: list[str]
    ) -> T.EvaluateAnswer:
        if not found:
            return T.EvaluateAnswer(status="not answerable", updated_subtasks=[], dead_end=bool(entity), reason="nothing found")
        corpus = self.corpus
        cands = []
        for i, hit in enumerate(found):
            node = corpus.nodes[hit.node_id]
            cands.append(T.EvidenceCandidate(index=i, filename=corpus.documents[node.doc].file_name, title=corpus.documents[node.doc].title,
                                             component_id=node.id, text=node.text, links=self.view.links_of(node.id), score=hit.score))
        payload = T.EvaluatePayload(original_query=memory.query, subtask_query=target, subtask_index=index, entity=entity,
                                    source_files=source_files, subtasks=memory.subtasks(), candidates=cands,
                                    min_coverage=self.cfg.min_coverage, min_score=self.cfg.min_score)
        return self.llm.run(T.EVALUATE, payload)

    # ------------------------------------------------------------ STOP

    def _stop(self, memory: Memory, trace: Trace, top_k: int, reason: str, usage0: Usage) -> list[ScoredNode]:
        """RERANK every unit in memory against the original query, then record the STOP step (charged
        with the decision to stop and the rerank)."""
        found_by: dict[str, list[T.FoundBy]] = {}
        for h in memory.hops:
            for rank, hit in enumerate(h.found):
                found_by.setdefault(hit.node_id, []).append(T.FoundBy(step=h.step, subtask=h.subtask, outcome=h.outcome, rank=rank))
        ids = list(found_by)
        cands = self._rerank_candidates(memory.query, ids, found_by)
        payload = T.RerankPayload(query=memory.query, candidates=cands, top_k=top_k, chain=_chain(memory, cands),
                                  hop_weight=self.cfg.hop_weight)
        if not cands:
            picks: list[T.Pick] = []
        elif self._calls_left() >= 1:
            picks = self.llm.run(T.RERANK, payload).ranking
        else:  # no call left: the rules reranker, which costs nothing
            picks = T.RERANK.run_rules(payload).ranking
        results: list[ScoredNode] = []
        ceiling = float("inf")  # keeps scores non-increasing whatever the reranker returned
        scores = {p.index: p.score for p in picks}
        ranked = [i for i in dict.fromkeys(p.index for p in picks) if 0 <= i < len(ids)]
        # A model that ranked only its top k: the others follow by relevance to the query.
        rest = sorted((i for i in range(len(ids)) if i not in set(ranked)), key=lambda i: (-cands[i].score, ids[i]))
        for i in ranked + rest:
            ceiling = min(ceiling, scores.get(i, cands[i].score))
            results.append(ScoredNode(node_id=ids[i], score=round(ceiling, 6), why=_why(found_by[ids[i]])))
        weight = self._seed_weight(memory)
        if weight > 0:
            results = self._with_seeds(memory, results, weight)
        if len(results) < top_k:
            # The hops kept fewer units than asked for: the question's direct matches follow.
            results = filled_with_seeds(results, self._seeds(memory, top_k), top_k)
        results = results[:top_k]
        answered = sum(s.status == "answered" for s in memory.subqueries)
        trace.add(AgentStep(
            step=memory.steps + 1, action="stop", outcome="stopped", found=results[:FOUND_IN_TRACE],
            reason=f"{reason}; {answered}/{len(memory.subqueries)} subqueries answered; reranked {len(ids)} units"
                   + (f", fused with the question's seeds (weight {weight:g})" if weight > 0 else ""),
            **self._cost(usage0),
        ))
        return results

    def _seed_weight(self, memory: Memory) -> float:
        """seed_weight, times the share of subqueries left unanswered when seed_open is set: a
        traversal that answered every subquery is trusted as it is, unless (seed_open 2) the
        question's best direct match is in no hop's findings. Unless seed_extensions, a subquery
        added to extend a plan already resolved does not count: its failure leaves what the plan
        found as it was."""
        if not self.cfg.seed_open:
            return self.cfg.seed_weight
        subs = [s for i, s in enumerate(memory.subqueries)
                if self.cfg.seed_extensions or i not in memory.extensions or s.status == "answered"]
        unanswered = sum(s.status != "answered" for s in subs) / len(subs) if subs else 1.0
        if self.cfg.seed_open >= 2 and unanswered < 1.0:
            # Answered, but the question's best direct match is nowhere in memory: the hops
            # answered from elsewhere (a look-alike table of another report).
            top = top_rows(self.scores.comp_scores(memory.query, 0), 1)
            kept = {hit.node_id for h in memory.hops for hit in h.found}
            if len(top) and self.view.comp_ids[int(top[0])] not in kept:
                unanswered = 1.0
        return round(self.cfg.seed_weight * unanswered, 6)

    def _with_seeds(self, memory: Memory, results: list[ScoredNode], weight: float) -> list[ScoredNode]:
        """The reranked memory fused with the whole question's best components (the seeds a hop
        starts from): a seed the agent never kept still gets in, on its rank."""
        return fused_with_seeds(results, self._seeds(memory, self.cfg.shortlist), weight, seed_why=SEED_WHY)

    def _seeds(self, memory: Memory, n: int) -> list[str]:
        """The whole question's n best components (the seeds a hop starts from)."""
        whole = self.scores.comp_scores(memory.query, 0)
        return [self.view.comp_ids[r] for r in top_rows(whole, n)]

    def _rerank_candidates(self, query: str, ids: list[str], found_by: dict[str, list[T.FoundBy]]) -> list[T.RerankCandidate]:
        corpus, view = self.corpus, self.view
        relevance = self.scores.comp_scores(query, 2)  # (n_comps,)
        cands = []
        for i, node_id in enumerate(ids):
            node = corpus.nodes[node_id]
            cands.append(T.RerankCandidate(index=i, filename=corpus.documents[node.doc].file_name, component_id=node_id,
                                           title=corpus.documents[node.doc].title, text=node.text[:600],
                                           score=round(float(relevance[view.comp_row[node_id]]), 6), found_by=found_by[node_id]))
        return cands


def _chain(memory: Memory, cands: list[T.RerankCandidate]) -> list[int]:
    """For each answered subquery, the candidate index of its best unit from its earliest successful hop."""
    chain = []
    for j in range(len(memory.subqueries)):
        best = min(((f.step, f.rank, i) for i, c in enumerate(cands) for f in c.found_by
                    if f.subtask == j and f.outcome == "success"), default=None)
        if best is not None:
            chain.append(best[2])
    return chain


def _picked(selection: list[T.Pick], n: int, limit: int) -> list[int]:
    """Valid, distinct candidate indexes of an LLM selection, in its order."""
    out: list[int] = []
    for s in selection:
        if 0 <= s.index < n and s.index not in out:
            out.append(s.index)
    return out[:limit]


def _evidence_doc(corpus, found: list[ScoredNode], index: int | None) -> str | None:
    i = index if index is not None and 0 <= index < len(found) else 0
    return corpus.nodes.doc_of(found[i].node_id) if found else None


def _why(found_by: list[T.FoundBy]) -> str:
    return ", ".join(f"step {f.step} {f.outcome} #{f.rank + 1}" for f in found_by[:3])
