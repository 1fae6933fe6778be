"""Ask tab: a question, a retrieval method with its parameters, the LLM backend, top-k, the
evidence budget, Strata's stages (the default set, none so that the method runs as its paper
publishes it, or a ticked subset) and (optionally) the documents to ask in; the answer (or a
clearly marked abstention) with numbered citation chips out. A chip shows the cited sentence, row or region
boxed on its page. Below: the traversal replay (ui/replay.py), the packed evidence as a tree
with a budget slider that re-packs on release, the ranked results, and saving a run as JSON or
loading one back into the views.

Once the session has uploaded documents, questions go to them by default ("Ask in": your
documents; the sample corpus and the whole workspace stay one click away), and the example
questions are made from the uploads' headings (Service.starter_questions) instead of being the
sample corpus's; `refresh` sets both after every change to the library.

The session keeps the last run (an `AskResult`) in a `gr.State`, so picking a citation,
re-packing or exporting needs no new question. It also keeps a small digest of the session's
recent runs per question (RunDigest: run label, answer, result units), so that asking the same
question with another method, or the same method with or without stages, says what this run
contributed: the units only it found, and whether its answer is word for word another run's.
This module only wires callbacks: each unpacks, makes one service call and hands the result to
the pure renderers.
"""

from __future__ import annotations

import hashlib
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias

import gradio as gr
from pydantic import ValidationError

from backend.errors import StrataError, WorkspaceError
from backend.service import NodeBrief, Service
from backend.types import AskResult, Citation, Highlight, MethodInfo, ParamInfo, StageInfo
from ui import render, replay
from ui.common import session_workspace, user_errors
from ui.spaces_gpu import gpu_task

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
    "Type it above and press Ask. The answer cites the passages it rests on; click a numbered chip to see it on its page.",
)
NO_PACK = render.empty_state("No evidence packed yet.", "Ask a question; the evidence given to the reader shows here.")
LLM_BACKEND_LABELS = {
    "rules": "rules (offline heuristics)",
    "openai": "openai (OpenAI-compatible server)",
    "hf": "hf (local transformers model)",
}
# "Ask in": the session's uploads, the sample corpus it started with, or both (shown once it has uploads).
OWN_DOCS, SAMPLE_DOCS, ALL_DOCS = "own", "sample", "all"
SCOPES = [("Your documents", OWN_DOCS), ("The sample corpus", SAMPLE_DOCS), ("Everything in this workspace", ALL_DOCS)]
SAMPLE_EXAMPLES_LABEL = "Questions about the sample corpus"
OWN_EXAMPLES_LABEL = "Questions about your documents (from their headings)"
# The stages menu: with the default set, without any (the method as its paper publishes it), or
# only the stages ticked below it.
WITH_STAGES, WITHOUT_STAGES, CHOSEN_STAGES = "default", "none", "chosen"
STAGE_MODES = [
    ("With Strata's stages", WITH_STAGES),
    ("Without (method as published)", WITHOUT_STAGES),
    ("Only the ticked stages", CHOSEN_STAGES),
]
RUNS_DIR = Path(tempfile.gettempdir()) / "strata_runs"  # Gradio serves files from the temp dir
MAX_RUN_BYTES = 20 * 1024 * 1024
# Every element with data-cite (answer chips, citation cards) opens that citation on its page; a
# card's "show in graph" link (data-graph-node) sends its node to the Graph tab instead.
CITE_CLICK_JS = """
element.addEventListener('click', (event) => {
  const link = event.target.closest('[data-graph-node]');
  if (link) { trigger('click', {graph: link.dataset.graphNode}); return; }
  const chip = event.target.closest('[data-cite]');
  if (chip) { trigger('click', {n: Number(chip.dataset.cite)}); }
});
"""


@dataclass(slots=True)
class AskTab:
    question: gr.Textbox
    ask_button: gr.Button
    follow: Callable  # session settings -> (llm backend, top-k, budget) updates
    follow_outputs: list
    refresh: Callable  # workspace -> refresh_outputs: the scope and the example questions after a library change
    refresh_outputs: list
    run_state: gr.State  # the last AskResult
    citations: gr.HTML  # its click event carries `graph` (a node id) from a card's "show in graph" link
    show_in_graph: gr.Button  # the caller wires it to the Graph tab


