"""FiF on tiny linked PDFs where the right answer is known: history-aware backtracking after a
trap link, the near-miss escalation, the cost ladder, the step and LLM-call budgets, the trace as
data, determinism; and the rules behind the prompts.

The PDFs are drawn with PyMuPDF, linked with file (Launch) links as the hotpot corpus is, and
ingested with the session service. Tests that check the agent's exact route fix the plan with a
scripted `fif_decompose` reply (its offline rules are LILaC's decomposition); one test runs the real one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pymupdf
import pytest

from backend.retrieval.fif.rules import LADDER, bridge_entities, compose, entity_spans, evaluate, orchestrate
from backend.retrieval.fif import FiFRetriever, strategy_of
from backend.types import AgentStep, DecomposeStep, Trace
from tests.fakes import CHAIN, CHAIN_LINKS, ScriptedLLM

# The film's page names its star first, in a sentence with more of the question's words ("city",
# "director"); the star's mention is a trap link to the soundtrack page, which never names him. The
# director's link is right.
TRAP_DOCS: dict[str, tuple[str, list[str], list[tuple[str, str]]]] = {
    "Night_Harbor.pdf": (
        "Night Harbor",
        ["Night Harbor is a 1961 drama film starring Tom Reyes as a city theatre director. It was directed by Elena Marsh."],
        [("Tom Reyes", "Night_Harbor_Soundtrack.pdf"), ("Elena Marsh", "Elena_Marsh.pdf")],
    ),
    "Night_Harbor_Soundtrack.pdf": (
        "Night Harbor Soundtrack",
        ["The soundtrack album of the drama was released on vinyl by Tidewater Records with twelve songs."],
        [],
    ),
    "Elena_Marsh.pdf": ("Elena Marsh", ["Elena Marsh is a film director. She was born in the city of Vellmar in 1920."], []),
    "Harbor_Lights.pdf": ("Harbor Lights", ["Harbor Lights is a 1950 musical film set in a small fishing town."], []),
    "Coastal_Film_Festival.pdf": (
        "Coastal Film Festival", ["The Coastal Film Festival shows drama films every autumn in the old harbor."], []),
}
TRAP_QUESTION = "In which city was the director of the film Night Harbor born?"
TRAP_PLAN = [{"text": "the director of the film Night Harbor", "depends_on": []},
             {"text": "In which city was the director born", "depends_on": [0]}]

# The film's page links only to its poster page, which mentions the director but is not his page.
NEAR_MISS_DOCS: dict[str, tuple[str, list[str], list[tuple[str, str]]]] = {
    "Blue_Canal.pdf": (
        "Blue Canal",
        ["Blue Canal is a 1975 thriller film with a famous poster. It was directed by Ivo Brandt."],
        [("poster", "Blue_Canal_Poster.pdf")],
    ),
    "Blue_Canal_Poster.pdf": ("Blue Canal Poster", ["The poster of the thriller was drawn by the brother of Ivo Brandt."], []),
    # Titled with his middle initial: the film's page names him "Ivo Brandt", which is no title, so
    # his page is no neighbour of the film's (NAMED_DIRECTOR_DOCS titles him as the film names him).
    "Ivo_Brandt.pdf": ("Ivo K. Brandt", ["Ivo K. Brandt is a Danish director. He was born in the town of Kestrel in 1931."], []),
    "Green_Canal.pdf": ("Green Canal", ["Green Canal is a 1980 comedy film about two sailors."], []),
}
NAMED_DIRECTOR_DOCS = {**NEAR_MISS_DOCS, "Ivo_Brandt.pdf": (
    "Ivo Brandt", ["Ivo Brandt is a Danish director. He was born in the town of Kestrel in 1931."], [])}
NEAR_MISS_QUESTION = "Where was the director of the film Blue Canal born?"
NEAR_MISS_PLAN = [{"text": "the director of the film Blue Canal", "depends_on": []},
                  {"text": "Where was the director born", "depends_on": [0]}]
TIGHT = {"docs_per_hop": 2, "units_per_hop": 2}


def _make_pdf(path: Path, title: str, paragraphs: list[str], links: list[tuple[str, str]]) -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=612, height=792)
    page.insert_text((54, 80), title, fontsize=20, fontname="helv")
    y = 110
    for para in paragraphs:
        page.insert_textbox(pymupdf.Rect(54, y, 558, y + 80), para, fontsize=11, fontname="helv")
        y += 90
    for mention, target in links:
        page.insert_link({"kind": pymupdf.LINK_LAUNCH, "file": target, "from": page.search_for(mention)[0]})
    doc.set_metadata({"title": title})
    doc.set_toc([[1, title, 1]])
    doc.save(path)
    doc.close()


def _ingest(service, strata_settings, tmp_path_factory, name: str, docs):
    folder = tmp_path_factory.mktemp(f"{name}_pdfs")
    for file_name, (title, paragraphs, links) in docs.items():
        _make_pdf(folder / file_name, title, paragraphs, links)
    ws = strata_settings.workspace_root / name
    report = service.ingest(ws, sorted(folder.glob("*.pdf")))
    assert not report.failed, [(f.file_name, f.reason) for f in report.failed]
    return service.corpus(ws)


@pytest.fixture(scope="module")
def trap(service, strata_settings, tmp_path_factory):
    return _ingest(service, strata_settings, tmp_path_factory, "fif_trap", TRAP_DOCS)


@pytest.fixture(scope="module")
def near_miss(service, strata_settings, tmp_path_factory):
    return _ingest(service, strata_settings, tmp_path_factory, "fif_near_miss", NEAR_MISS_DOCS)


@pytest.fixture(scope="module")
def named_director(service, strata_settings, tmp_path_factory):
    return _ingest(service, strata_settings, tmp_path_factory, "fif_named_director", NAMED_DIRECTOR_DOCS)


def _scripted(plan: list[dict[str, Any]] | None = None) -> ScriptedLLM:
    """A model-faced rules backend whose decomposition is a fixed plan when one is given."""
    return ScriptedLLM({"fif_decompose": {"subqueries": plan}} if plan else None)


def _run(service, corpus, query: str, params: dict | None = None, llm=None, top_k: int = 5):
    retriever = service.retriever("fif", corpus, llm)
    trace = Trace(method="fif", llm_backend=retriever.llm.name)
    return retriever.retrieve(query, top_k, dict(params or {}), trace), trace


def _doc(corpus, node_id: str) -> str:
    return corpus.documents[corpus.nodes[node_id].doc].file_name


def _agent(trace: Trace) -> list[AgentStep]:
    return [s for s in trace.steps if isinstance(s, AgentStep)]


def _rung(step: AgentStep) -> tuple[str, int, str]:
    return step.strategy.hop, step.strategy.granularity, step.strategy.reasoning


LADDER_STRATEGIES = [_rung(AgentStep(step=0, action="traverse", strategy=strategy_of(*r))) for r in LADDER]


# ---------------------------------------------------------------- the agent on linked PDFs


def test_trap_link_fails_then_backtracks_to_the_successful_step_and_succeeds(service, trap):
    hits, trace = _run(service, trap, TRAP_QUESTION, TIGHT, _scripted(TRAP_PLAN))
    steps = [s for s in _agent(trace) if s.action == "traverse"]
    first, trapped, recovered = steps[0], steps[1], steps[2]
    assert first.outcome == "success" and _doc(trap, first.found[0].node_id) == "Night_Harbor.pdf"
    # Hop 2 follows the most likely entity (the star) along its link: the soundtrack page never names him.
    assert trapped.outcome == "failure" and "Tom Reyes" in trapped.subquery and _rung(trapped) == ("local", 0, "none")
    assert "Night_Harbor_Soundtrack.pdf" in [_doc(trap, f.node_id) for f in trapped.found]
    assert "dead end" in trapped.reason
    # Hop 3 re-anchors to hop 1 (not to the dead end it just reached) with the next candidate entity.
    assert recovered.backtrack_to == first.step and recovered.outcome == "success"
    assert "Elena Marsh" in recovered.subquery and _rung(recovered) == ("local", 0, "none")
    assert recovered.anchor == [trap.nodes[first.found[0].node_id].doc, trap.nodes[first.found[1].node_id].doc]
    assert _doc(trap, recovered.found[0].node_id) == "Elena_Marsh.pdf"
    # Both hops of the chain lead the final ranking; the dead end does not.
    assert [_doc(trap, h.node_id) for h in hits[:2]] == ["Night_Harbor.pdf", "Elena_Marsh.pdf"]
    assert _agent(trace)[-1].action == "stop" and "2/2 subqueries answered" in _agent(trace)[-1].reason


def test_without_the_history_the_naive_anchor_would_be_the_dead_end(service, trap):
    """The re-anchoring is real: the documents the failed hop reached are not where hop 3 starts."""
    _, trace = _run(service, trap, TRAP_QUESTION, TIGHT, _scripted(TRAP_PLAN))
    steps = [s for s in _agent(trace) if s.action == "traverse"]
    dead_end_docs = {trap.nodes[f.node_id].doc for f in steps[1].found}
    assert set(steps[2].anchor) != dead_end_docs
    assert trap.nodes[steps[0].found[0].node_id].doc in steps[2].anchor


def test_a_near_miss_keeps_the_entity_and_escalates_local_to_global(service, near_miss):
    hits, trace = _run(service, near_miss, NEAR_MISS_QUESTION, TIGHT, _scripted(NEAR_MISS_PLAN))
    steps = [s for s in _agent(trace) if s.action == "traverse"]
    assert [s.outcome for s in steps] == ["success", "failure", "success"]
    local, wide = steps[1], steps[2]
    assert _rung(local) == ("local", 0, "none") and "near miss" in local.reason
    assert [_doc(near_miss, f.node_id) for f in local.found] == ["Blue_Canal_Poster.pdf"]
    assert _rung(wide) == ("global", 0, "none") and wide.subquery == local.subquery == "Where was Ivo Brandt born"
    assert _doc(near_miss, wide.found[0].node_id) == "Ivo_Brandt.pdf"
    assert {_doc(near_miss, h.node_id) for h in hits[:2]} == {"Blue_Canal.pdf", "Ivo_Brandt.pdf"}


def test_a_page_the_first_hop_names_without_a_link_is_a_local_neighbour(service, named_director):
    """The film's page carries no link to its director's, but its text names his page's title:
    the local hop reaches him (mentions.py), with no escalation to a global search."""
    from backend.retrieval.fif.memory import DocumentRowMaps

    view = DocumentRowMaps(named_director)
    film = next(d for d, doc in named_director.documents.items() if doc.file_name == "Blue_Canal.pdf")
    assert {named_director.documents[d].file_name for d in view.neighbours(film)} == {"Blue_Canal_Poster.pdf", "Ivo_Brandt.pdf"}
    paragraph = next(c for c in named_director.components_by_doc[film] if "directed by" in named_director.nodes.text_of(c))
    assert view.links_of(paragraph) == ["Blue Canal Poster", "Ivo Brandt"]  # the link annotation, then the named page
    hits, trace = _run(service, named_director, NEAR_MISS_QUESTION, TIGHT, _scripted(NEAR_MISS_PLAN))
    steps = [s for s in _agent(trace) if s.action == "traverse"]
    assert [s.outcome for s in steps] == ["success", "success"]
    assert _rung(steps[1]) == ("local", 0, "none") and steps[1].subquery == "Where was Ivo Brandt born"
    assert "Ivo_Brandt.pdf" in [_doc(named_director, f.node_id) for f in steps[1].found]
    assert {_doc(named_director, h.node_id) for h in hits[:2]} == {"Blue_Canal.pdf", "Ivo_Brandt.pdf"}


def test_escalation_follows_the_cost_ladder(service, trap):
    """A subquery nothing answers climbs every rung once, cheapest first (no anchor: no local rung)."""
    _, trace = _run(service, trap, "Where did Zorblax Quintavern study?", {}, _scripted())
    steps = [s for s in _agent(trace) if s.action == "traverse"]
    first_subquery = [s for s in steps if s.subquery == steps[0].subquery]
    assert [_rung(s) for s in first_subquery] == [r for r in LADDER_STRATEGIES if r[0] == "global"]
    assert all(s.outcome == "failure" for s in first_subquery)
    costs = [s.llm_calls for s in first_subquery]
    assert costs == [2, 2, 2, 3, 4], "orchestrator + evaluator, plus the component and document selections"
    plan = next(s for s in _agent(trace) if s.action == "plan")
    assert plan.step == len(first_subquery) + 1, "PLAN comes once the ladder is spent"


def test_the_step_budget_is_respected(service, trap):
    for max_steps in (1, 2, 3):
        _, trace = _run(service, trap, "Where did Zorblax Quintavern study?", {"max_steps": max_steps}, _scripted())
        acting = [s for s in _agent(trace) if s.action != "stop"]
        assert len(acting) == max_steps
        assert _agent(trace)[-1].action == "stop" and "step budget" in _agent(trace)[-1].reason


@pytest.mark.parametrize("budget", [3, 6, 9, 14])
def test_the_llm_call_budget_is_respected(service, trap, budget):
    llm = _scripted()
    hits, trace = _run(service, trap, "Where did Zorblax Quintavern study?", {"max_llm_calls": budget}, llm)
    assert hits, "at least one hop fits, and the rules reranker ranks memory when no call is left"
    assert llm.usage.calls <= budget
    # Every call is charged: the initial plan's to nobody, every other one to the step it led to.
    assert llm.log[0][0] == "fif_decompose"
    assert sum(s.llm_calls for s in _agent(trace)) == llm.usage.calls - 1
    assert sum(s.llm_tokens for s in _agent(trace)) == llm.usage.tokens - llm.log[0][1]
    # The budget cuts the ladder short, it never reorders it, and the stop says why.
    rungs = [_rung(s) for s in _agent(trace) if s.action == "traverse"]
    assert rungs == [r for r in LADDER_STRATEGIES if r[0] == "global"][: len(rungs)]
    assert "LLM call budget" in _agent(trace)[-1].reason


def test_llm_reasoning_rungs_run_when_the_budget_allows(service, trap):
    llm = _scripted()
    _, trace = _run(service, trap, "Where did Zorblax Quintavern study?", {"max_llm_calls": 100}, llm)
    assert {s.strategy.reasoning for s in _agent(trace) if s.strategy} == {"none", "component", "both"}
    assert llm.usage.tasks.get("fif_select_docs") and llm.usage.tasks.get("fif_select_components")


def test_trace_round_trips_through_json(service, trap):
    hits, trace = _run(service, trap, TRAP_QUESTION, TIGHT, _scripted(TRAP_PLAN))
    again = Trace.model_validate_json(trace.model_dump_json())
    assert again == trace
    assert isinstance(trace.steps[0], DecomposeStep) and [s.text for s in trace.steps[0].subqueries] == [p["text"] for p in TRAP_PLAN]
    step = next(s for s in again.steps if isinstance(s, AgentStep) and s.backtrack_to is not None)
    assert step.strategy is not None and step.anchor and step.llm_calls > 0 and step.llm_tokens > 0
    assert trace.params["max_steps"] == 8 and trace.params["docs_per_hop"] == 2
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_rules_are_deterministic_and_find_both_hops_with_the_shared_decomposition(service, trap):
    first, trace1 = _run(service, trap, TRAP_QUESTION, TIGHT)
    second, trace2 = _run(service, trap, TRAP_QUESTION, TIGHT)
    assert first == second and trace1 == trace2
    assert {_doc(trap, h.node_id) for h in first[:2]} == {"Night_Harbor.pdf", "Elena_Marsh.pdf"}
    assert all(s.llm_calls == 0 and s.seconds == 0.0 for s in _agent(trace1)), "rules make no model calls"


def test_scores_at_each_granularity_are_the_max_over_descendants(service, trap):
    retriever = service.retriever("fif", trap)
    scores = retriever.fif_scores(alpha=0.5)
    view = retriever.view
    text = "born in the city of Vellmar"
    own = scores.comp_scores(text, 1)
    by_sentence = scores.comp_scores(text, 2)
    sub = scores.scores(text).sub.dense()
    for d in view.doc_ids:
        comps = [view.comp_row[c] for c in trap.components_by_doc[d]]
        subs = [trap.layers["subcomponents"].dense.row[s] for c in trap.components_by_doc[d] for s in trap.subcomponents(c)]
        assert scores.doc_scores(text, 1)[view.doc_row[d]] == pytest.approx(max(own[r] for r in comps))
        assert scores.doc_scores(text, 2)[view.doc_row[d]] == pytest.approx(max(sub[r] for r in subs))
        for c in trap.components_by_doc[d]:
            rows = [trap.layers["subcomponents"].dense.row[s] for s in trap.subcomponents(c)]
            assert by_sentence[view.comp_row[c]] == pytest.approx(max(sub[r] for r in rows))
    best = int(np.argmax(scores.doc_scores(text, 2)))
    assert trap.documents[view.doc_ids[best]].file_name == "Elena_Marsh.pdf"


@pytest.mark.parametrize("candidates,raised", [(None, False), (3, False), (30, True)])
def test_scores_over_subcomponents_read_sparse_are_the_max_over_every_row(service, sample_corpus, candidates, raised, monkeypatch):
    """The document and component maxima over subcomponents come from the rows with a score of
    their own and the shared score of the rest: the numbers a max over every row gives, on an
    exact layer and on approximate ones where most rows share one score. raised: the shared
    cosine set to the candidates' median (so some rows with their own score are under it and the
    shared fused score is above 0, the floor every group starts from)."""
    from dataclasses import replace

    from backend.index.vector import VectorIndex
    from backend.retrieval import scoring
    from backend.retrieval.fif.memory import max_into
    from backend.retrieval.scoring import QueryScores
    from tests.fakes import with_approximate_layer

    corpus = sample_corpus
    if candidates is not None:
        monkeypatch.setattr(scoring, "LEXICAL_CANDIDATES", 3)
        corpus = with_approximate_layer(sample_corpus, "subcomponents", candidates)
    if raised:
        found = VectorIndex.candidates_many
        monkeypatch.setattr(VectorIndex, "candidates_many", lambda self, q: [
            replace(c, rest=np.float32(np.median(c.scores))) for c in found(self, q)])
    retriever = service.retriever("fif", corpus)
    view, subs = retriever.view, corpus.layers["subcomponents"]
    for text in ("rainforest canopy height", "quarterly revenue table", "zzzq"):
        scores = retriever.fif_scores(alpha=0.5)
        every_row = QueryScores().hybrid(subs, text, service.encoders.sub.encode([text])[0], 0.5)
        assert np.array_equal(scores.scores(text).sub.dense(), every_row)
        assert np.array_equal(scores.doc_scores(text, 2), max_into(every_row, view.sub_doc_row, len(view.doc_ids)))
        by_comp = np.where(view.comp_has_subs, max_into(every_row, view.sub_comp_row, len(view.comp_ids)), scores.comp_scores(text, 1))
        assert np.array_equal(scores.comp_scores(text, 2), by_comp)
        if candidates is not None:
            assert scores.scores(text).sub.rest is not None, "most rows share one score"
        if raised:
            assert scores.scores(text).sub.rest > 0


# ---------------------------------------------------------------- the rules behind the prompts


def test_rules_compose_a_dependent_subquery_with_the_bridge_entity():
    assert compose("In which city was the director born", "Elena Marsh", "the director of the film Night Harbor") == \
        "In which city was Elena Marsh born"
    assert compose("(i) co-founder media outlet", "The Conversation") == "The Conversation co-founder media outlet"
    assert compose("What year was it released", "Heat", "") == "Heat What year was it released"
    assert entity_spans('What government position was held by the woman who portrayed Corliss Archer in "Kiss and Tell"?') == \
        ["Corliss Archer", "Kiss and Tell"]


def test_rules_read_bridge_entities_from_evidence():
    unit = {"title": "Kiss and Tell (1945 film)", "links": ["Shirley Temple"],
            "text": "Kiss and Tell is a 1945 American comedy film starring then 17-year-old Shirley Temple as Corliss Archer."}
    assert bridge_entities("the woman who portrayed Corliss Archer in the film Kiss and Tell", unit)[0] == "Shirley Temple"
    # A page the subtask only describes is itself the answer.
    page = {"title": "Cressida Bonas", "links": [], "text": "Cressida Bonas is the youngest daughter of Lady Mary-Gaye Curzon."}
    assert bridge_entities("The youngest daughter of Lady Mary-Gaye Curzon", page)[0] == "Cressida Bonas"


def test_rules_evaluator_tells_a_dead_end_from_a_near_miss_and_a_hit():
    base = {"original_query": TRAP_QUESTION, "subtask_query": "In which city was Tom Reyes born", "subtask_index": 1,
            "entity": "Tom Reyes", "subtasks": [], "min_coverage": 0.5, "min_score": 0.3}
    soundtrack = {"filename": "S.pdf", "title": "Night Harbor Soundtrack", "text": "The album was released on vinyl.", "score": 0.9}
    mention = {"filename": "P.pdf", "title": "Poster", "text": "The poster was drawn by a friend of Tom Reyes.", "score": 0.9}
    own = {"filename": "T.pdf", "title": "Tom Reyes", "text": "Tom Reyes is an actor.", "score": 0.9}
    assert evaluate({**base, "candidates": [soundtrack]})["dead_end"] is True
    near = evaluate({**base, "candidates": [mention]})
    assert near["status"] == "not answerable" and near["dead_end"] is False
    assert evaluate({**base, "candidates": [mention, own]})["status"] == "answerable"
    weak = {**own, "score": 0.1}
    assert evaluate({**base, "candidates": [weak]})["status"] == "not answerable", "below the score threshold"


def _tried(rungs: range) -> list[dict[str, Any]]:
    keys = ("document_search_mode", "component_search_mode", "vector_granularity")
    return [{"step": i + 1, "action": "traverse", "subtask": 0, "entity": None, "anchor": None, "outcome": "failure",
             "dead_end": False, "evidence": [], "strategy": dict(zip(keys, LADDER[r]))} for i, r in enumerate(rungs)]


def test_rules_orchestrator_pays_for_each_rung_and_stops_when_it_cannot():
    subtasks = [{"index": 0, "text": "Where did Zorblax Quintavern study", "status": "open", "depends_on": []}]
    ask = {"query": "q", "subtasks": subtasks, "steps_left": 5}
    assert orchestrate({**ask, "memory": [], "steps_left": 0})["action"]["next_action"] == "stop"
    assert orchestrate({**ask, "memory": [], "llm_calls_left": 0})["action"]["reason"] == "LLM call budget spent"
    vector_rungs_spent = _tried(range(1, 4))
    component = orchestrate({**ask, "memory": vector_rungs_spent, "llm_calls_left": 2})["action"]
    assert (component["document_search_mode"], component["component_search_mode"]) == ("vector search", "llm reasoning")
    too_poor = orchestrate({**ask, "memory": vector_rungs_spent, "llm_calls_left": 1})["action"]
    assert too_poor["next_action"] == "stop" and "budget" in too_poor["reason"]
    both = orchestrate({**ask, "memory": _tried(range(1, 5)), "llm_calls_left": 3})["action"]
    assert (both["document_search_mode"], both["component_search_mode"]) == ("llm reasoning", "llm reasoning")
    spent = orchestrate({**ask, "memory": _tried(range(1, 6)), "llm_calls_left": 50})["action"]
    assert spent["next_action"] == "replan", "every rung failed: the plan is the problem"


def test_fif_is_registered_with_bounded_parameters():
    names = {p.name for p in FiFRetriever.params}
    assert {"max_steps", "max_llm_calls"} <= names
    assert FiFRetriever.name == "fif"


def test_seed_weight_fuses_the_whole_questions_best_components_into_the_rerank(service, trap):
    """seed_weight > 0: the reranked memory is fused with the whole question's hybrid ranking, so
    a component the tight traversal never kept still gets in (with its reason), nothing the agent
    found is lost, and the stop step says so; 0 is the paper's rerank alone. With seed_open 1 a
    traversal that answered every subquery, as here, keeps its own order."""
    from backend.retrieval.scoring import SEED_WHY

    alone, trace0 = _run(service, trap, TRAP_QUESTION, {**TIGHT, "seed_weight": 0.0}, top_k=20)
    trusted, _ = _run(service, trap, TRAP_QUESTION, {**TIGHT, "seed_weight": 1.0, "seed_open": 1}, top_k=20)
    assert trusted == alone
    fused, trace1 = _run(service, trap, TRAP_QUESTION, {**TIGHT, "seed_weight": 1.0, "seed_open": 0}, top_k=20)
    assert SEED_WHY not in {h.why for h in alone}
    # the agent's own units (the fill after them aside) are a strict part of what the fusion ranks
    assert {h.node_id for h in alone if not h.why.startswith(SEED_WHY)} < {h.node_id for h in fused}
    assert any(h.why == SEED_WHY for h in fused)
    assert [h.score for h in fused] == sorted((h.score for h in fused), reverse=True)
    stop0, stop1 = _agent(trace0)[-1], _agent(trace1)[-1]
    assert "seeds" not in stop0.reason and "fused with the question's seeds (weight 1)" in stop1.reason


def test_answered_subqueries_still_take_the_seeds_when_the_best_direct_match_is_not_in_memory(service, trap):
    """seed_open 2: every subquery answered but the question's best direct match in no hop's
    findings (the hops answered from a look-alike elsewhere) means the full seed weight; with that
    match among the findings the agent's order stands; seed_open 1 looks at the answers alone."""
    from backend.retrieval.fif.agent import FiFAgent
    from backend.retrieval.fif.memory import FiFParams, HopRecord, Memory
    from backend.retrieval.scoring import top_rows
    from backend.types import ScoredNode, SubQuery

    retriever = service.retriever("fif", trap)

    def weight(seed_open: int, found: list[str]) -> float:
        cfg = FiFParams(seed_weight=2.0, seed_open=seed_open)
        agent = FiFAgent(trap, retriever.llm, cfg, retriever.fif_scores(cfg.alpha))
        hop = HopRecord(step=1, subtask=0, target=TRAP_QUESTION, entity=None, strategy=strategy_of("global", 0, "none"),
                        anchor=None, outcome="success", dead_end=False, docs=[],
                        found=[ScoredNode(node_id=n, score=1.0, why="hop") for n in found])
        memory = Memory(query=TRAP_QUESTION, subqueries=[SubQuery(text=TRAP_QUESTION, status="answered")], hops=[hop])
        return agent._seed_weight(memory)

    scores = retriever.fif_scores(0.5).comp_scores(TRAP_QUESTION, 0)
    ids = retriever.view.comp_ids
    best, other = ids[int(top_rows(scores, 1)[0])], ids[int(top_rows(scores, len(ids))[-1])]
    assert weight(2, [best]) == 0.0
    assert weight(2, [other]) == 2.0
    assert weight(1, [other]) == 0.0


