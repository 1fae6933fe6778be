"""Evaluate tab: run methods over a benchmark collection (a folder of the server's bench_root in
the ../shared/bench format, or an uploaded zip of one; the smallest one is picked at first) and
show R@1/5/10, MRR@10, All@10, the answers' EM and F1, abstention on unanswerable questions,
latency, LLM calls and the questions the rules answered in place of a failed LLM server per
method, as a table and plots, broken down by modality and by hops; the whole run downloads as
CSV (metric rows) and JSON (rows plus every question's record). A run on which the LLM server
failed says so above the table, with the first reason.

The collection's corpus goes into a workspace of its own (Service.benchmark_workspace), never
into the user's documents. Progress (ingest, each question, scoring) shows on a progress bar.
A run is not wrapped in spaces.GPU: it outlasts a ZeroGPU call, so there it runs on the CPU.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import gradio as gr
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from backend.errors import StrataError
from backend.service import Service
from ui.common import PRIVATE, session_workspace, user_errors, writable_workspace
from ui.render import duration, empty_state, error_box, esc

log = logging.getLogger(__name__)

DEFAULT_METHODS = ("bm25", "hikey")
DEFAULT_LIMIT = 10
INGEST_SHARE = 0.3  # of the progress bar, for ingesting the collection and warming the methods up
EVAL_TOP_K = 30  # results per question: enough distinct pages for @10 (several units share a page)
METRICS = [("recall_at_1", "R@1"), ("recall_at_5", "R@5"), ("recall_at_10", "R@10"), ("mrr_at_10", "MRR@10"), ("all_at_10", "All@10")]
LLM_FAILED_HEADER = "LLM failed (rules answered)"
TABLE_HEADERS = ["method", "questions", "scored", "R@1", "R@5", "R@10", "MRR@10", "All@10", "EM", "F1", "abstention (unanswerable)",
                 "abstained (all)", "p50 ms", "mean ms", "LLM calls/q", "errors", LLM_FAILED_HEADER]
BREAKDOWN_HEADERS = ["method", "group", *TABLE_HEADERS[1:]]
RECORD_HEADERS = ["method", "id", "modality", "hops", "R@10", "MRR@10", "top pages", "answer", "ms", "error"]
BEFORE_RUNNING = empty_state(
    "Score the retrieval methods on a benchmark.",
    "Pick a collection (or upload a zip of one: corpus/*.pdf + questions.jsonl), tick methods, set how many questions, press Run.",
)


# ---------------------------------------------------------------- pure helpers


def _num(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _cells(row) -> list:
    abstention = "–" if row.abstention is None else f"{row.abstention:.3f} (n={row.unanswerable})"
    return [row.questions, row.scored, *(_num(getattr(row, key)) for key, _ in METRICS),
            _num(getattr(row, "exact_match", None)), _num(getattr(row, "f1", None)), abstention,
            _num(row.abstained_all), f"{row.latency_p50_ms:.0f}", f"{row.latency_mean_ms:.0f}", f"{row.llm_calls_per_question:.2f}", row.errors,
            row.llm_failed]


def metric_table(rows) -> list[list]:
    return [[row.method, *_cells(row)] for row in rows]


def breakdown_table(rows) -> list[list]:
    return [[row.method, row.group, *_cells(row)] for row in rows]


def record_table(reports) -> list[list]:
    out = []
    for report in reports:
        for r in report.records:
            pages = ", ".join(f"{d} p.{p}" for d, p in r.top_pages[:3])
            out.append([r.method, r.id, r.modality or "–", "–" if r.hops is None else r.hops, _num(r.recall_at_10),
                        _num(r.mrr_at_10), pages, (r.answer or "")[:120], f"{r.latency_ms:.0f}", _record_error(r)])
    return out


def _record_error(record) -> str:
    """A question's error cell: why it failed, or that the rules answered in place of the failed LLM."""
    if record.error:
        return record.error
    return f"LLM failed, the rules answered: {record.llm_error}" if record.llm_error else ""


def metrics_figure(rows) -> go.Figure:
    """Grouped bars of the retrieval metrics per method, and latency per method beside them."""
    fig = make_subplots(rows=1, cols=2, column_widths=[0.7, 0.3], subplot_titles=("Retrieval (page level)", "Latency p50 (ms)"))
    labels = [label for _, label in METRICS]
    for row in rows:
        values = [getattr(row, key) for key, _ in METRICS]
        fig.add_trace(go.Bar(name=row.method, x=labels, y=[v if v is not None else 0 for v in values], legendgroup=row.method,
                             text=[_num(v, 2) for v in values], textposition="outside"), row=1, col=1)
        fig.add_trace(go.Bar(name=row.method, x=[row.method], y=[row.latency_p50_ms], legendgroup=row.method, showlegend=False),
                      row=1, col=2)
    fig.update_yaxes(range=[0, 1.1], row=1, col=1)
    fig.update_layout(barmode="group", height=380, margin=dict(l=40, r=20, t=50, b=40), legend=dict(orientation="h", y=-0.15))
    return fig