def build(service: Service, workspace: gr.State, with_examples: bool, session_settings: gr.State | None = None) -> AskTab:
    """The tab. `session_settings` (the Settings tab's per-session state, with `llm`, `llm_backend`,
    `top_k` and `token_budget`) supplies the model server settings and follows into the menus here."""
    methods = {m.name: m for m in service.methods()}
    settings = service.settings
    default_method = settings.retrieval.default_method if settings.retrieval.default_method in methods else next(iter(methods))
    param_slots = max((len(m.params) for m in methods.values()), default=0)
    stage_infos = service.stage_infos()
    stage_mode_value, stage_names_value = initial_stages(settings.retrieval.stages, stage_infos)
    with gr.Tab("Ask", id="ask"):
        with gr.Row(equal_height=True):
            question = gr.Textbox(
                label="Question", placeholder="e.g. How many trees did the programme plant?", scale=5, lines=1,
                elem_id="ask-question", max_lines=3,
            )
            ask_button = gr.Button("Ask", variant="primary", scale=1, elem_id="ask-button")
        scope = gr.Radio(
            SCOPES, value=ALL_DOCS, label="Ask in", visible=False, elem_id="ask-scope",
            info="Your uploads by default; the sample corpus is one click away. Documents picked below override this.",
        )
        examples = gr.Dataset(
            components=[question], samples=[[q] for q in SAMPLE_QUESTIONS], type="index", label=SAMPLE_EXAMPLES_LABEL,
            visible=with_examples, elem_id="ask-examples",
        )
        example_texts = gr.State(list(SAMPLE_QUESTIONS))  # what the shown examples say, per session
        with gr.Row():
            method = gr.Dropdown(
                label="Method", choices=list(methods), value=default_method, info=methods[default_method].description,
                scale=3, elem_id="ask-method",
            )
            llm_backend = gr.Dropdown(
                label="LLM backend", choices=[(LLM_BACKEND_LABELS.get(b, b), b) for b in service.llm_backends()],
                value=settings.reader.llm_backend, info="Used by the method's prompts and the reader; rules needs no model.",
                scale=2, elem_id="ask-llm",
            )
            # Wide enough for a slider's label, number box and reset button: a narrow window wraps the row instead.
            top_k = gr.Slider(
                1, 50, value=settings.retrieval.top_k, step=1, label="Top-k results", scale=2, min_width=230, elem_id="ask-top-k",
            )
            budget = gr.Slider(
                128, 8192, value=settings.reader.token_budget, step=64, label="Evidence token budget", scale=2,
                min_width=230, elem_id="ask-budget",
            )
        with gr.Row(equal_height=True):
            stage_mode = gr.Radio(
                STAGE_MODES, value=stage_mode_value, label="Strata's stages", scale=3, min_width=300, elem_id="ask-stages",
                info="Stages act on the question and the method's ranking; each one that acts is a step in the replay. "
                "The default set is empty for the flat baselines.",
            )
            docs = gr.Dropdown(
                label="Only these documents", choices=[], value=[], multiselect=True, elem_id="ask-docs", scale=2,
                min_width=240,
                info="Empty: the whole workspace. Pick a report to ask it alone; the list is read when you open it.",
            )
        stage_names = gr.CheckboxGroup(
            stage_choices(stage_infos), value=stage_names_value, label="Stages to run, in pipeline order",
            visible=stage_mode_value == CHOSEN_STAGES, elem_id="ask-stage-names", elem_classes=["st-stage-list"],
        )
        with gr.Accordion(_params_title(methods[default_method]), open=False, elem_id="ask-params-panel") as params_panel:
            with gr.Row():
                slots = [
                    gr.Slider(**_slot_props(_param_at(methods[default_method], i)), min_width=200, elem_id=f"ask-param-{i}")
                    for i in range(param_slots)
                ]
        run_state = gr.State(None)
        history_state = gr.State({})  # AskHistory: digests of this session's recent runs, per question
        with gr.Row(equal_height=False):
            with gr.Column(scale=1):
                answer = gr.HTML(BEFORE_ASKING, elem_id="ask-answer", js_on_load=CITE_CLICK_JS)
                contributed = gr.HTML(elem_id="ask-contribution")  # what this method found that others did not
                citations = gr.HTML(elem_id="ask-citations", js_on_load=CITE_CLICK_JS)
                show_in_graph = gr.Button("Show the evidence in the graph", size="sm", elem_id="ask-show-in-graph")
                facts = gr.HTML(elem_id="ask-facts")
            with gr.Column(scale=1):
                citation_image = gr.Image(
                    type="pil", format="png", label="Cited passage on its page", interactive=False, height=560,
                    elem_id="ask-citation-image", buttons=["fullscreen", "download"],
                )
        with gr.Accordion("Traversal replay", open=False, elem_id="ask-trace-panel") as replay_accordion:
            panel = replay.build_replay()
        with gr.Accordion("Packed evidence", open=False, elem_id="ask-pack-panel"):
            repack_budget = gr.Slider(
                128, 8192, value=settings.reader.token_budget, step=64, label="Re-pack under this budget (on release)",
                interactive=False, elem_id="ask-repack-budget",
            )
            pack = gr.HTML(NO_PACK, elem_id="ask-pack")
        with gr.Accordion("Ranked results", open=False, elem_id="ask-results-panel"):
            results = gr.Dataframe(
                headers=render.RESULT_HEADERS, datatype="str", interactive=False, wrap=True, elem_id="ask-results",
                max_height=420, column_widths=["6%", "15%", "6%", "9%", "24%", "7%", "33%"],
            )
        with gr.Accordion("Save or load a run", open=False, elem_id="ask-run-panel"):
            gr.Markdown(
                "A run (question, results, trace, packed evidence and answer) saves as one JSON file. "
                "Load one to replay it here; its citations open when its documents are in this workspace.",
                elem_classes=["st-small"],
            )
            with gr.Row(equal_height=True):
                export = gr.DownloadButton("Download run (JSON)", value=None, interactive=False, elem_id="ask-export")
                run_file = gr.File(
                    label="Load a run (JSON)", file_types=[".json"], type="filepath", file_count="single",
                    elem_id="ask-import", height=120,
                )

    def briefs(ws: Path, result: AskResult) -> dict[str, NodeBrief]:
        out = replay.briefs_from_result(result)
        out.update(service.describe_nodes(ws, replay.run_node_ids(result)))
        return out

    def citation_page(ws: Path, cites: list[Citation], n: int | None):
        chosen = next((c for c in cites if c.n == n), None)
        if chosen is None:
            return None
        doc_id = next((d.id for d in service.documents(ws) if d.file_name == chosen.doc), None)
        if doc_id is None:
            raise WorkspaceError(f"The cited document '{chosen.doc}' is not in this workspace; upload it or ask again.")
        # The other citations on the same page are drawn too, in a quieter colour.
        highlights = [
            Highlight(bbox=c.bbox, color=OTHER_COLOR, label=f"[{c.n}]")
            for c in cites
            if c.n != chosen.n and c.doc == chosen.doc and c.page == chosen.page and c.bbox
        ]
        if chosen.bbox:
            highlights.append(Highlight(bbox=chosen.bbox, color=SELECTED_COLOR, label=f"[{chosen.n}]"))
        return service.render_page(ws, doc_id, chosen.page, highlights)

    def first_page(ws: Path, cites: list[Citation]):
        """The first citation's page, or None (with a note) when its document is not here."""
        try:
            return citation_page(ws, cites, cites[0].n if cites else None)
        except WorkspaceError as exc:
            gr.Info(str(exc))
            return None

    def export_file(ws: Path, result: AskResult) -> str:
        # Named by the run's content, not the workspace: sessions that only read share one workspace.
        text = result.model_dump_json(indent=1)
        folder = RUNS_DIR / hashlib.sha256(text.encode()).hexdigest()[:16]
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"strata-run-{result.method}.json"
        path.write_text(text, encoding="utf-8")
        return str(path)

    def show_run(ws: Path, result: AskResult, contributed_html: str = "") -> tuple:
        """Every view of a run: answer side, replay, pack, results, export."""
        cites = result.answer.citations
        nodes = briefs(ws, result)
        frames = replay.replay_frames(result.trace, nodes, shown=len(result.results))
        return (
            render.render_answer(result),
            contributed_html,
            render.render_citations(cites, selected=cites[0].n if cites else None),
            render.render_run_facts(result, run_id=uuid.uuid4().hex[:12]),
            first_page(ws, cites),
            {"headers": render.RESULT_HEADERS, "data": render.result_rows(result.results)},
            replay.render_pack_tree(result.pack, nodes),
            gr.update(value=result.pack.budget, interactive=True),
            gr.update(label=replay_title(result)),
            replay.render_replay_header(result),
            *replay.loaded(frames),
            result,
            gr.update(value=export_file(ws, result), interactive=True),
        )

    def scope_docs(ws: Path, where: str) -> list[str] | None:
        """The file names "Ask in" stands for (None: the whole workspace, also when it has no uploads)."""
        if where not in (OWN_DOCS, SAMPLE_DOCS):
            return None
        own = service.own_documents(ws)
        if not own:
            return None
        if where == OWN_DOCS:
            return [d.file_name for d in own]
        own_ids = {d.id for d in own}
        return [d.file_name for d in service.documents(ws) if d.id not in own_ids] or None

    @gpu_task
    @user_errors
    def ask(workspace_value: str, session, history: AskHistory | None, text: str, method_name: str, backend: str, k: float,
            budget_tokens: float, chosen_docs: list[str] | None, where: str, mode: str, chosen_stages: list[str] | None, *values):
        ws = session_workspace(workspace_value)
        info = methods.get(method_name)
        if info is None:
            raise StrataError(f"Unknown method '{method_name}'. Pick one from the Method menu.")
        result = service.ask(
            ws, text, method=method_name, top_k=int(k), params=_param_values(info, values), budget=int(budget_tokens),
            llm_backend=backend, llm_settings=getattr(session, "llm", None), docs=chosen_docs or scope_docs(ws, where),
            stages=stage_spec(mode, chosen_stages),
        )
        # Compared with the other methods' earlier runs of this question, before this run joins them.
        return (*show_run(ws, result, render_contribution(result, contribution(result, history))), remember(history, result))

    @user_errors
    def show_citation(workspace_value: str, result: AskResult | None, evt: gr.EventData):
        n = getattr(evt, "n", None)  # set by CITE_CLICK_JS
        if result is None or not isinstance(n, (int, float)):
            return gr.skip(), gr.skip()
        ws = session_workspace(workspace_value)
        cites = result.answer.citations
        return citation_page(ws, cites, int(n)), render.render_citations(cites, selected=int(n))

    @gpu_task
    @user_errors
    def repack(workspace_value: str, session, history: AskHistory | None, result: AskResult | None, budget_tokens: float):
        if result is None:
            return (gr.skip(),) * 9
        ws = session_workspace(workspace_value)
        backend = result.llm_backend.split(":", 1)[0]  # "openai:<model>" -> openai
        new = service.repack(
            ws, result, int(budget_tokens), llm_backend=backend if backend in service.llm_backends() else None,
            llm_settings=getattr(session, "llm", None),
        )
        cites = new.answer.citations
        return (
            render.render_answer(new),
            render.render_citations(cites, selected=cites[0].n if cites else None),
            first_page(ws, cites),
            replay.render_pack_tree(new.pack, briefs(ws, new)),
            new,
            gr.update(value=export_file(ws, new), interactive=True),
            render.render_run_facts(new, run_id=uuid.uuid4().hex[:12]),
            render_contribution(new, contribution(new, history)),  # the answer may now match another method's
            remember(history, new),
        )

    @gpu_task
    @user_errors
    def load_run(workspace_value: str, path: str | None):
        if not path:
            return (gr.skip(),) * (len(run_outputs) + 1)
        ws = session_workspace(workspace_value)
        # The file box is emptied once the run is shown, ready for the next file.
        return (*show_run(ws, read_run(Path(path))), None)

    @user_errors
    def list_docs(workspace_value: str, chosen: list[str] | None):
        """The workspace's documents as the menu's choices, read when it opens (uploads land in the
        Library tab); a chosen one that is gone is dropped."""
        names = sorted(d.file_name for d in service.documents(session_workspace(workspace_value)))
        return gr.update(choices=names, value=[n for n in (chosen or []) if n in names])

    @user_errors
    def refresh_library(workspace_value):
        """After the library changed (or the page loaded): with uploads, "Ask in" shows and points at
        them and the examples come from their headings; without, the sample corpus's examples."""
        ws = session_workspace(workspace_value)
        own = service.own_documents(ws)
        if own:
            texts = service.starter_questions(ws, own)
            return (gr.update(visible=True, value=OWN_DOCS), gr.update(samples=[[q] for q in texts], label=OWN_EXAMPLES_LABEL,
                    visible=True), texts, gr.update(placeholder=f"e.g. {texts[0]}"))
        texts = list(SAMPLE_QUESTIONS)
        return (gr.update(visible=False, value=ALL_DOCS), gr.update(samples=[[q] for q in texts], label=SAMPLE_EXAMPLES_LABEL,
                visible=with_examples), texts, gr.update(placeholder=f"e.g. {texts[0]}"))

    def pick_example(index: int | None, texts: list[str]):
        if index is None or not texts or not 0 <= index < len(texts):
            return gr.skip()
        return texts[index]

    def choose_method(name: str):
        info = methods.get(name)
        if info is None:
            return (gr.skip(),) * (2 + len(slots))
        return (
            gr.update(info=info.description),
            gr.update(label=_params_title(info)),
            *[gr.update(**_slot_props(_param_at(info, i))) for i in range(len(slots))],
        )

    def choose_stage_mode(mode: str):
        return gr.update(visible=mode == CHOSEN_STAGES)

    def follow_settings(session):
        """The Settings tab's choices become this tab's defaults (the menus can still differ per question)."""
        if session is None:
            return gr.skip(), gr.skip(), gr.skip()
        return session.llm_backend, session.top_k, session.token_budget

    session = session_settings if session_settings is not None else gr.State(None)
    run_outputs = [
        answer, contributed, citations, facts, citation_image, results, pack, repack_budget, replay_accordion, panel.header,
        *panel.load_outputs, run_state, export,
    ]
    inputs = [
        workspace, session, history_state, question, method, llm_backend, top_k, budget, docs, scope, stage_mode, stage_names,
        *slots,
    ]
    # The tab's events stay out of the API docs: programs use the named /ask endpoint (ui/api.py).
    private = {"api_visibility": "private"}
    for trigger in (ask_button.click, question.submit):
        # Progress (and an error) shows on the answer box only, not on every panel.
        trigger(
            ask, inputs=inputs, outputs=[*run_outputs, history_state], concurrency_limit=4, concurrency_id="ask", show_progress_on=[answer],
            **private,
        )
    answer.click(show_citation, inputs=[workspace, run_state], outputs=[citation_image, citations], **private)
    citations.click(show_citation, inputs=[workspace, run_state], outputs=[citation_image, citations], **private)
    repack_budget.release(
        repack, inputs=[workspace, session, history_state, run_state, repack_budget],
        outputs=[answer, citations, citation_image, pack, run_state, export, facts, contributed, history_state],
        show_progress_on=[pack],
        concurrency_limit=4, concurrency_id="ask", **private,
    )
    run_file.upload(
        load_run, inputs=[workspace, run_file], outputs=[*run_outputs, run_file], show_progress_on=[answer], **private
    )
    method.change(choose_method, inputs=[method], outputs=[method, params_panel, *slots], queue=False, **private)
    stage_mode.change(choose_stage_mode, inputs=[stage_mode], outputs=[stage_names], queue=False, **private)
    docs.focus(list_docs, inputs=[workspace, docs], outputs=[docs], queue=False, **private)
    examples.click(pick_example, inputs=[examples, example_texts], outputs=[question], queue=False, **private)
    # Not session_settings.change: Gradio hashes a watched state's value, and the settings hold
    # pydantic objects it cannot hash. The caller wires `follow` to the Settings tab's Apply.
    return AskTab(
        question=question, ask_button=ask_button, follow=follow_settings, follow_outputs=[llm_backend, top_k, budget],
        refresh=refresh_library, refresh_outputs=[scope, examples, example_texts, question],
        run_state=run_state, citations=citations, show_in_graph=show_in_graph,
    )


