"""Measured corpus traits (backend/retrieval/traits.py) and the corpus profile they choose
(backend/stages/profile.py): on a template corpus the graph strategies' hybrid scores default to
the dense side, through the query pipeline, and a retriever called alone runs plain."""

from __future__ import annotations

import dataclasses

import pytest

from backend.retrieval.traits import TEMPLATE_ALPHA, is_separate_corpus, is_short_separate_corpus, is_template_corpus
from backend.stages.profile import named_profile, profile_by_traits
from backend.types import ProfileStep, Trace
from tests.fakes import FILMS, build_corpus

BOILERPLATE = [
    "The Company is exposed to market risks, including changes in interest rates and foreign currency exchange rates.",
    "Net sales increased compared with the same quarter of the prior year, driven by higher demand.",
    "The Company repurchased shares of its common stock under the authorised repurchase program.",
]
QUESTION = "Did the company repurchase shares of its common stock?"


@pytest.fixture(scope="module")
def filings(service):
    docs = {f"2023_Q{q}_{co}.pdf": [f"{co} quarterly report for quarter {q}."] + BOILERPLATE for co in ("ACME", "GLOBEX") for q in (1, 2)}
    return build_corpus(service, docs)


@pytest.fixture(scope="module")
def films(service):
    return build_corpus(service, FILMS)


def _run(service, corpus, method: str, params: dict, stages: str = "default", question: str = QUESTION) -> Trace:
    """The method through the query pipeline (the profile's overrides are the pipeline's)."""
    pipeline = service._pipeline(corpus, None, None)
    _, trace = pipeline.retrieve(service.retriever(method, corpus, pipeline.llm), method, question, 5, params, stages=stages)
    return trace


def _profile_step(trace: Trace) -> ProfileStep | None:
    return next((s for s in trace.steps if isinstance(s, ProfileStep)), None)


@pytest.mark.parametrize("method", ["lilac", "fif", "mirag", "mmgraph", "hikey"])
def test_graph_strategies_rank_densely_on_a_template_corpus_unless_the_call_sets_alpha(service, filings, films, method):
    assert is_template_corpus(filings) and not is_template_corpus(films)
    trace = _run(service, filings, method, {})
    assert trace.params["alpha"] == TEMPLATE_ALPHA
    step = _profile_step(trace)
    assert step is not None and "template" in step.name and step.overrides["alpha"] == TEMPLATE_ALPHA
    assert step.chosen_by == "traits" and step.traits["template_share"] >= 0.3
    explicit = _run(service, filings, method, {"alpha": 0.5})
    assert explicit.params["alpha"] == 0.5 and "alpha" not in _profile_step(explicit).overrides
    other = _run(service, films, method, {}, question="Where was the director of the film Moonlit Harbor born?")
    assert other.params["alpha"] == 0.5
    plain = _run(service, filings, method, {}, stages="none")  # the paper's method: no profile, no profile step
    assert plain.params["alpha"] == 0.5 and _profile_step(plain) is None
    # a retriever called directly (not through the pipeline) runs plain
    direct = Trace(method=method)
    service.retriever(method, filings).retrieve(QUESTION, 5, {}, direct)
    assert direct.params["alpha"] == 0.5


def test_the_flat_baselines_keep_their_alpha_on_a_template_corpus(service, filings):
    """hybrid is a floor the others are measured against: it stays what its name says."""
    retriever = service.retriever("hybrid", filings)
    assert retriever.resolve_params({}).alpha == 0.5


@pytest.fixture(scope="module")
def reports(service):
    """Short separate reports: one page each, naming and linking no other."""
    docs = {f"report_{i}.pdf": [f"Plant {i} produced {100 + i} tonnes of steel in 2019 and {90 + i} tonnes in 2018.",
                                f"Revenue of plant {i} rose with demand; costs at plant {i} fell."] for i in range(8)}
    return build_corpus(service, docs)


@pytest.mark.parametrize(("method", "name", "value"), [("mirag", "seed_weight", 1.0), ("fif", "seed_open", 0)])
def test_short_separate_documents_take_the_profile_s_overrides_unless_the_call_sets_them(service, reports, films, method, name, value):
    assert is_short_separate_corpus(reports) and not is_short_separate_corpus(films)  # the films name one another
    profile = profile_by_traits(reports)
    assert profile.name == "short_separate" and profile.params_for(method, {})[name] == value
    assert profile.params_for(method, {name: 7}) .get(name) is None
    assert name not in profile_by_traits(films).params_for(method, {})
    step = _profile_step(_run(service, reports, method, {}, question="How much steel did plant 3 produce in 2019?"))
    assert step.name == "short_separate" and step.overrides[name] == value
    pipeline = service._pipeline(reports, None, None)
    hits, _ = pipeline.retrieve(service.retriever(method, reports), method, "How much steel did plant 3 produce in 2019?", 5, {})
    assert hits and all(a.score >= b.score for a, b in zip(hits, hits[1:]))


def test_separate_documents_long_or_short_take_the_fif_seed_extensions(service, reports, films):
    """FiF's failed extension of a resolved plan calls on the seeds on separate documents
    (seed_extensions 1), not in a web of pages (the films name one another)."""
    assert is_separate_corpus(reports) and not is_separate_corpus(films)
    assert profile_by_traits(reports).params_for("fif", {})["seed_extensions"] == 1
    assert named_profile("long_separate").params_for("fif", {})["seed_extensions"] == 1
    assert "seed_extensions" not in profile_by_traits(reports).params_for("fif", {"seed_extensions": 0})
    assert "seed_extensions" not in profile_by_traits(films).params_for("fif", {})


def test_a_profile_named_by_the_setting_replaces_the_measured_one(service, films):
    from backend.errors import StrataError

    pipeline = dataclasses.replace(service._pipeline(films, None, None), profile="template+long_separate")
    _, trace = pipeline.retrieve(service.retriever("fif", films, pipeline.llm), "fif", QUESTION, 5, {})
    step = _profile_step(trace)
    assert step.name == "template+long_separate" and step.chosen_by == "setting" and step.traits == {}
    assert step.overrides == {"alpha": TEMPLATE_ALPHA, "seed_extensions": 1} and trace.params["alpha"] == TEMPLATE_ALPHA
    with pytest.raises(StrataError, match="web_of_pages"):
        named_profile("wiki")
