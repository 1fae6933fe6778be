"""OpenAIBackend (and GuardedBackend around it) against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import base64
import json
import logging
import time

import pytest
from chat_server import Reply, Request, completion

from backend.config import LLMSettings, Settings
from backend.errors import LLMError, LLMOutputError
from backend.llm.base import ANSWER_SCHEMA
from backend.llm.factory import build_llm
from backend.llm.guard import GuardedBackend
from backend.llm.openai_compat import OpenAIBackend
from backend.llm.rules import RulesBackend

SECRET = "sk-test-6f1c0d9e-never-print-me"
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
ANSWER = {"answer": "1200", "citations": ["u1"], "abstain": False, "confidence": 0.8, "reason": "unit u1 says so"}
PAYLOAD = {
    "question": "How many trees were planted?",
    "evidence": [{"id": "u1", "kind": "sentence", "text": "The city planted 1200 trees in 2023.", "score": 0.9, "cosine": 0.9,
                  "coverage": 0.7, "role": "anchor"}],
    "threshold": 0.35,
}
PROMPT = "[Context]\n[UNIT id=u1] The city planted 1200 trees in 2023.\n\n[Question]\nHow many trees were planted?"


def settings_for(server, **overrides) -> LLMSettings:
    return LLMSettings(**{"base_url": server.base_url, "model": "fake-model", "timeout_s": 5.0, "max_retries": 2, **overrides})


def backend_for(server, **overrides) -> OpenAIBackend:
    return OpenAIBackend(settings_for(server, **overrides), backoff_s=0.01)


def always(reply: Reply):
    return lambda req: reply


def test_request_body_headers_and_usage(chat_server):
    server = chat_server(always(Reply(body=completion(json.dumps(ANSWER), prompt_tokens=123, completion_tokens=45))))
    llm = backend_for(server, api_key=SECRET, max_new_tokens=99)

    out = llm.complete_json("answer", PROMPT, PAYLOAD, ANSWER_SCHEMA)

    assert out == ANSWER
    (req,) = server.requests
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == f"Bearer {SECRET}"
    body = req.body
    assert body["model"] == "fake-model"
    assert body["response_format"] == {"type": "json_object"}
    assert body["temperature"] == 0.0 and body["max_tokens"] == 99
    system, user = body["messages"]
    assert system["role"] == "system" and "one JSON object" in system["content"]
    assert '"citations"' in system["content"], "the system turn should carry the task schema"
    assert user == {"role": "user", "content": PROMPT}
    assert (llm.usage.calls, llm.usage.prompt_tokens, llm.usage.completion_tokens) == (1, 123, 45)
    assert llm.usage.tokens == 168 and llm.usage.seconds > 0
    assert llm.usage.tasks == {"answer": 1}
    assert llm.name == "openai:fake-model"


def test_no_authorization_header_without_a_key(chat_server):
    server = chat_server(always(Reply(body=completion('{"ok": true}'))))
    assert backend_for(server).complete_json("t", "p", {}) == {"ok": True}
    assert "authorization" not in server.requests[0].headers


def test_usage_is_estimated_when_the_server_reports_none(chat_server):
    reply = '{"answer": "yes"}'
    server = chat_server(always(Reply(body=completion(reply, prompt_tokens=None))))
    llm = backend_for(server)
    llm.complete_json("t", "x" * 400, {})
    assert llm.usage.prompt_tokens >= 100  # 400 prompt characters at ~4 per token, plus the system turn
    assert llm.usage.completion_tokens == (len(reply) + 3) // 4


def test_images_go_as_data_uri_parts(chat_server, tmp_path):
    server = chat_server(always(Reply(body=completion('{"ok": true}'))))
    png_file = tmp_path / "crop.png"
    png_file.write_bytes(PNG)
    llm = backend_for(server, supports_images=True)

    llm.complete_json("describe", "What does the figure show?", {"images": [PNG, str(png_file)]})

    content = server.requests[0].body["messages"][1]["content"]
    assert content[0] == {"type": "text", "text": "What does the figure show?"}
    assert [p["type"] for p in content[1:]] == ["image_url", "image_url"]
    for part in content[1:]:
        url = part["image_url"]["url"]
        assert url.startswith("data:image/png;base64,")
        assert base64.b64decode(url.split(",", 1)[1]) == PNG


def test_images_are_left_out_for_a_text_model(chat_server):
    server = chat_server(always(Reply(body=completion('{"ok": true}'))))
    llm = backend_for(server, supports_images=False)
    llm.complete_json("describe", "What does the figure show?", {"images": [PNG]})
    assert server.requests[0].body["messages"][1]["content"] == "What does the figure show?"
    assert any("SUPPORTS_IMAGES" in n for n in llm.usage.notes)


@pytest.mark.parametrize("status", [500, 503, 429])
def test_retries_a_failing_server_then_succeeds(chat_server, status):
    def reply(req: Request) -> Reply:
        if len(server.requests) == 1:
            return Reply(status, {"error": {"message": "busy"}})
        return Reply(body=completion(json.dumps(ANSWER)))

    server = chat_server(reply)
    llm = backend_for(server)
    assert llm.complete_json("answer", PROMPT, PAYLOAD, ANSWER_SCHEMA) == ANSWER
    assert len(server.requests) == 2
    assert llm.usage.calls == 1  # a retry is not another call against the budget


def test_gives_up_after_max_retries(chat_server):
    server = chat_server(always(Reply(500, {"error": {"message": "model crashed"}})))
    llm = backend_for(server, max_retries=2)
    with pytest.raises(LLMError, match=r"after 3 attempt\(s\): HTTP 500"):
        llm.complete_json("answer", PROMPT, PAYLOAD)
    assert len(server.requests) == 3


def test_a_client_error_is_not_retried_and_names_the_fix(chat_server):
    server = chat_server(always(Reply(401, {"error": {"message": "invalid api key"}})))
    llm = backend_for(server, api_key=SECRET)
    with pytest.raises(LLMError, match="STRATA_LLM__API_KEY") as info:
        llm.complete_json("answer", PROMPT, PAYLOAD)
    assert len(server.requests) == 1
    assert SECRET not in str(info.value)


def test_response_format_dropped_once_after_a_400(chat_server):
    def reply(req: Request) -> Reply:
        if "response_format" in req.body:
            return Reply(400, {"error": {"message": "response_format is not supported"}})
        return Reply(body=completion('{"ok": true}'))

    server = chat_server(reply)
    llm = backend_for(server)
    assert llm.complete_json("t", "p", {}) == {"ok": True}
    assert llm.complete_json("t", "p", {}) == {"ok": True}
    assert ["response_format" in r.body for r in server.requests] == [True, False, False]


def test_timeout_is_a_clean_error_and_a_counted_fallback(chat_server):
    # The server takes 5 s; two 0.2 s attempts take about half a second, and a client that waited
    # for even one reply would take 5 s: the bound between them leaves room for a loaded machine.
    server = chat_server(always(Reply(body=completion(json.dumps(ANSWER)), delay_s=5.0)))
    llm = OpenAIBackend(settings_for(server, timeout_s=0.2, max_retries=1), backoff_s=0.01)
    t0 = time.perf_counter()
    with pytest.raises(LLMError, match=r"no reply within 0.2 s"):
        llm.complete_json("answer", PROMPT, PAYLOAD)
    assert time.perf_counter() - t0 < 4.0, "the client must not wait for the slow server"
    assert len(server.requests) == 2  # one retry

    guarded = GuardedBackend(OpenAIBackend(settings_for(server, timeout_s=0.2, max_retries=0)), max_calls=4)
    out = guarded.complete_json("answer", PROMPT, PAYLOAD)
    assert out == RulesBackend().complete_json("answer", PROMPT, PAYLOAD)
    assert guarded.usage.fallbacks == 1 and guarded.usage.calls == 1
    assert "no reply within" in guarded.usage.notes[0]


def test_unreachable_server(chat_server):
    server = chat_server(always(Reply()))
    url = server.base_url
    server.close()  # nothing listens on that port now
    llm = OpenAIBackend(LLMSettings(base_url=url, model="m", timeout_s=2.0, max_retries=1), backoff_s=0.01)
    with pytest.raises(LLMError, match="cannot reach the server"):
        llm.complete_json("t", "p", {})


@pytest.mark.parametrize(
    "content",
    [
        "```json\n" + json.dumps(ANSWER) + "\n```",
        "Sure! Here is the object you asked for: " + json.dumps(ANSWER) + " Hope it helps {not json}.",
        "Thinking {about it}... " + json.dumps(ANSWER),
    ],
)
def test_replies_with_fences_or_prose_still_parse(chat_server, content):
    server = chat_server(always(Reply(body=completion(content))))
    assert backend_for(server).complete_json("answer", PROMPT, PAYLOAD, ANSWER_SCHEMA) == ANSWER


def test_a_cut_reply_says_to_raise_max_new_tokens(chat_server):
    server = chat_server(always(Reply(body=completion('{"answer": "12', finish_reason="length"))))
    with pytest.raises(LLMOutputError, match="STRATA_LLM__MAX_NEW_TOKENS"):
        backend_for(server, max_new_tokens=5).complete_json("answer", PROMPT, PAYLOAD, ANSWER_SCHEMA)


@pytest.mark.parametrize(
    "content, why",
    [
        ("The answer is 1200 trees.", "holds no JSON object"),
        ('{"answer": "1200", "abstain": false}', "citations is missing"),
        ('{"answer": 1200, "citations": ["u1"], "abstain": false}', "answer is int, expected string"),
    ],
)
def test_invalid_model_output_falls_back_to_rules(chat_server, content, why):
    server = chat_server(always(Reply(body=completion(content))))
    guarded = GuardedBackend(backend_for(server), max_calls=4)

    out = guarded.complete_json("answer", PROMPT, PAYLOAD)  # no schema given: the guard knows the answer schema

    assert out == RulesBackend().complete_json("answer", PROMPT, PAYLOAD)
    assert out["citations"] == ["u1"] and out["answer"] == "1200"
    assert guarded.usage.fallbacks == 1
    assert guarded.usage.calls == 1 and guarded.usage.tokens == 18  # the model's cost still counts
    assert len(guarded.usage.notes) == 1 and why in guarded.usage.notes[0] and "rules" in guarded.usage.notes[0]


def test_call_budget_per_question(chat_server):
    server = chat_server(always(Reply(body=completion(json.dumps(ANSWER)))))
    guarded = GuardedBackend(backend_for(server), max_calls=2)
    outs = [guarded.complete_json("answer", PROMPT, PAYLOAD) for _ in range(4)]
    assert outs[:2] == [ANSWER, ANSWER]
    assert outs[2:] == [RulesBackend().complete_json("answer", PROMPT, PAYLOAD)] * 2
    assert len(server.requests) == 2
    assert (guarded.usage.calls, guarded.usage.fallbacks) == (2, 2)
    assert guarded.usage.tasks == {"answer": 4}
    assert guarded.usage.notes == ["answer: the budget of 2 model calls per question is spent; answered by the rules backend."]


def test_a_zero_budget_never_calls_the_server(chat_server):
    server = chat_server(always(Reply(body=completion(json.dumps(ANSWER)))))
    guarded = GuardedBackend(backend_for(server), max_calls=0)
    guarded.complete_json("answer", PROMPT, PAYLOAD)
    assert server.requests == [] and guarded.usage.fallbacks == 1


def test_a_task_unknown_to_both_backends_raises(chat_server):
    server = chat_server(always(Reply(body=completion("no json"))))
    guarded = GuardedBackend(backend_for(server), max_calls=4)
    with pytest.raises(LLMError, match="no-such-task"):
        guarded.complete_json("no-such-task", "p", {})


def test_build_llm_wraps_the_openai_backend(chat_server):
    server = chat_server(always(Reply(body=completion(json.dumps(ANSWER)))))
    settings = Settings(reader={"llm_backend": "openai"}, llm={"base_url": server.base_url, "model": "qwen2.5-7b", "max_calls_per_question": 1})
    llm = build_llm(settings)
    assert isinstance(llm, GuardedBackend) and llm.name == "openai:qwen2.5-7b"
    assert llm.complete_json("answer", PROMPT, PAYLOAD) == ANSWER
    llm.complete_json("answer", PROMPT, PAYLOAD)
    assert (llm.usage.calls, llm.usage.fallbacks) == (1, 1)


def test_the_api_key_never_shows(chat_server, caplog, monkeypatch):
    monkeypatch.setenv("STRATA_LLM__API_KEY", SECRET)
    settings = Settings()
    assert settings.llm.api_key.get_secret_value() == SECRET
    for text in (repr(settings), str(settings), repr(settings.llm), settings.model_dump_json(), json.dumps(settings.model_dump(mode="json"))):
        assert SECRET not in text

    calls = {"n": 0}

    def reply(req: Request) -> Reply:
        calls["n"] += 1
        return [Reply(500, {"error": "x"}), Reply(401, {"error": "bad key"}), Reply(body=completion("not json"))][(calls["n"] - 1) % 3]

    server = chat_server(reply)
    caplog.set_level(logging.DEBUG)
    llm = GuardedBackend(OpenAIBackend(settings.llm.model_copy(update={"base_url": server.base_url}), backoff_s=0.01), max_calls=5)
    for _ in range(2):
        llm.complete_json("answer", PROMPT, PAYLOAD)
    assert server.requests and all(r.headers["authorization"] == f"Bearer {SECRET}" for r in server.requests)
    assert llm.usage.fallbacks == 2 and len(server.requests) == 3  # 500, retried into a 401; then a reply that is not JSON
    assert caplog.records, "the backend should have logged its retries and fallbacks"
    assert SECRET not in caplog.text
    assert all(SECRET not in n for n in llm.usage.notes)
    assert SECRET not in repr(llm.model) and SECRET not in repr(llm.model.settings)
