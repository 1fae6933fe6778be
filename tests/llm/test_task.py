"""Typed LLM tasks: a model's reply is validated with the task's answer model; the guard answers
with the task's rules when the model fails, counts and explains it; the rules backend runs the
task's rules; a payload of the wrong type is refused."""

from __future__ import annotations

import json

import pytest

from backend.errors import LLMOutputError
from backend.llm.guard import GuardedBackend
from backend.llm.rules import RulesBackend
from backend.llm.task import LLMTask, TaskAnswer, TaskPayload
from backend.retrieval.fif.tasks import ORCHESTRATE, FiFAction, OrchestratePayload
from backend.retrieval.decompose.task import DECOMPOSE, DecomposeAnswer, DecomposePayload
from tests.fakes import ScriptedModel


class EchoPayload(TaskPayload):
    word: str


class EchoAnswer(TaskAnswer):
    words: list[str]


ECHO = LLMTask(name="echo", prompt=lambda p: f"Repeat {p.word}", payload=EchoPayload, answer=EchoAnswer,
               rules=lambda p: EchoAnswer(words=[p.word]))


def test_a_model_reply_becomes_the_answer_model():
    model = ScriptedModel(check_schema=False, replies=['{"words": ["a", "b"], "extra": 1}'])
    out = model.run(ECHO, EchoPayload(word="a"))
    assert out == EchoAnswer(words=["a", "b"]) and model.prompts == ["Repeat a"]


def test_a_reply_that_does_not_fit_the_answer_model_is_an_output_error():
    with pytest.raises(LLMOutputError, match=r"task 'echo'.*words"):
        ScriptedModel(check_schema=False, replies=['{"words": "not a list"}']).run(ECHO, EchoPayload(word="a"))


def test_the_guard_falls_back_to_the_tasks_rules_counts_and_explains():
    guarded = GuardedBackend(ScriptedModel(check_schema=False, replies=['{"words": 3}', "down", '{"words": ["ok"]}']), max_calls=5)
    assert guarded.run(ECHO, EchoPayload(word="x")) == EchoAnswer(words=["x"])  # misfit -> rules
    assert guarded.run(ECHO, EchoPayload(word="y")) == EchoAnswer(words=["y"])  # server down -> rules
    assert guarded.run(ECHO, EchoPayload(word="z")) == EchoAnswer(words=["ok"])
    assert guarded.usage.fallbacks == 2 and guarded.usage.calls == 3
    assert any(n.startswith("echo: invalid model output") for n in guarded.usage.notes)
    assert any(n.startswith("echo: model call failed (connection refused)") for n in guarded.usage.notes)


def test_the_guard_answers_by_rules_once_the_budget_is_spent():
    guarded = GuardedBackend(ScriptedModel(check_schema=False, replies=['{"words": ["m"]}']), max_calls=1)
    assert guarded.run(ECHO, EchoPayload(word="a")).words == ["m"]
    assert guarded.run(ECHO, EchoPayload(word="b")).words == ["b"]
    assert guarded.usage.fallbacks == 1 and "budget of 1 model calls" in guarded.usage.notes[0]


def test_the_rules_backend_runs_the_rules_and_counts_no_call():
    llm = RulesBackend()
    out = llm.run(DECOMPOSE, DecomposePayload(question="Where was the director of the film Moonlit Harbor born?"))
    assert isinstance(out, DecomposeAnswer) and len(out.subqueries) == 2
    assert llm.usage.tasks == {"lilac_decompose": 1} and llm.usage.calls == 0


def test_a_payload_of_another_task_is_refused():
    with pytest.raises(TypeError, match="takes a DecomposePayload payload, got EchoPayload"):
        RulesBackend().run(DECOMPOSE, EchoPayload(word="a"))
    with pytest.raises(ValueError):
        EchoPayload(word="a", stray=1)  # payloads are built by code: an unknown field is a bug


def test_fifs_orchestrator_returns_a_typed_action():
    payload = OrchestratePayload(query="Who wrote Dune?", subtasks=[{"index": 0, "text": "Who wrote Dune?", "status": "open",
                                 "depends_on": [], "answer": None, "alternatives": []}], memory=[], neighbor_docs=[],
                                 steps_left=3, llm_calls_left=10, replans=0)
    action = RulesBackend().run(ORCHESTRATE, payload).action
    assert isinstance(action, FiFAction) and action.next_action == "search"
    assert action.next_retrieval_subtask and action.document_search_mode in ("neighbors", "vector search")
    with pytest.raises(LLMOutputError, match="next_action"):
        ORCHESTRATE.parse(json.loads('{"action": {"next_action": "dance"}}'))


def test_lilac_and_fif_decompositions_are_two_tasks_with_their_own_prompts():
    from backend.retrieval.fif.tasks import DECOMPOSE as FIF_DECOMPOSE
    from backend.retrieval.fif.tasks import DecomposePayload as FiFDecomposePayload

    assert DECOMPOSE.name != FIF_DECOMPOSE.name
    lilac_prompt = DECOMPOSE.prompt(DecomposePayload(question="Q?"))
    fif_prompt = FIF_DECOMPOSE.prompt(FiFDecomposePayload(question="Q?"))
    assert "query decomposer" in lilac_prompt and "plan revision" in fif_prompt


def test_the_readers_prompt_as_a_typed_task_gives_the_raw_transports_reply():
    from backend.reader import ANSWER, AnswerPayload

    evidence = [{"id": "u1", "kind": "sentence", "text": "The programme planted 1,240 street trees in 2021.", "score": 0.8,
                 "cosine": 0.7, "coverage": 0.6, "role": "anchor"}]
    question = "How many street trees were planted in 2021?"
    raw = RulesBackend().complete_json("answer", "", {"question": question, "evidence": evidence, "threshold": 0.35})
    typed = RulesBackend().run(ANSWER, AnswerPayload(question=question, evidence=evidence, context="[u1] ..."))
    assert typed.model_dump() == raw and typed.answer == "1,240" and typed.citations == ["u1"]
    guarded = GuardedBackend(ScriptedModel(['{"answer": "x"}'], check_schema=False), max_calls=5)
    assert guarded.run(ANSWER, AnswerPayload(question=question, evidence=evidence)) == typed  # misfit -> rules
