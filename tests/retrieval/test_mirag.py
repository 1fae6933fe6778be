"""MI-RAG: the second iteration finds the bridge document the first one could not reach, every
iteration is a typed trace step that round-trips through JSON, and the rules for the paper's
prompts (record, expansion, follow-up queries) behave as documented.

The corpus is five one-page PDFs written here: "Where was the director of Glass Harbor born?"
needs the film's page (it names the director, Maren Oduya) and then her page (it says where she
was born, and never mentions the film). Three distractor pages talk about directors born
somewhere, so a one-shot search for the question ranks them above her page.
"""

from __future__ import annotations

import json
from pathlib import Path

import pymupdf
import pytest

from backend.llm.rules import RulesBackend
from backend.retrieval.mirag import MIRAGRetriever
from backend.retrieval.mirag.rules import bridge_terms, candidate_terms, expand, generate, open_words, record
from backend.retrieval.mirag.tasks import EXPAND, ExpandPayload
from backend.types import FuseStep, IterationStep, NodeKind, Trace

QUESTION = "Where was the director of Glass Harbor born?"
PAGES = {
    "glass_harbor.pdf": (
        "Glass Harbor (film)",
        "Glass Harbor is a 1987 drama film directed by Maren Oduya. The film follows a lighthouse keeper on a "
        "remote island through one long winter storm. It was shot on the north coast in eleven weeks.",
    ),
    "maren_oduya.pdf": (
        "Maren Oduya",
        "Maren Oduya is a filmmaker and painter. She was born in Port Selwyn, a fishing town on the north coast, "
        "in 1941. Oduya studied painting in the capital before she turned to cinema.",
    ),
    "tomas_reyl.pdf": (
        "Tomas Reyl",
        "Tomas Reyl is a film director who was born in Aldmoor. As a director he made three documentaries "
        "about fishing boats.",
    ),
    "ines_calder.pdf": (
        "Ines Calder",
        "Ines Calder is a theatre director born in Glassford. She has been the director of the city playhouse "
        "since 1990.",
    ),
    "harbor_lights.pdf": (
        "Harbor Lights (film)",
        "Harbor Lights is a 1962 film by the director Paul Vente, who was born in Dunmere.",
    ),
}
SMALL = {"text_k": 2, "image_k": 1}  # a tight budget per query, so one search cannot see everything


def _write_page(path: Path, title: str, body: str) -> None:
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_textbox(pymupdf.Rect(72, 72, 523, 110), title, fontname="hebo", fontsize=20)
    page.insert_textbox(pymupdf.Rect(72, 130, 523, 400), body, fontname="tiro", fontsize=11)
    doc.save(path)
    doc.close()


@pytest.fixture(scope="module")
def film_corpus(service, tmp_path_factory):
    folder = tmp_path_factory.mktemp("mirag_pdfs")
    files = []
    for name, (title, body) in PAGES.items():
        _write_page(folder / name, title, body)
        files.append(folder / name)
    ws = folder / "ws"
    report = service.ingest(ws, files)
    assert not report.failed, [(f.file_name, f.reason) for f in report.failed]
    return service.corpus(ws)


def _paragraph_of(corpus, file_name: str, phrase: str) -> str:
    doc = next(d for d in corpus.documents.values() if d.file_name == file_name)
    return next(c for c in corpus.components_by_doc[doc.id] if corpus.nodes[c].kind == NodeKind.PARAGRAPH and phrase in corpus.nodes[c].text)


def _run(corpus, service, params: dict, top_k: int = 5):
    retriever = MIRAGRetriever(corpus, service.encoder, service.settings, sub_encoder=service.encoders.sub, llm=RulesBackend())
    trace = Trace(method="mirag")
    return retriever.retrieve(QUESTION, top_k, dict(params), trace), trace


