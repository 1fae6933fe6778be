"""The LLM protocol every backend implements: a task name, a prompt, a JSON payload in, a JSON
object out, with call/token accounting. Backends: `rules` (offline, deterministic: it reads the
payload and ignores the prompt text); `openai` (any OpenAI-compatible server) and `hf` (a local
transformers causal LM) format the prompt and parse the JSON they return, falling back to the
rules answer for that task when the model's output is not valid JSON of the schema.

Strategies keep their paper's prompt templates and JSON schemas beside their code and call
`llm.complete_json(task, prompt, payload, schema)`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass
class LLMUsage:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    fallbacks: int = 0
    tasks: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # why a task fell back to rules, for Trace.notes

    def reset(self) -> None:
        self.calls = self.prompt_tokens = self.completion_tokens = self.fallbacks = 0
        self.seconds = 0.0
        self.tasks = {}
        self.notes = []

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def snapshot(self) -> tuple[int, int]:
        """(calls, tokens) now, to measure the cost of one step as a difference."""
        return self.calls, self.tokens


class LLMBackend(Protocol):
    name: str
    usage: LLMUsage

    def complete_json(
        self, task: str, prompt: str, payload: dict[str, Any], schema: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Run one task (e.g. 'answer', 'decompose') and return its JSON object."""
        ...


ANSWER_PROMPT = (
    "Answer the question using only the [Context] below. Cite the unit ids you used. If the context does "
    "not contain the answer, reply exactly 'not enough evidence'. Give a short answer: a number, date, name "
    "or yes/no when the question asks for one.\n\n[Context]\n{context}\n\n[Question]\n{question}"
)

# The JSON object the 'answer' task returns (what RulesBackend._answer builds and EvidenceReader reads).
ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "answer": {"type": "string"},
        "citations": {"type": "array", "items": {"type": "string"}},
        "abstain": {"type": "boolean"},
        "confidence": {"type": "number"},
        "reason": {"type": "string"},
    },
    "required": ["answer", "citations", "abstain"],
}
