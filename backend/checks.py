"""Checks of a question's input that need only the settings: its text and its top_k. The command
line runs them before it loads any model, so a bad call fails at once; the service runs them
again for every caller (the UI, the API, the evaluator).
"""

from __future__ import annotations

from typing import Any

from backend.config import Settings
from backend.errors import StrataError


def checked_question(question: str | None, settings: Settings) -> str:
    """The question stripped, or a StrataError when it is empty or longer than settings.max_question_chars."""
    text = (question or "").strip()
    if not text:
        raise StrataError("The question is empty. Type a question about your documents.")
    limit = settings.max_question_chars
    if len(text) > limit:
        raise StrataError(
            f"The question is {len(text):,} characters long; at most {limit:,} are accepted. "
            "Ask the question itself and leave out pasted text (the limit is STRATA_MAX_QUESTION_CHARS)."
        )
    return text


def checked_top_k(top_k: Any, settings: Settings) -> int:
    """top_k as an int (None = settings.retrieval.top_k), or a StrataError when it is not a whole
    number between 1 and settings.max_top_k."""
    if top_k is None:
        top_k = settings.retrieval.top_k
    limit = settings.max_top_k
    try:
        value = int(top_k)
        whole = not isinstance(top_k, bool) and value == float(top_k)
    except (TypeError, ValueError, OverflowError):
        whole = False
    if not whole or not 1 <= value <= limit:
        raise StrataError(
            f"top_k must be a whole number between 1 and {limit}; got {top_k!r}. "
            f"Ask for 1 to {limit} results (the upper limit is STRATA_MAX_TOP_K)."
        )
    return value
