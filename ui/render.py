"""Pure render functions: data model objects in, HTML strings (or table rows) out.

Everything that came from a PDF (file names, titles, section titles, block and cited text) goes
through `esc` before it is put into HTML, so a PDF cannot inject markup or script into the page.
This module does not call the service and holds no state.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from backend.types import (
    AskResult,
    Block,
    BlockKind,
    Citation,
    ClusterTasks,
    Document,
    FileReport,
    GraphCounts,
    IngestEstimate,
    IngestReport,
    NodeKind,
    ResultItem,
    Section,
    TableView,
)

# The ingest stages in the order the pipeline runs them (backend/ingest/pipeline.py).
INGEST_STAGES = ("open", "extract", "layout", "hierarchy", "components", "links", "encode", "store")
PATH_SEPARATOR = " > "
SNIPPET_CHARS = 160


def esc(value: object) -> str:
    """Escape any value for HTML text and attribute positions."""
    return html.escape(str(value), quote=True)


def snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def join_path(path: Iterable[str]) -> str:
    return PATH_SEPARATOR.join(path)


def empty_state(message: str, hint: str = "") -> str:
    hint_html = f'<div class="st-empty-hint">{esc(hint)}</div>' if hint else ""
    return f'<div class="st-empty"><div>{esc(message)}</div>{hint_html}</div>'


def error_box(message: str) -> str:
    return f'<div class="st-error" role="alert">{esc(message)}</div>'


# ---------------------------------------------------------------- library: progress


@dataclass(slots=True)
class FileProgress:
    """What the progress board knows about one file of an ingest batch."""

    file_name: str
    stage: str = "waiting"
    done: int = 0
    total: int = 0
    message: str = ""
    stages_seen: list[str] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        return self.stage in ("done", "failed")


def render_progress(files: list[FileProgress], elapsed_s: float, running: bool, cluster: ClusterTasks | None = None) -> str:
    """cluster: the tasks and nodes of an ingest on a Ray cluster (a line under the head), None locally."""
    if not files:
        return ""
    finished = sum(f.finished for f in files)
    head = "Ingesting" if running else "Finished"
    rows = "".join(_progress_row(f) for f in files)
    tasks = (
        f'<div class="st-progress-cluster st-muted">On the cluster: {cluster.running} tasks running, {cluster.done} done, '
        f"{cluster.failed} failed; {cluster.nodes} node{'' if cluster.nodes == 1 else 's'} in use</div>"
        if cluster is not None else ""
    )
    return (
        f'<div class="st-progress" data-running="{str(running).lower()}">'
        f'<div class="st-progress-head">{head}: {finished} of {len(files)} file(s) done '
        f'<span class="st-muted">({elapsed_s:.1f} s)</span></div>{tasks}'
        f'<table class="st-table"><thead><tr><th>File</th><th>Stages</th><th>Current stage</th><th>Progress</th></tr></thead>'
        f"<tbody>{rows}</tbody></table></div>"
    )


def _progress_row(f: FileProgress) -> str:
    chips = []
    for stage in INGEST_STAGES:
        if f.stage == "done" or (stage in f.stages_seen and stage != f.stage):
            cls = "st-chip st-chip-done"
        elif stage == f.stage:
            cls = "st-chip st-chip-active"
        else:
            cls = "st-chip"
        chips.append(f'<span class="{cls}">{esc(stage)}</span>')
    if f.stage == "failed":
        state = '<span class="st-badge st-badge-failed">failed</span>'
    elif f.stage == "done":
        state = f'<span class="st-badge st-badge-ok">{esc(f.message or "done")}</span>'
    else:
        state = f'<span class="st-stage">{esc(f.stage)}</span>'
    if f.total > 0 and not f.finished:
        pct = max(0.0, min(100.0, 100.0 * f.done / f.total))
        bar = (
            f'<div class="st-bar"><div class="st-bar-fill" style="width:{pct:.0f}%"></div></div>'
            f'<span class="st-muted">{f.done}/{f.total}</span>'
        )
    elif f.stage == "failed":  # red, as far as the file got: a full blue bar would read as done
        pct = 100.0 * f.done / f.total if f.total else 100.0
        bar = f'<div class="st-bar"><div class="st-bar-fill st-bar-failed" style="width:{pct:.0f}%"></div></div>'
    elif f.finished:
        bar = '<div class="st-bar"><div class="st-bar-fill" style="width:100%"></div></div>'
    else:
        bar = '<span class="st-muted">queued</span>'
    return (
        f'<tr data-file="{esc(f.file_name)}" data-stage="{esc(f.stage)}"><td class="st-file">{esc(f.file_name)}</td>'
        f'<td>{"".join(chips)}</td><td>{state}</td><td class="st-bar-cell">{bar}</td></tr>'
    )


# ---------------------------------------------------------------- library: report and documents

_STATUS_TEXT = {
    "ingested": "ingested",
    "replaced": "replaced (a changed version of this file was already in the workspace)",
    "unchanged": "unchanged (the same file is already in the workspace)",
    "failed": "failed",
}
# Counts shown first in a report; the rest follow in alphabetical order.
_HIDDEN_COUNTS = ("documents",)  # always 1 per file
_MAIN_COUNTS = ("sections", "paragraphs", "tables", "figures", "sentences", "rows", "link edges", "xref edges", "document links")


def render_report(report: IngestReport) -> str:
    if not report.files:
        return empty_state("No files were ingested.")
    unchanged = sum(f.status == "unchanged" for f in report.files)
    ingested = len(report.ok) - unchanged
    summary = (f"{ingested} of {len(report.files)} file(s) ingested" + (f", {unchanged} unchanged" if unchanged else "")
               + (f", {len(report.failed)} failed" if report.failed else ""))
    cards = "".join(_report_card(f) for f in report.files)
    return f'<div class="st-report"><div class="st-report-head">{esc(summary)}</div>{cards}</div>'


def _report_card(f: FileReport) -> str:
    badge = f'<span class="st-badge st-badge-{esc(f.status)}">{esc(f.status)}</span>'
    parts = [f'<div class="st-card st-card-{esc(f.status)}" data-file="{esc(f.file_name)}" data-status="{esc(f.status)}">']
    parts.append(f'<div class="st-card-title">{badge} <b>{esc(f.file_name)}</b>')
    if f.title:
        parts.append(f' <span class="st-muted">"{esc(f.title)}"</span>')
    parts.append("</div>")
    if f.status == "failed":
        parts.append(f'<div class="st-reason">Could not ingest this file: {esc(f.reason or "unknown reason")}</div>')
    else:
        detail = _STATUS_TEXT.get(f.status, f.status)
        facts = [f"{f.pages} page(s)", detail, f"{f.seconds:.1f} s"]
        parts.append(f'<div class="st-muted">{esc(" · ".join(facts))}</div>')
        if f.reason:
            parts.append(f'<div class="st-note">{esc(f.reason)}</div>')
        if f.counts:
            keys = [k for k in _MAIN_COUNTS if k in f.counts]
            keys += sorted(k for k in f.counts if k not in _MAIN_COUNTS and k not in _HIDDEN_COUNTS)
            cells = "".join(f'<span class="st-count"><b>{f.counts[k]}</b> {esc(k)}</span>' for k in keys)
            parts.append(f'<div class="st-counts">{cells}</div>')
    if f.warnings:
        items = "".join(f"<li>{esc(w)}</li>" for w in f.warnings)
        parts.append(f'<div class="st-warnings">Warnings:<ul>{items}</ul></div>')
    parts.append("</div>")
    return "".join(parts)


DOCUMENT_HEADERS = ["File", "Title", "Pages", "Hierarchy", "Warnings", "Id"]


def document_rows(docs: list[Document]) -> list[list]:
    """Rows of the documents table (plain values: the table component shows them as text)."""
    return [[d.file_name, d.title, d.pages, d.hierarchy_source, len(d.warnings), d.id] for d in docs]


def document_choices(docs: list[Document]) -> list[tuple[str, str]]:
    """(label, doc id) pairs for document pickers."""
    return [(f"{d.file_name} ({d.pages} p.)", d.id) for d in docs]


# ---------------------------------------------------------------- parse view


def render_legend(colors: Mapping[BlockKind, str]) -> str:
    items = "".join(
        f'<span class="st-legend-item"><span class="st-swatch" style="border-color:{esc(c)};background:{esc(c)}33"></span>'
        f"{esc(kind.value.replace('_', ' '))}</span>"
        for kind, c in colors.items()
    )
    return f'<div class="st-legend">{items}<span class="st-muted">Numbers give the reading order.</span></div>'


def section_choices(sections: list[Section]) -> list[tuple[str, str]]:
    """(indented label, section id) pairs for the jump-to-section picker."""
    return [("\u2003" * max(0, s.level - 1) + f"{s.title} (p. {s.page})", s.id) for s in sections if s.level > 0]


def render_section_tree(sections: list[Section], current: str | None = None, page: int | None = None) -> str:
    """The section tree as nested lists; each entry carries data-section for click navigation."""
    if not sections:
        return empty_state("No sections were found in this document.")
    children: dict[str | None, list[Section]] = {}
    ids = {s.id for s in sections}
    for s in sections:
        parent = s.parent if s.parent in ids else None
        children.setdefault(parent, []).append(s)

    def branch(parent: str | None) -> str:
        items = []
        for s in children.get(parent, []):
            classes = ["st-sec"]
            if s.id == current:
                classes.append("st-sec-current")
            elif page is not None and s.page == page:
                classes.append("st-sec-onpage")
            conf_cls = "st-conf-low" if s.confidence < 0.6 else ""
            meta = (
                f'<span class="st-sec-meta">p. {s.page} · L{s.level} · '
                f'<span class="{conf_cls}">conf {s.confidence:.2f}</span> · {esc(s.source)}</span>'
            )
            items.append(
                f'<li><span class="{" ".join(classes)}" data-section="{esc(s.id)}" data-page="{s.page}" '
                f'title="Show page {s.page}">{esc(s.title)}</span> {meta}{branch(s.id)}</li>'
            )
        return f"<ul>{''.join(items)}</ul>" if items else ""

    return f'<div class="st-tree">{branch(None)}</div>'


def render_blocks(blocks: list[Block], colors: Mapping[BlockKind, str], selected: int | None = None) -> str:
    """The blocks of one page in reading order, numbered like the boxes on the page image. Each row
    carries data-block (its index) so a click can select it; `selected` marks the selected one."""
    if not blocks:
        return empty_state("No layout blocks on this page.", "It may be an empty or image-only page.")
    rows = []
    for i, b in enumerate(blocks):
        color = colors.get(b.kind, "#000000")
        extra = []
        if b.level:
            extra.append(f"L{b.level}")
        if b.confidence is not None:
            extra.append(f"conf {b.confidence:.2f}")
        if b.kind == BlockKind.CODE:
            text = f'<pre class="st-code">{esc(b.text)}</pre>'
        else:
            text = esc(b.text).replace("\n", "<br>") if b.kind == BlockKind.TABLE else esc(snippet(b.text, 400))
        row_cls = "st-block-row st-block-selected" if i == selected else "st-block-row"
        rows.append(
            f'<tr class="{row_cls}" data-block="{i}" title="Show this block on the page">'
            f'<td class="st-num">{i + 1}</td><td class="st-nowrap"><span class="st-kind" style="border-color:{esc(color)}">'
            f'{esc(b.kind.value)}</span> <span class="st-muted">{esc(" ".join(extra))}</span></td>'
            f'<td class="st-block-text">{text}</td></tr>'
        )
    return (
        '<div class="st-scroll"><table class="st-table st-blocks"><thead><tr><th>#</th><th>Kind</th><th>Text</th></tr>'
        f'</thead><tbody>{"".join(rows)}</tbody></table></div>'
    )


# ---------------------------------------------------------------- ask view


def render_answer(result: AskResult) -> str:
    """The answer (or the abstention), under an error box when the LLM server failed during the
    question: then the rules answered in its place, and the answer is labelled so."""
    a = result.answer
    failed = (
        f'<div class="st-error st-llm-error" role="alert" id="ask-llm-error">{esc(result.llm_error)}</div>'
        if result.llm_error else ""
    )
    if a.abstained:
        reason = f'<div class="st-muted">{esc(a.reason)}</div>' if a.reason else ""
        return failed + (
            '<div class="st-answer st-abstain" data-abstained="true"><div class="st-answer-label">Not enough evidence</div>'
            f'<div>The documents do not answer this question well enough; no answer is given.</div>{reason}</div>'
        )
    marks = " ".join(citation_chip(c) for c in a.citations)
    label = "Answer by the rules backend, in place of the failed LLM" if result.llm_error else "Answer"
    return failed + (
        f'<div class="st-answer" data-abstained="false" data-llm-failed="{str(bool(result.llm_error)).lower()}">'
        f'<div class="st-answer-label">{label} <span class="st-muted">confidence {a.confidence:.2f}</span></div>'
        f'<div class="st-answer-text">{esc(a.text)} {marks}</div>'
        f'<div class="st-muted">{esc(a.reason)}</div></div>'
    )


def citation_label(c: Citation) -> str:
    return f"[{c.n}] {c.doc}, p. {c.page}"


def citation_chip(c: Citation) -> str:
    """A numbered chip that opens citation n on its page (the Ask tab listens for data-cite clicks)."""
    return (
        f'<button type="button" class="st-cite-chip" data-cite="{c.n}" title="Show {esc(citation_label(c))} with the cited '
        f'{esc(c.kind.value)} highlighted">[{c.n}]</button>'
    )


def quote_or_code(text: str, code: bool) -> str:
    """A unit's text as a quote, or as preformatted code (line breaks and indentation kept)."""
    return f'<pre class="st-code">{esc(text)}</pre>' if code else f'<blockquote class="st-quote">{esc(text)}</blockquote>'


