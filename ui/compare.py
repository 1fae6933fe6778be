"""Compare tab: one question through two to four runs side by side: each run's answer and ranked
results (document, page, snippet), the units only one run found, how much their result pages
overlap (a Jaccard matrix), latency and LLM calls. A run is a method with or without Strata's
stages, named by its label ("hikey", "hikey + stages"): the stages menu runs every ticked method
with the stages, without them (as its paper publishes it), or both side by side, which doubles
each method (so at most two methods then, four columns). With gold evidence (a benchmark
question picked from a collection, or pages typed in) every result is marked hit or miss on its
page, as ../shared/bench/score.py counts.

A benchmark question is asked over that benchmark's own workspace (its corpus, ingested once),
never over the user's documents; a question typed by the user runs over the session's workspace.
"Only these documents" asks every compared method of the same documents (the whole workspace
when empty); a benchmark question that names its documents (`meta.doc_scope`, as collections
of one-document questions have) fills it when picked.
The render functions here are pure: results in, escaped HTML out.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import gradio as gr

from backend.errors import StrataError
from backend.service import Service
from backend.types import AskResult, StageStep
from ui.common import session_workspace, user_errors
from ui.render import empty_state, esc, snippet
from ui.spaces_gpu import gpu_task

MIN_METHODS, MAX_METHODS = 2, 4  # runs (columns) compared at once
MAX_BENCH_QUESTIONS = 500  # the question menu lists the first ones of a collection
DEFAULT_METHODS = ("bm25", "hikey")
WORKSPACE, BENCH = "workspace", "bench"
WITH_STAGES, WITHOUT_STAGES, BOTH = "default", "none", "both"
STAGE_MODES = [
    ("With Strata's stages", WITH_STAGES),
    ("Without (methods as published)", WITHOUT_STAGES),
    ("Both, side by side (X and X + stages)", BOTH),
]
MODE_WORDS = {value: words for words, value in STAGE_MODES}
BEFORE_COMPARING = empty_state(
    "Compare how methods answer the same question.",
    "Type a question (or pick a benchmark question above), tick two to four methods (one or two to see each with and "
    "without stages) and press Compare.",
)

Page = tuple[str, int]


# ---------------------------------------------------------------- pure helpers


def label(result: AskResult) -> str:
    """A run's name beside the others: the method and its stages ("hikey + stages"), or the method."""
    return result.label or result.method


def with_stages_spec(setting: str) -> str:
    """What "with Strata's stages" asks for: the server's stage setting, or the default set when
    that setting switches them off."""
    spec = (setting or "").strip()
    return spec if spec and spec != WITHOUT_STAGES else WITH_STAGES


def compare_runs(methods: list[str] | None, mode: str, with_spec: str = WITH_STAGES) -> tuple[list[str], list[str]]:
    """The (methods, stages) lists `Service.compare` takes for the ticked methods and the stages
    menu: one run per method, or with BOTH each method twice, without stages first. Raises when
    the number of runs is not MIN_METHODS to MAX_METHODS, saying how many methods to tick."""
    chosen = list(dict.fromkeys(m for m in methods or [] if m))
    if mode == BOTH:
        if not 1 <= len(chosen) <= MAX_METHODS // 2:
            raise StrataError(
                f"Tick 1 to {MAX_METHODS // 2} methods to compare each with and without stages ({len(chosen)} ticked); "
                f"each runs twice and at most {MAX_METHODS} runs fit side by side."
            )
        return [m for m in chosen for _ in (0, 1)], [s for _ in chosen for s in (WITHOUT_STAGES, with_spec)]
    if mode not in (WITH_STAGES, WITHOUT_STAGES):
        raise StrataError(f"Unknown stages choice '{mode}'. Pick with Strata's stages, without, or both side by side.")
    if not MIN_METHODS <= len(chosen) <= MAX_METHODS:
        raise StrataError(f"Tick {MIN_METHODS} to {MAX_METHODS} methods to compare ({len(chosen)} ticked).")
    spec = with_spec if mode == WITH_STAGES else WITHOUT_STAGES
    return chosen, [spec] * len(chosen)


def distinct_runs(results: list[AskResult]) -> tuple[list[AskResult], list[str]]:
    """The runs with one per label (a method whose default set of stages is empty runs the same
    with and without them), and the labels that were asked for twice."""
    kept: dict[str, AskResult] = {}
    twice: list[str] = []
    for res in results:
        if label(res) in kept:
            twice.append(label(res))
        else:
            kept[label(res)] = res
    return list(kept.values()), list(dict.fromkeys(twice))


