"""Build the configured LLM backend (settings.reader.llm_backend): `rules` as it is, `openai` and
`hf` wrapped in GuardedBackend (call budget per question, rules fallback per task). Building is
cheap: no request is sent and no weights are loaded until the first task."""

from __future__ import annotations

from backend.config import Settings
from backend.errors import ConfigError
from backend.llm.base import LLMBackend
from backend.llm.guard import GuardedBackend
from backend.llm.hf import HFBackend
from backend.llm.openai_compat import OpenAIBackend
from backend.llm.rules import RulesBackend

BACKENDS = ("rules", "openai", "hf")


def build_llm(settings: Settings) -> LLMBackend:
    name = settings.reader.llm_backend
    if name == "rules":
        return RulesBackend()
    if name == "openai":
        model: LLMBackend = OpenAIBackend(settings.llm)
    elif name == "hf":
        model = HFBackend(settings.llm)
    else:
        raise ConfigError(f"Unknown LLM backend '{name}'. Set STRATA_READER__LLM_BACKEND to one of: {', '.join(BACKENDS)}.")
    return GuardedBackend(model, settings.llm.max_calls_per_question)
