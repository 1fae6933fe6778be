"""Strata's Gradio UI: one module per tab (library, parse, ask), pure HTML renderers in render.py.

`build(service)` lays out the Blocks and wires them to the one `Service`. The only per-user data
is the session's workspace, kept in a `gr.State` as a SessionHandle (backend/sessions.py): a
session reads the shared sample workspace until its first write gives it a copy of its own,
which goes when the session ends, sits idle too long, or the server stops. Browser tabs and API
clients are treated alike. The UI imports nothing from the backend beyond the service facade,
the types, the settings and the errors.
"""

from __future__ import annotations

import logging
from pathlib import Path

import gradio as gr
from starlette.middleware import Middleware

from backend.service import Service, SessionManager
from ui import ask, graph, library, parse
from ui import api, compare, evaluate
from ui import settings as settings_tab
from ui.config_cache import ConfigCache
from ui.render import esc

log = logging.getLogger(__name__)

ASSETS = Path(__file__).resolve().parent.parent / "assets"
CSS_PATH = ASSETS / "strata.css"
# System fonts only: the default theme would fetch web fonts, and Strata must work offline.
FONT = ["system-ui", "-apple-system", "Segoe UI", "Roboto", "Helvetica", "Arial", "sans-serif"]
QUEUE_CONCURRENCY = 2  # events running at once per concurrency group; 2 cores
QUEUE_MAX_SIZE = 512  # waiting events; a full queue refuses new ones with a message, so keep it above the expected crowd
# Worker threads of the server (Gradio's default is 40): API calls wait for their turn in a thread of
# their own (ui/api.py, up to 64 questions and 16 uploads), and the page's own events still need threads.
MAX_THREADS = 160
FONT_MONO = ["ui-monospace", "SFMono-Regular", "Menlo", "Consolas", "monospace"]


def launch_options(service: Service) -> dict:
    """Keyword arguments for `Blocks.launch` that belong to the UI (Gradio 6 takes theme and css there)."""
    return {
        "theme": gr.themes.Soft(font=FONT, font_mono=FONT_MONO),
        "css_paths": [CSS_PATH],
        "max_file_size": f"{int(service.settings.ingest.max_file_mb)}mb",
        "footer_links": ["settings"],
        "max_threads": MAX_THREADS,
        "app_kwargs": {"middleware": [Middleware(ConfigCache)]},  # one /config answer for all clients (ui/config_cache.py)
    }


def sample_status_html(service: Service) -> str:
    """The banner over the tabs while the sample corpus is being prepared ('' once it is ready)."""
    line = service.sample.describe()
    if not line:
        return ""
    hint = "" if service.sample.error else ". Questions wait for it; the documents appear when it is done."
    return f'<div class="st-note" id="sample-status">{esc(line)}{esc(hint)}</div>'


