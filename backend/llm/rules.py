"""The offline `rules` LLM backend: it answers every typed task (backend/llm/task.py) with the
task's own rules and makes no model call, so its usage counts tasks and never calls or tokens.

Each task keeps its rules beside the code that asks it: the reader's ANSWER task and its rules are
backend/reader/, a strategy's tasks are backend/retrieval/<strategy>/tasks.py, the entity
extractor's are backend/graph/. The raw JSON transport (`complete_json`) answers only the
reader's 'answer' prompt, by the same rules, for the guard's fallback of a raw call.
"""

from __future__ import annotations

from typing import Any

from backend.llm.base import LLMUsage
from backend.llm.task import A, LLMTask, P


class RulesBackend:
    name = "rules"

    def __init__(self) -> None:
        self.usage = LLMUsage()

    def run(self, task: LLMTask[P, A], payload: P) -> A:
        # Rules make no model calls: calls and tokens stay 0, so the cost shown is honest.
        self.usage.tasks[task.name] = self.usage.tasks.get(task.name, 0) + 1
        return task.run_rules(payload)

    def complete_json(
        self, task: str, prompt: str, payload: dict[str, Any], schema: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """The reader's 'answer' prompt as raw JSON, from its question, evidence units (each an
        EvidenceUnit's fields) and threshold; every other prompt is a typed task (run). A payload
        that does not fit raises pydantic's ValidationError (a ValueError) naming the field."""
        if task != "answer":
            raise ValueError(f"The rules backend has no untyped task '{task}': run its LLMTask with run(task, payload).")
        from backend.reader.evidence import EvidenceUnit  # the reader imports the LLM layer, not the reverse
        from backend.reader.rules import answer_by_rules

        self.usage.tasks[task] = self.usage.tasks.get(task, 0) + 1
        evidence = [EvidenceUnit.model_validate(e) for e in payload["evidence"]]
        return answer_by_rules(payload["question"], evidence, float(payload.get("threshold", 0.35))).model_dump()