def render_citations(citations: list[Citation], selected: int | None = None) -> str:
    if not citations:
        return empty_state("No citations.")
    items = []
    for c in citations:
        cls = "st-citation st-citation-selected" if c.n == selected else "st-citation"
        items.append(
            f'<li class="{cls}" data-n="{c.n}" data-cite="{c.n}"><div>{citation_chip(c)} <span class="st-doc">{esc(c.doc)}</span>, '
            f'page {c.page} <span class="st-kind">{esc(c.kind.value)}</span></div>'
            f'<div class="st-path">{esc(join_path(c.section_path))}</div>'
            f'{quote_or_code(c.text, c.kind == NodeKind.CODE)}'
            f'<button type="button" class="st-graph-link" data-graph-node="{esc(c.node_id)}" title="Show this passage in the Graph tab">'
            "show in graph</button></li>"
        )
    return f'<ol class="st-citations">{"".join(items)}</ol>'


RESULT_HEADERS = ["Rank", "Doc", "Page", "Kind", "Section path", "Score", "Text"]


def result_rows(results: list[ResultItem]) -> list[list]:
    return [
        [r.rank, r.doc, r.page, r.kind.value, join_path(r.section_path[1:] or r.section_path), round(r.score, 4), snippet(r.text)]
        for r in results
    ]


