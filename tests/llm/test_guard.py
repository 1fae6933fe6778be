"""Reading JSON out of model replies, the small schema check, and build_llm's choices."""

from __future__ import annotations

import pytest

from backend.config import Settings
from backend.errors import ConfigError, LLMOutputError
from backend.llm.base import ANSWER_SCHEMA
from backend.llm.factory import build_llm
from backend.llm.guard import GuardedBackend, extract_json_object, parse_json_reply, schema_problems, system_message
from backend.llm.rules import RulesBackend
from tests.fakes import ScriptedModel


@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"a": 1}', {"a": 1}),
        ('  \n{"a": [1, 2]}\n', {"a": [1, 2]}),
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ('```\n{"a": 1}\n```', {"a": 1}),
        ('Here it is:\n{"a": {"b": "}{"}} and more text', {"a": {"b": "}{"}}),
        ('{"a": "say \\"hi\\" {"} trailing', {"a": 'say "hi" {'}),
        ("{not json} then {\"a\": 2}", {"a": 2}),
        ('[1, 2] then {"a": 3}', {"a": 3}),
    ],
)
def test_extract_json_object(text, expected):
    assert extract_json_object(text) == expected


@pytest.mark.parametrize("text", ["", "no braces at all", "[1, 2, 3]", '{"a": 1', "{'a': 1}"])
def test_extract_json_object_refuses(text):
    with pytest.raises(LLMOutputError, match="no JSON object"):
        extract_json_object(text)


def test_schema_problems():
    good = {"answer": "x", "citations": ["a"], "abstain": False, "confidence": 1}
    assert schema_problems(good, ANSWER_SCHEMA) == []
    assert schema_problems({**good, "abstain": "no"}, ANSWER_SCHEMA) == ["$.abstain is str, expected boolean"]
    assert schema_problems({**good, "citations": ["a", 3]}, ANSWER_SCHEMA) == ["$.citations[1] is int, expected string"]
    assert schema_problems({**good, "confidence": True}, ANSWER_SCHEMA) == ["$.confidence is bool, expected number"]
    assert schema_problems({"answer": "x"}, ANSWER_SCHEMA) == ["$.citations is missing", "$.abstain is missing"]
    assert schema_problems("x", {"type": ["string", "null"]}) == []
    assert schema_problems(1.5, {"type": "integer"}) == ["$ is float, expected integer"]
    assert schema_problems("table", {"enum": ["text", "figure"]}) == ["$ = 'table' is not one of ['text', 'figure']"]


def test_parse_json_reply_checks_the_schema():
    assert parse_json_reply('{"x": 1}', None) == {"x": 1}
    with pytest.raises(LLMOutputError, match="does not fit the task schema: \\$.answer is missing"):
        parse_json_reply('{"x": 1}', ANSWER_SCHEMA)


def test_system_message_carries_the_schema():
    assert "one JSON object" in system_message(None)
    assert '"required":["answer","citations","abstain"]' in system_message(ANSWER_SCHEMA)


def test_guard_passes_the_default_answer_schema_and_keeps_the_model_name():
    payload = {"question": "Is it?", "evidence": [], "threshold": 0.35}
    guarded = GuardedBackend(ScriptedModel(['{"answer": "x"}', '{"answer": "y", "citations": [], "abstain": true}']), max_calls=5)
    assert guarded.name == "scripted:test"
    first = guarded.complete_json("answer", "prompt", payload)
    assert first == RulesBackend().complete_json("answer", "prompt", payload)  # schema failure -> rules
    assert guarded.complete_json("answer", "prompt", payload)["answer"] == "y"
    assert (guarded.usage.calls, guarded.usage.fallbacks) == (2, 1)
    # A task with a caller schema uses it; without one any object passes.
    other = GuardedBackend(ScriptedModel(['{"k": 1}']), max_calls=5)
    assert other.complete_json("decompose", "p", {}) == {"k": 1}


def test_build_llm_choices(tmp_path):
    assert isinstance(build_llm(Settings()), RulesBackend)
    with pytest.raises(ConfigError, match="Unknown LLM backend 'gpt'.*rules, openai, hf"):
        build_llm(Settings(reader={"llm_backend": "gpt"}))
    with pytest.raises(ConfigError, match="STRATA_LLM__HF_MODEL"):
        build_llm(Settings(reader={"llm_backend": "hf"}))
    hf = build_llm(Settings(reader={"llm_backend": "hf"}, llm={"hf_model": str(tmp_path / "my-model")}))
    assert isinstance(hf, GuardedBackend) and hf.name == "hf:my-model"
    assert hf.usage.calls == 0  # building loads nothing
