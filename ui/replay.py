"""The run view of the Ask tab: a retriever's trace replayed one step at a time, and the packed
evidence drawn as a tree under its token budget.

Pure renderers first (typed trace, pack and `NodeBrief`s in, HTML out): `replay_frames` gives one
HTML frame per trace step, each drawn by the view for its `kind` (beam, agent, iteration,
route_docs, rank_sections, entities, fuse, decompose, rank; stage and profile for Strata's own
stages after the method and the corpus profile; any other kind as JSON); `render_replay_header`
the method, the stages selected, LLM use and notes; `render_pack_tree` headers -> anchors ->
siblings -> associates with a token bar. Node ids are shown with their document, page and a text
snippet. Every text that came from a PDF goes through `esc`.

Then `build_replay`, the Gradio wiring of the replay: a step slider, a play button driven by a
`gr.Timer`, and clickable step chips. This module does not call the service, ask, or repack;
ui/ask.py does that and hands the frames in.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import gradio as gr

from backend.service import NodeBrief
from backend.types import (
    AgentStep,
    AskResult,
    BeamStep,
    DecomposeStep,
    EntityStep,
    EvidencePack,
    FuseStep,
    IterationStep,
    NodeKind,
    PackedUnit,
    ProfileStep,
    RankSectionsStep,
    RankStep,
    RouteDocsStep,
    ScoredNode,
    StageMove,
    StageStep,
    SubQuery,
    Trace,
)
from ui.render import empty_state, esc, join_path, snippet

Briefs = Mapping[str, NodeBrief]

TABLE_LIMIT = 15  # rows of a ranked list before "... and N more"
EDGE_LIMIT = 25  # scored edges shown per beam iteration
PLAY_TICK_S = 1.2  # seconds per replay step while playing
NO_RUN = empty_state(
    "Nothing to replay yet.", "Ask a question (or load a run JSON below); each step of the retriever shows here."
)
NO_STEPS = empty_state("This method recorded no steps.")

# ---------------------------------------------------------------- small pieces


def node_ref(node_id: str, nodes: Briefs, *, text_chars: int = 90) -> str:
    """A node id as its document, page, kind and a text snippet (the full id and text on hover)."""
    brief = nodes.get(node_id)
    if brief is None:
        return f'<span class="st-node st-node-unknown" data-node="{esc(node_id)}"><code>{esc(node_id)}</code></span>'
    kind = brief.kind.value if isinstance(brief.kind, NodeKind) else str(brief.kind)
    if kind == NodeKind.DOCUMENT.value:
        where, text = brief.doc, snippet(brief.text.split("\n", 1)[0], text_chars)
    elif kind == NodeKind.SECTION.value:
        where, text = f"{brief.doc} p.{brief.page}", snippet(join_path(brief.section_path[1:]) or brief.text, text_chars)
    else:
        where, text = f"{brief.doc} p.{brief.page}", snippet(brief.text, text_chars) if text_chars else ""
    label = brief.label if brief.label and kind != NodeKind.ENTITY.value else kind
    title = f"{node_id}\n{snippet(brief.text, 400)}"
    body = f' <span class="st-node-text">{esc(text)}</span>' if text else ""
    return (
        f'<span class="st-node" data-node="{esc(node_id)}" title="{esc(title)}"><span class="st-node-where">{esc(where)}</span> '
        f'<span class="st-kind">{esc(label)}</span>{body}</span>'
    )


def score_color(t: float) -> tuple[str, str]:
    """(background, text colour) of a score at position t in [0, 1] of a light-to-dark blue scale."""
    t = max(0.0, min(1.0, t))
    lo, hi = (239, 246, 255), (30, 64, 175)
    r, g, b = (round(a + (z - a) * t) for a, z in zip(lo, hi))
    return f"rgb({r},{g},{b})", "#ffffff" if t > 0.5 else "#0f172a"


def _score_cell(score: float, lo: float, hi: float) -> str:
    t = (score - lo) / (hi - lo) if hi > lo else 1.0
    bg, fg = score_color(t)
    return f'<td class="st-num st-score" style="background:{bg};color:{fg}">{score:.3f}</td>'


def _score_range(scores: Sequence[float]) -> tuple[float, float]:
    return (min(scores), max(scores)) if scores else (0.0, 1.0)


def _scale_legend(lo: float, hi: float) -> str:
    stops = ", ".join(score_color(t)[0] for t in (0.0, 0.5, 1.0))
    return (
        f'<div class="st-scale"><span>{lo:.3f}</span><span class="st-scale-bar" style="background:linear-gradient(90deg, {stops})">'
        f"</span><span>{hi:.3f}</span></div>"
    )


def _more(total: int, shown: int) -> str:
    return f'<div class="st-muted">… and {total - shown} more</div>' if total > shown else ""


def _ranked_table(items: Sequence[ScoredNode], nodes: Briefs, limit: int = TABLE_LIMIT, why: bool = True) -> str:
    if not items:
        return '<div class="st-muted">nothing</div>'
    lo, hi = _score_range([c.score for c in items])
    rows = "".join(
        f'<tr><td class="st-num">{i}</td><td>{node_ref(c.node_id, nodes)}</td>{_score_cell(c.score, lo, hi)}'
        + (f'<td class="st-muted">{esc(c.why)}</td>' if why else "")
        + "</tr>"
        for i, c in enumerate(items[:limit], 1)
    )
    head = "<th>#</th><th>Node</th><th>Score</th>" + ("<th>Why</th>" if why else "")
    return f'<table class="st-table st-replay-table"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>{_more(len(items), limit)}'


def _id_list(ids: Sequence[str], nodes: Briefs, cls: str = "", limit: int = 40) -> str:
    if not ids:
        return '<span class="st-muted">none</span>'
    items = "".join(f'<li class="{cls}">{node_ref(i, nodes, text_chars=60)}</li>' for i in ids[:limit])
    return f'<ul class="st-idlist">{items}</ul>{_more(len(ids), limit)}'


def _subqueries_before(trace: Trace, index: int) -> list[SubQuery]:
    """The subqueries in force at step `index`: those of the last decompose step before it."""
    for step in reversed(trace.steps[:index]):
        if isinstance(step, DecomposeStep):
            return step.subqueries
    return []


# ---------------------------------------------------------------- step views: each returns (title, body)


def _decompose_view(step: DecomposeStep, trace: Trace, index: int, nodes: Briefs) -> tuple[str, str]:
    rows = "".join(
        f'<tr data-status="{esc(q.status)}"><td class="st-num">q{i}</td><td>{esc(q.text)}</td>'
        f'<td><span class="st-modality st-modality-{esc(q.modality)}">{esc(q.modality)}</span></td>'
        f'<td>{esc(", ".join(f"q{d}" for d in q.depends_on) or "-")}</td>'
        f'<td><span class="st-status st-status-{esc(q.status)}">{esc(q.status)}</span></td></tr>'
        for i, q in enumerate(step.subqueries)
    )
    table = (
        '<table class="st-table st-replay-table"><thead><tr><th>#</th><th>Subquery</th><th>Modality</th><th>Needs</th>'
        f"<th>Status</th></tr></thead><tbody>{rows}</tbody></table>"
    )
    reason = f'<div class="st-muted">{esc(step.reason)}</div>' if step.reason else ""
    return f"Decompose the question into {len(step.subqueries)} subquer{'y' if len(step.subqueries) == 1 else 'ies'} ({step.backend})", reason + table


def _rank_view(step: RankStep, trace: Trace, index: int, nodes: Briefs) -> tuple[str, str]:
    return f"{step.label} ({step.index}, {len(step.candidates)} candidates)", _ranked_table(step.candidates, nodes)


def _route_docs_view(step: RouteDocsStep, trace: Trace, index: int, nodes: Briefs) -> tuple[str, str]:
    lo, hi = _score_range([d.score for d in step.docs])
    rows = "".join(
        f'<tr class="{"st-kept" if i < step.kept else "st-dropped"}"><td class="st-num">{i + 1}</td><td>{esc(d.file_name)}</td>'
        f'<td class="st-num">{d.bm25:.3f}</td><td class="st-num">{d.dense:.3f}</td><td class="st-num">{d.evidence:.3f}</td>'
        f'{_score_cell(d.score, lo, hi)}<td>{"routed" if i < step.kept else "dropped"}</td></tr>'
        for i, d in enumerate(step.docs)
    )
    table = (
        '<table class="st-table st-replay-table"><thead><tr><th>#</th><th>Document</th><th>Card BM25</th><th>Card dense</th>'
        f"<th>Best unit</th><th>Score</th><th></th></tr></thead><tbody>{rows}</tbody></table>"
    )
    return f"Route documents: {step.kept} of {len(step.docs)} go on to the section stage (alpha {step.alpha:g})", table


def _rank_sections_view(step: RankSectionsStep, trace: Trace, index: int, nodes: Briefs) -> tuple[str, str]:
    lo, hi = _score_range([s.final for s in step.sections])
    rows = "".join(
        f'<tr><td class="st-num">{i}</td><td>{esc(join_path(s.path[1:] or s.path))}</td><td class="st-num">{s.doc_score:.3f}</td>'
        f'<td class="st-num">{s.section_score:.3f}</td>{_score_cell(s.final, lo, hi)}<td>{node_ref(s.anchor, nodes, text_chars=70)}</td></tr>'
        for i, s in enumerate(step.sections[:TABLE_LIMIT], 1)
    )
    table = (
        '<table class="st-table st-replay-table"><thead><tr><th>#</th><th>Section</th><th>Doc</th><th>Section</th><th>Final</th>'
        f"<th>Best unit (anchor)</th></tr></thead><tbody>{rows}</tbody></table>{_more(len(step.sections), TABLE_LIMIT)}"
    )
    return f"Rank sections of the routed documents (final = {step.lam:g} * doc + {1 - step.lam:g} * section)", table


def _beam_view(step: BeamStep, trace: Trace, index: int, nodes: Briefs) -> tuple[str, str]:
    subqueries = _subqueries_before(trace, index)
    kept = set(step.kept)
    edges = sorted(step.edges, key=lambda e: -e.score)
    lo, hi = _score_range([e.score for e in edges])

    # For each subquery, the subcomponent that won it on the best-scoring edge.
    winners: dict[int, tuple[float, str, str]] = {}
    for e in edges:
        for m in e.matches:
            if m.subquery not in winners or m.score > winners[m.subquery][0]:
                winners[m.subquery] = (m.score, m.node_id, f"{e.src} → {e.dst}")
    win_rows = "".join(
        f'<tr><td class="st-num">q{q}</td><td>{esc(subqueries[q].text) if q < len(subqueries) else ""}</td>'
        f"<td>{node_ref(node_id, nodes, text_chars=80)}</td><td class=\"st-num\">{score:.3f}</td></tr>"
        for q, (score, node_id, _) in sorted(winners.items())
    )
    winners_html = (
        '<div class="st-replay-sub">Winning subcomponent per subquery</div><table class="st-table st-replay-table"><thead><tr>'
        f"<th>#</th><th>Subquery</th><th>Subcomponent</th><th>Similarity</th></tr></thead><tbody>{win_rows}</tbody></table>"
        if win_rows
        else ""
    )

    def match_list(e) -> str:
        return " ".join(
            f'<span class="st-match" title="{esc(m.node_id)}">q{m.subquery}: {node_ref(m.node_id, nodes, text_chars=40)} '
            f"<b>{m.score:.3f}</b></span>"
            for m in e.matches
        )

    edge_rows = "".join(
        f'<tr class="{"st-kept" if (e.src in kept or e.dst in kept) else ""}"><td>{node_ref(e.src, nodes, text_chars=40)}</td>'
        f'<td class="st-edge-kind">{esc(e.edge_kind)}{" · one-sided" if e.one_sided else ""}</td>'
        f"<td>{node_ref(e.dst, nodes, text_chars=40)}</td>{_score_cell(e.score, lo, hi)}<td>{match_list(e)}</td></tr>"
        for e in edges[:EDGE_LIMIT]
    )
    edges_html = (
        f'<div class="st-replay-sub">Scored edges (best first; kept rows marked) {_scale_legend(lo, hi)}</div>'
        '<div class="st-scroll"><table class="st-table st-replay-table st-edges"><thead><tr><th>From</th><th>Edge</th><th>To</th>'
        f"<th>Score</th><th>Subquery matches</th></tr></thead><tbody>{edge_rows}</tbody></table></div>{_more(len(edges), EDGE_LIMIT)}"
        if edges
        else '<div class="st-muted">No edges were scored in this iteration.</div>'
    )
    frontier = [n for n in step.frontier]
    lists = (
        '<div class="st-replay-cols">'
        f'<div><div class="st-replay-sub">Frontier ({len(frontier)})</div>{_id_list(frontier, nodes, limit=15)}</div>'
        f'<div><div class="st-replay-sub">Kept ({len(step.kept)})</div>{_id_list(step.kept, nodes, "st-kept", limit=15)}</div>'
        f'<div><div class="st-replay-sub">Pruned ({len(step.pruned)})</div>{_id_list(step.pruned, nodes, "st-pruned", limit=15)}</div>'
        "</div>"
    )
    title = (
        f"Beam iteration {step.iteration}: expanded {len(step.frontier)} node(s), scored {len(step.edges)} edge(s), "
        f"kept {len(step.kept)}, pruned {len(step.pruned)}"
    )
    return title, winners_html + edges_html + lists


_OUTCOME_COLOR = {"success": "#16a34a", "failure": "#dc2626", "planned": "#2563eb", "stopped": "#64748b"}
_DX, _R = 96, 15  # timeline geometry: step spacing, circle radius (px)


def _strategy_text(step: AgentStep) -> str:
    s = step.strategy
    return f"{s.hop} hop, granularity g{s.granularity}, reasoning {s.reasoning}" if s else "-"


def _cost_text(step: AgentStep) -> str:
    return f"{step.seconds:.2f} s · {step.llm_calls} call(s) · {step.llm_tokens} tok"


def agent_timeline_svg(agents: Sequence[AgentStep], current: int | None) -> str:
    """FiF's actions as circles on a line (colour = outcome, ring = current step, faded = not yet
    reached), with each backtrack drawn as an arrow from its step back to the re-anchored step."""
    if not agents:
        return ""
    x_of = {a.step: 30 + i * _DX for i, a in enumerate(agents)}
    reached = {a.step for a in agents if current is None or a.step <= current}
    width = 60 + (len(agents) - 1) * _DX
    arcs = [a for a in agents if a.backtrack_to in x_of and a.step in reached]

    def lift(a: AgentStep) -> int:  # arc height grows with the distance it spans
        return 28 + min(40, abs(x_of[a.step] - x_of[a.backtrack_to]) // 6)

    axis_y = _R + 6 + (max(lift(a) for a in arcs) if arcs else 0)  # room above the axis for the arcs
    parts = [
        f'<svg class="st-timeline" width="{width}" height="{axis_y + 52}" viewBox="0 0 {width} {axis_y + 52}" role="img" '
        'aria-label="Agent actions; arrows are backtracks">',
        '<defs><marker id="st-arrow" viewBox="0 0 10 10" refX="8" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
        '<path d="M0,0 L10,5 L0,10 z" fill="#b45309"/></marker></defs>',
        f'<line x1="{x_of[agents[0].step]}" y1="{axis_y}" x2="{x_of[agents[-1].step]}" y2="{axis_y}" stroke="#cbd5e1" stroke-width="2"/>',
    ]
    for a in arcs:
        x1, x0, up = x_of[a.step], x_of[a.backtrack_to], lift(a)
        parts.append(
            f'<path class="st-backtrack" data-from="{a.step}" data-to="{a.backtrack_to}" d="M{x1},{axis_y - _R} C{x1},{axis_y - _R - up} '
            f'{x0},{axis_y - _R - up} {x0},{axis_y - _R - 2}" fill="none" stroke="#b45309" stroke-width="2" stroke-dasharray="5 3" '
            'marker-end="url(#st-arrow)"><title>backtrack: re-anchored to step '
            f"{a.backtrack_to}</title></path>"
        )
    for a in agents:
        x = x_of[a.step]
        color = _OUTCOME_COLOR.get(a.outcome, "#64748b")
        opacity = "1" if a.step in reached else "0.25"
        ring = ' stroke="#0f172a" stroke-width="3"' if a.step == current else ' stroke="#ffffff" stroke-width="2"'
        parts.append(
            f'<g class="st-agent-node" data-step="{a.step}" data-outcome="{esc(a.outcome)}" opacity="{opacity}">'
            f'<circle cx="{x}" cy="{axis_y}" r="{_R}" fill="{color}"{ring}><title>{esc(a.action)}: {esc(a.outcome)}</title></circle>'
            f'<text x="{x}" y="{axis_y + 5}" text-anchor="middle" font-size="12" fill="#ffffff" font-weight="700">{a.step}</text>'
            f'<text x="{x}" y="{axis_y + _R + 16}" text-anchor="middle" font-size="11" fill="#0f172a">{esc(a.action)}</text>'
            f'<text x="{x}" y="{axis_y + _R + 30}" text-anchor="middle" font-size="10" fill="#64748b">{esc(a.outcome)}</text></g>'
        )
    parts.append("</svg>")
    return f'<div class="st-timeline-wrap">{"".join(parts)}</div>'


def _agent_view(step: AgentStep, trace: Trace, index: int, nodes: Briefs) -> tuple[str, str]:
    agents = [s for s in trace.steps if isinstance(s, AgentStep)]
    legend = "".join(
        f'<span class="st-legend-item"><span class="st-dot" style="background:{c}"></span>{esc(o)}</span>'
        for o, c in _OUTCOME_COLOR.items()
    ) + '<span class="st-legend-item"><span class="st-backtrack-key"></span>backtrack</span>'
    rows = "".join(
        f'<tr class="{"st-current" if a.step == step.step else ""}" data-agent-step="{a.step}"><td class="st-num">{a.step}</td>'
        f'<td><span class="st-action st-action-{esc(a.action)}">{esc(a.action)}</span></td><td>{esc(_strategy_text(a))}</td>'
        f'<td><span class="st-status st-status-{esc(a.outcome)}">{esc(a.outcome)}</span></td><td class="st-num">{len(a.found)}</td>'
        f'<td>{"↩ step " + str(a.backtrack_to) if a.backtrack_to is not None else ""}</td>'
        f'<td class="st-nowrap">{esc(_cost_text(a))}</td></tr>'
        for a in agents
        if a.step <= step.step
    )
    table = (
        '<table class="st-table st-replay-table"><thead><tr><th>#</th><th>Action</th><th>Strategy</th><th>Outcome</th>'
        f"<th>Found</th><th>Backtrack</th><th>Cost</th></tr></thead><tbody>{rows}</tbody></table>"
    )
    detail = [
        f'<div class="st-agent-detail"><div><b>Step {step.step}</b>: <span class="st-action st-action-{esc(step.action)}">'
        f'{esc(step.action)}</span> → <span class="st-status st-status-{esc(step.outcome)}">{esc(step.outcome)}</span> '
        f'<span class="st-muted">({esc(_cost_text(step))})</span></div>'
    ]
    if step.subquery:
        detail.append(f"<div><b>Subquery</b> {esc(step.subquery)}</div>")
    if step.strategy:
        detail.append(f"<div><b>Strategy</b> {esc(_strategy_text(step))}</div>")
    if step.anchor:
        detail.append(f"<div><b>Anchor</b> {_id_list(step.anchor, nodes, limit=8)}</div>")
    if step.backtrack_to is not None:
        detail.append(f'<div class="st-backtrack-note">↩ Backtracked: re-anchored to the context of step {step.backtrack_to}.</div>')
    if step.reason:
        detail.append(f'<div class="st-muted">{esc(step.reason)}</div>')
    if step.found:
        detail.append(f'<div class="st-replay-sub">Found ({len(step.found)})</div>{_ranked_table(step.found, nodes, limit=10)}')
    detail.append("</div>")
    title = f"Agent step {step.step}: {step.action}" + (f" ({step.outcome})" if step.action != "stop" else "")
    return title, f'<div class="st-legend">{legend}</div>{agent_timeline_svg(agents, step.step)}{table}{"".join(detail)}'


def _iteration_view(step: IterationStep, trace: Trace, index: int, nodes: Briefs) -> tuple[str, str]:
    total = sum(isinstance(s, IterationStep) for s in trace.steps)
    queries = "".join(f"<li>{esc(q)}</li>" for q in step.queries)
    body = (
        f'<div class="st-replay-sub">Queries ({len(step.queries)})</div><ol class="st-queries">{queries}</ol>'
        f'<div class="st-replay-sub">Found ({len(step.found)})</div>{_ranked_table(step.found, nodes, limit=10)}'
        f'<div class="st-replay-sub">Reasoning record</div><pre class="st-pre st-record">{esc(step.record or "(empty)")}</pre>'
    )
    return f"Iteration {step.iteration} of {total}: {len(step.queries)} quer{'y' if len(step.queries) == 1 else 'ies'}, {step.llm_calls} LLM call(s)", body


def _entities_view(step: EntityStep, trace: Trace, index: int, nodes: Briefs) -> tuple[str, str]:
    names = {e.node_id: e.name for e in step.entities}

    def entity(node_id: str) -> str:
        if node_id in names:
            return f'<span class="st-entity" title="{esc(node_id)}">{esc(names[node_id])}</span>'
        brief = nodes.get(node_id)
        name = snippet(brief.text, 50) if brief else node_id
        return f'<span class="st-entity st-entity-other" title="{esc(node_id)}">{esc(name)}</span>'

    lo, hi = _score_range([e.score for e in step.entities])
    ent_rows = "".join(
        f'<tr><td class="st-num">{i}</td><td>{entity(e.node_id)}</td>{_score_cell(e.score, lo, hi)}</tr>'
        for i, e in enumerate(step.entities, 1)
    )
    edge_rows = "".join(
        f'<tr><td>{entity(e.src)}</td><td class="st-relation">{esc(e.relation)}</td><td>{entity(e.dst)}</td>'
        f'<td class="st-num">{e.score:.3f}</td></tr>'
        for e in step.edges[:TABLE_LIMIT * 2]
    )
    body = (
        '<div class="st-replay-cols"><div>'
        f'<div class="st-replay-sub">Entities matched ({len(step.entities)})</div><table class="st-table st-replay-table">'
        f"<thead><tr><th>#</th><th>Entity</th><th>Score</th></tr></thead><tbody>{ent_rows}</tbody></table></div><div>"
        f'<div class="st-replay-sub">Relation edges followed ({len(step.edges)})</div>'
        + (
            f'<table class="st-table st-replay-table"><thead><tr><th>From</th><th>Relation</th><th>To</th><th>Score</th></tr></thead>'
            f"<tbody>{edge_rows}</tbody></table>{_more(len(step.edges), TABLE_LIMIT * 2)}"
            if step.edges
            else '<div class="st-muted">none</div>'
        )
        + "</div></div>"
        f'<div class="st-replay-sub">Source components reached ({len(step.components)})</div>{_ranked_table(step.components, nodes)}'
    )
    return f"Entity graph ({step.mode} relations): {len(step.entities)} entities, {len(step.edges)} edges", body


def _fuse_view(step: FuseStep, trace: Trace, index: int, nodes: Briefs) -> tuple[str, str]:
    names = list(step.inputs)
    ranks = {name: {c.node_id: r for r, c in enumerate(step.inputs[name], 1)} for name in names}
    order: list[str] = []
    for name in names:  # nodes in order of first appearance, best first per input
        order.extend(c.node_id for c in step.inputs[name][:8] if c.node_id not in order)
    head = "".join(f"<th>{esc(n)}</th>" for n in names)
    rows = "".join(
        f"<tr><td>{node_ref(node_id, nodes, text_chars=60)}</td>"
        + "".join(f'<td class="st-num">{ranks[n].get(node_id, "-")}</td>' for n in names)
        + "</tr>"
        for node_id in order[:TABLE_LIMIT]
    )
    weights = ", ".join(f"{esc(k)}={v:g}" for k, v in step.weights.items())
    body = (
        (f'<div class="st-muted">{esc(step.reason)}</div>' if step.reason else "")
        + (f"<div><b>Weights</b> {weights}</div>" if weights else "")
        + (
            '<div class="st-replay-sub">Rank of each unit in each input ranking</div><table class="st-table st-replay-table">'
            f"<thead><tr><th>Node</th>{head}</tr></thead><tbody>{rows}</tbody></table>{_more(len(order), TABLE_LIMIT)}"
            if names
            else ""
        )
    )
    return f"Fuse: {step.label} ({len(names)} input ranking(s))", body


def crosses_cut(move: StageMove, shown: int | None) -> str:
    """"in" when a move takes a unit into the first `shown` ranks (the results a run returns), "out"
    when it takes one out of them, "" otherwise or when `shown` is not known."""
    if not shown:
        return ""
    was = move.from_rank is not None and move.from_rank <= shown
    now = move.to_rank is not None and move.to_rank <= shown
    return "in" if now and not was else "out" if was and not now else ""


def move_change(move: StageMove) -> tuple[str, str]:
    """(data-move value, words) for what a stage did to one unit: entered, dropped, up, down or kept."""
    before, after = move.from_rank, move.to_rank
    if before is None and after is None:
        return "same", "-"
    if before is None:
        return "entered", f"entered at rank {after}"
    if after is None:
        return "dropped", f"dropped (was rank {before})"
    if after < before:
        return "up", f"up {before - after}"
    if after > before:
        return "down", f"down {after - before}"
    return "same", "kept its rank"


def _rank_text(rank: int | None) -> str:
    return "-" if rank is None else str(rank)


def _stage_view(step: StageStep, trace: Trace, index: int, nodes: Briefs, shown: int | None = None) -> tuple[str, str]:
    """What one stage did; with `shown` (the number of results the run returns) each move that takes
    a unit into or out of the top `shown` says so."""
    changes = [move_change(m) for m in step.moves]
    counts = {k: sum(c == k for c, _ in changes) for k in ("entered", "dropped")}
    cut_words = {"in": f"; now in the top {shown}", "out": f"; out of the top {shown}", "": ""}
    rows = "".join(
        f'<tr class="st-stage-move st-move-{kind}" data-move="{kind}" data-cut="{cut}">'
        f"<td>{node_ref(m.node_id, nodes, text_chars=70)}</td>"
        f'<td class="st-num">{_rank_text(m.from_rank)}</td><td class="st-num">{_rank_text(m.to_rank)}</td>'
        f"<td>{esc(words + cut_words[cut])}</td></tr>"
        for m, (kind, words), cut in zip(step.moves[:TABLE_LIMIT * 2], changes, (crosses_cut(m, shown) for m in step.moves))
    )
    into = sum(crosses_cut(m, shown) == "in" for m in step.moves)
    out = sum(crosses_cut(m, shown) == "out" for m in step.moves)
    cut_line = (
        f'<div class="st-muted" data-into="{into}" data-out="{out}">The run returns the top {shown}: this stage moved {into} '
        f"unit(s) into them and {out} out of them.</div>"
        if shown
        else ""
    )
    table = (
        '<table class="st-table st-replay-table st-stage-moves"><thead><tr><th>Unit</th><th>Rank before</th><th>Rank after</th>'
        f"<th>Change</th></tr></thead><tbody>{rows}</tbody></table>{_more(len(step.moves), TABLE_LIMIT * 2)}"
        if step.moves
        else '<div class="st-muted">It moved nothing.</div>'
    )
    body = (
        f'<div class="st-stage-desc" data-stage="{esc(step.name)}"><span class="st-stage-tag">Strata stage</span> '
        f"{esc(step.description)}</div>"
        + (f'<div class="st-stage-note"><b>What it read</b> {esc(step.note)}</div>' if step.note else "")
        + f'<div class="st-replay-sub">What it moved ({len(step.moves)} unit(s))</div>{cut_line if step.moves else ""}{table}'
    )
    moved = "moved nothing"
    if step.moves:
        moved = f"{len(step.moves)} unit(s) moved" + "".join(f", {n} {k}" for k, n in counts.items() if n)
    return f"Strata stage {step.name}: {moved}", body


def _value_text(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)


def _pairs_table(pairs: Mapping[str, object], head: tuple[str, str], cls: str) -> str:
    if not pairs:
        return '<div class="st-muted">none</div>'
    rows = "".join(
        f'<tr data-key="{esc(k)}"><td>{esc(k)}</td><td class="st-num">{esc(_value_text(v))}</td></tr>' for k, v in pairs.items()
    )
    return (
        f'<table class="st-table st-replay-table {cls}"><thead><tr><th>{head[0]}</th><th>{head[1]}</th></tr></thead>'
        f"<tbody>{rows}</tbody></table>"
    )


def _profile_view(step: ProfileStep, trace: Trace, index: int, nodes: Briefs) -> tuple[str, str]:
    how = (
        "Chosen from the corpus traits measured below."
        if step.chosen_by == "traits"
        else "Set in the settings (STRATA_RETRIEVAL__PROFILE), not chosen from the traits."
        if step.chosen_by == "setting"
        else f"Chosen by {step.chosen_by}."
    )
    body = (
        f'<div class="st-profile" data-profile="{esc(step.name)}" data-chosen-by="{esc(step.chosen_by)}">{esc(how)}</div>'
        '<div class="st-replay-cols">'
        f'<div><div class="st-replay-sub">Corpus traits ({len(step.traits)})</div>'
        f'{_pairs_table(step.traits, ("Trait", "Measured"), "st-profile-traits")}</div>'
        f'<div><div class="st-replay-sub">Parameters it sets ({len(step.overrides)})</div>'
        f'{_pairs_table(step.overrides, ("Parameter", "Value"), "st-profile-overrides")}</div>'
        "</div>"
    )
    return f"Corpus profile: {step.name} (chosen by {step.chosen_by})", body


def _json_view(step, trace: Trace, index: int, nodes: Briefs) -> tuple[str, str]:
    dump = getattr(step, "model_dump_json", None)
    text = dump(indent=2) if dump is not None else json.dumps(step, default=str)
    return str(getattr(step, "kind", "step")).replace("_", " "), f'<pre class="st-pre">{esc(text)}</pre>'


STEP_VIEWS = {
    "decompose": _decompose_view,
    "rank": _rank_view,
    "route_docs": _route_docs_view,
    "rank_sections": _rank_sections_view,
    "beam": _beam_view,
    "agent": _agent_view,
    "iteration": _iteration_view,
    "entities": _entities_view,
    "fuse": _fuse_view,
    "stage": _stage_view,
    "profile": _profile_view,
}


def step_short(step) -> str:
    """A few words naming a step, for the step chips."""
    kind = getattr(step, "kind", "step")
    if isinstance(step, AgentStep):
        return f"{step.action}" + (" ✓" if step.outcome == "success" else " ✗" if step.outcome == "failure" else "")
    if isinstance(step, BeamStep):
        return f"beam {step.iteration}"
    if isinstance(step, IterationStep):
        return f"iteration {step.iteration}"
    if isinstance(step, RankStep):
        return snippet(step.label.split(":", 1)[0], 18)
    if isinstance(step, StageStep):
        return "stage " + snippet(step.name.replace("_", " "), 18)
    if isinstance(step, ProfileStep):
        return "profile " + snippet(step.name.replace("_", " "), 14)
    return str(kind).replace("_", " ")


def _is_strata_step(step) -> bool:
    """A step recorded by Strata around the method (a stage or the corpus profile), not by the method itself."""
    return isinstance(step, (StageStep, ProfileStep))


def _step_strip(trace: Trace, current: int) -> str:
    chips = "".join(
        f'<button type="button" class="st-stepchip{" st-stepchip-current" if i == current else ""}'
        f'{" st-stepchip-done" if i < current else ""}{" st-stepchip-stage" if _is_strata_step(s) else ""}" '
        f'data-step="{i + 1}" data-kind="{esc(getattr(s, "kind", ""))}" title="Go to step {i + 1}">'
        f"{i + 1} {esc(step_short(s))}</button>"
        for i, s in enumerate(trace.steps)
    )
    return f'<div class="st-stepstrip">{chips}</div>'


def render_step(trace: Trace, index: int, nodes: Briefs, shown: int | None = None) -> str:
    """Step `index` (0-based) of the trace, drawn by the view for its kind, under the step chips.
    `shown`: how many results the run returns, which a stage's view measures its moves against."""
    step = trace.steps[index]
    if isinstance(step, StageStep):
        title, body = _stage_view(step, trace, index, nodes, shown)
    else:
        title, body = STEP_VIEWS.get(getattr(step, "kind", ""), _json_view)(step, trace, index, nodes)
    return (
        f'<div class="st-step" data-kind="{esc(getattr(step, "kind", ""))}" data-step="{index + 1}">'
        f"{_step_strip(trace, index)}"
        f'<div class="st-step-title">Step {index + 1} of {len(trace.steps)}: {esc(title)}</div>{body}</div>'
    )