def render_run_facts(result: AskResult, run_id: str = "") -> str:
    """The run's method, the stages it selected, parameters, timings and LLM use. `run_id` (new for
    every finished call) goes into data-run: the signal that a call finished, for scripts and
    browser tests; data-label and data-stages name the run as Compare does ("hikey + stages")."""
    timings = " · ".join(f"{esc(k)} {v:.0f} ms" for k, v in result.timings_ms.items())
    params = ", ".join(f"{esc(k)}={esc(v)}" for k, v in result.trace.params.items())
    stages = ", ".join(result.stages) if result.stages else "none (method as published)"
    return (
        f'<div class="st-facts" data-run="{esc(run_id)}" data-method="{esc(result.method)}" '
        f'data-label="{esc(result.label or result.method)}" data-stages="{esc(",".join(result.stages))}">'
        f'<span><b>Method</b> {esc(result.method)}</span>'
        f'<span data-field="stages"><b>Stages</b> {esc(stages)}</span>'
        + (f"<span><b>Params</b> {params}</span>" if params else "")
        + f"<span><b>Timings</b> {timings}</span>"
        f"<span><b>LLM</b> {esc(result.llm_backend)}, {result.llm_calls} call(s), {result.llm_tokens} token(s)</span></div>"
    )


# ---------------------------------------------------------------- library: estimate and graph counts; parse: selected unit

