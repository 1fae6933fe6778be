"""A typed LLM task: one object holds a prompt's name, its template, the pydantic models of what
goes in (payload) and what comes back (answer), and its offline rules.

Backends run a task and return its answer model: the `rules` backend calls `task.rules(payload)`;
a model backend renders `task.prompt(payload)`, asks for JSON of `task.schema`, and validates the
reply with the answer model (`task.parse`), raising LLMOutputError when it does not fit, which
GuardedBackend turns into a fallback to the task's rules. Each strategy keeps its tasks beside
its own code (backend/retrieval/<strategy>/tasks.py); there is no registry of task names.

What it does not do: send anything (backends do) or retry (the guard decides what a failure costs).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from backend.errors import LLMOutputError


class TaskPayload(BaseModel):
    """What a strategy sends to a task; built by code, so unknown fields are a bug."""

    model_config = ConfigDict(extra="forbid")


class TaskAnswer(BaseModel):
    """What a task returns. Models may add fields of their own: those are ignored, not fatal."""

    model_config = ConfigDict(extra="ignore")


P = TypeVar("P", bound=TaskPayload)
A = TypeVar("A", bound=TaskAnswer)


@dataclass(frozen=True)
class LLMTask(Generic[P, A]):
    """name: unique, shown in usage counts and fallback notes; prompt: renders the model's user
    turn from a payload; payload/answer: the pydantic models in and out; rules: the offline
    answer (deterministic, no model)."""

    name: str
    prompt: Callable[[P], str]
    payload: type[P]
    answer: type[A]
    rules: Callable[[P], A]
    schema: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.schema:  # the JSON schema a model is asked to follow: the answer model's own
            object.__setattr__(self, "schema", self.answer.model_json_schema())

    def parse(self, value: dict[str, Any]) -> A:
        """A model's JSON object as the answer model; LLMOutputError naming the misfit fields."""
        try:
            return self.answer.model_validate(value)
        except ValidationError as exc:
            problems = "; ".join(f"$.{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:3])
            raise LLMOutputError(f"The model's JSON does not fit task '{self.name}': {problems}.") from exc

    def run_rules(self, payload: P) -> A:
        """The offline answer, checked to be the task's answer model (a rules bug fails here)."""
        self._check_payload(payload)
        out = self.rules(payload)
        if not isinstance(out, self.answer):
            raise TypeError(f"The rules of task '{self.name}' returned {type(out).__name__}, not {self.answer.__name__}.")
        return out

    def _check_payload(self, payload: Any) -> None:
        if not isinstance(payload, self.payload):
            raise TypeError(f"Task '{self.name}' takes a {self.payload.__name__} payload, got {type(payload).__name__}.")


def run_on_model(backend: Any, task: LLMTask[P, A], payload: P) -> A:
    """One task through a model backend's JSON transport (`complete_json`): render, ask, validate."""
    task._check_payload(payload)
    raw = backend.complete_json(task.name, task.prompt(payload), payload.model_dump(mode="json"), task.schema)
    return task.parse(raw)
