"""GPU work on Hugging Face ZeroGPU Spaces: `gpu_task` wraps a Gradio callback in `spaces.GPU`
when the `spaces` package is importable (it is on Spaces), so a GPU is attached for the duration
of that call; everywhere else it returns the callback unchanged. On a Space without ZeroGPU
hardware `spaces.GPU` is itself a no-op, so wrapping is always safe.

It does not decide what runs on the GPU: the backend picks CUDA when torch sees one.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from functools import cache

log = logging.getLogger(__name__)

DEFAULT_DURATION_S = 120  # ZeroGPU's own default is 60 s; a first question also loads the encoders


@cache
def _spaces_module():
    try:
        return importlib.import_module("spaces")
    except ImportError:
        return None


def zero_gpu_available() -> bool:
    """Whether the `spaces` package (Hugging Face Spaces' ZeroGPU helper) is importable."""
    return _spaces_module() is not None


def gpu_task(fn: Callable | None = None, *, duration_s: int = DEFAULT_DURATION_S):
    """Decorator: `@gpu_task` or `@gpu_task(duration_s=300)`. Keeps the callback's signature
    (Gradio reads it for gr.Progress and the API docs)."""

    def wrap(func: Callable) -> Callable:
        spaces = _spaces_module()
        if spaces is None:
            return func
        log.debug("%s runs inside spaces.GPU (up to %d s)", func.__name__, duration_s)
        return spaces.GPU(duration=duration_s)(func)

    return wrap(fn) if fn is not None else wrap