_ESTIMATE_STATUS = {"new": "new", "replaces": "replaces", "unchanged": "skipped", "invalid": "will fail"}


def duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def file_size(n_bytes: int) -> str:
    return f"{n_bytes / 2**20:.1f} MiB" if n_bytes >= 2**20 else f"{max(1, round(n_bytes / 1024))} KB"


def render_estimate(est: IngestEstimate) -> str:
    """What pressing Ingest will cost: pages to process, time at the measured rate, and warnings."""
    if not est.files:
        return ""
    basis = "measured on this server" if est.measured else "typical for a CPU; not yet measured on this server"
    head = (
        f"About <b>{esc(duration(est.seconds))}</b> for <b>{est.pages}</b> page(s) to process "
        f'<span class="st-muted">({est.seconds_per_page:.2f} s per page, {esc(basis)})</span>'
        if est.pages
        else "Nothing to process: every chosen file is already in the workspace or cannot be read."
    )
    rows = "".join(
        f'<tr data-file="{esc(f.file_name)}" data-status="{esc(f.status)}"><td class="st-file">{esc(f.file_name)}</td>'
        f'<td class="st-num">{f.pages or ""}</td><td class="st-num">{file_size(f.bytes) if f.bytes else ""}</td>'
        f'<td><span class="st-badge st-badge-{"failed" if f.status == "invalid" else "ok" if f.status != "unchanged" else "unchanged"}">'
        f'{esc(_ESTIMATE_STATUS[f.status])}</span> <span class="st-muted">{esc(f.reason)}</span></td></tr>'
        for f in est.files
    )
    warnings = "".join(f"<li>{esc(w)}</li>" for w in est.warnings)
    return (
        f'<div class="st-estimate" data-pages="{est.pages}" data-seconds="{est.seconds:.1f}">'
        f'<div class="st-estimate-head">Before you press Ingest: {head}</div>'
        f'<table class="st-table"><thead><tr><th>File</th><th>Pages</th><th>Size</th><th>Will be</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>"
        + (f'<div class="st-warnings"><ul>{warnings}</ul></div>' if warnings else "")
        + "</div>"
    )


