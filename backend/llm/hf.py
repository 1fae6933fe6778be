"""The `hf` backend: a local transformers causal LM (AutoModelForCausalLM + AutoTokenizer), on CUDA
when torch sees a GPU and the device setting allows it. STRATA_LLM__HF_MODEL (or the model box in
Settings) names either a local folder (save_pretrained layout) or a Hugging Face Hub id such as
Qwen/Qwen2.5-0.5B-Instruct; a Hub id is read from the local Hugging Face cache.

One task is one greedy generation: the tokenizer's chat template (system: JSON only + schema,
user: the strategy's prompt) when it has one, else the two turns as plain text. The reply's
JSON object is checked against the schema; a failure raises LLMOutputError. It does not fall
back to rules itself (GuardedBackend does) and does not send images (text-only models).

It downloads only through `locate_model(..., allow_download=True)`, which the Settings tab calls
when a person ticks "Download from the Hub", and never while HF_HUB_OFFLINE is set; answering a
question never downloads (a Hub id missing from the cache is a ConfigError that says what to do).
huggingface_hub's snapshot_download is the only network code here.

Loading happens on the first task, once per process and model: the service builds a backend
per question (so that its usage is that question's cost), and reloading weights each time
would cost seconds to minutes. At most MAX_LOADED_MODELS stay loaded (see LoadedModels).
"""

from __future__ import annotations

import gc
import logging
import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from backend.config import LLMSettings
from backend.errors import ConfigError, LLMError
from backend.llm.base import LLMUsage
from backend.llm.guard import parse_json_reply, system_message
from backend.llm.task import A, LLMTask, P, run_on_model

log = logging.getLogger(__name__)


def resolve_device(device: str) -> str:
    """'cpu' or 'cuda' for a device setting of auto | cpu | cuda."""
    import torch

    if device not in ("auto", "cpu", "cuda"):
        raise ConfigError(f"Unknown LLM device '{device}'. Set STRATA_LLM__DEVICE to auto, cpu or cuda.")
    if device == "cuda" and not torch.cuda.is_available():
        raise ConfigError("STRATA_LLM__DEVICE is 'cuda' but torch sees no GPU. Set it to auto or cpu.")
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


# owner/name as the Hub spells repository ids (no leading '.', '/' or '~': those are paths).
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[A-Za-z0-9][\w.-]*$")
# What a download fetches: config, safetensors weights and tokenizer files. Not *.bin, *.pth,
# *.gguf or *.onnx, which many repositories carry beside the safetensors and would double it.
HUB_FILES = ["*.json", "*.safetensors", "*.model", "*.tiktoken", "*.txt", "*.jinja"]
WEIGHT_FILES = ("*.safetensors", "*.bin")


@dataclass(frozen=True, slots=True)
class ModelSource:
    """Where a model setting points: the folder to load, and whether it came from the Hub cache."""

    name: str  # as the person typed it: a folder or an owner/name Hub id
    folder: Path
    from_hub: bool


def is_hub_id(name: str) -> bool:
    return bool(HUB_ID.match(name.strip()))


def hub_offline() -> bool:
    """HF_HUB_OFFLINE as huggingface_hub read it (its constants; the same switch snapshot_download obeys)."""
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


def hub_cache_dir() -> Path:
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def locate_model(name: str, allow_download: bool = False) -> ModelSource:
    """The folder of the model `name`: a local folder as it is, or a Hub id's snapshot in the local
    Hugging Face cache. A Hub id that is not cached is downloaded only when `allow_download` is true
    and HF_HUB_OFFLINE is not set; otherwise a ConfigError says what to do instead."""
    name = (name or "").strip()
    path = Path(name).expanduser()
    if name and path.is_dir():
        return ModelSource(name, path, from_hub=False)
    if not is_hub_id(name):
        raise ConfigError(
            f"No model folder at '{name}', and it is not a Hugging Face Hub id (owner/name). Set STRATA_LLM__HF_MODEL "
            "(or the model box in Settings) to the folder of a transformers causal LM saved with save_pretrained, "
            "or to a Hub id such as Qwen/Qwen2.5-0.5B-Instruct."
        )
    cached = cached_snapshot(name)
    if cached is not None:
        return ModelSource(name, cached, from_hub=True)
    if not allow_download:
        raise ConfigError(
            f"The model '{name}' is not in the local Hugging Face cache ({hub_cache_dir()}). Tick 'Download from the Hub' "
            "in Settings to fetch it once"
            + (" (HF_HUB_OFFLINE is set on this server: unset it first)" if hub_offline() else "")
            + f", or run `hf download {name}` on the server, or give a local model folder instead."
        )
    if hub_offline():
        raise ConfigError(
            f"The model '{name}' is not in the local Hugging Face cache ({hub_cache_dir()}) and HF_HUB_OFFLINE is set on "
            "this server, so it cannot be downloaded. Unset HF_HUB_OFFLINE and restart to allow the download, or give "
            "a local model folder."
        )
    return ModelSource(name, download_snapshot(name), from_hub=True)


