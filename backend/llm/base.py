"""The LLM protocol every backend implements, with call/token accounting.

`run(task, payload)` runs one typed task (backend/llm/task.py) and returns its answer model:
`rules` (offline, deterministic) calls the task's rules; `openai` (any OpenAI-compatible server)
and `hf` (a local transformers causal LM) render the task's prompt, ask for JSON and validate it
with the answer model; GuardedBackend falls back to the task's rules when a model fails.
`complete_json(name, prompt, payload, schema)` is the raw JSON transport underneath (run_on_model
in backend/llm/task.py sends every task through it). No backend code calls it for answering any
more (the reader runs the typed ANSWER task); the rules backend and the guard still answer a raw
'answer' call, which tests/llm exercise as the transport's reference reply.

Strategies keep their paper's prompts and their tasks beside their code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from backend.llm.task import A, LLMTask, P


@dataclass
class LLMUsage:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    fallbacks: int = 0
    tasks: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # why a task fell back to rules, for Trace.notes
    # Why the model failed (unreachable, an error status, a reply that is not the task's JSON), one per
    # reason; a spent call budget is not a failure. AskResult.llm_error says these to the user.
    errors: list[str] = field(default_factory=list)

    def reset(self) -> None:
        self.calls = self.prompt_tokens = self.completion_tokens = self.fallbacks = 0
        self.seconds = 0.0
        self.tasks = {}
        self.notes = []
        self.errors = []

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def snapshot(self) -> tuple[int, int]:
        """(calls, tokens) now, to measure the cost of one step as a difference."""
        return self.calls, self.tokens


class LLMBackend(Protocol):
    name: str
    usage: LLMUsage

    def run(self, task: LLMTask[P, A], payload: P) -> A:
        """Run one typed task and return its answer model."""
        ...

    def complete_json(
        self, task: str, prompt: str, payload: dict[str, Any], schema: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Send one prompt (task: its name, for accounting) and return the reply's JSON object."""
        ...


ANSWER_PROMPT = (
    "Answer the question using only the [Context] below. Cite the unit ids you used. If the context does "
    "not contain the answer, reply exactly 'not enough evidence'. Give a short answer: a number, date, name "
    "or yes/no when the question asks for one.\n\n[Context]\n{context}\n\n[Question]\n{question}"
)

# The JSON object the 'answer' task returns (what answer_by_rules builds and EvidenceReader reads).
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