_LAYER_TEXT = {"document": "documents + sections", "component": "components", "subcomponent": "subcomponents", "entity": "entities"}


def render_graph_counts(counts: GraphCounts, growing: bool = False) -> str:
    """One line: the workspace graph's nodes per layer and edges (updated as documents finish)."""
    if counts.nodes == 0:
        return ""
    cells = "".join(
        f'<span class="st-count"><b>{counts.by_layer[k]}</b> {esc(text)}</span>' for k, text in _LAYER_TEXT.items() if counts.by_layer.get(k)
    )
    docs = counts.by_kind.get("document", 0)
    head = "Graph so far" if growing else "Graph of this workspace"
    return (
        f'<div class="st-graph-counts" data-nodes="{counts.nodes}" data-edges="{counts.edges}" data-documents="{docs}">'
        f'<b>{head}:</b> <span class="st-count"><b>{docs}</b> document(s)</span>{cells}'
        f'<span class="st-count"><b>{counts.edges}</b> edges</span>'
        '<span class="st-muted">(see the Graph tab)</span></div>'
    )


def render_table(view: TableView) -> str:
    """A table component's cells as an HTML table (every cell escaped)."""
    head = "".join(f"<th>{esc(h)}</th>" for h in view.header)
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in view.rows)
    caption = f"<caption>{esc(view.caption)}</caption>" if view.caption else ""
    note = f'<div class="st-muted">{esc(view.note)}</div>' if view.note else ""
    return (
        f'<div class="st-scroll"><table class="st-cells" data-node="{esc(view.node_id)}">{caption}'
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>{note}"
    )


def render_unit(block: Block, number: int, color: str, table: TableView | None = None) -> str:
    """The selected block of the parse view: what and where it is, its text, or its cells for a table."""
    facts = [f"#{number} {block.kind.value.replace('_', ' ')}", f"page {block.page}", "box " + ", ".join(f"{v:.0f}" for v in block.bbox)]
    if block.level:
        facts.insert(1, f"level {block.level}")
    body = render_table(table) if table is not None else quote_or_code(block.text, block.kind == BlockKind.CODE)
    return (
        f'<div class="st-unit" data-block="{number - 1}" data-kind="{esc(block.kind.value)}">'
        f'<div><span class="st-kind" style="border-color:{esc(color)}">{esc(block.kind.value)}</span> '
        f'<b>Selected</b> <span class="st-muted">{esc(" · ".join(facts))}</span></div>{body}</div>'
    )

