"""Settings tab: which LLM backend this browser session answers with (rules / an OpenAI-compatible
server with base URL, key and model / a local Hugging Face model: a folder or a Hub id), its budgets
(top-k, evidence tokens, model calls per question), and what the server runs on (device, encoders).

A Hub id (Qwen/Qwen2.5-0.5B-Instruct) is taken from the server's Hugging Face cache. It is
downloaded only when the person ticks "Download from the Hub" for that Apply, and never while the
server has HF_HUB_OFFLINE set; otherwise Apply says what to do (Service.locate_hf_model). The box is
unticked again after each Apply, so a later Apply never downloads by surprise.

The choice is per session: a `SessionSettings` in a gr.State, handed to the service with each call
(`ask_options`); the shared Service's settings are never changed. Apply checks that an
OpenAI-compatible server answers and serves the model, and says so (or what came back) on the status. The API key lives only in that
state as a SecretStr: the key box is blanked when Apply returns, the status says "key set" and
nothing more, and no log line carries it. A key the server was configured with is never sent to a
base URL the user typed instead of the server's.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Literal

import gradio as gr
from pydantic import SecretStr

from backend.config import LLMSettings, Settings
from backend.errors import StrataError
from backend.service import Service
from ui.render import error_box, esc

log = logging.getLogger(__name__)

BACKEND_CHOICES = [
    ("Rules (offline heuristics, no model)", "rules"),
    ("OpenAI-compatible server (vLLM, Ollama, TGI, llama.cpp, hosted APIs)", "openai"),
    ("Local Hugging Face model (a folder or a Hub id)", "hf"),
]
KeySource = Literal["none", "server", "session"]


@dataclass(frozen=True, slots=True)
class SessionSettings:
    """One browser session's LLM choice and budgets (held in a gr.State, never on disk)."""

    llm_backend: str
    llm: LLMSettings
    top_k: int
    token_budget: int
    key_source: KeySource = "none"
    hf_from_hub: bool = False  # llm.hf_model is a Hub id read from the server's HF cache, not a folder

    def ask_options(self) -> dict:
        """Keyword arguments for Service.ask / compare / evaluate."""
        return {"budget": self.token_budget, "llm_backend": self.llm_backend, "llm_settings": self.llm}

    @property
    def key_set(self) -> bool:
        return self.llm.api_key is not None and bool(self.llm.api_key.get_secret_value())

    def describe(self) -> str:
        """One line for a person (never the key itself)."""
        if self.llm_backend == "openai":
            key = {"session": "API key set for this session", "server": "the server's API key"}.get(self.key_source, "no API key")
            return f"openai: model {self.llm.model} at {self.llm.base_url} ({key})"
        if self.llm_backend == "hf":
            if self.hf_from_hub:
                return f"hf: Hub model {self.llm.hf_model} (from this server's Hugging Face cache)"
            return f"hf: local model {self.llm.hf_model or '(none chosen)'}"
        return "rules (offline heuristics)"


def default_session_settings(settings: Settings) -> SessionSettings:
    return SessionSettings(
        llm_backend=settings.reader.llm_backend, llm=settings.llm, top_k=settings.retrieval.top_k,
        token_budget=settings.reader.token_budget, key_source="server" if settings.llm.api_key else "none",
    )