def replay_frames(trace: Trace, nodes: Briefs, shown: int | None = None) -> list[str]:
    """One HTML frame per trace step (at least one frame, saying when there are no steps); `shown`
    as render_step takes it."""
    if not trace.steps:
        return [NO_STEPS]
    return [render_step(trace, i, nodes, shown) for i in range(len(trace.steps))]


def stages_text(result: AskResult) -> str:
    """The stages a run selected, in words ("none: the method as published" when it ran without)."""
    return ", ".join(result.stages) if result.stages else "none: the method as published"


def stage_step_count(trace: Trace) -> int:
    return sum(isinstance(s, StageStep) for s in trace.steps)


def render_replay_header(result: AskResult) -> str:
    """Method (as its run label), the stages selected and how many acted, parameters, LLM backend
    with calls and tokens (retrieval and whole run), and the notes."""
    trace = result.trace
    params = ", ".join(f"{esc(k)}={esc(v)}" for k, v in trace.params.items())
    acted = stage_step_count(trace)
    facts = [
        f'<span data-label="{esc(result.label or result.method)}"><b>Method</b> {esc(result.label or trace.method)}</span>',
        f"<span><b>Steps</b> {len(trace.steps)}</span>",
        f'<span data-field="stages" data-acted="{acted}"><b>Stages</b> {esc(stages_text(result))}'
        + (f" ({acted} acted; each is a step of its own)" if acted else " (none acted on this question)" if result.stages else "")
        + "</span>",
        f"<span><b>LLM</b> {esc(trace.llm_backend)}: {trace.llm_calls} call(s), {trace.llm_tokens} token(s) while retrieving; "
        f"{result.llm_calls} call(s), {result.llm_tokens} token(s) in all</span>",
    ]
    if params:
        facts.append(f"<span><b>Params</b> {params}</span>")
    notes = "".join(f"<li>{esc(n)}</li>" for n in trace.notes)
    notes_html = f'<div class="st-notes"><b>Notes</b><ul>{notes}</ul></div>' if notes else ""
    question = f'<div class="st-replay-question">Q: {esc(result.question)}</div>'
    return f'<div class="st-replay-head">{question}<div class="st-facts">{"".join(facts)}</div>{notes_html}</div>'