# ---------------------------------------------------------------- stages


def stage_choices(infos: list[StageInfo]) -> list[tuple[str, str]]:
    """The stage checkboxes: "name: what it does · acts on: which corpora", valued by name, in pipeline
    order; a stage that cannot be switched (the documents filter, on whenever documents are chosen)
    is not listed."""
    return [
        (f"{i.name}: {i.description}" + (f" · acts on: {i.acts_on}" if i.acts_on else ""), i.name)
        for i in infos
        if i.switchable
    ]


def initial_stages(setting: str, infos: list[StageInfo]) -> tuple[str, list[str]]:
    """The stages menu and checkboxes as the server's stage setting ("default", "none" or names) puts them."""
    names = [i.name for i in infos if i.switchable]
    spec = (setting or WITH_STAGES).strip()
    if spec in (WITH_STAGES, WITHOUT_STAGES):
        return spec, names
    chosen = [n for n in (part.strip() for part in spec.split(",")) if n in names]
    return CHOSEN_STAGES, chosen


def stage_spec(mode: str, chosen: list[str] | None) -> str:
    """The service's `stages` value for the menu's choice: "default", "none" or the ticked names."""
    if mode in (WITH_STAGES, WITHOUT_STAGES):
        return mode
    if mode != CHOSEN_STAGES:
        raise StrataError(
            f"Unknown stages choice '{mode}'. Pick one of: with Strata's stages, without, or only the ticked stages."
        )
    if not chosen:
        raise StrataError("No stage is ticked. Tick the stages to run, or choose 'Without (method as published)'.")
    return ",".join(chosen)