def test_a_traversal_that_kept_few_units_still_answers_with_top_k(service, trap):
    """TIGHT keeps two units a hop: the hops alone hold fewer than 12; the question's direct
    matches fill the list after the agent's own."""
    hits, trace = _run(service, trap, TRAP_QUESTION, TIGHT, _scripted(TRAP_PLAN), top_k=12)
    n_components = len(trap.layers["components"].ids)
    assert len(hits) == min(12, n_components)
    own = [h for h in hits if not h.why.startswith("seed")]
    filled = [h for h in hits if h.why.endswith("after the strategy's own")]
    assert own and filled and hits[:len(hits) - len(filled)] == [h for h in hits if h not in filled]
    assert len({h.node_id for h in hits}) == len(hits)
    assert all(a.score >= b.score for a, b in zip(hits, hits[1:]))


GREEN = {
    "Green_(album).pdf": ["Green is the fourth studio album by the English guitarist Steve Hillage, released in 1978."],
    "Steve_Hillage.pdf": ["Steve Hillage is an English guitarist. In 1990 he married Miquette Giraudy, his partner in music."],
    "Blue_(album).pdf": ["Blue is a 1971 album by the Canadian singer Joni Mitchell."],
    "Joni_Mitchell.pdf": ["Joni Mitchell is a Canadian singer and painter. Her spouse was Chuck Mitchell, a folk singer."],
    "Green_Day.pdf": ["Green Day is an American rock band formed in 1987. Its singer Billie Joe Armstrong's spouse is Adrienne."],
    "Stage_spouses.pdf": ["The spouse of a performer often tours with the band; many a performer's spouse is a musician too."],
}