def breakdown_figure(rows, breakdown: str) -> go.Figure:
    """R@10 per group (modality or hop count), one bar per method."""
    fig = go.Figure()
    for method in dict.fromkeys(r.method for r in rows):
        mine = [r for r in rows if r.method == method and r.recall_at_10 is not None]
        fig.add_trace(go.Bar(name=method, x=[r.group for r in mine], y=[r.recall_at_10 for r in mine],
                             text=[f"n={r.scored}" for r in mine], textposition="outside"))
    fig.update_layout(barmode="group", height=320, title=f"R@10 by {breakdown}", yaxis=dict(range=[0, 1.15]),
                      margin=dict(l=40, r=20, t=50, b=40), xaxis=dict(type="category"))
    return fig


def render_status(reports, bench_name: str) -> str:
    first = reports[0]
    lines = [f'<div class="st-eval-done" data-questions="{first.questions}"><b>{esc(bench_name)}</b>: '
             f"{first.questions} questions × {len(reports)} methods, {EVAL_TOP_K} results per question.</div>"]
    failures = sorted({f for r in reports for f in r.ingest_failures})
    if failures:
        lines.append(error_box(f"{len(failures)} PDFs of the collection could not be ingested: " + "; ".join(failures[:5])))
    for r in reports:
        errors = [rec for rec in r.records if rec.error]
        if errors:
            lines.append(error_box(f"{r.method}: {len(errors)} questions failed, e.g. {errors[0].id}: {errors[0].error}"))
        llm_failure = r.llm_failure()
        if llm_failure:  # as the Ask tab's alert: these figures are the rules', not the model's
            failed = sum(rec.llm_error is not None for rec in r.records)
            lines.append(f'<div class="st-error st-llm-error" role="alert" data-method="{esc(r.method)}" '
                         f'data-llm-failed="{failed}">{esc(r.method)}: {esc(llm_failure)}</div>')
    scored = [r for r in reports if r.summary_line]
    if scored:
        items = "".join(f"<li><code>{esc(r.method)}</code> {esc(r.summary_line)}</li>" for r in scored)
        lines.append(f'<details class="st-eval-referee"><summary>score.py (the referee) says</summary><ul>{items}</ul></details>')
    return "".join(lines)


def ingest_note(bench_name: str, n_pdfs: int, pages: int, seconds: float) -> str:
    """What the first run of a collection costs before it asks anything, shown under the picker
    before Run is pressed: its corpus is ingested into a workspace of its own, once."""
    if n_pdfs == 0:
        return ""
    if pages == 0:
        return (f'<div class="st-muted st-eval-ingest" data-pages="0">{esc(bench_name)}: its {n_pdfs} PDFs are ingested; '
                "a run starts asking at once.</div>")
    return (
        f'<div class="st-note st-eval-ingest" data-pages="{pages}">Before the first question, the first run ingests '
        f"<b>{esc(bench_name)}</b>: {n_pdfs} PDFs, {pages} pages, about {esc(duration(seconds))} at this server's rate. "
        "It goes into the collection's own workspace (not your documents) and later runs reuse it.</div>"
    )


def progress_label(stage: str, done: int, total: int, method: str = "", doc: str = "") -> str:
    """The progress bar's words for where a run is: ingesting file i of N, warming a method up,
    asking question j of M with a method, scoring it."""
    if stage == "ingest":
        return f"Ingesting the collection: file {min(done + 1, total)} of {total}" + (f" ({doc})" if doc else "")
    if stage == "warm":
        return f"Loading the indexes for {method} (not timed)"
    if stage == "ask":
        return f"{method}: asking question {min(done + 1, total)} of {total}" if done < total else f"{method}: {total} questions asked"
    return f"{method}: scoring"


RUNNING = '<div class="st-eval-running" aria-busy="true"></div>'  # under the progress bar: nothing shows through


def _corpus_size(bench: Path) -> tuple[int, int]:
    """(PDFs, bytes) of a collection's corpus."""
    pdfs = list((bench / "corpus").glob("*.pdf"))
    return len(pdfs), sum(p.stat().st_size for p in pdfs)


def bench_choices(benches: list[Path], uploaded: list[tuple[str, str]]) -> list[tuple[str, str]]:
    listed = [(f"{b.name} ({_corpus_size(b)[0]} PDFs)", str(b)) for b in benches]
    return listed + [(f"{label} (uploaded)", path) for label, path in uploaded]


