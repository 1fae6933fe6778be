"""Measured corpus traits (backend/retrieval/traits.py) and the defaults that follow them: on a
template corpus the graph strategies' hybrid scores default to the dense side."""

from __future__ import annotations

import pytest

from backend.retrieval.traits import TEMPLATE_ALPHA, is_separate_corpus, is_short_separate_corpus, is_template_corpus
from backend.types import Trace
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


@pytest.mark.parametrize("method", ["lilac", "fif", "mirag", "mmgraph", "hikey"])
def test_graph_strategies_rank_densely_on_a_template_corpus_unless_the_call_sets_alpha(service, filings, films, method):
    assert is_template_corpus(filings) and not is_template_corpus(films)
    retriever = service.retriever(method, filings)
    trace = Trace(method=method)
    retriever.retrieve(QUESTION, 5, {}, trace)
    assert trace.params["alpha"] == TEMPLATE_ALPHA
    assert any("Template corpus" in n for n in trace.notes)
    explicit = Trace(method=method)
    retriever.retrieve(QUESTION, 5, {"alpha": 0.5}, explicit)
    assert explicit.params["alpha"] == 0.5 and not any("Template corpus" in n for n in explicit.notes)
    other = Trace(method=method)
    service.retriever(method, films).retrieve("Where was the director of the film Moonlit Harbor born?", 5, {}, other)
    assert other.params["alpha"] == 0.5


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
def test_short_separate_documents_take_the_strategy_s_own_defaults_unless_the_call_sets_them(service, reports, films, method, name, value):
    assert is_short_separate_corpus(reports) and not is_short_separate_corpus(films)  # the films name one another
    retriever = service.retriever(method, reports)
    trace = Trace(method=method)
    assert getattr(retriever.resolve_params({}, trace), name) == value
    assert any("Short separate documents" in n for n in trace.notes)
    explicit = Trace(method=method)
    default = type(retriever).Params.resolve(None, {}).model_dump()[name]
    assert getattr(retriever.resolve_params({name: default}, explicit), name) == default
    assert not any("Short separate documents" in n for n in explicit.notes)
    assert getattr(service.retriever(method, films).resolve_params({}), name) == default
    hits = retriever.retrieve("How much steel did plant 3 produce in 2019?", 5, {}, Trace(method=method))
    assert hits and all(a.score >= b.score for a, b in zip(hits, hits[1:]))


def test_separate_documents_long_or_short_take_the_strategy_s_separate_defaults(service, reports, films):
    """FiF's failed extension of a resolved plan calls on the seeds on separate documents
    (seed_extensions 1), not in a web of pages (the films name one another)."""
    assert is_separate_corpus(reports) and not is_separate_corpus(films)
    trace = Trace(method="fif")
    assert service.retriever("fif", reports).resolve_params({}, trace).seed_extensions == 1
    assert any("Separate documents" in n for n in trace.notes)
    assert service.retriever("fif", reports).resolve_params({"seed_extensions": 0}).seed_extensions == 0
    assert service.retriever("fif", films).resolve_params({}).seed_extensions == 0