def test_a_role_written_before_a_name_is_found_first_and_its_holder_asked_about(service):
    """MuSiQue-style "the Green performer": the performer of Green is the first hop (the album's
    page names Steve Hillage), and the question is then asked of him, not of the words 'Green',
    'spouse' and 'performer', which the Green Day and stage pages hold."""
    from tests.fakes import build_corpus, doc_of

    corpus = build_corpus(service, GREEN)
    question = "Who is the spouse of the Green performer?"
    trace = Trace(method="fif")
    hits = service.retriever("fif", corpus).retrieve(question, 3, {}, trace)
    docs = list(dict.fromkeys(doc_of(corpus, h.node_id) for h in hits))
    assert {"Green_(album).pdf", "Steve_Hillage.pdf"} <= set(docs[:3]), docs
    asked = " | ".join(s.model_dump_json() for s in trace.steps)
    assert "the performer of Green" in asked and "spouse of Steve Hillage" in asked


def test_the_bridge_named_by_the_hops_own_words_leads_to_the_third_page(service):
    """The rules ask first for Dara Quill's high school. Its evidence names the school, whose name
    carries the hop's own words ("high school"): that is the bridge, not a name the subtask
    already is, and the next hop is asked of it. Before, the club took its place and the school's
    page, the middle of the chain, was never reached."""
    from tests.fakes import build_corpus, doc_of

    corpus = build_corpus(service, CHAIN, CHAIN_LINKS)
    question = "What was the 2010 population of the community where Dara Quill's high school is located?"
    trace = Trace(method="fif")
    hits = service.retriever("fif", corpus).retrieve(question, 3, dict(TIGHT), trace)
    docs = list(dict.fromkeys(doc_of(corpus, h.node_id) for h in hits))
    assert set(docs[:3]) == {"Dara_Quill.pdf", "Harrow_Vale_High_School.pdf", "Fenwick_Park.pdf"}, docs
    asked = [s.subquery for s in _agent(trace) if s.action == "traverse"]
    assert "the community where Harrow Vale High School is located" in asked, asked
    assert "What was the 2010 population of Fenwick Park" in asked, asked


