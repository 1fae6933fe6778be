"""The one Retriever interface and the registry the UI menu and the contract tests are driven by.
Score arithmetic shared by strategies lives in backend/retrieval/scoring.py."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from backend.config import Settings
from backend.errors import UnknownMethodError
from backend.graph.corpus import Corpus
from backend.index.encoders import TextEncoder
from backend.llm.base import LLMBackend
from backend.types import ScoredNode, Trace


@dataclass(frozen=True, slots=True)
class ParamSpec:
    """A tunable parameter a strategy exposes to the UI and CLI."""

    name: str
    default: float | int
    minimum: float | int
    maximum: float | int
    description: str


class Retriever(ABC):
    """retrieve(query, top_k, params, trace) -> ranked ScoredNodes (unique ids, scores descending)."""

    name: ClassVar[str]
    description: ClassVar[str]
    params: ClassVar[tuple[ParamSpec, ...]] = ()

    def __init__(
        self,
        corpus: Corpus,
        encoder: TextEncoder,
        settings: Settings,
        *,
        sub_encoder: TextEncoder | None = None,
        llm: LLMBackend | None = None,
        image_encoder: Any = None,
    ) -> None:
        """encoder: the text encoder of the documents/sections/components layers; sub_encoder: the
        one the subcomponents layer was encoded with (default: encoder); llm: the backend for the
        strategy's prompts (default: offline rules); image_encoder: optional, for figure units."""
        self.corpus = corpus
        self.encoder = encoder
        self.sub_encoder = sub_encoder or encoder
        self.settings = settings
        if llm is None:
            from backend.llm.rules import RulesBackend

            llm = RulesBackend()
        self.llm = llm
        self.image_encoder = image_encoder

    @abstractmethod
    def retrieve(self, query: str, top_k: int, params: dict[str, Any], trace: Trace) -> list[ScoredNode]: ...

    def param(self, params: dict[str, Any], name: str) -> Any:
        spec = next(p for p in self.params if p.name == name)
        value = params.get(name, spec.default)
        return type(spec.default)(value)

    def embed(self, text: str) -> np.ndarray:
        return self.encoder.encode([text])[0]

    def embed_sub(self, texts: list[str]) -> np.ndarray:
        """Texts in the subcomponent space: (n, dim_sub), L2-normalised."""
        return self.sub_encoder.encode(texts)


REGISTRY: dict[str, type[Retriever]] = {}


def register(cls: type[Retriever]) -> type[Retriever]:
    REGISTRY[cls.name] = cls
    return cls


def get_retriever_class(name: str) -> type[Retriever]:
    _load_all()
    if name not in REGISTRY:
        raise UnknownMethodError(f"Unknown retrieval method '{name}'. Choose one of: {', '.join(sorted(REGISTRY))}.")
    return REGISTRY[name]


def method_names() -> list[str]:
    _load_all()
    return list(REGISTRY)


def _load_all() -> None:
    # Importing the modules registers them; the import order is the menu order.
    import importlib

    for module in ("bm25", "dense", "hybrid", "hikey", "lilac", "fif", "mirag", "mmgraph", "strata"):
        importlib.import_module(f"backend.retrieval.{module}")