def run_label(result: AskResult) -> str:
    """How a run is named next to others: the method and its stages ("hikey + stages"), or the method."""
    return result.label or result.method


def replay_title(result: AskResult) -> str:
    """The replay panel's title: method, step count and how many of the steps are Strata's stages."""
    acted = replay.stage_step_count(result.trace)
    return f"Traversal replay: {result.method}, {len(result.trace.steps)} step(s)" + (
        f", {acted} from Strata's stages" if acted else ""
    )


# ---------------------------------------------------------------- what a method contributed

# Questions remembered per session for the contribution line; each keeps one digest per method
# (at most top-k units each), so the state stays a few kilobytes.
MAX_REMEMBERED_QUESTIONS = 8
Unit: TypeAlias = tuple[str, str, int]  # (node id, document file name, page)


@dataclass(frozen=True, slots=True)
class RunDigest:
    """What the session remembers of a run to compare the next run with (`method` holds the run
    label, so "hikey" and "hikey + stages" are two runs)."""

    method: str
    answer: str  # whitespace-normalised answer text ("" when it abstained)
    units: tuple[Unit, ...]  # the ranked results, best first

    @classmethod
    def of(cls, result: AskResult) -> RunDigest:
        answer = "" if result.answer.abstained else " ".join(result.answer.text.split())
        return cls(run_label(result), answer, tuple((r.node_id, r.doc, r.page) for r in result.results))