def run_node_ids(result: AskResult) -> list[str]:
    """Every node id a run mentions (results, pack, citations, trace steps), each once, in order."""
    ids: list[str] = [r.node_id for r in result.results]
    ids += [u.node_id for u in result.pack.units] + [u.anchor for u in result.pack.units if u.anchor]
    ids += [c.node_id for c in result.answer.citations]
    for step in result.trace.steps:
        if isinstance(step, RankStep):
            ids += [c.node_id for c in step.candidates]
        elif isinstance(step, RankSectionsStep):
            ids += [s.anchor for s in step.sections] + [s.section_id for s in step.sections]
        elif isinstance(step, BeamStep):
            ids += step.frontier + step.kept + step.pruned
            for e in step.edges:
                ids += [e.src, e.dst] + [m.node_id for m in e.matches]
        elif isinstance(step, AgentStep):
            ids += step.anchor + [c.node_id for c in step.found]
        elif isinstance(step, IterationStep):
            ids += [c.node_id for c in step.found]
        elif isinstance(step, EntityStep):
            ids += [e.node_id for e in step.entities] + [e.src for e in step.edges] + [e.dst for e in step.edges]
            ids += [c.node_id for c in step.components]
        elif isinstance(step, FuseStep):
            ids += [c.node_id for items in step.inputs.values() for c in items]
        elif isinstance(step, StageStep):
            ids += [m.node_id for m in step.moves]
    return list(dict.fromkeys(ids))


