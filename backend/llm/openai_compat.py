"""The `openai` backend: any server that speaks the OpenAI chat-completions API (vLLM, Ollama,
TGI, llama.cpp server, hosted APIs), over plain httpx.

One task is one POST to {base_url}/chat/completions: a system turn asking for one JSON object
(with the task's schema) and the strategy's prompt as the user turn, plus the payload's images
as data-URI image parts when the model takes images. It retries connection errors, timeouts,
429 and 5xx with exponential backoff, and drops `response_format` once if the server rejects
it with a 400. The reply's JSON object is checked against the schema; a failure raises
LLMError / LLMOutputError. It does not fall back to rules itself: GuardedBackend does that.

The API key goes into the Authorization header and nowhere else: not into logs, errors or repr.
"""

from __future__ import annotations

import base64
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from backend.config import LLMSettings
from backend.errors import LLMError, LLMOutputError
from backend.llm.base import LLMUsage
from backend.llm.guard import estimate_tokens, parse_json_reply, snippet, system_message
from backend.llm.task import A, LLMTask, P, run_on_model

log = logging.getLogger(__name__)

RETRY_STATUS = {408, 409, 429}  # plus every 5xx
MAX_BACKOFF_S = 30.0
STATUS_HINTS = {
    401: "Check STRATA_LLM__API_KEY.",
    403: "Check STRATA_LLM__API_KEY and that the key may use this model.",
    404: "Check STRATA_LLM__BASE_URL (it usually ends in /v1) and STRATA_LLM__MODEL.",
}


