"""Service.ask with the openai backend pointed at a loopback server: the reader's 'answer' task
goes to the server and the result names the model and counts its calls."""

from __future__ import annotations

import json
import re

import pytest
from chat_server import Reply, Request, completion

from tests.fakes import openai_service

QUESTION = "How many trees were planted?"
UNIT_RE = re.compile(r"\[UNIT id=([^\s|\]]+)")


def cite_first_unit(req: Request) -> Reply:
    """A model that cites the first unit of the context it was given."""
    prompt = req.body["messages"][1]["content"]
    ids = UNIT_RE.findall(prompt)
    out = {"answer": "server answer", "citations": ids[:1], "abstain": not ids, "confidence": 0.9, "reason": f"saw {len(ids)} units"}
    return Reply(body=completion(json.dumps(out), prompt_tokens=500, completion_tokens=30))


@pytest.mark.slow
def test_ask_sends_the_answer_task_to_the_server(service, sample_workspace, chat_server):
    server = chat_server(cite_first_unit)
    svc = openai_service(service, server.base_url)

    result = svc.ask(sample_workspace, QUESTION, method="hikey", top_k=5)

    assert result.llm_backend == "openai:fake-model" and result.trace.llm_backend == "openai:fake-model"
    assert result.llm_calls == len(server.requests) >= 1
    assert result.llm_tokens == 530 * result.llm_calls
    answer_req = server.requests[-1]
    prompt = answer_req.body["messages"][1]["content"]
    assert "[Question]" in prompt and QUESTION in prompt and "[Context]" in prompt
    first_unit = UNIT_RE.findall(prompt)[0]
    assert result.answer.text == "server answer" and not result.answer.abstained
    assert [c.node_id for c in result.answer.citations] == [first_unit]


@pytest.mark.slow
def test_ask_falls_back_to_the_rules_reader_when_the_model_writes_prose(service, sample_workspace, chat_server):
    server = chat_server(lambda req: Reply(body=completion("I think about 1200 trees, give or take.")))
    svc = openai_service(service, server.base_url)

    result = svc.ask(sample_workspace, QUESTION, method="hikey", top_k=5)
    rules = service.ask(sample_workspace, QUESTION, method="hikey", top_k=5)

    assert result.llm_backend == "openai:fake-model" and result.llm_calls >= 1
    assert result.answer == rules.answer  # the rules reader answered the 'answer' task
    assert rules.llm_backend == "rules" and rules.llm_calls == 0


@pytest.mark.slow
def test_ask_with_the_server_down_still_answers(service, sample_workspace, chat_server):
    server = chat_server(lambda req: Reply())
    url = server.base_url
    server.close()
    svc = openai_service(service, url, timeout_s=2.0)
    result = svc.ask(sample_workspace, QUESTION, method="hikey", top_k=5)
    assert result.answer == service.ask(sample_workspace, QUESTION, method="hikey", top_k=5).answer
