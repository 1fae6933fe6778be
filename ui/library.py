"""Library tab: upload PDFs, see what ingesting them will cost before starting, watch them being
ingested stage by stage (the document list and the graph counts grow as each file finishes),
read the per-file report, list and remove the documents of this session's workspace.

The browser keeps its session across reloads: a `gr.BrowserState` holds the session's token
(backend/sessions.py), and when a page loads, `restore` takes that session up again while its
workspace is alive. The tab says in plain words how long uploads stay, and says once when they
were removed because the session sat idle.

Ingest runs `Service.ingest` in a worker thread; its progress callback puts `ProgressEvent`s
into a queue and the Gradio callback (a generator) turns them into updated HTML as they come.
"""

from __future__ import annotations

import logging
import queue
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import gradio as gr

from backend.errors import StrataError
from backend.service import Reattach, Service, SessionHandle, SessionManager
from backend.types import ClusterTasks, Document, ProgressEvent
from ui import render
from ui.common import session_workspace, user_errors, writable_workspace

log = logging.getLogger(__name__)

# How often the progress table is redrawn while no event arrives (the elapsed time still moves).
IDLE_REFRESH_S = 0.5


@dataclass(slots=True)
class LibraryTab:
    files: gr.File
    ingest_button: gr.Button
    estimate: gr.HTML
    progress: gr.HTML
    report: gr.HTML
    graph_counts: gr.HTML
    documents: gr.Dataframe
    remove_choice: gr.Dropdown
    remove_button: gr.Button
    reset_button: gr.Button
    # Events after which the document list of the workspace may have changed.
    changed: list
    # Reloads the documents table and the remove picker: (workspace) -> refresh_outputs.
    refresh: Callable
    refresh_outputs: list
    # On page load: (stored token, workspace) -> restore_outputs (the workspace, the token, the session note).
    restore: Callable
    restore_inputs: list
    restore_outputs: list


class ProgressBoard:
    """Folds the ingest progress events of one batch into one row per file."""

    def __init__(self, file_names: list[str]) -> None:
        self.rows = [render.FileProgress(file_name=n) for n in file_names]
        self._by_name = {r.file_name: r for r in self.rows}
        self.cluster: ClusterTasks | None = None  # the latest, when the server ingests on a cluster

    @property
    def finished(self) -> int:
        return sum(r.finished for r in self.rows)

    def apply(self, event: ProgressEvent) -> None:
        if event.cluster is not None:
            self.cluster = event.cluster
        row = self._by_name.get(event.doc)
        if row is None:
            return
        row.stage = event.stage
        row.message = event.message
        if event.stage in ("open", "done", "failed"):
            # These events count files of the batch, not pages or nodes of this file.
            row.done, row.total = 0, 0
        else:
            row.done, row.total = event.done, event.total
        if event.stage not in row.stages_seen:
            row.stages_seen.append(event.stage)


# Tall enough for the four sample PDFs and a few uploads (two-line rows when titles wrap) at a
# 1280x800 window: at 320 px the fifth row was cut in half behind the table's own scroll bar.
DOCUMENTS_MAX_HEIGHT_PX = 520


def _documents_table(docs: list[Document]) -> dict:
    return {"headers": render.DOCUMENT_HEADERS, "data": render.document_rows(docs)}


def _remove_choices(docs: list[Document]) -> dict:
    return gr.update(choices=render.document_choices(docs), value=None)


def _graph_counts(service: Service, ws: Path, growing: bool = False) -> str:
    """The graph counts line; while an ingest runs a failure to read them must not stop the progress view."""
    try:
        return render.render_graph_counts(service.graph_counts(ws), growing)
    except StrataError as exc:
        log.warning("could not count the graph of %s: %s", ws, exc)
        return ""


SESSION_STORAGE_KEY = "strata-session"  # the browser's localStorage entry that holds the session token
# Gradio's key for the stored value, the same at every start: with a new one per start, a page opened
# after a restart could not read the value and logged an error. It hides nothing (every page receives
# it); the token's server-side signature is what no one can forge (backend/sessions.py).
SESSION_STORAGE_SECRET = "strata-session-token"


def session_note(service: Service, state: Reattach = Reattach.NONE) -> str:
    """How long this browser's uploads stay, in plain words; after a reload that found the
    session idled out, a warning first that its uploads were removed."""
    idle = f"{service.settings.sessions.idle_minutes:g}"
    if service.settings.serve_workspace is not None:
        return ""
    stays = (
        f'<div class="st-note" id="session-lifetime">Your uploads stay with this browser: reload the page and they are still here. '
        f"They are removed from the server after {idle} minutes without use, when you press Start over, or when the server "
        "restarts. Other browsers never see them.</div>"
    )
    if state is Reattach.EXPIRED:
        return render.error_box(
            f"Your earlier session sat idle for more than {idle} minutes, so the files you uploaded were removed from the server. "
            "This page shows the sample corpus again; upload your files again to ask about them."
        ) + stays
    if state is Reattach.UNKNOWN:
        return (
            '<div class="st-note" id="session-restarted">This browser\'s earlier session ended when the server restarted; '
            "any files it uploaded are gone. Upload them again to ask about them.</div>"
        ) + stays
    return stays