def smallest_bench(benches: list[Path]) -> Path | None:
    """The collection the tab starts on: the one with the fewest PDFs (then bytes), so a first
    Run ingests the least before it shows anything."""
    return min(benches, key=lambda b: (_corpus_size(b), b.name), default=None)


def bench_ingest_note(service: Service, bench_path: str, ws: Path) -> str:
    """ingest_note for a collection, from the page counts of its PDFs not yet in its workspace."""
    bench = Path(bench_path)
    pdfs = sorted((bench / "corpus").glob("*.pdf"))
    est = service.estimate_ingest(service.benchmark_workspace(bench, ws), pdfs)
    return ingest_note(bench.name, len(pdfs), est.pages, est.seconds)


def prepare_run(service: Service, bench: Path, ws: Path, chosen: list[str], opts: dict, progress) -> None:
    """Ingest the collection (once) and load each method's indexes with one untimed question,
    so that the first timed question does not pay for the index build."""

    def on_ingest(ev) -> None:
        if ev.stage == "open" and ev.total:
            progress(INGEST_SHARE * ev.done / ev.total, desc=progress_label("ingest", ev.done, ev.total, doc=ev.doc))

    bench_ws = service.prepare_benchmark(bench, ws, on_ingest)
    first = service.benchmark_questions(bench, ws, limit=1)
    for name in chosen if first else []:
        progress(INGEST_SHARE, desc=progress_label("warm", 0, 0, name))
        try:
            service.ask(bench_ws, first[0].question, method=name, top_k=EVAL_TOP_K, **opts)
        except StrataError as exc:  # the timed run asks again and records the error per question
            log.info("warm-up of %s on %s failed: %s", name, bench.name, exc)


def method_progress(progress, chosen: list[str]):
    """The progress sink of Service.evaluate: (index of the method, event) -> the bar, after prepare_run."""

    def on_progress(i: int, ev) -> None:
        if ev.stage == "ingest":
            return  # done by prepare_run(): every file is unchanged now
        part = 1.0 if ev.stage == "score" or not ev.total else ev.done / ev.total
        share = (1 - INGEST_SHARE) / len(chosen)
        progress(INGEST_SHARE + share * (i + part * 0.97), desc=progress_label(ev.stage, ev.done, ev.total, chosen[i]))

    return on_progress


# ---------------------------------------------------------------- the tab


@dataclass(slots=True)
class EvaluateTab:
    run_button: gr.Button