def cached_snapshot(repo_id: str) -> Path | None:
    """The cached snapshot folder of a Hub id when it holds a config and weights; None otherwise.
    Reads the cache only (local_files_only), so it never touches the network."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        folder = Path(snapshot_download(repo_id, local_files_only=True))
    except LocalEntryNotFoundError:
        return None
    has_weights = any(next(folder.glob(pattern), None) is not None for pattern in WEIGHT_FILES)
    if not (folder / "config.json").is_file() or not has_weights:
        log.info("cached snapshot of %s at %s lacks config.json or weights; treating it as not cached", repo_id, folder)
        return None
    return folder


def download_snapshot(repo_id: str) -> Path:
    """Fetch a Hub model's config, safetensors weights and tokenizer into the local cache (the one
    network call of this module; only `locate_model` with allow_download calls it)."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import GatedRepoError, HfHubHTTPError, LocalEntryNotFoundError, RepositoryNotFoundError

    log.info("downloading %s from the Hugging Face Hub into %s", repo_id, hub_cache_dir())
    try:
        folder = Path(snapshot_download(repo_id, allow_patterns=HUB_FILES))
    except GatedRepoError as exc:
        raise ConfigError(
            f"'{repo_id}' is a gated model on the Hub: accept its licence on huggingface.co and set HF_TOKEN on the server, "
            "or pick another model."
        ) from exc
    except RepositoryNotFoundError as exc:
        raise ConfigError(f"No model '{repo_id}' on the Hugging Face Hub. Check the id (owner/name) on huggingface.co.") from exc
    except (HfHubHTTPError, LocalEntryNotFoundError, OSError) as exc:
        raise ConfigError(
            f"Could not download '{repo_id}' from the Hugging Face Hub: {exc}. Check the server's network access, "
            "or give a local model folder."
        ) from exc
    if not any(next(folder.glob(pattern), None) is not None for pattern in WEIGHT_FILES):
        raise ConfigError(
            f"'{repo_id}' has no safetensors weights on the Hub, which is what Strata downloads. Pick a model that "
            "publishes model.safetensors, or save it locally with save_pretrained and give that folder."
        )
    log.info("downloaded %s to %s", repo_id, folder)
    return folder