def briefs_from_result(result: AskResult) -> dict[str, NodeBrief]:
    """What the run itself says about its result and cited nodes: the fallback for a run imported
    into a workspace that does not hold its documents."""
    out: dict[str, NodeBrief] = {}
    for r in result.results:
        out[r.node_id] = NodeBrief(
            id=r.node_id, kind=r.kind, doc=r.doc, doc_id="", page=r.page, bbox=r.bbox, section_path=r.section_path, text=r.text
        )
    for c in result.answer.citations:
        out.setdefault(c.node_id, NodeBrief(
            id=c.node_id, kind=c.kind, doc=c.doc, doc_id="", page=c.page, bbox=c.bbox, section_path=c.section_path, text=c.text
        ))
    return out


# ---------------------------------------------------------------- packed evidence

ROLES = ("header", "anchor", "sibling", "associate")
ROLE_HELP = {
    "anchor": "a retrieved unit",
    "header": "a section header on a unit's path",
    "sibling": "a neighbour in the anchor's section",
    "associate": "a related table or figure elsewhere in the document",
}


def render_token_bar(pack: EvidencePack) -> str:
    """Tokens used against the budget, one coloured segment per role."""
    budget = max(pack.budget, 1)
    pct = 100.0 * pack.tokens / budget
    by_role = {r: sum(u.tokens for u in pack.units if u.role == r) for r in ROLES}
    segments = "".join(
        f'<div class="st-tokbar-seg st-role-{r}" style="width:{100.0 * by_role[r] / max(budget, pack.tokens):.2f}%" '
        f'title="{r}: {by_role[r]} tokens"></div>'
        for r in ROLES
        if by_role[r]
    )
    legend = "".join(
        f'<span class="st-role st-role-{r}" title="{esc(ROLE_HELP[r])}">{r}: {by_role[r]} tok</span>' for r in ROLES
    )
    return (
        f'<div class="st-budget" data-tokens="{pack.tokens}" data-budget="{pack.budget}"><div class="st-budget-head">'
        f"<b>{pack.tokens}</b> of {pack.budget} tokens used ({pct:.0f}%) in {len(pack.units)} unit(s)</div>"
        f'<div class="st-tokbar" role="img" aria-label="{pack.tokens} of {pack.budget} tokens">{segments}</div>'
        f'<div class="st-roles">{legend}</div></div>'
    )