def test_rules_take_a_name_carrying_the_subtasks_own_words_as_the_bridge():
    unit = {"title": "Dara Quill", "links": ["Kestrel Athletics Club", "Harrow Vale High School"],
            "text": CHAIN["Dara_Quill.pdf"][0]}
    names = bridge_entities("the community where Dara Quill's high school is located", unit)
    assert names[0] == "Harrow Vale High School", names
    # The subtask's named entity is still no answer, whatever else it shares.
    assert "Dara Quill" not in names



def test_rules_take_the_name_in_the_sentence_that_holds_the_relation_not_the_subject_s_name():
    """On the subject's own page every sentence is about the subject, so the sentence that writes
    its name marks nothing out: "He played college football at Kelmar" answers "the college team
    of Ivo Brandt", though the first sentence names him and a longer name."""
    unit = {"title": "Ivo Brandt (American football)", "links": [],
            "text": "Ivo Brandt (born May 2, 1991) is an American football linebacker for the Dunmore Hawks of the "
                    "Western Football League (WFL). He played college football at Kelmar."}
    names = bridge_entities("the college team of Ivo Brandt", unit)
    assert names[0] == "Kelmar", names
    # Where no sentence writes the relation, the sentence naming the subject still comes first.
    page = {"title": "Noor Avila", "links": [],
            "text": "The Tessel Prize went to Mara Quint in 2001. Noor Avila married Teo Ferrand in 1998."}
    assert bridge_entities("the spouse of Noor Avila", page)[0] == "Teo Ferrand"


