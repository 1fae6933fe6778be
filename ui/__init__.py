"""Strata's Gradio UI: one module per tab (library, parse, ask), pure HTML renderers in render.py.

`build(service)` lays out the Blocks and wires them to the one `Service`. The only per-user data
is the session's workspace folder, kept in a `gr.State` as a path string: each browser session
gets a private copy of the sample workspace when the page loads, and it is deleted when Gradio
drops the session's state. The UI imports nothing from the backend beyond the service facade,
the types, the settings and the errors.
"""

from __future__ import annotations

import logging
from pathlib import Path

import gradio as gr

from backend.errors import StrataError
from backend.service import Service
from ui import ask, graph, library, parse
from ui import api, compare, evaluate
from ui import settings as settings_tab
from ui.render import esc

log = logging.getLogger(__name__)

ASSETS = Path(__file__).resolve().parent.parent / "assets"
CSS_PATH = ASSETS / "strata.css"
# System fonts only: the default theme would fetch web fonts, and Strata must work offline.
FONT = ["system-ui", "-apple-system", "Segoe UI", "Roboto", "Helvetica", "Arial", "sans-serif"]
FONT_MONO = ["ui-monospace", "SFMono-Regular", "Menlo", "Consolas", "monospace"]


def launch_options(service: Service) -> dict:
    """Keyword arguments for `Blocks.launch` that belong to the UI (Gradio 6 takes theme and css there)."""
    return {
        "theme": gr.themes.Soft(font=FONT, font_mono=FONT_MONO),
        "css_paths": [CSS_PATH],
        "max_file_size": f"{int(service.settings.ingest.max_file_mb)}mb",
        "footer_links": ["settings"],
    }


def build(service: Service, sample_workspace: Path | None = None) -> gr.Blocks:
    """The app. `sample_workspace` (built by app.py) is copied into each new session's workspace."""

    def drop_workspace(value: str | None) -> None:
        if not value:
            return
        try:
            service.remove_session_workspace(Path(value))
        except (OSError, StrataError) as exc:
            log.warning("could not delete session workspace %s: %s", value, exc)

    with gr.Blocks(title="Strata", analytics_enabled=False) as demo:
        workspace = gr.State("", delete_callback=drop_workspace)
        gr.HTML(
            '<div class="st-header"><span class="st-logo">Strata</span>'
            '<span class="st-tagline">PDFs parsed into a hierarchy, questions answered with citations on the page</span></div>'
        )
        session_settings = settings_tab.new_state(service)  # LLM backend, key and budgets of this session only
        api.build(service, workspace, sample_workspace)  # before the tabs, so its endpoints own the names ingest and ask
        with gr.Tabs():
            library_tab = library.build(service, workspace, sample_workspace)
            parse_tab = parse.build(service, workspace)
            graph.build(service, workspace)
            ask_tab = ask.build(service, workspace, with_examples=sample_workspace is not None, session_settings=session_settings)
            compare.build(service, workspace, session_settings)
            evaluate.build(service, workspace, session_settings)
            settings_ui = settings_tab.build(service, session_settings)
        # The Settings tab's choices become the Ask tab's defaults once applied.
        settings_ui.status.change(
            ask_tab.follow, inputs=[session_settings], outputs=ask_tab.follow_outputs, api_visibility="private"
        )
        gr.HTML(f'<div class="st-footer" id="device-info">Running on {esc(service.device_info())}</div>')

        def start_session() -> str:
            return str(service.new_session_workspace(base=sample_workspace))

        loaded = demo.load(start_session, outputs=[workspace], api_visibility="private")
        # The documents list changes while an ingest runs (after each finished file): the Parse tab's
        # picker grows with it instead of waiting for the whole batch.
        library_tab.documents.change(
            parse_tab.refresh, inputs=[workspace, parse_tab.document], outputs=[parse_tab.document], show_progress="hidden",
            api_visibility="private",
        )
        for event in [loaded, *library_tab.changed]:
            event.then(library_tab.refresh, inputs=[workspace], outputs=library_tab.refresh_outputs, api_visibility="private").then(
                parse_tab.refresh, inputs=[workspace, parse_tab.document], outputs=[parse_tab.document], api_visibility="private"
            )
    demo.queue(default_concurrency_limit=4)
    return demo