def _unit_line(u: PackedUnit, nodes: Briefs, extra: str = "") -> str:
    return (
        f'<span class="st-role st-role-{esc(u.role)}">{esc(u.role)}</span> <span class="st-num st-tok">{u.tokens} tok</span> '
        f"{extra}{node_ref(u.node_id, nodes)}"
    )


def _is_prefix(prefix: Sequence[str], path: Sequence[str]) -> bool:
    return len(prefix) <= len(path) and list(path[: len(prefix)]) == list(prefix)


@dataclass(slots=True)
class _SectionNode:
    """A node of the pack tree: one section title on the anchors' paths."""

    title: str
    header: PackedUnit | None = None
    children: dict[str, _SectionNode] = field(default_factory=dict)
    anchors: list[str] = field(default_factory=list)


def render_pack_tree(pack: EvidencePack, nodes: Briefs) -> str:
    """The token bar, then the pack as a tree: section headers (with the tokens of those that were
    packed) -> anchors -> their siblings -> their associates (each associate with its own section
    and the header packed for it)."""
    bar = render_token_bar(pack)
    if not pack.units:
        return bar + empty_state("Nothing was packed.", "Raise the budget, or ask a question that finds evidence.")
    members: dict[str, list[PackedUnit]] = {}  # anchor id -> the units packed for it, in pack order
    anchors: dict[str, PackedUnit] = {}
    for u in pack.units:
        if u.role == "anchor":
            anchors[u.node_id] = u
        owner = u.node_id if u.role == "anchor" else u.anchor
        members.setdefault(owner or "", []).append(u)
    headers = [u for u in pack.units if u.role == "header"]

    root = _SectionNode(title="")
    for a in anchors.values():
        node = root
        for depth in range(1, len(a.path) + 1):
            title = a.path[depth - 1]
            node = node.children.setdefault(title, _SectionNode(title=title))
            if node.header is None:
                node.header = next((h for h in headers if list(h.path) == list(a.path[:depth])), None)
        node.anchors.append(a.node_id)
    on_tree = {id(n.header) for n in _walk(root) if n.header is not None}

    def anchor_item(anchor_id: str) -> str:
        a = anchors[anchor_id]
        below = []
        for u in members.get(anchor_id, []):
            if u.role == "sibling":
                below.append(f'<li class="st-ptree-sibling">{_unit_line(u, nodes)}</li>')
        off_tree = [h for h in members.get(anchor_id, []) if h.role == "header" and id(h) not in on_tree]
        for u in members.get(anchor_id, []):
            if u.role == "associate":
                own = [h for h in off_tree if _is_prefix(h.path, u.path)]
                extra = "".join(f'<span class="st-muted">(+ its header, {h.tokens} tok)</span> ' for h in own)
                where = f'<span class="st-path">in {esc(join_path(u.path[1:] or u.path))}</span> '
                below.append(f'<li class="st-ptree-associate">{_unit_line(u, nodes, where + extra)}</li>')
        associates = [u for u in members.get(anchor_id, []) if u.role == "associate"]
        for h in off_tree:  # a header packed for this anchor that no associate explains
            if not any(_is_prefix(h.path, u.path) for u in associates):
                below.append(f'<li class="st-ptree-header">{_unit_line(h, nodes)}</li>')
        inner = f'<ul class="st-ptree-children">{"".join(below)}</ul>' if below else ""
        return f'<li class="st-ptree-anchor" data-anchor="{esc(anchor_id)}">{_unit_line(a, nodes)}{inner}</li>'

    def section_item(node: _SectionNode) -> str:
        if node.header is not None:
            label = (
                f'<span class="st-role st-role-header">header</span> <span class="st-num st-tok">{node.header.tokens} tok</span> '
                f'<span class="st-ptree-title">{esc(node.title)}</span>'
            )
        else:
            label = f'<span class="st-ptree-title st-muted" title="header not packed">{esc(node.title)}</span>'
        inner = "".join(anchor_item(a) for a in node.anchors) + "".join(section_item(c) for c in node.children.values())
        return f'<li class="st-ptree-section">{label}<ul class="st-ptree-children">{inner}</ul></li>'

    items = "".join(anchor_item(a) for a in root.anchors) + "".join(section_item(c) for c in root.children.values())
    stray = [u for u in pack.units if u.role != "anchor" and (u.anchor or "") not in anchors]
    stray_html = "".join(f"<li>{_unit_line(u, nodes)}</li>" for u in stray if not (u.role == "header" and id(u) in on_tree))
    if stray_html:
        items += f'<li class="st-ptree-section"><span class="st-muted">packed without an anchor</span><ul class="st-ptree-children">{stray_html}</ul></li>'
    text = f'<details><summary>Reader input (serialised evidence)</summary><pre class="st-pre">{esc(pack.text)}</pre></details>'
    return bar + f'<ul class="st-ptree">{items}</ul>' + text


