"""The one Retriever interface and the registry the UI menu and the contract tests are driven by.
Score arithmetic shared by strategies lives in backend/retrieval/scoring.py."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, Self

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from backend.config import Settings
from backend.errors import UnknownMethodError
from backend.graph.corpus import Corpus
from backend.index.encoders import TextEncoder
from backend.llm.base import LLMBackend
from backend.retrieval.scoring import QueryScores
from backend.types import ScoredNode, Trace


@dataclass(frozen=True, slots=True)
class ParamSpec:
    """A tunable parameter a strategy exposes to the UI and CLI (a view of its params model)."""

    name: str
    default: float | int
    minimum: float | int
    maximum: float | int
    description: str


def param(
    default: float | int, minimum: float | int, maximum: float | int, description: str,
    *, setting: str | None = None, ui: bool = True,
) -> Any:
    """A field of a strategy's params model. `setting`: the dotted Settings path its default comes
    from ("retrieval.hikey_docs"), resolved by StrategyParams.defaults; `default` is then the
    value under default Settings. minimum/maximum are the UI slider's range: values outside it are
    accepted, as from the CLI. ui=False keeps a parameter off the sliders (still settable by name)."""
    extra = {"minimum": minimum, "maximum": maximum, "setting": setting, "ui": ui}
    return Field(default, description=description, json_schema_extra=extra)


class StrategyParams(BaseModel):
    """The parameters of one strategy, one typed model per strategy; the UI sliders, the CLI and
    the trace read it. Defaults that are settings are read from Settings here and nowhere else."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @classmethod
    def _extra(cls, name: str) -> dict[str, Any]:
        return cls.model_fields[name].json_schema_extra  # type: ignore[return-value]

    @classmethod
    def defaults(cls, settings: Settings | None) -> dict[str, Any]:
        """Every field's default: its Settings value where it has one (settings None: the model's)."""
        out: dict[str, Any] = {}
        for name, info in cls.model_fields.items():
            value = info.default
            path = cls._extra(name)["setting"]
            if settings is not None and path:
                value = settings
                for part in path.split("."):
                    value = getattr(value, part)
            out[name] = value
        return out

    @classmethod
    def resolve(cls, settings: Settings | None, params: dict[str, Any]) -> Self:
        """The defaults overridden by `params`, each converted to its field's type (a slider's
        8.0 is the int 8); names the model does not have are ignored, as a UI may send them."""
        values = cls.defaults(settings)
        for name, value in params.items():
            if name in values:
                values[name] = type(values[name])(value)
        return cls.model_validate(values)

    @classmethod
    def specs(cls, settings: Settings | None = None) -> tuple[ParamSpec, ...]:
        """The UI's sliders: the fields with ui=True, defaults from `settings`."""
        defaults = cls.defaults(settings)
        return tuple(
            ParamSpec(name, defaults[name], cls._extra(name)["minimum"], cls._extra(name)["maximum"], info.description or "")
            for name, info in cls.model_fields.items() if cls._extra(name)["ui"]
        )


class NoParams(StrategyParams):
    """A strategy without parameters."""


class Retriever(ABC):
    """retrieve(query, top_k, params, trace) -> ranked ScoredNodes (unique ids, scores descending)."""

    name: ClassVar[str]
    description: ClassVar[str]
    Params: ClassVar[type[StrategyParams]] = NoParams
    params: ClassVar[tuple[ParamSpec, ...]] = ()  # the sliders under default Settings, derived from Params
    # the default stages (backend/stages/) run after this method: titles, rows, references and the
    # documents the question names; False for the flat floors (bm25, dense, hybrid)
    follows_references: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.params = cls.Params.specs(None)

    @classmethod
    def param_specs(cls, settings: Settings) -> tuple[ParamSpec, ...]:
        """The UI's sliders with their defaults under `settings`."""
        return cls.Params.specs(settings)

    def __init__(
        self,
        corpus: Corpus,
        encoder: TextEncoder,
        settings: Settings,
        *,
        sub_encoder: TextEncoder | None = None,
        llm: LLMBackend | None = None,
        image_encoder: Any = None,
        scores: QueryScores | None = None,
        brute_force: bool = False,
    ) -> None:
        """encoder: the text encoder of the documents/sections/components layers; sub_encoder: the
        one the subcomponents layer was encoded with (default: encoder); llm: the backend for the
        strategy's prompts (default: offline rules); image_encoder: optional, for figure units;
        scores: a question's score cache shared with the strategy that made this one (strata),
        None: a fresh one per retrieve call; brute_force: score every row per call, no cache
        (the path before QueryScores, kept as bench/scale.py's baseline)."""
        self.corpus = corpus
        self.shared_scores = scores
        self.brute_force = brute_force
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

    def question_scores(self) -> QueryScores:
        """The score cache of the question being answered: the shared one when this retriever was
        made for one question by another strategy, else a fresh one (create it once per retrieve
        call and pass it down; never keep it on self across questions)."""
        if self.shared_scores is not None:
            return self.shared_scores
        return QueryScores(brute_force=self.brute_force)

    def resolve_params(self, params: dict[str, Any], trace: Trace | None = None) -> Any:
        """This call's parameters as the strategy's params model (defaults from this Settings). A
        corpus profile's overrides (backend/stages/profile.py) arrive here as params, set by the
        query pipeline; `trace` is accepted for the strategies that pass it."""
        return self.Params.resolve(self.settings, params)

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