def result_pages(result: AskResult) -> set[Page]:
    return {(r.doc, r.page) for r in result.results}


def jaccard(a: set, b: set) -> float:
    """|a ∩ b| / |a ∪ b|; two empty sets count as identical."""
    union = a | b
    return len(a & b) / len(union) if union else 1.0


def gold_text(gold) -> str:
    """Gold items as a person would type them, one per line ('report.pdf p.3')."""
    return "\n".join(g.doc + (f" p.{g.page}" if g.page is not None else "") for g in gold)


def gold_found(result: AskResult, gold_refs) -> tuple[int, int]:
    """(gold items found anywhere in the results, distinct gold items)."""
    units = list(dict.fromkeys(gold_refs))
    return sum(any(g.matches(r.doc, r.page) for r in result.results) for g in units), len(units)


def only_found(results: list[AskResult]) -> list[set[str]]:
    """For each run, the result units (node ids) that none of the other compared runs returned."""
    units = [{r.node_id for r in res.results} for res in results]
    return [mine - set().union(*(u for j, u in enumerate(units) if j != i)) for i, mine in enumerate(units)]


def same_answer_as(results: list[AskResult]) -> list[str | None]:
    """For each run, the label of the first other run whose answer text is word for word the same."""
    out: list[str | None] = []
    for i, res in enumerate(results):
        text = " ".join(res.answer.text.split())
        out.append(next((label(o) for j, o in enumerate(results) if j != i and " ".join(o.answer.text.split()) == text), None))
    return out


def render_only(result: AskResult, only: set[str]) -> str:
    """The line above a run's results: how many units (and which pages) only it found."""
    if not only:
        return '<div class="st-cmp-only" data-only-count="0">Every result of this run was also found by another run.</div>'
    pages = sorted({(r.doc, r.page) for r in result.results if r.node_id in only})
    where = ", ".join(f"{esc(d)} p.{p}" for d, p in pages[:6]) + (" …" if len(pages) > 6 else "")
    return (f'<div class="st-cmp-only" data-only-count="{len(only)}"><span class="st-cmp-only-badge">only here</span>'
            f"{len(only)} unit(s) no other run found, on {where}</div>")


def render_stages_line(result: AskResult) -> str:
    """The line under a run's title: the stages it selected and which of them acted (with how many
    units each moved), or that it ran without stages."""
    if not result.stages:
        return '<div class="st-cmp-stages" data-acted="0">Without stages: the method as published.</div>'
    acted = [s for s in result.trace.steps if isinstance(s, StageStep)]
    moved = ", ".join(f"{esc(s.name)} ({len(s.moves)} moved)" for s in acted)
    what = f"acted: {moved}" if acted else "none of them acted on this question"
    return (
        f'<div class="st-cmp-stages" data-acted="{len(acted)}">Stages {esc(", ".join(result.stages))}; {what}.'
        + (' <span class="st-muted">(see the replay on the Ask tab)</span>' if acted else "")
        + "</div>"
    )


def render_llm_failure(result: AskResult, short: bool = False) -> str:
    """The alert on a run whose LLM server failed (the rules answered in its place), as the Ask
    tab shows it; `short` clips the reason for the summary row and keeps it whole in the tooltip.
    Empty when the LLM did not fail."""
    if not result.llm_error:
        return ""
    text = snippet(result.llm_error, 160) if short else result.llm_error
    return (f'<div class="st-error st-llm-error" role="alert" data-llm-error="{esc(label(result))}" '
            f'title="{esc(result.llm_error)}">{esc(text)}</div>')


def _badge(hit: bool | None) -> str:
    if hit is None:
        return ""
    return '<span class="st-cmp-badge st-cmp-hit">hit</span>' if hit else '<span class="st-cmp-badge st-cmp-miss">miss</span>'