class OpenAIBackend:
    def __init__(
        self,
        settings: LLMSettings,
        usage: LLMUsage | None = None,
        backoff_s: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """backoff_s: the first retry's wait (doubling after each retry); sleep: injectable for tests."""
        self.settings = settings
        self.name = f"openai:{settings.model}"
        self.usage = usage or LLMUsage()
        self.url = settings.base_url.rstrip("/") + "/chat/completions"
        self.backoff_s = backoff_s
        self._sleep = sleep
        # Cleared after a server rejects response_format, so later calls do not ask again.
        self._json_mode = True

    def __repr__(self) -> str:
        return f"OpenAIBackend(url={self.url!r}, model={self.settings.model!r})"

    def run(self, task: LLMTask[P, A], payload: P) -> A:
        return run_on_model(self, task, payload)

    def complete_json(
        self, task: str, prompt: str, payload: dict[str, Any], schema: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        self.usage.calls += 1
        self.usage.tasks[task] = self.usage.tasks.get(task, 0) + 1
        system = system_message(schema)
        body: dict[str, Any] = {
            "model": self.settings.model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": self._user_content(prompt, payload.get("images") or [])},
            ],
            "temperature": self.settings.temperature,
            "max_tokens": self.settings.max_new_tokens,
        }
        if self._json_mode:
            body["response_format"] = {"type": "json_object"}
        log.debug("POST %s task=%s model=%s prompt_chars=%d", self.url, task, self.settings.model, len(prompt))
        t0 = time.perf_counter()
        try:
            data = self._post(body)
        finally:
            self.usage.seconds += time.perf_counter() - t0
        text, finish_reason = self._reply_text(data)
        usage = data.get("usage") or {}
        self.usage.prompt_tokens += int(usage.get("prompt_tokens") or estimate_tokens(system + prompt))
        self.usage.completion_tokens += int(usage.get("completion_tokens") or estimate_tokens(text))
        try:
            return parse_json_reply(text, schema)
        except LLMOutputError as exc:
            if finish_reason == "length":
                raise LLMOutputError(
                    f"{exc} The reply was cut at {self.settings.max_new_tokens} tokens; raise STRATA_LLM__MAX_NEW_TOKENS."
                ) from exc
            raise

    def _user_content(self, prompt: str, images: list[bytes | str | Path]) -> str | list[dict[str, Any]]:
        if not images:
            return prompt
        if not self.settings.supports_images:
            note = "images were not sent to the model: set STRATA_LLM__SUPPORTS_IMAGES=true for a vision model."
            if note not in self.usage.notes:
                self.usage.notes.append(note)
            return prompt
        parts: list[dict[str, Any]] = [{"type": "text", "text": prompt}]
        parts += [{"type": "image_url", "image_url": {"url": image_data_uri(img)}} for img in images]
        return parts

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        headers = {"Content-Type": "application/json"}
        if self.settings.api_key is not None:
            headers["Authorization"] = f"Bearer {self.settings.api_key.get_secret_value()}"
        attempt = 0
        with httpx.Client(timeout=self.settings.timeout_s) as client:
            while True:
                wait_s = self.backoff_s * 2**attempt
                try:
                    resp = client.post(self.url, json=body, headers=headers)
                except httpx.TimeoutException:
                    problem = f"no reply within {self.settings.timeout_s:g} s (STRATA_LLM__TIMEOUT_S)"
                except httpx.TransportError as exc:
                    problem = f"cannot reach the server ({type(exc).__name__}: {exc})"
                else:
                    status = resp.status_code
                    if status == 400 and "response_format" in body:
                        log.info("%s rejected response_format (400: %s); asking again without it", self.url, snippet(resp.text))
                        self._json_mode = False
                        body = {k: v for k, v in body.items() if k != "response_format"}
                        continue
                    if status < 300:
                        try:
                            return resp.json()
                        except ValueError as exc:
                            raise LLMError(f"{self.url} answered {status} with a body that is not JSON: {snippet(resp.text)!r}.") from exc
                    if status not in RETRY_STATUS and status < 500:
                        raise LLMError(
                            f"{self.url} answered HTTP {status}: {snippet(resp.text, 200)!r}. {STATUS_HINTS.get(status, '')}".rstrip()
                        )
                    problem = f"HTTP {status}: {snippet(resp.text)!r}"
                    wait_s = _retry_after_s(resp) or wait_s
                if attempt >= self.settings.max_retries:
                    raise LLMError(
                        f"{self.url} failed after {attempt + 1} attempt(s): {problem}. "
                        "Check that the server runs and STRATA_LLM__BASE_URL points at it."
                    )
                attempt += 1
                log.info("%s: %s; retry %d/%d in %.1f s", self.url, problem, attempt, self.settings.max_retries, wait_s)
                self._sleep(min(wait_s, MAX_BACKOFF_S))

    def _reply_text(self, data: dict[str, Any]) -> tuple[str, str | None]:
        try:
            choice = data["choices"][0]
            text = choice["message"]["content"]
        except (KeyError, IndexError, TypeError) as exc:
            raise LLMOutputError(f"{self.url} answered without choices[0].message.content: {snippet(str(data))!r}.") from exc
        if not isinstance(text, str):
            raise LLMOutputError(f"{self.url} answered with no text content (content={text!r}).")
        return text, choice.get("finish_reason")


def _retry_after_s(resp: httpx.Response) -> float | None:
    value = resp.headers.get("retry-after")
    try:
        return max(float(value), 0.0) if value is not None else None
    except ValueError:  # an HTTP date: use our own backoff
        return None


def image_data_uri(image: bytes | str | Path) -> str:
    """A data: URI of PNG/JPEG bytes or of an image file."""
    if isinstance(image, (str, Path)):
        path = Path(image)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise LLMError(f"Cannot read the image '{path}' for the model: {exc.strerror}.") from exc
    else:
        data = bytes(image)
    if data.startswith(b"\x89PNG"):
        mime = "image/png"
    elif data.startswith(b"\xff\xd8"):
        mime = "image/jpeg"
    elif data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        mime = "image/webp"
    else:
        raise LLMError(f"The image {str(image)[:60]!r} is not PNG, JPEG or WebP; the model cannot take it.")
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


PROBE_TIMEOUT_S = 5.0  # a server that takes longer to list its models is reported as not answering


def probe_server(settings: LLMSettings, timeout_s: float = PROBE_TIMEOUT_S) -> str:
    """Check that {base_url} is an OpenAI-compatible server that serves `settings.model`: one
    GET {base_url}/models (with the key, when one is set). Returns one line for people on success;
    raises LLMError naming the URL, what came back and the fix. Sends no chat request."""
    url = settings.base_url.rstrip("/") + "/models"
    headers = {}
    if settings.api_key is not None and settings.api_key.get_secret_value():
        headers["Authorization"] = f"Bearer {settings.api_key.get_secret_value()}"
    try:
        resp = httpx.get(url, headers=headers, timeout=timeout_s)
    except httpx.TimeoutException:
        raise LLMError(f"{url} did not answer within {timeout_s:g} s. Check that the server runs and the base URL.") from None
    except httpx.TransportError as exc:
        raise LLMError(f"Cannot reach {url} ({type(exc).__name__}: {exc}). Check that the server runs and the base URL.") from None
    if resp.status_code >= 300:
        hint = STATUS_HINTS.get(resp.status_code, "Check the base URL (it usually ends in /v1).")
        raise LLMError(f"{url} answered HTTP {resp.status_code}: {snippet(resp.text)!r}. {hint}")
    try:
        served = [str(m["id"]) for m in resp.json()["data"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise LLMError(
            f"{url} answered, but not as an OpenAI-compatible server (no model list): {snippet(resp.text)!r}. "
            "Check the base URL (it usually ends in /v1)."
        ) from exc
    if served and settings.model not in served:
        shown = ", ".join(served[:5]) + (f" and {len(served) - 5} more" if len(served) > 5 else "")
        raise LLMError(f"{url} does not serve the model '{settings.model}'; it serves {shown}. Set the model to one of them.")
    return f"{settings.base_url} answers and serves {settings.model}" if served else f"{settings.base_url} answers"