AskHistory: TypeAlias = dict[str, dict[str, RunDigest]]  # question key -> run label -> its latest run


@dataclass(frozen=True, slots=True)
class Contribution:
    """A run against the session's earlier runs of the same question with other methods (or the
    same method with other stages)."""

    others: tuple[str, ...]  # the other runs' labels, in the order they were asked
    only: tuple[Unit, ...]  # this run's units that none of them returned
    same_answer_as: str | None  # the first of them whose answer is word for word this one


def question_key(text: str) -> str:
    return " ".join(text.split()).casefold()


def remember(history: AskHistory | None, result: AskResult) -> AskHistory:
    """A new history with this run as its label's latest for its question (the question moves to
    the end; the oldest questions beyond MAX_REMEMBERED_QUESTIONS are forgotten)."""
    out = dict(history or {})
    key = question_key(result.question)
    runs = dict(out.pop(key, {}))
    runs[run_label(result)] = RunDigest.of(result)
    out[key] = runs
    for old in list(out)[: max(0, len(out) - MAX_REMEMBERED_QUESTIONS)]:
        del out[old]
    return out


def contribution(result: AskResult, history: AskHistory | None) -> Contribution | None:
    """What this run adds to the other runs (other labels) of the same question; None when there are none."""
    others = [d for m, d in (history or {}).get(question_key(result.question), {}).items() if m != run_label(result)]
    if not others:
        return None
    seen = {unit[0] for d in others for unit in d.units}
    mine = RunDigest.of(result)
    same = next((d.method for d in others if mine.answer and d.answer == mine.answer), None)
    return Contribution(tuple(d.method for d in others), tuple(u for u in mine.units if u[0] not in seen), same)