def render_summary(results: list[AskResult], hits: list[list[bool]] | None, gold_pages_found: list[tuple[int, int]] | None) -> str:
    """One row per run: answer (under an alert when the LLM server failed on it), latency, LLM calls
    and, with gold, hits and gold pages found."""
    head = ["Run", "Answer", "Results", "Only this run", "Latency (ms)", "LLM calls"]
    only, same = only_found(results), same_answer_as(results)
    if hits is not None:
        head += ["Hits", "Gold pages found", "First hit"]
    rows = []
    for i, res in enumerate(results):
        t = res.timings_ms
        latency = f'{t.get("total", 0):.0f} <span class="st-muted">(retrieve {t.get("retrieve", 0):.0f} · pack {t.get("pack", 0):.0f} · read {t.get("read", 0):.0f})</span>'
        answer = render_llm_failure(res, short=True) + ('<span class="st-abstained">abstained</span> ' if res.answer.abstained else "")
        answer += esc(snippet(res.answer.text, 140))
        if same[i]:
            answer += f' <span class="st-muted" data-same-as="{esc(same[i])}">(same answer as {esc(same[i])}; see what only it found)</span>'
        cells = [f'<th scope="row">{esc(label(res))}</th>', f"<td>{answer}</td>", f"<td>{len(res.results)}</td>",
                 f'<td data-field="only">{len(only[i])} unit(s)</td>',
                 f"<td>{latency}</td>", f"<td>{res.llm_calls} <span class=\"st-muted\">({esc(res.llm_backend)})</span></td>"]
        if hits is not None:
            first = next((k + 1 for k, h in enumerate(hits[i]) if h), None)
            found, total = gold_pages_found[i]
            cells += [f'<td data-field="hits">{sum(hits[i])} of {len(hits[i])}</td>', f'<td data-field="gold-found">{found} of {total}</td>',
                      f"<td>{'rank ' + str(first) if first else 'none'}</td>"]
        rows.append(f'<tr data-method="{esc(res.method)}" data-label="{esc(label(res))}" '
                    f'data-llm-failed="{str(bool(res.llm_error)).lower()}">' + "".join(cells) + "</tr>")
    header = "".join(f"<th>{h}</th>" for h in head)
    return f'<table class="st-cmp-summary"><thead><tr>{header}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def render_columns(results: list[AskResult], hits: list[list[bool]] | None) -> str:
    """The runs side by side: answer and ranked results, each marked hit or miss when gold is known.
    A run whose LLM server failed shows the failure above its answer, labelled as the rules'."""
    cols = []
    only = only_found(results)
    for i, res in enumerate(results):
        items = []
        for k, r in enumerate(res.results):
            hit = hits[i][k] if hits is not None else None
            state = "none" if hit is None else ("hit" if hit else "miss")
            path = " > ".join(r.section_path)
            only_here = r.node_id in only[i]
            items.append(
                f'<li class="st-cmp-result" data-hit="{state}" data-only="{str(only_here).lower()}">{_badge(hit)}'
                + ('<span class="st-cmp-only-badge">only here</span>' if only_here else "")
                + f'<span class="st-cmp-where">{esc(r.doc)} p.{r.page}</span> <span class="st-muted">{esc(r.kind.value)}</span>'
                + (f'<div class="st-cmp-path">{esc(path)}</div>' if path else "")
                + f'<div class="st-cmp-snippet">{esc(snippet(r.text))}</div></li>'
            )
        body = f'<ol class="st-cmp-results">{"".join(items)}</ol>' if items else empty_state("No results.")
        abstained = ' data-abstained="true"' if res.answer.abstained else ""
        failed = render_llm_failure(res)
        if failed:
            failed += '<div class="st-answer-label">Answer by the rules backend, in place of the failed LLM</div>'
        cols.append(
            f'<section class="st-cmp-col" data-method="{esc(res.method)}" data-label="{esc(label(res))}" '
            f'data-stages="{esc(",".join(res.stages))}">'
            f"<h3>{esc(label(res))}</h3>{render_stages_line(res)}"
            f'{failed}<div class="st-cmp-answer"{abstained} data-llm-failed="{str(bool(res.llm_error)).lower()}">'
            f'{esc(res.answer.text)}</div>{render_only(res, only[i])}{body}</section>'
        )
    return f'<div class="st-cmp-grid" style="--st-cmp-cols:{max(1, len(results))}">{"".join(cols)}</div>'