class LocalCausalLM:
    """Loaded weights and tokenizer; `generate` is serialised by a lock (one model, many sessions)."""

    def __init__(self, path: str, device: str) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.path = path
        self.device = device
        dtype = torch.float32
        if device == "cuda":
            dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
            self.model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype, local_files_only=True).to(device)
        except (OSError, ValueError) as exc:
            raise ConfigError(
                f"Cannot load a causal LM from '{path}': {exc}. Set STRATA_LLM__HF_MODEL to a local folder holding "
                "config.json, the weights and the tokenizer files (save_pretrained layout)."
            ) from exc
        self.model.eval()
        config = self.model.config
        self.max_positions: int | None = getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None)
        self.lock = threading.Lock()
        log.info("loaded causal LM %s on %s (%s)", path, device, dtype)

    def prompt_ids(self, system: str, prompt: str):
        """(1, n) input ids: the chat template when the tokenizer has one, else plain text."""
        from jinja2.exceptions import TemplateError

        tok = self.tokenizer
        if getattr(tok, "chat_template", None):
            turns = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
            try:
                text = tok.apply_chat_template(turns, tokenize=False, add_generation_prompt=True)
            except TemplateError:
                # Some templates (Gemma's) refuse a system turn: fold it into the user turn.
                text = tok.apply_chat_template(
                    [{"role": "user", "content": f"{system}\n\n{prompt}"}], tokenize=False, add_generation_prompt=True
                )
            return tok(text, return_tensors="pt", add_special_tokens=False)["input_ids"]
        return tok(f"{system}\n\n{prompt}\n", return_tensors="pt")["input_ids"]

    def generate(self, system: str, prompt: str, max_new_tokens: int) -> tuple[str, int, int]:
        """Greedy continuation: (text, prompt tokens, generated tokens)."""
        import torch

        ids = self.prompt_ids(system, prompt)  # (1, n_prompt)
        if self.max_positions:
            max_new_tokens = min(max_new_tokens, self.max_positions // 2)
            keep = self.max_positions - max_new_tokens
            if ids.shape[1] > keep:
                # Keep the end: the prompts end with the question and the output format.
                log.warning("prompt of %d tokens cut to the last %d (model context %d)", ids.shape[1], keep, self.max_positions)
                ids = ids[:, -keep:]
        pad_id = self.tokenizer.pad_token_id
        if pad_id is None:
            pad_id = self.tokenizer.eos_token_id
        ids = ids.to(self.device)
        try:
            with self.lock, torch.inference_mode():
                out = self.model.generate(
                    input_ids=ids,
                    attention_mask=torch.ones_like(ids),
                    max_new_tokens=max_new_tokens,
                    do_sample=False,
                    pad_token_id=pad_id,
                )  # (1, n_prompt + n_new)
        except torch.cuda.OutOfMemoryError as exc:
            raise LLMError(
                f"The local model ran out of GPU memory on a {ids.shape[1]}-token prompt. "
                "Lower STRATA_READER__TOKEN_BUDGET or STRATA_LLM__MAX_NEW_TOKENS."
            ) from exc
        new = out[0, ids.shape[1]:]
        return self.tokenizer.decode(new, skip_special_tokens=True), int(ids.shape[1]), int(new.shape[0])


# A small instruct model is 1-4 GB of weights; two at once can exhaust a small GPU or a laptop's
# memory, so a session that picks another model replaces the loaded one (a few seconds to reload).
MAX_LOADED_MODELS = 1


class LoadedModels:
    """The loaded models of this process, at most `capacity`, least recently used dropped first.

    A lock covers loading, so two sessions asking for the same model at once load it once. The
    dropped model is freed as soon as no backend still generating with it holds a reference."""

    def __init__(self, capacity: int = MAX_LOADED_MODELS) -> None:
        self.capacity = capacity
        self._models: OrderedDict[tuple[str, str], LocalCausalLM] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, folder: str, device: str) -> LocalCausalLM:
        key = (folder, device)
        with self._lock:
            lm = self._models.get(key)
            if lm is not None:
                self._models.move_to_end(key)
                return lm
            while len(self._models) >= self.capacity:
                (old_folder, old_device), _ = self._models.popitem(last=False)
                log.info("unloading causal LM %s to make room for %s", old_folder, folder)
                self._free(old_device)
            lm = LocalCausalLM(folder, device)
            self._models[key] = lm
            return lm

    def loaded(self) -> list[str]:
        """Folders of the loaded models, least recently used first."""
        with self._lock:
            return [folder for folder, _ in self._models]

    @staticmethod
    def _free(device: str) -> None:
        gc.collect()
        if device == "cuda":
            import torch

            torch.cuda.empty_cache()


LOADED_MODELS = LoadedModels()


def load_local_lm(path: str, device: str) -> LocalCausalLM:
    """The loaded model of a folder, once per process while it stays in LOADED_MODELS."""
    return LOADED_MODELS.get(path, device)


class HFBackend:
    def __init__(self, settings: LLMSettings, usage: LLMUsage | None = None) -> None:
        if not settings.hf_model:
            raise ConfigError(
                "The hf LLM backend needs a model: set STRATA_LLM__HF_MODEL to a local folder of a transformers causal LM "
                "or to a Hub id in the local Hugging Face cache (e.g. Qwen/Qwen2.5-0.5B-Instruct)."
            )
        self.settings = settings
        self.name = f"hf:{Path(settings.hf_model).name or settings.hf_model}"
        self.usage = usage or LLMUsage()
        self._lm: LocalCausalLM | None = None

    def warm_up(self) -> LocalCausalLM:
        if self._lm is None:
            source = locate_model(self.settings.hf_model)  # never downloads: see the module docstring
            self._lm = load_local_lm(str(source.folder), resolve_device(self.settings.device))
        return self._lm

    def run(self, task: LLMTask[P, A], payload: P) -> A:
        return run_on_model(self, task, payload)

    def complete_json(
        self, task: str, prompt: str, payload: dict[str, Any], schema: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        lm = self.warm_up()
        self.usage.calls += 1
        self.usage.tasks[task] = self.usage.tasks.get(task, 0) + 1
        t0 = time.perf_counter()
        text, n_prompt, n_new = lm.generate(system_message(schema), prompt, self.settings.max_new_tokens)
        self.usage.seconds += time.perf_counter() - t0
        self.usage.prompt_tokens += n_prompt
        self.usage.completion_tokens += n_new
        log.debug("hf task=%s prompt_tokens=%d new_tokens=%d", task, n_prompt, n_new)
        return parse_json_reply(text, schema)
