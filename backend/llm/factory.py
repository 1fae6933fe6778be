"""Build the configured LLM backend (settings.reader.llm_backend)."""

from __future__ import annotations

from backend.config import Settings
from backend.llm.base import LLMBackend
from backend.llm.rules import RulesBackend


def build_llm(settings: Settings) -> LLMBackend:
    name = settings.reader.llm_backend
    if name == "rules":
        return RulesBackend()
    raise ValueError(f"Unknown LLM backend '{name}'. Choose rules, openai or hf.")