def render_overlap(results: list[AskResult]) -> str:
    """Jaccard overlap of the runs' result pages (doc, page), and the pages they share."""
    pages = [result_pages(r) for r in results]
    header = "".join(f"<th scope=\"col\">{esc(label(r))}</th>" for r in results)
    rows = []
    for i, a in enumerate(results):
        cells = []
        for j, b in enumerate(results):
            if i == j:
                cells.append(f'<td class="st-cmp-diag">{len(pages[i])} pages</td>')
                continue
            score = jaccard(pages[i], pages[j])
            shared = len(pages[i] & pages[j])
            cells.append(
                f'<td data-a="{esc(label(a))}" data-b="{esc(label(b))}" data-jaccard="{score:.2f}" '
                f'style="--st-overlap:{score:.2f}">{score:.2f} <span class="st-muted">({shared} shared)</span></td>'
            )
        rows.append(f'<tr><th scope="row">{esc(label(a))}</th>{"".join(cells)}</tr>')
    return (
        '<div class="st-cmp-overlap-wrap"><div class="st-muted">Overlap of result pages (Jaccard: shared pages / all pages of the two)</div>'
        f'<table class="st-cmp-overlap"><thead><tr><th></th>{header}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'
    )


# ---------------------------------------------------------------- the tab


@dataclass(slots=True)
class CompareTab:
    question: gr.Textbox
    compare_button: gr.Button


