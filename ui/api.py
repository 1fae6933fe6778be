"""Named API endpoints for programs (`gradio_client`): `/ingest` (PDF files in, a report out) and
`/ask` (a question in, the answer with citations and ranked results out, as JSON).

A client is a session as a browser tab is: it reads the shared sample workspace until its first
ingest gives it a workspace of its own (backend/sessions.py), so documents a client ingests are
visible to its later asks and to no one else; the workspace goes after an idle time. The
endpoints sit on hidden components and are registered before the tabs so that they own the
names `ingest` and `ask`.

    from gradio_client import Client, handle_file
    c = Client("http://127.0.0.1:7860/")
    c.predict(files=[handle_file("report.pdf")], api_name="/ingest")
    c.predict(question="How many trees were planted?", method="hikey", top_k=5, api_name="/ask")
    c.predict(question="What was the revenue in 2019?", docs="report.pdf", api_name="/ask")

`docs` limits a question to documents of the workspace: their file names, one per line (or a JSON
list); empty asks the whole workspace. `stages` names the stages run after the method (README
"Stages"): "default", "none" or stage names, comma-separated; empty: the server's setting.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path

import gradio as gr

from backend.errors import StrataError
from backend.service import AdmissionGate, Service
from backend.types import AskResult, IngestReport
from ui.common import session_workspace, user_errors, writable_workspace
from ui.spaces_gpu import gpu_task


def ask_payload(result: AskResult) -> dict:
    """The /ask reply: the CLI's `ask --json` object (Service.ask_reply) without the trace."""
    return Service.ask_reply(result, with_trace=False).to_dict()


def doc_names(text: str | None) -> list[str]:
    """The /ask `docs` value as file names: one per line, or a JSON list of strings."""
    text = (text or "").strip()
    if text.startswith("["):
        try:
            names = json.loads(text)
        except json.JSONDecodeError as exc:
            raise StrataError(f"docs looks like a JSON list but is not one ({exc.msg}). Send file names one per line.") from exc
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise StrataError("docs must be a list of file names (strings).")
        return names
    return [line.strip() for line in text.splitlines() if line.strip()]


def ingest_payload(report: IngestReport) -> dict:
    """The /ingest reply: one entry per file, and counts by outcome. `ingested` counts the files
    parsed and indexed by this call (new or replaced); a file already in the workspace byte for byte
    counts as `unchanged`, not as ingested."""
    statuses = [f.status for f in report.files]
    return {
        "files": [
            {"file_name": f.file_name, "status": f.status, "doc_id": f.doc_id, "title": f.title, "pages": f.pages, "reason": f.reason}
            for f in report.files
        ],
        "ingested": statuses.count("ingested") + statuses.count("replaced"),
        "unchanged": statuses.count("unchanged"),
        "failed": statuses.count("failed"),
    }


# Events of each endpoint Gradio starts at once: they wait in the admission gates (backend/admission.py),
# which run one question per core and one ingest at a time in arrival order and refuse at once a call
# that would wait past STRATA_SERVING__MAX_WAIT_S. Gradio's own queue bounds how many wait, not how long.
API_ASK_EVENTS = 64
API_INGEST_EVENTS = 16
FIRST_ASK_ESTIMATE_S = 1.0  # seconds per question before any was measured
FIRST_INGEST_ESTIMATE_S = 10.0


def gated(gate: AdmissionGate, before: Callable[..., None] | None = None) -> Callable:
    """A callback that runs inside `gate.admit()` (after `before(*args)`, which may wait without a slot)."""

    def wrap(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def call(*args, **kwargs):
            if before is not None:
                before(*args)
            with gate.admit():
                return fn(*args, **kwargs)

        return call

    return wrap


def build(service: Service, workspace: gr.State, sample_workspace: Path | None) -> None:
    """Hidden components and the two named endpoints. Call inside the Blocks, before the tabs."""
    max_files = service.settings.max_upload_files
    ask_gate, ingest_gate = service.admission_gates(FIRST_ASK_ESTIMATE_S, FIRST_INGEST_ESTIMATE_S)

    # The API's parameter names are the callbacks' argument names (files, question, method, top_k, docs, stages).
    with gr.Column(visible=False, elem_id="api-endpoints"):
        files_in = gr.File(label="files", file_count="multiple", file_types=[".pdf"])
        question_in = gr.Textbox(label="question")
        method_in = gr.Textbox(label="method", value=service.settings.retrieval.default_method)
        top_k_in = gr.Number(label="top_k", value=service.settings.retrieval.top_k, precision=0)
        docs_in = gr.Textbox(label="docs", value="")
        stages_in = gr.Textbox(label="stages", value="")
        reply = gr.JSON(label="reply")
        ingest_trigger = gr.Button("ingest")
        ask_trigger = gr.Button("ask")

    @gpu_task
    @user_errors
    def ingest(files: list[str] | None, workspace_value: str):
        """Add PDFs to this client's workspace; returns one entry per file (ingested, replaced, unchanged or failed with a reason)."""
        if not files:
            raise StrataError("No files were sent. Pass files=[handle_file('report.pdf')].")
        if len(files) > max_files:
            raise StrataError(f"{len(files)} files were sent; at most {max_files} per call.")
        paths = [Path(p) for p in files]
        with ingest_gate.admit():  # never waits for the sample: a session that writes first starts without it
            ws = writable_workspace(workspace_value, sum(p.stat().st_size for p in paths))
            report = service.ingest(ws, paths, display_names=[p.name for p in paths])
        return ingest_payload(report)

    def sample_ready(*args) -> None:
        """A question over the sample being prepared waits for it here, before the gate: it holds no slot."""
        if args and args[-1]:
            service.wait_for_workspace(session_workspace(args[-1]))

    @gpu_task
    @user_errors
    @gated(ask_gate, before=sample_ready)
    def ask(question: str, method: str, top_k: float | None, docs: str | None, stages: str | None, workspace_value: str):
        """Answer a question over this client's workspace (the sample corpus plus what it ingested), or
        over the documents `docs` names (file names, one per line), through the `stages` asked for
        (default, none or stage names; empty: the server's setting)."""
        ws = session_workspace(workspace_value)
        # top_k goes to the service as sent (None = the default), so 0 or 10,000 is refused there, not replaced.
        result = service.ask(ws, question, method=method or None, top_k=top_k, docs=doc_names(docs),
                             stages=(stages or "").strip() or None)
        return ask_payload(result)

    # Groups of their own: the gates above, not Gradio's queue, decide how many run and who is refused.
    ingest_trigger.click(ingest, inputs=[files_in, workspace], outputs=[reply], api_name="ingest",
                         concurrency_limit=API_INGEST_EVENTS, concurrency_id="api-ingest")
    ask_trigger.click(ask, inputs=[question_in, method_in, top_k_in, docs_in, stages_in, workspace], outputs=[reply], api_name="ask",
                      concurrency_limit=API_ASK_EVENTS, concurrency_id="api-ask")