def apply_settings(
    current: SessionSettings, server: Settings, backend: str, base_url: str, api_key: str, forget_key: bool, model: str,
    hf_model: str, top_k: float, token_budget: float, max_calls: float, hf_download: bool = False,
) -> SessionSettings:
    """The session's new settings from the form, checked; the form's key box may be empty (keep the key).
    For the hf backend the model must be a folder or a cached Hub id, or `hf_download` must be ticked
    (then it is downloaded here, before Apply returns)."""
    if backend not in {value for _, value in BACKEND_CHOICES}:
        raise StrataError(f"Unknown LLM backend '{backend}'. Choose rules, openai or hf.")
    base_url, model, hf_model, api_key = (base_url or "").strip(), (model or "").strip(), (hf_model or "").strip(), (api_key or "").strip()
    key, key_source = current.llm.api_key, current.key_source
    if forget_key:
        key, key_source = None, "none"
    if api_key:
        key, key_source = SecretStr(api_key), "session"
    if backend == "openai":
        if not base_url.startswith(("http://", "https://")):
            raise StrataError(f"The base URL '{base_url}' is not an http(s) URL. Example: http://127.0.0.1:8000/v1")
        if not model:
            raise StrataError("Name the model the server serves (for vLLM: the served model name).")
        if key_source == "server" and base_url.rstrip("/") != server.llm.base_url.rstrip("/"):
            # The operator's key is for the operator's server only.
            key, key_source = None, "none"
    hf_from_hub = current.hf_from_hub
    if backend == "hf":
        hf_from_hub = Service.locate_hf_model(hf_model, allow_download=bool(hf_download)).from_hub
    llm = current.llm.model_copy(update={
        "base_url": base_url or current.llm.base_url, "model": model or current.llm.model, "api_key": key,
        "hf_model": hf_model, "max_calls_per_question": int(max_calls),
    })
    new = replace(
        current, llm_backend=backend, llm=llm, top_k=int(top_k), token_budget=int(token_budget), key_source=key_source,
        hf_from_hub=hf_from_hub,
    )
    log.info("session settings: LLM backend %s, top-k %d, budget %d tokens", backend, new.top_k, new.token_budget)
    return new


def render_status(s: SessionSettings) -> str:
    key = "set" if s.key_set else "not set"
    return (
        '<div class="st-settings-status" id="settings-status-card">'
        f'<div><b>This session answers with</b> <span data-field="backend">{esc(s.describe())}</span></div>'
        f'<div>API key: <span data-field="key">{key}</span> · top-k {s.top_k} · evidence budget {s.token_budget} tokens'
        f" · at most {s.llm.max_calls_per_question} model calls per question</div>"
        '<div class="st-empty-hint">Used by Compare and Evaluate in this browser session only; other sessions keep their own.</div>'
        "</div>"
    )


def render_server(service: Service) -> str:
    idx = service.settings.index
    running_on = service.device_info()
    rows = [
        ("Device", running_on.split(",")[0]),
        ("Running on", running_on),
        ("Text encoder", f"{service.encoder.name} for new workspaces (a workspace keeps the precision it was built with)"),
        ("Subcomponent encoder", service.encoders.sub.name),
        ("Image encoder", idx.image_encoder or "off: figures are matched by caption, OCR text and upper context"),
    ]
    body = "".join(f'<tr><th scope="row">{esc(k)}</th><td>{esc(v)}</td></tr>' for k, v in rows)
    return f'<table class="st-settings-server">{body}</table>'


def on_apply(
    current: SessionSettings, server: Settings, backend: str, base_url: str, api_key: str, forget_key: bool, model: str,
    hf_model: str, hf_download: bool, top_k: float, token_budget: float, max_calls: float,
) -> tuple:
    """The Apply button: (session settings, key box, forget box, download box, status HTML). The key box
    is emptied and both boxes unticked whatever happens: what was typed is never sent back, and a
    download is asked for one Apply at a time. A refused form keeps the current settings and says why."""
    reset = (gr.update(value=""), gr.update(value=False), gr.update(value=False))
    try:
        new = apply_settings(
            current, server, backend, base_url, api_key, forget_key, model, hf_model, top_k, token_budget, max_calls,
            hf_download=hf_download,
        )
    except StrataError as exc:
        return current, *reset, error_box(str(exc)) + render_status(current)
    return new, *reset, server_check(new) + render_status(new)


def server_check(s: SessionSettings) -> str:
    """For the openai backend, whether its server answers and serves the model (Service.check_llm_server):
    a line that says so, or an error box that says what came back. The settings apply either way (the
    server may be started later); until it answers, every answer shows the failure."""
    if s.llm_backend != "openai":
        return ""
    try:
        line = Service.check_llm_server(s.llm)
    except StrataError as exc:
        return error_box(
            f"Applied, but the LLM server does not work: {exc} Until it does, questions are answered by the rules "
            "and each answer says the server failed."
        )
    return f'<div class="st-note" id="settings-server-ok">Checked: {esc(line)}.</div>'