def test_the_second_iteration_finds_what_the_first_missed(film_corpus, service):
    film = _paragraph_of(film_corpus, "glass_harbor.pdf", "directed by Maren Oduya")
    director = _paragraph_of(film_corpus, "maren_oduya.pdf", "Port Selwyn")
    hits, trace = _run(film_corpus, service, SMALL)
    iterations = [s for s in trace.steps if isinstance(s, IterationStep)]
    assert [s.iteration for s in iterations] == [1, 2]
    first, second = iterations
    assert first.queries == [QUESTION]
    assert film in {h.node_id for h in first.found}
    assert director not in {h.node_id for h in first.found}, "the one-shot search should not reach the bridge page"
    # The record cites the film's sentence that names the director, by its sentence id.
    assert "Maren Oduya" in first.record
    assert any(f"[{sid}]" in first.record for sid in film_corpus.subcomponents(film))
    # Iteration 2 searches for the bridge entity and finds her page.
    assert any("Maren Oduya" in q for q in second.queries)
    assert all(q != QUESTION for q in second.queries)
    assert director in {h.node_id for h in second.found}
    # ... and records what it says: the new knowledge, not the film's page again.
    assert any(f"[{sid}]" in second.record for sid in film_corpus.subcomponents(director))
    assert not any(f"[{sid}]" in second.record for sid in film_corpus.subcomponents(film) if f"[{sid}]" in first.record)
    ids = [h.node_id for h in hits]
    assert film in ids[:3] and director in ids[:3], ids
    assert trace.llm_calls == 0 and all(s.llm_calls == 0 for s in iterations)  # rules make no model calls
    fuse = next(s for s in trace.steps if isinstance(s, FuseStep))
    assert set(fuse.weights) == set(fuse.inputs) and len(fuse.inputs) == 1 + len(second.queries)


def test_seed_weight_fuses_the_questions_hybrid_ranking_and_shows_it_in_the_fuse_step(film_corpus, service):
    """seed_weight > 0 (off by default: it lowered the summed tune R@5, bench/RESULTS.md) fuses the
    iterations' ranking with the whole question's hybrid components; the fuse step lists the seeds
    as one more input with its weight."""
    from backend.retrieval.mirag.retriever import SEED_LABEL

    plain, plain_trace = _run(film_corpus, service, SMALL, top_k=10)
    seeded, trace = _run(film_corpus, service, {**SMALL, "seed_weight": 2.0}, top_k=10)
    fuse = next(s for s in trace.steps if isinstance(s, FuseStep))
    assert fuse.weights[SEED_LABEL] == 2.0 and fuse.inputs[SEED_LABEL]
    assert SEED_LABEL not in next(s for s in plain_trace.steps if isinstance(s, FuseStep)).inputs
    flat = [h.node_id for h in service.retriever("hybrid", film_corpus).retrieve(QUESTION, 1, {}, Trace(method="hybrid"))]
    assert seeded[0].node_id == flat[0], "the question's best direct match leads once the seeds weigh twice"
    assert [h.score for h in seeded] == sorted((h.score for h in seeded), reverse=True)


def test_one_iteration_or_a_flat_search_misses_the_bridge_page(film_corpus, service):
    director = _paragraph_of(film_corpus, "maren_oduya.pdf", "Port Selwyn")
    hits, trace = _run(film_corpus, service, {**SMALL, "iterations": 1})
    assert director not in {h.node_id for h in hits}
    assert len([s for s in trace.steps if isinstance(s, IterationStep)]) == 1
    flat = service.retriever("hybrid", film_corpus).retrieve(QUESTION, 2, {}, Trace(method="hybrid"))
    assert director not in {h.node_id for h in flat}


def test_trace_round_trips_and_runs_are_deterministic(film_corpus, service):
    hits, trace = _run(film_corpus, service, {**SMALL, "iterations": 3})
    again, trace_again = _run(film_corpus, service, {**SMALL, "iterations": 3})
    assert hits == again and trace == trace_again
    restored = Trace.model_validate_json(trace.model_dump_json())
    assert restored == trace
    assert [s.kind for s in restored.steps if s.kind == "iteration"]
    json.loads(trace.model_dump_json())
    assert trace.params["iterations"] == 3 and trace.params["text_k"] == 2
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True) and all(0 < s <= 1 for s in scores)
    assert len({h.node_id for h in hits}) == len(hits)


def test_the_search_stops_when_the_records_name_nothing_new(film_corpus, service):
    # With every query already asked and no new bridge term, a later iteration searches nothing.
    hits, trace = _run(film_corpus, service, {**SMALL, "iterations": 5})
    steps = [s for s in trace.steps if isinstance(s, IterationStep)]
    assert steps[-1].queries == [] or len(steps) == 5
    asked = [q for s in steps for q in s.queries]
    assert len(asked) == len({q.lower() for q in asked}), "a query was searched twice"
    assert hits


# ---------------------------------------------------------------- the rules


FILM_FACT = {"id": "d:p1.0", "text": "Glass Harbor is a 1987 American drama film directed by Maren Oduya. It was shot in St. Louis."}


def test_candidate_terms_are_names_and_titles():
    terms = candidate_terms(
        'Land surface temperature (LST) was mapped by "Big Stone Gap" author Adriana Trigiani in March 2011 and '
        "at the University of Kansas, an American school."
    )
    assert terms == ["LST", "Big Stone Gap", "Adriana Trigiani", "University of Kansas"]


