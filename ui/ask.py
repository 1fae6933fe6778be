"""Ask tab: a question, a retrieval method and its budget in; the answer (or a clearly marked
abstention) with numbered citations out, the cited box shown on its page, the ranked results,
the packed evidence and the retriever's trace.

Only the citations of the last answer are kept in the session state (small records), so that
picking another citation can draw its page without asking again.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import gradio as gr

from backend.errors import WorkspaceError
from backend.service import Service
from backend.types import Citation, Highlight
from ui import render
from ui.common import session_workspace, user_errors

SELECTED_COLOR = "#ff2d55"
OTHER_COLOR = "#f59e0b"
SAMPLE_QUESTIONS = [
    "How many trees did the programme plant?",
    "Which district had the largest canopy gain?",
    "What height threshold defines tree canopy?",
    "How many heat-related ambulance call-outs were there in summer 2022?",
]
BEFORE_ASKING = render.empty_state(
    "Ask a question about the documents in your workspace.",
    "Type it above and press Ask. The answer cites the passages it rests on; pick a citation to see it on its page.",
)


@dataclass(slots=True)
class AskTab:
    question: gr.Textbox
    ask_button: gr.Button


def build(service: Service, workspace: gr.State, with_examples: bool) -> AskTab:
    methods = service.methods()
    settings = service.settings
    default_method = settings.retrieval.default_method
    with gr.Tab("Ask", id="ask"):
        with gr.Row(equal_height=True):
            question = gr.Textbox(
                label="Question", placeholder="e.g. How many trees did the programme plant?", scale=5, lines=1,
                elem_id="ask-question", max_lines=3,
            )
            ask_button = gr.Button("Ask", variant="primary", scale=1, elem_id="ask-button")
        with gr.Row():
            method = gr.Dropdown(
                label="Method", choices=[(m.name, m.name) for m in methods],
                value=default_method if any(m.name == default_method for m in methods) else methods[0].name,
                info=_method_help(methods, default_method), scale=2, elem_id="ask-method",
            )
            top_k = gr.Slider(1, 50, value=settings.retrieval.top_k, step=1, label="Top-k results", scale=2, elem_id="ask-top-k")
            budget = gr.Slider(
                128, 8192, value=settings.reader.token_budget, step=64, label="Evidence token budget", scale=2,
                elem_id="ask-budget",
            )
        if with_examples:
            gr.Examples(SAMPLE_QUESTIONS, inputs=[question], label="Questions about the sample corpus")
        citations_state = gr.State([])
        with gr.Row(equal_height=False):
            with gr.Column(scale=1):
                answer = gr.HTML(BEFORE_ASKING, elem_id="ask-answer")
                citations = gr.HTML(elem_id="ask-citations")
                facts = gr.HTML(elem_id="ask-facts")
            with gr.Column(scale=1):
                citation_pick = gr.Radio(label="Show citation", choices=[], value=None, elem_id="ask-citation-pick")
                citation_image = gr.Image(
                    type="pil", format="png", label="Cited passage on its page", interactive=False, height=560,
                    elem_id="ask-citation-image", buttons=["fullscreen", "download"],
                )
        with gr.Accordion("Ranked results", open=False, elem_id="ask-results-panel"):
            results = gr.Dataframe(
                headers=render.RESULT_HEADERS, datatype="str", interactive=False, wrap=True, elem_id="ask-results",
                max_height=420, column_widths=["6%", "15%", "6%", "9%", "24%", "7%", "33%"],
            )
        with gr.Accordion("Packed evidence", open=False, elem_id="ask-pack-panel"):
            pack = gr.HTML(elem_id="ask-pack")
        with gr.Accordion("Retrieval trace", open=False, elem_id="ask-trace-panel"):
            trace = gr.HTML(elem_id="ask-trace")

    def doc_ids_by_file(ws: Path) -> dict[str, str]:
        return {d.file_name: d.id for d in service.documents(ws)}

    def citation_page(ws: Path, cites: list[Citation], n: int | None):
        chosen = next((c for c in cites if c.n == n), None)
        if chosen is None:
            return None
        doc_id = doc_ids_by_file(ws).get(chosen.doc)
        if doc_id is None:
            raise WorkspaceError(f"The cited document '{chosen.doc}' is no longer in this workspace; ask again.")
        # The other citations on the same page are drawn too, in a quieter colour.
        highlights = [
            Highlight(bbox=c.bbox, color=OTHER_COLOR, label=f"[{c.n}]")
            for c in cites
            if c.n != chosen.n and c.doc == chosen.doc and c.page == chosen.page and c.bbox
        ]
        if chosen.bbox:
            highlights.append(Highlight(bbox=chosen.bbox, color=SELECTED_COLOR, label=f"[{chosen.n}]"))
        return service.render_page(ws, doc_id, chosen.page, highlights)

    @user_errors
    def ask(workspace_value: str, text: str, method_name: str, k: float, budget_tokens: float):
        ws = session_workspace(workspace_value)
        result = service.ask(ws, text, method=method_name, top_k=int(k), budget=int(budget_tokens))
        cites = result.answer.citations
        first = cites[0].n if cites else None
        return (
            render.render_answer(result),
            render.render_citations(cites, selected=first),
            render.render_run_facts(result),
            gr.update(choices=[(render.citation_label(c), c.n) for c in cites], value=first),
            citation_page(ws, cites, first),
            {"headers": render.RESULT_HEADERS, "data": render.result_rows(result.results)},
            render.render_pack(result.pack),
            render.render_trace(result.trace),
            cites,
        )

    @user_errors
    def show_citation(workspace_value: str, cites: list[Citation], n: int | None):
        ws = session_workspace(workspace_value)
        return citation_page(ws, cites, n), render.render_citations(cites, selected=n)

    outputs = [answer, citations, facts, citation_pick, citation_image, results, pack, trace, citations_state]
    inputs = [workspace, question, method, top_k, budget]
    for trigger in (ask_button.click, question.submit):
        # Progress (and an error) shows on the answer box only, not on every panel.
        trigger(ask, inputs=inputs, outputs=outputs, concurrency_limit=4, concurrency_id="ask", show_progress_on=[answer])
    citation_pick.input(show_citation, inputs=[workspace, citations_state, citation_pick], outputs=[citation_image, citations])
    method.input(lambda name: gr.update(info=_method_help(methods, name)), inputs=[method], outputs=[method])
    return AskTab(question=question, ask_button=ask_button)


def _method_help(methods, name: str) -> str:
    return next((m.description for m in methods if m.name == name), "")
