"""What the Ask tab needs from the service: an LLM backend chosen per question (it reaches the
AskResult, a dead server falls back to rules), node descriptions for the replay, and re-packing
under another budget."""

from __future__ import annotations

import socket

import pytest

from backend.config import LLMSettings
from backend.errors import ConfigError
from backend.service import Service
from backend.types import NodeKind

QUESTION = "How many trees did the programme plant?"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens there once the socket is closed


def test_llm_backend_per_question_reaches_the_result(service, sample_workspace):
    default = service.ask(sample_workspace, QUESTION, method="bm25", top_k=5)
    assert default.llm_backend == "rules" == default.trace.llm_backend
    # An OpenAI-compatible server that is not there: the question still gets an answer (rules
    # fallback), and the result says which backend was asked for.
    llm = LLMSettings(base_url=f"http://127.0.0.1:{_closed_port()}/v1", model="probe-model", max_retries=0, timeout_s=2)
    other = Service(service.settings.model_copy(update={"llm": llm}), encoder=service.encoder, sub_encoder=service.encoders.sub)
    result = other.ask(sample_workspace, QUESTION, method="bm25", top_k=5, llm_backend="openai")
    assert result.llm_backend == "openai:probe-model" == result.trace.llm_backend
    assert not result.answer.abstained and "4,820" in result.answer.text
    assert service.settings.reader.llm_backend == "rules"  # the override did not stick
    with pytest.raises(ConfigError, match="Unknown LLM backend 'gpt'"):
        service.ask(sample_workspace, QUESTION, method="bm25", llm_backend="gpt")


def test_describe_nodes_covers_every_layer_and_skips_unknown_ids(service, sample_workspace):
    result = service.ask(sample_workspace, QUESTION, method="hikey", top_k=5)
    cited = result.answer.citations[0]
    anchor = result.results[0]
    corpus = service.corpus(sample_workspace)
    doc_id = corpus.nodes[anchor.node_id].doc
    section_id = corpus.nodes[anchor.node_id].section
    entity_id = next(i for i, n in corpus.nodes.items() if n.kind == NodeKind.ENTITY)
    briefs = service.describe_nodes(sample_workspace, [cited.node_id, anchor.node_id, doc_id, section_id, entity_id, "nope:p1"])
    assert set(briefs) == {cited.node_id, anchor.node_id, doc_id, section_id, entity_id}
    sentence = briefs[cited.node_id]
    assert (sentence.doc, sentence.page, sentence.kind, sentence.text) == (cited.doc, cited.page, cited.kind, cited.text)
    assert briefs[doc_id].kind == NodeKind.DOCUMENT and briefs[doc_id].doc == anchor.doc
    assert briefs[section_id].kind == NodeKind.SECTION and briefs[section_id].section_path == anchor.section_path
    assert briefs[entity_id].kind == NodeKind.ENTITY


def test_repack_under_a_smaller_budget_packs_less(service, sample_workspace):
    result = service.ask(sample_workspace, QUESTION, method="hybrid", top_k=10, budget=2048)
    small = service.repack(sample_workspace, result, 256, llm_backend="rules")
    assert small.pack.budget == 256 and small.pack.tokens <= 256 < result.pack.tokens
    assert len(small.pack.units) < len(result.pack.units)
    assert small.trace == result.trace and small.results == result.results