def build(service: Service, workspace: gr.State, session_settings: gr.State) -> CompareTab:
    names = [m.name for m in service.methods()]
    default_methods = [m for m in DEFAULT_METHODS if m in names] or names[:MIN_METHODS]
    benches = service.benchmark_folders()
    with_spec = with_stages_spec(service.settings.retrieval.stages)
    with gr.Tab("Compare", id="compare"):
        with gr.Row(equal_height=True):
            question = gr.Textbox(
                label="Question", placeholder="e.g. How many trees did the programme plant?", scale=5, lines=1, max_lines=3,
                elem_id="compare-question",
            )
            compare_button = gr.Button("Compare", variant="primary", scale=1, elem_id="compare-button")
        with gr.Row(equal_height=True):
            methods = gr.CheckboxGroup(
                choices=names, value=default_methods, elem_id="compare-methods", scale=3,
                label=f"Methods ({MIN_METHODS} to {MAX_METHODS}; 1 to {MAX_METHODS // 2} for both with and without stages)",
            )
            docs = gr.Dropdown(
                label="Only these documents", choices=[], value=[], multiselect=True, elem_id="compare-docs", scale=2,
                info="Every method is asked of the same documents; empty asks all of them.",
            )
        stage_mode = gr.Radio(
            STAGE_MODES, value=WITHOUT_STAGES if service.settings.retrieval.stages.strip() == WITHOUT_STAGES else WITH_STAGES,
            label="Strata's stages", elem_id="compare-stages",
            info="Stages act on the question and a method's ranking. 'Both' shows each method as published beside it "
            "with the stages.",
        )
        # The picker sits in plain view, where the text above says to pick a benchmark question.
        with gr.Row(elem_id="compare-bench-row"):
            bench = gr.Dropdown(
                choices=[("(none)", "")] + [(b.name, str(b)) for b in benches], value="", label="Benchmark collection",
                info="Pick one to choose among its questions." if benches else "No benchmark folders on this server; type gold pages instead.",
                elem_id="compare-bench", scale=1,
            )
            bench_question = gr.Dropdown(choices=[], value=None, label="Benchmark question", elem_id="compare-bench-question", scale=2)
        with gr.Accordion("Gold evidence: mark each result hit or miss", open=False, elem_id="compare-gold-panel"):
            gold = gr.Textbox(
                label="Gold pages", lines=2, elem_id="compare-gold",
                placeholder="policy_brief.pdf p.2 (one per line; a file name alone means any page of it)",
            )
            corpus = gr.Radio(
                [("My documents", WORKSPACE), ("The benchmark's corpus (ingested once on first use)", BENCH)], value=WORKSPACE,
                label="Search in", elem_id="compare-corpus",
            )
        settings_note = gr.HTML(elem_id="compare-settings-note")
        summary = gr.HTML(BEFORE_COMPARING, elem_id="compare-summary")
        overlap = gr.HTML(elem_id="compare-overlap")
        columns = gr.HTML(elem_id="compare-columns")
        questions_state = gr.State({})  # question id -> (question, gold text, documents it names) of the chosen collection

    @user_errors
    def load_bench(bench_path: str, workspace_value: str):
        if not bench_path:
            return gr.update(choices=[], value=None), {}
        qs = service.benchmark_questions(Path(bench_path), session_workspace(workspace_value), limit=MAX_BENCH_QUESTIONS)
        table = {q.id: (q.question, gold_text(q.gold), q.doc_scope) for q in qs}
        choices = [(f"{q.id}: {snippet(q.question, 90)}", q.id) for q in qs]
        return gr.update(choices=choices, value=None), table

    def pick_question(qid: str | None, table: dict):
        """The question, its gold pages and the documents it names; it is asked of the benchmark's corpus."""
        if not qid or qid not in table:
            return gr.update(), gr.update(), gr.update(), gr.update()
        text, gold_lines, scope = table[qid]
        return text, gold_lines, BENCH, gr.update(choices=scope, value=scope)

    @user_errors
    def list_docs(workspace_value: str, where: str, bench_path: str, chosen: list[str] | None):
        """The documents of the corpus searched, as the menu's choices: the session's documents, or
        the benchmark's files. Read when the menu opens or the corpus changes; a chosen name that is
        not among them is dropped."""
        ws = session_workspace(workspace_value)
        if where == BENCH:
            names = service.benchmark_documents(Path(bench_path), ws) if bench_path else []
        else:
            names = sorted(d.file_name for d in service.documents(ws))
        return gr.update(choices=names, value=[n for n in (chosen or []) if n in names])

    @gpu_task
    @user_errors
    def compare(workspace_value: str, settings, text: str, chosen: list[str], gold_value: str, where: str, bench_path: str,
                chosen_docs: list[str] | None, mode: str, progress=gr.Progress()):
        ws = session_workspace(workspace_value)
        run_methods, run_stages = compare_runs(chosen, mode, with_spec)
        gold_refs = service.parse_gold(gold_value)
        if where == BENCH:
            if not bench_path:
                raise StrataError("Pick a benchmark collection to search its corpus, or search in your documents.")
            progress(0, desc="Preparing the benchmark's corpus")
            ws = service.prepare_benchmark(
                Path(bench_path), ws, lambda ev: progress((ev.done, ev.total), desc=f"ingesting {ev.doc}", unit="files")
                if ev.stage in ("open", "done", "failed") else None,
            )
        opts = settings.ask_options()
        progress(0.1, desc=f"Asking {len(run_methods)} runs")
        results, twice = distinct_runs(service.compare(
            ws, text, run_methods, top_k=settings.top_k, docs=chosen_docs or None, stages=run_stages, **opts
        ))
        hits = found = None
        if gold_refs:
            hits = [service.gold_hits(r.results, gold_refs) for r in results]
            found = [gold_found(r, gold_refs) for r in results]
        note = (
            f'<div class="st-muted">top-k {settings.top_k} · evidence budget {settings.token_budget} tokens · '
            f"LLM {esc(settings.describe())} (change these in Settings) · stages: {esc(MODE_WORDS[mode])}"
            + (f" · asked of {len(chosen_docs)} document(s): {esc(snippet(', '.join(chosen_docs), 160))}" if chosen_docs else "")
            + "</div>"
            + "".join(
                f'<div class="st-note" data-same-run="{esc(t)}">{esc(t)} runs no stage by default, so with and without '
                "stages it is one run, shown once. Tick stages on the Ask tab to run some after it.</div>"
                for t in twice
            )
        )
        return note, render_summary(results, hits, found), render_overlap(results), render_columns(results, hits)

    # Another collection: its questions, and the chosen documents kept only where the corpus searched has them.
    bench.change(load_bench, inputs=[bench, workspace], outputs=[bench_question, questions_state], api_visibility="private").then(
        list_docs, inputs=[workspace, corpus, bench, docs], outputs=[docs], queue=False, api_visibility="private",
    )
    bench_question.input(
        pick_question, inputs=[bench_question, questions_state], outputs=[question, gold, corpus, docs], api_visibility="private",
    )
    for trigger in (docs.focus, corpus.input):
        trigger(list_docs, inputs=[workspace, corpus, bench, docs], outputs=[docs], queue=False, api_visibility="private")
    inputs = [workspace, session_settings, question, methods, gold, corpus, bench, docs, stage_mode]
    outputs = [settings_note, summary, overlap, columns]
    for trigger in (compare_button.click, question.submit):
        trigger(compare, inputs=inputs, outputs=outputs, concurrency_limit=2, concurrency_id="compare",
                show_progress_on=[summary], api_visibility="private")
    return CompareTab(question=question, compare_button=compare_button)