def test_rules_take_a_relative_sharing_the_family_name_and_the_name_beside_the_relation():
    """'the high-jumping daughter of Tor Lindqvist': his daughter shares his family name but is
    another person; of the two relatives in one sentence, the one written beside "high jumper" is
    the answer. The subject written another way ("Tor Anders Lindqvist") is still no answer."""
    unit = {"title": "Tor Lindqvist", "links": ["Sven Lindqvist", "Mira Lindqvist"],  # both have pages
            "text": "Tor Anders Lindqvist is a former quarterback in the Northern Football League. He is the younger "
                    "brother of former player Sven Lindqvist and the father of world champion high jumper Mira Lindqvist."}
    names = bridge_entities("the high-jumping daughter of Tor Lindqvist", unit)
    assert names[0] == "Mira Lindqvist", names
    assert "Tor Anders Lindqvist" not in names

def test_rules_orchestrator_extends_a_resolved_plan_that_leaves_query_words_uncovered():
    subtasks = [{"index": 0, "text": "the community where Dara Quill's high school is located", "status": "answered",
                 "depends_on": []},
                {"index": 1, "text": "What was the 2010 population of the community", "status": "answered", "depends_on": [0]}]
    school = {"title": "Harrow Vale High School", "text": CHAIN["Harrow_Vale_High_School.pdf"][0]}
    memory = [{"step": 1, "action": "traverse", "subtask": 0, "outcome": "success", "entities": ["Harrow Vale High School"],
               "evidence": [{"title": "Dara Quill", "text": CHAIN["Dara_Quill.pdf"][0]}]},
              {"step": 2, "action": "traverse", "subtask": 1, "outcome": "success", "entities": ["Fenwick Park"],
               "evidence": [school]}]
    ask = {"query": "What was the 2010 population of the community where Dara Quill's high school is located?",
           "subtasks": subtasks, "memory": memory, "steps_left": 5}
    action = orchestrate(ask)["action"]
    assert action["next_action"] == "replan" and "popul" in action["reason"], action
    covered = {**ask, "memory": memory + [{"step": 3, "action": "traverse", "subtask": 1, "outcome": "success",
                                           "entities": [], "evidence": [{"title": "Fenwick Park",
                                                                         "text": CHAIN["Fenwick_Park.pdf"][0]}]}]}
    assert orchestrate(covered)["action"]["next_action"] == "stop"
    assert orchestrate({**ask, "replans": 1})["action"]["next_action"] == "stop", "one replan at most"


