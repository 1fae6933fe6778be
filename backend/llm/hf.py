"""The `hf` backend: a local transformers causal LM (AutoModelForCausalLM + AutoTokenizer from the
folder in STRATA_LLM__HF_MODEL), on CUDA when torch sees a GPU and the device setting allows it.

One task is one greedy generation: the tokenizer's chat template (system: JSON only + schema,
user: the strategy's prompt) when it has one, else the two turns as plain text. The reply's
JSON object is checked against the schema; a failure raises LLMOutputError. It does not fall
back to rules itself (GuardedBackend does), does not send images (text-only models), and never
downloads: the folder must hold the weights and the tokenizer.

Loading happens on the first task, once per process and folder: the service builds a backend
per question (so that its usage is that question's cost), and reloading weights each time
would cost seconds to minutes.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
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


@functools.lru_cache(maxsize=2)
def load_local_lm(path: str, device: str) -> LocalCausalLM:
    """The loaded model of a folder, once per process (see the module docstring)."""
    return LocalCausalLM(path, device)


class HFBackend:
    def __init__(self, settings: LLMSettings, usage: LLMUsage | None = None) -> None:
        if not settings.hf_model:
            raise ConfigError(
                "The hf LLM backend needs a model: set STRATA_LLM__HF_MODEL to a local folder of a transformers causal LM."
            )
        self.settings = settings
        self.name = f"hf:{Path(settings.hf_model).name or settings.hf_model}"
        self.usage = usage or LLMUsage()
        self._lm: LocalCausalLM | None = None

    def warm_up(self) -> LocalCausalLM:
        if self._lm is None:
            self._lm = load_local_lm(str(Path(self.settings.hf_model).expanduser()), resolve_device(self.settings.device))
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