def _intro(service: Service, sample_workspace: Path | None) -> str:
    if service.settings.serve_workspace is not None:
        return ("This server serves one library to every session, read-only: ask it questions in the **Ask** tab. "
                "Uploads are off here; files are added with `python -m backend ingest` on the server.")
    return (
        "Upload one or more PDFs and press **Ingest**: each file is parsed into sections, paragraphs, "
        "tables and figures, then indexed for questions. "
        + (
            "Your workspace starts with the four sample PDFs about the fictional *Cool Streets Programme*; "
            "try them in the **Parse** and **Ask** tabs. "
            if sample_workspace is not None
            else ""
        )
        + "Files you upload are visible only in this browser session."
    )


def build(service: Service, workspace: gr.State, sample_workspace: Path | None, sessions: SessionManager | None = None) -> LibraryTab:
    """The tab. `sessions`: the app's session manager, which takes a reloaded page's session up again."""
    max_files = service.settings.max_upload_files
    with gr.Tab("Library", id="library"):
        gr.Markdown(_intro(service, sample_workspace))
        session_box = gr.HTML(session_note(service), elem_id="session-note")
        session_token = gr.BrowserState("", storage_key=SESSION_STORAGE_KEY, secret=SESSION_STORAGE_SECRET)
        with gr.Row(equal_height=False):
            with gr.Column(scale=3):
                files = gr.File(
                    file_count="multiple", file_types=[".pdf"], label=f"PDF files (up to {max_files} at once)",
                    elem_id="upload-files", height=140,
                )
            with gr.Column(scale=1, min_width=200):
                ingest_button = gr.Button("Ingest", variant="primary", elem_id="ingest-button")
                gr.Markdown("Re-ingesting an unchanged file does nothing; a changed file with the same name replaces the old one.", elem_classes=["st-small"])
        estimate = gr.HTML(elem_id="ingest-estimate")
        progress = gr.HTML(elem_id="ingest-progress")
        graph_counts = gr.HTML(elem_id="ingest-graph")
        report = gr.HTML(elem_id="ingest-report")
        gr.Markdown("### Documents in this workspace")
        documents = gr.Dataframe(
            headers=render.DOCUMENT_HEADERS, datatype="str", interactive=False, elem_id="documents-table", max_height=DOCUMENTS_MAX_HEIGHT_PX,
            wrap=True, column_widths=["22%", "38%", "8%", "14%", "8%", "10%"],
        )
        with gr.Row():
            remove_choice = gr.Dropdown(label="Remove a document", choices=[], value=None, scale=3, elem_id="remove-choice")
            remove_button = gr.Button("Remove", variant="stop", scale=1, elem_id="remove-button")
            reset_button = gr.Button(
                "Start over with the sample corpus" if sample_workspace is not None else "Start over with an empty workspace",
                scale=1, elem_id="reset-button",
            )

    @user_errors
    def ingest(paths: list[str] | None, workspace_value: str):
        if not paths:
            raise gr.Error("Choose one or more PDF files first (drop them on the upload box), then press Ingest.")
        if len(paths) > max_files:
            raise gr.Error(f"{len(paths)} files were chosen; at most {max_files} can be ingested at once. Upload them in smaller batches.")
        files = [Path(p) for p in paths]
        # A first upload while the sample is being prepared makes a workspace without it (uploads never wait for it).
        without_sample = (sample_workspace is not None and not service.sample.ready
                          and session_workspace(workspace_value).resolve() == service.sample_workspace_path())
        ws = writable_workspace(workspace_value, sum(f.stat().st_size for f in files))
        without_sample = without_sample and not service.documents(ws)  # the sample may have become ready meanwhile
        names = [p.name for p in files]
        board = ProgressBoard(names)
        events: queue.Queue[ProgressEvent] = queue.Queue()
        started = time.perf_counter()
        yield render.render_progress(board.rows, 0.0, True, board.cluster), "", gr.skip(), gr.skip(), gr.skip(), gr.skip()
        finished = 0
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="strata-ingest") as pool:
            future = pool.submit(service.ingest, ws, files, events.put, names)
            while not (future.done() and events.empty()):
                try:
                    board.apply(events.get(timeout=IDLE_REFRESH_S))
                    while True:  # drain what has piled up so one redraw covers it
                        board.apply(events.get_nowait())
                except queue.Empty:
                    pass
                elapsed = time.perf_counter() - started
                progress_html = render.render_progress(board.rows, elapsed, True, board.cluster)
                if board.finished > finished:
                    # A document was stored: the list, the other tabs and the graph counts grow now, not at the end.
                    finished = board.finished
                    docs = service.documents(ws)
                    yield progress_html, gr.skip(), _documents_table(docs), _remove_choices(docs), gr.skip(), _graph_counts(service, ws, True)
                else:
                    yield progress_html, gr.skip(), gr.skip(), gr.skip(), gr.skip(), gr.skip()
            result = future.result()  # re-raises a failure of the ingest thread here
        docs = service.documents(ws)
        elapsed = time.perf_counter() - started
        note = (
            '<div class="st-note">The sample corpus was still being prepared when you uploaded, so this workspace holds '
            "your files only. Press Start over to get the sample PDFs (your uploads go with it).</div>"
            if without_sample else ""
        )
        yield (
            render.render_progress(board.rows, elapsed, False, board.cluster),
            note + render.render_report(result),
            _documents_table(docs),
            _remove_choices(docs),
            None,
            _graph_counts(service, ws),
        )

    @user_errors
    def estimate_files(paths: list[str] | None, workspace_value: str):
        if not paths:
            return ""
        files = [Path(p) for p in paths]
        return render.render_estimate(service.estimate_ingest(session_workspace(workspace_value), files, [f.name for f in files]))

    @user_errors
    def list_documents(workspace_value: str):
        ws = session_workspace(workspace_value)
        docs = service.documents(ws)
        return _documents_table(docs), _remove_choices(docs), _graph_counts(service, ws)

    @user_errors
    def remove(doc_id: str | None, workspace_value: str):
        if not doc_id:
            raise gr.Error("Pick the document to remove in the list first.")
        ws = writable_workspace(workspace_value)
        removed = service.remove_document(ws, doc_id)
        docs = service.documents(ws)
        note = f'<div class="st-note">Removed {render.esc(removed.file_name)} from this workspace.</div>'
        return _documents_table(docs), _remove_choices(docs), note, _graph_counts(service, ws)

    @user_errors
    def reset(workspace_value):
        workspace_value.release()  # the session's own workspace goes; it reads the sample again
        ws = session_workspace(workspace_value)
        docs = service.documents(ws)
        note = '<div class="st-note">Started a fresh workspace.</div>'
        return workspace_value, _documents_table(docs), _remove_choices(docs), note, "", _graph_counts(service, ws)

    def restore(token: str | None, workspace_value):
        """On page load: the stored token's session when it is alive (else this page's new one), the
        token to store, and the note that says how long uploads stay (and whether they idled out)."""
        if sessions is None or not isinstance(workspace_value, SessionHandle):
            return gr.skip(), gr.skip(), gr.skip()
        handle, state = sessions.attach(token)
        handle = handle or workspace_value
        if state in (Reattach.RESTORED, Reattach.EXPIRED):
            log.info("a reloaded page took up session %s (%s)", handle.key, state.value)
        return handle, sessions.keep(handle), session_note(service, state)

    ingest_event = ingest_button.click(
        ingest, inputs=[files, workspace], outputs=[progress, report, documents, remove_choice, files, graph_counts],
        concurrency_limit=1, concurrency_id="ingest", show_progress="hidden",  # one at a time: a parse worker and the encoders use both cores
        api_visibility="private",  # /ingest (ui/api.py) is the API's ingest
    )
    # The estimate shows as soon as the files are uploaded, before Ingest is pressed (and clears with them).
    files.change(estimate_files, inputs=[files, workspace], outputs=[estimate], show_progress="minimal", api_visibility="private")
    remove_event = remove_button.click(
        remove, inputs=[remove_choice, workspace], outputs=[documents, remove_choice, report, graph_counts], api_visibility="private"
    )
    reset_event = reset_button.click(
        reset, inputs=[workspace], outputs=[workspace, documents, remove_choice, report, progress, graph_counts],
        api_visibility="private",
    )
    return LibraryTab(
        files=files, ingest_button=ingest_button, estimate=estimate, progress=progress, report=report,
        graph_counts=graph_counts, documents=documents,
        remove_choice=remove_choice, remove_button=remove_button, reset_button=reset_button,
        changed=[ingest_event, remove_event, reset_event],
        refresh=list_documents, refresh_outputs=[documents, remove_choice, graph_counts],
        restore=restore, restore_inputs=[session_token, workspace], restore_outputs=[workspace, session_token, session_box],
    )