def _walk(node: _SectionNode):
    yield node
    for child in node.children.values():
        yield from _walk(child)


# ---------------------------------------------------------------- Gradio wiring

# Each step chip carries data-step; a click becomes the step view's "click" event with the step.
STEP_CLICK_JS = """
element.addEventListener('click', (event) => {
  const chip = event.target.closest('[data-step]');
  if (chip && chip.tagName === 'BUTTON') { trigger('click', {step: Number(chip.dataset.step)}); }
});
"""
PLAY_LABEL, PAUSE_LABEL = "▶ Play", "⏸ Pause"


@dataclass(slots=True)
class ReplayPanel:
    """The replay's components. `load_outputs` take the tuple `loaded(frames)` returns."""

    header: gr.HTML
    slider: gr.Slider
    play: gr.Button
    view: gr.HTML
    frames: gr.State
    playing: gr.State
    timer: gr.Timer

    @property
    def load_outputs(self) -> list:
        return [self.frames, self.slider, self.view, self.playing, self.timer, self.play]


def loaded(frames: list[str]) -> tuple:
    """Values for `ReplayPanel.load_outputs` when a new run's frames arrive: step 1, not playing."""
    return (
        frames,
        # Gradio needs maximum > minimum; a one-step run gets a locked slider.
        gr.update(minimum=1, maximum=max(2, len(frames)), value=1, interactive=len(frames) > 1),
        frames[0] if frames else NO_RUN,
        False,
        gr.Timer(active=False),
        gr.update(value=PLAY_LABEL, interactive=len(frames) > 1),
    )