def test_a_failed_extension_of_a_resolved_plan_calls_on_the_seeds_only_where_asked(service, trap):
    """A subquery the planner added to a plan already resolved (the chain may be longer than the
    plan) that then fails leaves what the plan found as it was (seed_extensions 0, the default in a
    web of pages); with seed_extensions 1 (separate documents) it counts among the unanswered.
    A subquery added after a failure always counts."""
    from backend.retrieval.fif.agent import FiFAgent
    from backend.retrieval.fif.memory import FiFParams, Memory
    from backend.types import SubQuery

    retriever = service.retriever("fif", trap)

    def weight(seed_extensions: int, extensions: set[int]) -> float:
        cfg = FiFParams(seed_weight=2.0, seed_open=1, seed_extensions=seed_extensions)
        agent = FiFAgent(trap, retriever.llm, cfg, retriever.fif_scores(cfg.alpha))
        plan = [SubQuery(text=t["text"], status="answered", depends_on=t["depends_on"]) for t in TRAP_PLAN]
        memory = Memory(query=TRAP_QUESTION, subqueries=[*plan, SubQuery(text="(i) born", depends_on=[1])],
                        extensions=extensions)
        return agent._seed_weight(memory)

    assert weight(0, {2}) == 0.0
    assert weight(1, {2}) == pytest.approx(2.0 / 3, abs=1e-6)
    assert weight(0, set()) == pytest.approx(2.0 / 3, abs=1e-6)


