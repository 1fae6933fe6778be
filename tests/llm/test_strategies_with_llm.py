"""Every registered strategy with the two model backends: an OpenAI-compatible server on
loopback (real HTTP) and a tiny local transformers LM. The server answers LILaC's decomposition
prompt with its own subqueries, which must reach the trace; every other task gets prose, which
the guard replaces with the rules answer. The tiny LM writes garbage: every task falls back, the
ranking equals the offline one, and the calls are counted and explained."""

from __future__ import annotations

import json

import pytest
from chat_server import Reply, Request, completion

from backend.retrieval.base import method_names
from backend.service import Service
from backend.types import DecomposeStep
from tests.fakes import openai_service

QUESTION = "Which district had the largest canopy gain and how many trees were planted there?"
SERVER_SUBQUERIES = [
    {"text": "district with the largest canopy gain", "modality": "table", "depends_on": []},
    {"text": "trees planted in that district", "modality": "text", "depends_on": [0]},
]


def scripted(req: Request) -> Reply:
    """Decompositions (any prompt whose schema asks for "subqueries": LILaC's decomposer, FiF's
    planner) get the server's plan; every other task gets prose."""
    schema = req.body["messages"][0]["content"]
    if '"subqueries"' in schema:
        return Reply(body=completion(json.dumps({"subqueries": SERVER_SUBQUERIES})))
    return Reply(body=completion("Let me think about that in prose instead of JSON."))


@pytest.mark.slow
@pytest.mark.parametrize("method", method_names())
def test_strategy_with_an_openai_compatible_server(method, service, sample_workspace, chat_server):
    server = chat_server(scripted)
    svc = openai_service(service, server.base_url)
    result = svc.ask(sample_workspace, QUESTION, method=method, top_k=8)
    assert result.results and result.llm_backend == "openai:fake-model"
    assert result.trace.llm_backend == "openai:fake-model"
    assert result.llm_calls == len(server.requests) >= 1  # at least the reader's call
    assert result.trace.llm_calls <= result.llm_calls
    decomposed = [s for s in result.trace.steps if isinstance(s, DecomposeStep)]
    for step in decomposed:  # the model's decomposition is the one the strategy used (a replan may only extend it)
        assert [q.text for q in step.subqueries[:2]] == [q["text"] for q in SERVER_SUBQUERIES]
        assert step.subqueries[1].depends_on == [0]
    if decomposed:
        assert len(decomposed[0].subqueries) == len(SERVER_SUBQUERIES)
    if method in ("lilac", "strata"):
        assert decomposed and result.trace.llm_calls >= 1


@pytest.mark.slow
@pytest.mark.parametrize("method", ["lilac", "mirag", "strata"])
def test_strategy_with_a_tiny_local_model_falls_back_per_task(method, service, sample_workspace, tiny_lm_dir):
    s = service.settings
    settings = s.model_copy(update={
        "reader": s.reader.model_copy(update={"llm_backend": "hf"}),
        "llm": s.llm.model_copy(update={"hf_model": str(tiny_lm_dir), "device": "cpu", "max_new_tokens": 8}),
    })
    svc = Service(settings, encoder=service.encoder, sub_encoder=service.encoders.sub)
    result = svc.ask(sample_workspace, QUESTION, method=method, top_k=8)
    offline = service.ask(sample_workspace, QUESTION, method=method, top_k=8)
    assert result.llm_backend.startswith("hf:") and result.llm_calls >= 1
    assert [r.node_id for r in result.results] == [r.node_id for r in offline.results]
    assert result.answer == offline.answer
    assert result.trace.notes, "each fallback is explained in the trace"