def _pages_text(units: tuple[Unit, ...], limit: int = 6) -> str:
    pages = sorted({(doc, page) for _, doc, page in units})
    shown = ", ".join(f"{render.esc(doc)} p.{page}" for doc, page in pages[:limit])
    return shown + (f" and {len(pages) - limit} more page(s)" if len(pages) > limit else "")


def render_contribution(result: AskResult, c: Contribution | None) -> str:
    """The line under the answer: units only this method found (and where), or that it found
    nothing new; with "same answer as X" first when the answers are word for word the same."""
    if c is None:
        return ""
    n, method, same = len(c.only), render.esc(run_label(result)), render.esc(c.same_answer_as or "")
    if same and n:
        text = f"Same answer as {same}; different evidence: {n} unit(s) found only by {method}, on {_pages_text(c.only)}"
    elif same:
        text = f"Same answer as {same}; same evidence: every result of {method} was also found by another method"
    elif n:
        text = f"Found only by {method}: {n} unit(s) on {_pages_text(c.only)}"
    else:
        text = f"Found only by {method}: nothing; every result was also found by another method"
    against = ", ".join(render.esc(m) for m in c.others)
    return (
        f'<div class="st-ask-contribution" data-only-count="{n}" data-same-as="{same}">'
        f'{text}. <span class="st-muted">Compared with {against}, asked earlier in this session.</span></div>'
    )