def build(service: Service, sample_workspace: Path | None = None, sessions: SessionManager | None = None) -> gr.Blocks:
    """The app. Sessions read `sample_workspace` (prepared by app.py, perhaps still being built)
    until their first write; `sessions` defaults to a manager made here."""
    sessions = sessions or service.session_manager(sample_workspace)

    with gr.Blocks(title="Strata", analytics_enabled=False) as demo:
        workspace = gr.State(None, delete_callback=sessions.release_value)
        # Set after the constructor, which deep-copies its argument: Gradio deep-copies this value
        # once per session (browser or API client), and each copy is a new SessionHandle.
        workspace.value = sessions.state_value()
        gr.HTML(
            '<div class="st-header"><span class="st-logo">Strata</span>'
            '<span class="st-tagline">PDFs parsed into a hierarchy, questions answered with citations on the page</span></div>'
        )
        sample_status = gr.HTML(sample_status_html(service), elem_id="sample-status-box")
        sample_timer = gr.Timer(2.0, active=not service.sample.ready)
        session_settings = settings_tab.new_state(service)  # LLM backend, key and budgets of this session only
        api.build(service, workspace, sample_workspace)  # before the tabs, so its endpoints own the names ingest and ask
        with gr.Tabs() as tabs:
            library_tab = library.build(service, workspace, sample_workspace, sessions)
            parse_tab = parse.build(service, workspace)
            graph_tab = graph.build(service, workspace)
            ask_tab = ask.build(service, workspace, with_examples=sample_workspace is not None and service.settings.serve_workspace is None, session_settings=session_settings)
            compare.build(service, workspace, session_settings)
            evaluate.build(service, workspace, session_settings)
            settings_ui = settings_tab.build(service, session_settings)
        # The Settings tab's choices become the Ask tab's defaults once applied.
        settings_ui.status.change(
            ask_tab.follow, inputs=[session_settings], outputs=ask_tab.follow_outputs, api_visibility="private"
        )
        # "Show in graph" in the Ask tab: the Graph tab, drawn around the answer's evidence or one cited passage.
        ask_tab.show_in_graph.click(
            graph_tab.show_evidence, inputs=[workspace, ask_tab.run_state, *graph_tab.show_inputs],
            outputs=[tabs, *graph_tab.show_outputs], api_visibility="private",
        )

        def cited_node_in_graph(workspace_value, layers_v, kinds_v, edges_v, docs_v, limit_v, evt: gr.EventData):
            node = getattr(evt, "graph", None)  # set by the card's link (ask.CITE_CLICK_JS); other clicks carry none
            return graph_tab.show_node_in_graph(workspace_value, node, layers_v, kinds_v, edges_v, docs_v, limit_v)

        ask_tab.citations.click(
            cited_node_in_graph, inputs=[workspace, *graph_tab.show_inputs], outputs=[tabs, *graph_tab.show_outputs],
            api_visibility="private",
        )
        # Filled when the page loads: naming the device loads torch, which the first page need not wait for.
        footer = gr.HTML('<div class="st-footer" id="device-info"></div>')

        def sample_tick():
            return sample_status_html(service), gr.Timer(active=not service.sample.ready)

        sample_timer.tick(
            sample_tick, outputs=[sample_status, sample_timer], api_visibility="private", show_progress="hidden",
            concurrency_limit=None,  # a status read must not queue behind questions
        )

        def wait_for_sample() -> tuple[str, str]:
            """A page opened while the sample is prepared lists its documents once it is ready."""
            if sample_workspace is not None and not service.sample.ready:
                service.sample.wait_quietly(service.settings.sessions.sample_wait_s)
            return sample_status_html(service), f'<div class="st-footer" id="device-info">Running on {esc(service.device_info())}</div>'

        # First the browser's kept session (a reload finds its uploads again), then everything that reads the workspace.
        restored = demo.load(library_tab.restore, inputs=library_tab.restore_inputs, outputs=library_tab.restore_outputs,
                             api_visibility="private", concurrency_limit=None, show_progress="hidden")
        loaded = restored.then(wait_for_sample, outputs=[sample_status, footer], api_visibility="private", concurrency_limit=None)
        # The documents list changes while an ingest runs (after each finished file): the Parse tab's
        # picker grows with it instead of waiting for the whole batch.
        library_tab.documents.change(
            parse_tab.refresh, inputs=[workspace, parse_tab.document], outputs=[parse_tab.document], show_progress="hidden",
            api_visibility="private",
        )
        for event in [loaded, *library_tab.changed]:
            event.then(library_tab.refresh, inputs=[workspace], outputs=library_tab.refresh_outputs, api_visibility="private").then(
                parse_tab.refresh, inputs=[workspace, parse_tab.document], outputs=[parse_tab.document], api_visibility="private"
            ).then(ask_tab.refresh, inputs=[workspace], outputs=ask_tab.refresh_outputs, api_visibility="private")
    configure_queue(demo, service)
    return demo


def configure_queue(demo: gr.Blocks, service: Service) -> None:
    """Queue limits for a small shared server (2 cores, 50 askers and 10 uploaders at once must
    all get answers, later rather than never): two events run at a time by default, since
    questions and renders are CPU-bound and more threads only interleave them; ingests run
    one at a time (see the ingest concurrency group); the queue holds everyone who waits. The
    Ask tab's questions run at most QUEUE_CONCURRENCY at once whatever limit its events name (the
    API's questions have their own gate, ui/api.py)."""
    for fn in demo.fns.values():
        if fn.concurrency_id == "ask" and (fn.concurrency_limit in (None, "default") or fn.concurrency_limit > QUEUE_CONCURRENCY):
            fn.concurrency_limit = QUEUE_CONCURRENCY
    demo.queue(default_concurrency_limit=QUEUE_CONCURRENCY, max_size=QUEUE_MAX_SIZE)