def test_bridge_terms_skip_what_the_question_already_names():
    terms = bridge_terms([FILM_FACT], QUESTION)
    assert terms[0] == "Maren Oduya"
    assert "Glass Harbor" not in terms and "American" not in terms
    assert bridge_terms([FILM_FACT], QUESTION, exclude=["Maren Oduya", "St. Louis"]) == []


def test_open_words_are_the_question_words_the_fact_does_not_cover():
    assert open_words(QUESTION, FILM_FACT["text"]) == ["director", "born"]


def test_expand_adds_the_bridge_entity_to_the_question():
    out = expand({"question": QUESTION, "record": "", "facts": [FILM_FACT]})
    assert out["query"].startswith(QUESTION) and "Maren Oduya" in out["query"]
    assert expand({"question": QUESTION, "record": "", "facts": []}) == {"query": QUESTION}


def test_generate_asks_about_new_entities_only():
    out = generate({"question": QUESTION, "records": ["r"], "facts": [FILM_FACT], "asked": [QUESTION], "n": 2})
    assert out["queries"] == ["Maren Oduya director born", "St. Louis director born"]
    assert "Maren Oduya" in out["analysis"]
    again = generate({"question": QUESTION, "records": ["r"], "facts": [FILM_FACT], "asked": out["queries"], "n": 2})
    assert again["queries"] == []
    assert len(generate({"question": QUESTION, "facts": [FILM_FACT], "asked": [], "n": 1})["queries"]) == 1


def test_a_name_with_its_own_page_is_asked_about_first():
    """St. Louis is named after Maren Oduya and scores below her, but it is a page of the
    knowledge base (the retriever hands its title in with the fact): it is asked about first, by
    its name without the qualifier."""
    fact = {**FILM_FACT, "pages": ["St. Louis (city)"]}
    assert bridge_terms([fact], QUESTION)[:2] == ["St. Louis", "Maren Oduya"]
    out = generate({"question": QUESTION, "records": ["r"], "facts": [fact], "asked": [QUESTION], "n": 1})
    assert out["queries"] == ["St. Louis director born"]
    assert expand({"question": QUESTION, "record": "", "facts": [fact]})["query"] == f"{QUESTION} St. Louis Maren Oduya"
    # A page the question already names is no bridge.
    assert bridge_terms([{**FILM_FACT, "pages": ["Glass Harbor (film)"]}], QUESTION)[0] == "Maren Oduya"


def test_the_facts_carry_the_other_pages_they_name_into_the_prompts(film_corpus, service):
    """The film's sentence names Maren Oduya, whose page is in the corpus, and Glass Harbor, its
    own page's title: the generate payload's fact carries her page only, and an LLM's prompt
    lists it."""
    from backend.retrieval.mirag.tasks import GENERATE

    class Recording(RulesBackend):
        def __init__(self):
            super().__init__()
            self.payloads = []

        def run(self, task, payload):
            self.payloads.append((task.name, payload))
            return super().run(task, payload)

    llm = Recording()
    retriever = MIRAGRetriever(film_corpus, service.encoder, service.settings, sub_encoder=service.encoders.sub, llm=llm)
    retriever.retrieve(QUESTION, 5, dict(SMALL), Trace(method="mirag"))
    payload = next(p for name, p in llm.payloads if name == "mirag_generate")
    film_fact = next(f for f in payload.facts if "directed by Maren Oduya" in f.text)
    assert film_fact.pages == ["Maren Oduya"]
    assert "Pages of the knowledge base these facts name: Maren Oduya" in GENERATE.prompt(payload)


def test_record_cites_one_fresh_sentence_per_unit_first():
    knowledge = [
        {"id": "a", "sentences": [{"id": "a.0", "text": "A zero.", "score": 0.9}, {"id": "a.1", "text": "A one.", "score": 0.8}]},
        {"id": "b", "sentences": [{"id": "b.0", "text": "B zero.", "score": 0.2}]},
    ]
    out = record({"question": QUESTION, "knowledge": knowledge, "known": [], "max_facts": 2})
    assert out == {"record": "[a.0] A zero.\n[b.0] B zero.", "facts": ["a.0", "b.0"]}
    out = record({"question": QUESTION, "knowledge": knowledge, "known": ["a.0"], "max_facts": 3})
    assert out["facts"] == ["a.1", "b.0"]
    assert record({"question": QUESTION, "knowledge": [], "known": [], "max_facts": 3}) == {"record": "", "facts": []}


def test_the_rules_backend_runs_the_typed_mirag_task():
    llm = RulesBackend()
    out = llm.run(EXPAND, ExpandPayload(question=QUESTION, record="", facts=[FILM_FACT]))
    assert "Maren Oduya" in out.query
    assert llm.usage.tasks == {"mirag_expand": 1} and llm.usage.calls == 0
