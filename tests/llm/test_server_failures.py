"""A dead or misconfigured LLM server is an error the user sees (issue 48 item 7): real loopback
sockets, one port with nothing listening and one server that answers garbage. The answer still
comes (the rules answer in the model's place) but carries `llm_error`, the API reply says it, the
command line exits non-zero, and the Settings check (probe_server) names what came back."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from chat_server import Reply, completion

from backend.config import LLMSettings
from backend.errors import LLMError
from backend.llm.guard import GuardedBackend
from backend.llm.openai_compat import OpenAIBackend, probe_server
from tests.fakes import openai_service
from tests.http_servers import PlainServer, dead_url

REPO_ROOT = Path(__file__).resolve().parents[2]
QUESTION = "How many trees were planted?"
UNIT_RE = re.compile(r"\[UNIT id=([^\s|\]]+)")
GARBAGE = "<html><body>It works! This is not an API.</body></html>"


@pytest.fixture()
def plain_server() -> Iterator:
    servers: list[PlainServer] = []

    def start(status: int, body) -> PlainServer:
        servers.append(PlainServer(status, body))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


def llm_settings(base_url: str, model: str = "fake-model") -> LLMSettings:
    return LLMSettings(base_url=base_url, model=model, max_retries=0, timeout_s=3.0)


# ---------------------------------------------------------------- the Settings check


def test_probe_says_a_dead_server_cannot_be_reached():
    url = dead_url()
    with pytest.raises(LLMError) as err:
        probe_server(llm_settings(url), timeout_s=2.0)
    assert f"Cannot reach {url}/models" in str(err.value) and "Check that the server runs" in str(err.value)


def test_probe_says_a_garbage_server_is_not_openai_compatible(plain_server):
    server = plain_server(200, GARBAGE)
    with pytest.raises(LLMError, match="not as an OpenAI-compatible server") as err:
        probe_server(llm_settings(server.base_url), timeout_s=2.0)
    assert "It works!" in str(err.value) and server.requests == ["GET /v1/models"]


def test_probe_names_an_error_status_and_a_model_the_server_does_not_serve(plain_server):
    with pytest.raises(LLMError, match="answered HTTP 401"):
        probe_server(llm_settings(plain_server(401, {"error": "bad key"}).base_url), timeout_s=2.0)
    models = plain_server(200, {"object": "list", "data": [{"id": "qwen-7b"}, {"id": "llama-8b"}]})
    with pytest.raises(LLMError, match="does not serve the model 'fake-model'; it serves qwen-7b, llama-8b"):
        probe_server(llm_settings(models.base_url), timeout_s=2.0)
    assert probe_server(llm_settings(models.base_url, "llama-8b"), timeout_s=2.0) == f"{models.base_url} answers and serves llama-8b"


def test_every_model_failure_is_recorded_once_per_reason(plain_server):
    """usage.errors is what the answer's llm_error says; the rules still answer each task."""
    server = plain_server(503, {"error": "down"})
    guard = GuardedBackend(OpenAIBackend(llm_settings(server.base_url)), max_calls=10)
    for _ in range(3):
        guard.complete_json("answer", "Question: x", {"question": "x", "evidence": [], "threshold": 0.35})
    assert len(server.requests) == 3 and guard.usage.fallbacks == 3
    assert len(guard.usage.errors) == 1 and "HTTP 503" in guard.usage.errors[0]


# ---------------------------------------------------------------- the answer


@pytest.mark.slow
def test_a_dead_server_is_an_error_on_the_answer_and_in_the_reply(service, sample_workspace):
    svc = openai_service(service, dead_url(), timeout_s=2.0)
    result = svc.ask(sample_workspace, QUESTION, method="hikey", top_k=5)
    assert result.llm_error is not None
    assert "failed, so the rules backend answered in its place" in result.llm_error and "cannot reach the server" in result.llm_error
    assert result.answer == service.ask(sample_workspace, QUESTION, method="hikey", top_k=5).answer
    reply = svc.ask_reply(result, with_trace=False).to_dict()
    assert reply["llm_error"] == result.llm_error


@pytest.mark.slow
def test_a_garbage_server_is_an_error_on_the_answer(service, sample_workspace, plain_server):
    svc = openai_service(service, plain_server(200, GARBAGE).base_url)
    result = svc.ask(sample_workspace, QUESTION, method="hikey", top_k=5)
    assert result.llm_error is not None and "body that is not JSON" in result.llm_error and "It works!" in result.llm_error


@pytest.mark.slow
def test_a_working_server_leaves_no_error(service, sample_workspace, chat_server):
    def cite_first_unit(req) -> Reply:
        first = UNIT_RE.search(req.body["messages"][1]["content"]).group(1)
        out = {"answer": "server answer", "citations": [first], "abstain": False, "confidence": 0.9, "reason": "r"}
        return Reply(body=completion(json.dumps(out)))

    server = chat_server(cite_first_unit)
    result = openai_service(service, server.base_url).ask(sample_workspace, QUESTION, method="hikey", top_k=5)
    assert result.llm_error is None and result.answer.text == "server answer"
    assert service.ask_reply(result).to_dict()["llm_error"] is None


@pytest.mark.slow
def test_the_command_line_says_the_server_failed_and_exits_non_zero(sample_workspace):
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false", PYTHONPATH=str(REPO_ROOT),
               STRATA_READER__LLM_BACKEND="openai", STRATA_LLM__BASE_URL=dead_url(), STRATA_LLM__MAX_RETRIES="0",
               STRATA_LLM__MODEL="fake-model")
    proc = subprocess.run([sys.executable, "-m", "backend", "ask", "--workspace", str(sample_workspace), "--method", "bm25", QUESTION],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 3, proc.stderr[-2000:]
    assert "LLM FAILED: The LLM backend openai:fake-model failed" in proc.stderr
    assert proc.stdout.strip()  # the rules' answer is still printed