def build_replay() -> ReplayPanel:
    """The replay components (call inside a Blocks context) with their events wired."""
    header = gr.HTML(elem_id="ask-replay-head")
    with gr.Row(equal_height=True):
        slider = gr.Slider(1, 2, value=1, step=1, label="Step", interactive=False, scale=5, elem_id="ask-replay-step")
        play = gr.Button(PLAY_LABEL, scale=1, min_width=110, interactive=False, elem_id="ask-replay-play")
    view = gr.HTML(NO_RUN, elem_id="ask-trace", js_on_load=STEP_CLICK_JS)
    frames = gr.State([])
    playing = gr.State(False)
    timer = gr.Timer(PLAY_TICK_S, active=False)

    def show(frames_value: list[str], step: float):
        if not frames_value:
            return NO_RUN
        return frames_value[min(max(int(step or 1), 1), len(frames_value)) - 1]

    def toggle(frames_value: list[str], step: float, is_playing: bool):
        n = len(frames_value)
        if is_playing or n <= 1:
            return False, gr.Timer(active=False), gr.update(value=PLAY_LABEL), gr.skip()
        # Playing from the last step starts over.
        start = 1 if int(step or 1) >= n else gr.skip()
        return True, gr.Timer(active=True), gr.update(value=PAUSE_LABEL), start

    def tick(frames_value: list[str], step: float, is_playing: bool):
        n = len(frames_value)
        nxt = int(step or 1) + 1
        if not is_playing or nxt > n:
            return gr.skip(), False, gr.Timer(active=False), gr.update(value=PLAY_LABEL)
        if nxt == n:  # the last step is shown; stop here
            return nxt, False, gr.Timer(active=False), gr.update(value=PLAY_LABEL)
        return nxt, True, gr.skip(), gr.skip()

    def jump(frames_value: list[str], evt: gr.EventData):
        step = getattr(evt, "step", None)  # set by STEP_CLICK_JS
        if not frames_value or not isinstance(step, (int, float)):
            return gr.skip()
        return min(max(int(step), 1), len(frames_value))

    private = {"api_visibility": "private"}  # UI plumbing, not part of the app's API
    slider.change(show, inputs=[frames, slider], outputs=[view], show_progress="hidden", queue=False, **private)
    play.click(toggle, inputs=[frames, slider, playing], outputs=[playing, timer, play, slider], queue=False, **private)
    timer.tick(tick, inputs=[frames, slider, playing], outputs=[slider, playing, timer, play], show_progress="hidden", **private)
    view.click(jump, inputs=[frames], outputs=[slider], queue=False, **private)
    return ReplayPanel(header=header, slider=slider, play=play, view=view, frames=frames, playing=playing, timer=timer)