def read_run(path: Path) -> AskResult:
    """A run JSON file as an AskResult, or a StrataError that says what is wrong with the file."""
    name = path.name
    try:
        if path.stat().st_size > MAX_RUN_BYTES:
            raise StrataError(f"'{name}' is larger than {MAX_RUN_BYTES // (1024 * 1024)} MB; a Strata run file is far smaller.")
        data = path.read_bytes()
    except OSError as exc:
        raise StrataError(f"Could not read '{name}': {exc.strerror or exc}. Upload the file again.") from None
    try:
        return AskResult.model_validate_json(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "the top level"
        raise StrataError(
            f"'{name}' is not a Strata run ({exc.error_count()} problem(s); first at {where}: {first.get('msg', 'invalid')}). "
            "Load a file saved with 'Download run (JSON)'."
        ) from None


def _params_title(info: MethodInfo) -> str:
    return f"Method parameters: {info.name} ({len(info.params)})" if info.params else f"Method parameters: {info.name} has none"


def _param_at(info: MethodInfo, i: int) -> ParamInfo | None:
    return info.params[i] if i < len(info.params) else None


def _slot_props(p: ParamInfo | None) -> dict:
    """Slider settings that show parameter p (integers step by 1), or hide an unused slot."""
    if p is None:
        return {"visible": False, "label": "unused", "minimum": 0, "maximum": 1, "value": 0, "step": 1}
    is_int = all(isinstance(v, int) and not isinstance(v, bool) for v in (p.default, p.minimum, p.maximum))
    step = 1 if is_int else max(round((p.maximum - p.minimum) / 100, 4), 0.0001)
    return {
        "visible": True, "label": p.name, "info": p.description, "minimum": p.minimum, "maximum": p.maximum,
        "value": p.default, "step": step,
    }


def _param_values(info: MethodInfo, values: tuple) -> dict[str, int | float]:
    """The method's parameters the user moved off their defaults, typed like their defaults. A
    slider left alone is not sent, so the strategy's own default holds (which may depend on the
    corpus: alpha on a template corpus, backend/retrieval/base.py)."""
    out: dict[str, int | float] = {}
    for p, v in zip(info.params, values):
        if v is None or v == p.default:
            continue
        out[p.name] = int(round(v)) if isinstance(p.default, int) and not isinstance(p.default, bool) else float(v)
    return out