def build(service: Service, workspace: gr.State, session_settings: gr.State) -> EvaluateTab:
    names = [m.name for m in service.methods()]
    default_methods = [m for m in DEFAULT_METHODS if m in names] or names[:1]
    benches = service.benchmark_folders()
    choices = bench_choices(benches, [])
    first = smallest_bench(benches)
    with gr.Tab("Evaluate", id="evaluate") as tab:
        with gr.Row(equal_height=False):
            with gr.Column(scale=3):
                bench = gr.Dropdown(
                    choices=choices, value=str(first) if first else None, label="Benchmark collection",
                    info="Folders of the server's bench_root; an uploaded zip is added here.", elem_id="eval-bench",
                )
                methods = gr.CheckboxGroup(choices=names, value=default_methods, label="Methods", elem_id="eval-methods")
                limit = gr.Slider(1, 500, value=DEFAULT_LIMIT, step=1, label="Questions (the first N of the collection)", elem_id="eval-limit")
                scoped = gr.Checkbox(
                    value=False, label="Ask each question of its own documents (meta.doc_scope)", elem_id="eval-scoped",
                    info="Each question asked of the documents its meta.doc_scope names, as a person who knows the report would; rows read 'METHOD (scoped)'.",
                )
                ingest_info = gr.HTML(elem_id="eval-ingest-note")
                run_button = gr.Button("Run evaluation", variant="primary", elem_id="eval-run")
            with gr.Column(scale=2):
                upload = gr.File(
                    label="Or upload a benchmark as a .zip (corpus/*.pdf + questions.jsonl)", file_types=[".zip"], file_count="single",
                    elem_id="eval-upload", height=140,
                )
                upload_status = gr.HTML(elem_id="eval-upload-status")
        status = gr.HTML(BEFORE_RUNNING, elem_id="eval-status")
        metrics = gr.Dataframe(headers=TABLE_HEADERS, datatype="str", interactive=False, wrap=True, elem_id="eval-metrics", visible=False)
        plot = gr.Plot(label="Metrics per method", elem_id="eval-plot", visible=False)
        with gr.Row(visible=False) as downloads:
            csv_button = gr.DownloadButton("Download CSV", elem_id="eval-csv")
            json_button = gr.DownloadButton("Download JSON", elem_id="eval-json")
        with gr.Accordion("Breakdown by modality and hops", open=True, visible=False, elem_id="eval-breakdown-panel") as breakdown_panel:
            breakdown_by = gr.Radio([("Modality", "modality"), ("Hops", "hops")], value="modality", label="Break down by", elem_id="eval-breakdown-by")
            breakdown = gr.Dataframe(headers=BREAKDOWN_HEADERS, datatype="str", interactive=False, wrap=True, elem_id="eval-breakdown")
            breakdown_plot = gr.Plot(elem_id="eval-breakdown-plot")
        with gr.Accordion("Every question", open=False, visible=False, elem_id="eval-records-panel") as records_panel:
            records = gr.Dataframe(headers=RECORD_HEADERS, datatype="str", interactive=False, wrap=True, elem_id="eval-records", max_height=420)
        reports_state = gr.State([])
        uploaded_state = gr.State([])  # (label, path) of this session's uploaded collections

    @user_errors
    def unpack(path: str | None, workspace_value: str, uploaded: list):
        if not path:
            return gr.update(), "", uploaded
        ws = writable_workspace(workspace_value, Path(path).stat().st_size)
        folder = service.unpack_benchmark(Path(path), ws)
        questions = service.benchmark_questions(folder, ws)
        uploaded = [*uploaded, (folder.name, str(folder))]
        note = f'<div class="st-muted" data-uploaded="{esc(folder.name)}">Unpacked <b>{esc(folder.name)}</b>: {len(questions)} questions.</div>'
        return gr.update(choices=bench_choices(benches, uploaded), value=str(folder)), note, uploaded

    def breakdown_view(reports, by: str):
        rows = service.eval_rows(reports, by) if reports else []
        return {"headers": BREAKDOWN_HEADERS, "data": breakdown_table(rows)}, (breakdown_figure(rows, by) if rows else None)

    @user_errors
    def show_ingest_note(bench_path: str | None, workspace_value: str) -> str:
        return bench_ingest_note(service, bench_path, session_workspace(workspace_value)) if bench_path else ""

    @user_errors
    def run(workspace_value: str, settings, bench_path: str | None, chosen: list[str], n: float, by: str, scoped_run: bool,
            progress=gr.Progress()):
        ws = writable_workspace(workspace_value)  # the exports (and an uploaded collection's index) are written there
        if not bench_path:
            raise StrataError("Pick a benchmark collection (or upload a zip of one) first.")
        if not chosen:
            raise StrataError("Tick at least one method to evaluate.")
        opts = settings.ask_options()
        prepare_run(service, Path(bench_path), ws, chosen, opts, progress)
        reports = service.evaluate(
            Path(bench_path), ws, chosen, limit=int(n), top_k=EVAL_TOP_K, progress=method_progress(progress, chosen),
            scoped=bool(scoped_run), **opts,
        )
        overall = service.eval_rows(reports, "overall")
        csv_path, json_path = service.export_eval(reports, ws)
        table, fig = breakdown_view(reports, by)
        show = gr.update(visible=True)
        return (
            render_status(reports, Path(bench_path).name),
            gr.update(value={"headers": TABLE_HEADERS, "data": metric_table(overall)}, visible=True),
            gr.update(value=metrics_figure(overall), visible=True),
            show, gr.update(value=str(csv_path)), gr.update(value=str(json_path)),
            show, table, fig,
            show, {"headers": RECORD_HEADERS, "data": record_table(reports)},
            reports,
            show_ingest_note(bench_path, workspace_value),
        )

    upload.upload(unpack, inputs=[upload, workspace, uploaded_state], outputs=[bench, upload_status, uploaded_state], api_visibility="private")
    # In the run's concurrency group, in arrival order: a note computed before a run's ingest
    # could otherwise land after the run's own note and show the collection as not ingested
    # (seen as a flaky browser test under a two-core load).
    for event in (tab.select, bench.change):
        event(show_ingest_note, inputs=[bench, workspace], outputs=[ingest_info], show_progress="hidden",
              concurrency_limit=1, concurrency_id="evaluate", **PRIVATE)
    # The placeholder goes before the run starts, so the progress bar covers an empty box.
    run_button.click(lambda: RUNNING, outputs=[status], queue=False, **PRIVATE).then(
        run, inputs=[workspace, session_settings, bench, methods, limit, breakdown_by, scoped],
        outputs=[status, metrics, plot, downloads, csv_button, json_button, breakdown_panel, breakdown, breakdown_plot,
                 records_panel, records, reports_state, ingest_info],
        concurrency_limit=1, concurrency_id="evaluate", show_progress_on=[status], **PRIVATE,
    )
    breakdown_by.change(breakdown_view, inputs=[reports_state, breakdown_by], outputs=[breakdown, breakdown_plot], api_visibility="private")
    return EvaluateTab(run_button=run_button)
