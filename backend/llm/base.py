"""The LLM protocol every backend implements: a task name, a prompt, a JSON payload in, a JSON
object out, with call/token accounting. Backends: `rules` (offline, deterministic); the
OpenAI-compatible and local transformers backends plug in behind the same protocol."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


@dataclass
class LLMUsage:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def reset(self) -> None:
        self.calls = self.prompt_tokens = self.completion_tokens = 0


class LLMBackend(Protocol):
    name: str
    usage: LLMUsage

    def complete_json(self, task: str, prompt: str, payload: dict[str, Any]) -> dict[str, Any]:
        """Run one task (e.g. 'answer') and return its JSON object."""
        ...


ANSWER_PROMPT = (
    "Answer the question using only the [Context] below. Cite the unit ids you used. If the context does "
    "not contain the answer, reply exactly 'not enough evidence'. Give a short answer: a number, date, name "
    "or yes/no when the question asks for one.\n\n[Context]\n{context}\n\n[Question]\n{question}"
)