@dataclass(slots=True)
class SettingsTab:
    apply_button: gr.Button
    status: gr.HTML


def new_state(service: Service) -> gr.State:
    """The session's settings state; create it before the tabs that read it."""
    return gr.State(default_session_settings(service.settings))


def build(service: Service, state: gr.State) -> SettingsTab:
    start = default_session_settings(service.settings)
    with gr.Tab("Settings", id="settings"):
        gr.Markdown(
            "Choose how this browser session answers: the offline **rules** backend, any **OpenAI-compatible** "
            "server, or a **local model** (a folder, or a Hub id such as Qwen/Qwen2.5-0.5B-Instruct). Settings apply to "
            "this session only and are forgotten when it ends."
        )
        with gr.Row(equal_height=False):
            with gr.Column(scale=3):
                backend = gr.Radio(BACKEND_CHOICES, value=start.llm_backend, label="LLM backend", elem_id="settings-backend")
                with gr.Group(visible=start.llm_backend == "openai", elem_id="settings-openai") as openai_group:
                    base_url = gr.Textbox(label="Base URL", value=start.llm.base_url, elem_id="settings-base-url")
                    api_key = gr.Textbox(
                        label="API key", type="password", value="", elem_id="settings-api-key",
                        placeholder="paste a key; it is kept for this session only and never shown again",
                    )
                    forget_key = gr.Checkbox(label="Forget the key", value=False, elem_id="settings-forget-key")
                    model = gr.Textbox(label="Model", value=start.llm.model, elem_id="settings-model")
                with gr.Group(visible=start.llm_backend == "hf", elem_id="settings-hf") as hf_group:
                    hf_model = gr.Textbox(
                        label="Model: a local folder or a Hugging Face Hub id", value=start.llm.hf_model,
                        elem_id="settings-hf-model",
                        placeholder="Qwen/Qwen2.5-0.5B-Instruct, or /models/Qwen2.5-1.5B-Instruct (save_pretrained layout)",
                    )
                    hf_download = gr.Checkbox(
                        label="Download from the Hub if it is not on this server yet", value=False,
                        elem_id="settings-hf-download",
                        info="Off: only a folder or a model already in the server's Hugging Face cache is used. On: Apply "
                        "downloads its weights once (minutes for 1-4 GB); refused while the server sets HF_HUB_OFFLINE.",
                    )
                with gr.Row():
                    top_k = gr.Slider(1, 50, value=start.top_k, step=1, label="Top-k results", elem_id="settings-top-k")
                    budget = gr.Slider(128, 8192, value=start.token_budget, step=64, label="Evidence token budget", elem_id="settings-budget")
                    max_calls = gr.Slider(
                        1, 64, value=start.llm.max_calls_per_question, step=1, label="Model calls per question",
                        elem_id="settings-max-calls", info="Past it the rules backend answers the remaining steps.",
                    )
                apply_button = gr.Button("Apply", variant="primary", elem_id="settings-apply")
                status = gr.HTML(render_status(start), elem_id="settings-status")
            with gr.Column(scale=2):
                gr.Markdown("**This server**")
                gr.HTML(render_server(service), elem_id="settings-server")

    def apply(current: SessionSettings, backend_name, url, key, forget, model_name, hf_name, download, k, tokens, calls,
              progress=gr.Progress(track_tqdm=True)):  # track_tqdm: a download's progress bars show on the status
        return on_apply(current, service.settings, backend_name, url, key, forget, model_name, hf_name, download, k, tokens, calls)

    backend.change(
        lambda name: (gr.update(visible=name == "openai"), gr.update(visible=name == "hf")),
        inputs=[backend], outputs=[openai_group, hf_group], queue=False, api_visibility="private",
    )
    apply_button.click(
        apply,
        inputs=[state, backend, base_url, api_key, forget_key, model, hf_model, hf_download, top_k, budget, max_calls],
        outputs=[state, api_key, forget_key, hf_download, status],
        api_visibility="private",  # a key typed here must never appear in the API docs' examples
    )
    return SettingsTab(apply_button=apply_button, status=status)
