"""What stands between a model and the strategies: reading a JSON object out of a model's reply,
checking it against the task's schema, and `GuardedBackend`, which gives a model backend a
per-question call budget and answers a task with the rules backend when the model fails.

A fallback is recorded as data (usage.fallbacks and one note in usage.notes per reason), not
raised: a question still gets an answer when the server is down or the model writes prose. A
model failure (not a spent budget) is also kept in usage.errors, which the answer shows as an
error (AskResult.llm_error). Errors that are not the model's (a bug, a task neither backend
knows) still raise.

The schema check covers what the strategies' schemas use (type, properties, required, items,
enum); it is not a full JSON Schema validator.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from backend.errors import LLMError, LLMOutputError
from backend.llm.base import ANSWER_SCHEMA, LLMBackend, LLMUsage
from backend.llm.rules import RulesBackend
from backend.llm.task import A, LLMTask, P

log = logging.getLogger(__name__)

JSON_INSTRUCTION = (
    "Reply with one JSON object and nothing else: no prose before or after it, no code fences."
)
# Schemas of tasks whose callers pass none (the reader's 'answer' task).
DEFAULT_SCHEMAS: dict[str, dict[str, Any]] = {"answer": ANSWER_SCHEMA}
FENCE_RE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,), "array": (list,), "string": (str,), "boolean": (bool,), "null": (type(None),),
    "integer": (int,), "number": (int, float),
}


def system_message(schema: dict[str, Any] | None) -> str:
    """The system turn every model backend sends: JSON only, and the schema when there is one."""
    if not schema:
        return JSON_INSTRUCTION
    return f"{JSON_INSTRUCTION} It must match this JSON schema:\n{json.dumps(schema, separators=(',', ':'))}"


def extract_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in a model's reply: the whole reply, a ```json fence, or the first
    balanced {...} after leading text. Raises LLMOutputError naming the start of the reply."""
    candidates = [text.strip()] + [m.group(1).strip() for m in FENCE_RE.finditer(text)]
    for cand in candidates:
        try:
            value = json.loads(cand)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    start = text.find("{")
    while start != -1:
        end = _balanced_end(text, start)
        if end is None:
            break
        try:
            value = json.loads(text[start:end])
        except ValueError:
            value = None
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    raise LLMOutputError(f"The model's reply holds no JSON object: {snippet(text)!r}.")


def _balanced_end(text: str, start: int) -> int | None:
    """Index just past the '}' that closes the '{' at `start`, skipping braces inside strings."""
    depth, in_string, escaped = 0, False, False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def schema_problems(value: Any, schema: dict[str, Any], path: str = "$") -> list[str]:
    """Where `value` breaks `schema` (type, required, properties, items, enum); [] when it fits."""
    problems: list[str] = []
    expected = schema.get("type")
    if expected is not None:
        names = [expected] if isinstance(expected, str) else list(expected)
        # bool is an int in Python but not a JSON number.
        fits = any(
            isinstance(value, _JSON_TYPES.get(n, object)) and not (n in ("integer", "number") and isinstance(value, bool))
            for n in names
        )
        if not fits:
            return [f"{path} is {type(value).__name__}, expected {' or '.join(names)}"]
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{path} = {value!r} is not one of {schema['enum']}")
    if isinstance(value, dict):
        problems += [f"{path}.{key} is missing" for key in schema.get("required", []) if key not in value]
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                problems += schema_problems(value[key], sub, f"{path}.{key}")
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            problems += schema_problems(item, schema["items"], f"{path}[{i}]")
    return problems


def parse_json_reply(text: str, schema: dict[str, Any] | None) -> dict[str, Any]:
    """The reply's JSON object, checked against the schema; LLMOutputError when it does not fit."""
    value = extract_json_object(text)
    if schema:
        problems = schema_problems(value, schema)
        if problems:
            raise LLMOutputError(f"The model's JSON does not fit the task schema: {'; '.join(problems[:3])}.")
    return value


def estimate_tokens(text: str) -> int:
    """About 4 characters per token, for servers that report no usage."""
    return (len(text) + 3) // 4


def snippet(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


class GuardedBackend:
    """A model backend with a call budget per question and a rules fallback per task.

    `usage` is the model's (calls and tokens are what the model cost); tasks answered by rules
    add to usage.fallbacks and leave a note in usage.notes. Build one per question.
    """

    def __init__(self, model: LLMBackend, max_calls: int, fallback: LLMBackend | None = None) -> None:
        if max_calls < 0:
            raise ValueError(f"max_calls must be >= 0, got {max_calls}. Set STRATA_LLM__MAX_CALLS_PER_QUESTION.")
        self.model = model
        self.max_calls = max_calls
        self.fallback = fallback or RulesBackend()
        self.name = model.name
        self.usage: LLMUsage = model.usage

    def _skip_reason(self) -> str | None:
        if self.usage.calls >= self.max_calls:
            return f"the budget of {self.max_calls} model calls per question is spent"
        return None

    def _failed(self, exc: LLMError) -> str:
        """Record a model failure in usage.errors (once per reason) and say why."""
        why = f"invalid model output ({exc})" if isinstance(exc, LLMOutputError) else f"model call failed ({exc})"
        if why not in self.usage.errors:
            self.usage.errors.append(why)
        return why

    def run(self, task: LLMTask[P, A], payload: P) -> A:
        """The model's answer to a typed task, or the task's rules when the budget is spent or the
        model fails (a reply that does not fit the answer model is a failure)."""
        why = self._skip_reason()
        if why is not None:
            self.usage.tasks[task.name] = self.usage.tasks.get(task.name, 0) + 1
        else:
            try:
                return self.model.run(task, payload)
            except LLMError as exc:
                why = self._failed(exc)
        self._note_fallback(task.name, why)
        return self.fallback.run(task, payload)

    def complete_json(
        self, task: str, prompt: str, payload: dict[str, Any], schema: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        schema = schema or DEFAULT_SCHEMAS.get(task)
        skip = self._skip_reason()
        if skip is not None:
            self.usage.tasks[task] = self.usage.tasks.get(task, 0) + 1
            return self._fall_back(task, prompt, payload, schema, skip)
        try:
            return self.model.complete_json(task, prompt, payload, schema)
        except LLMError as exc:
            why = self._failed(exc)
        return self._fall_back(task, prompt, payload, schema, why)

    def _note_fallback(self, task: str, why: str) -> None:
        """Count a fallback and say why once (usage.notes end up in Trace.notes)."""
        log.warning("LLM task '%s' answered by rules: %s", task, why)
        self.usage.fallbacks += 1
        note = f"{task}: {why}; answered by the rules backend."
        if note not in self.usage.notes:
            self.usage.notes.append(note)

    def _fall_back(self, task: str, prompt: str, payload: dict[str, Any], schema: dict[str, Any] | None, why: str) -> dict[str, Any]:
        self._note_fallback(task, why)
        try:
            return self.fallback.complete_json(task, prompt, payload, schema)
        except ValueError as exc:
            raise LLMError(f"Task '{task}' failed on {self.name} ({why}) and {exc}") from exc