def test_the_agent_marks_only_a_resolved_plans_new_subqueries_as_its_extension(service, trap):
    from backend.retrieval.fif.agent import FiFAgent
    from backend.retrieval.fif.memory import FiFParams, Memory
    from backend.retrieval.fif.tasks import FiFAction
    from backend.types import SubQuery

    retriever = service.retriever("fif", trap)
    cfg = FiFParams()
    agent = FiFAgent(trap, retriever.llm, cfg, retriever.fif_scores(cfg.alpha))
    replan = FiFAction(next_action="replan", reason="the plan leaves 'born' uncovered")
    for statuses, marked in ((["answered", "answered"], {2}), (["answered", "open"], set())):
        memory = Memory(query=TRAP_QUESTION, subqueries=[SubQuery(text=t["text"], status=s, depends_on=t["depends_on"])
                                                         for t, s in zip(TRAP_PLAN, statuses)])
        agent._replan(memory, Trace(method="fif"), replan, agent._usage())
        assert len(memory.subqueries) == 3 and memory.extensions == marked


def test_rules_planner_follows_no_page_the_evidence_already_holds():
    from backend.retrieval.fif.rules import plan

    memory = [{"step": 1, "action": "traverse", "subtask": 1, "outcome": "success",
               "entities": ["Ben Elton", "The Young Ones"],
               "evidence": [{"title": "Ben Elton", "text": "Ben Elton wrote The Young Ones and Filthy Rich & Catflap."}]}]
    out = plan({"query": "During which years was the first series named among Ben Elton's writing credits broadcast?",
                "memory": memory, "subtasks": []})
    assert out["answers"] == [["The Young Ones"]], out


def test_the_evaluator_reads_an_acronym_from_the_name_a_page_spells_out():
    """"the UNLV teammate of Ken Rose": the page writes "University of Nevada, Las Vegas", never
    "UNLV", so the subtask's named entity was never covered and the chain's first hop failed on
    every rung. A page that spells out another name still does not cover it."""
    base = {"original_query": "Which diocese administers the high school of the daughter of Ken Rose's UNLV teammate?",
            "subtask_query": "the UNLV teammate of Ken Rose", "subtask_index": 0, "subtasks": [],
            "min_coverage": 0.5, "min_score": 0.3}
    page = {"filename": "K.pdf", "title": "Ken Rose", "score": 0.9,
            "text": "Ken Rose attended the University of Nevada, Las Vegas and played alongside Randall Cunningham."}
    other = {**page, "text": "Ken Rose attended the University of Southern California and played alongside Rodney Peete."}
    assert evaluate({**base, "candidates": [page]})["status"] == "answerable"
    assert evaluate({**base, "candidates": [other]})["status"] == "not answerable"
