"""Graph tab: the workspace's layered graph drawn with pyvis, filtered by layer, node kind, edge
kind and document and cut to a node limit ("showing N of M"); a node's details (text, page
thumbnail with its box, section path, parent, neighbours) when it is clicked; a plotly overview
of counts by layer, kind and edge kind; the graph as JSON or GraphML for download.

The pyvis page (vis-network inlined, nothing fetched) lives in a sandboxed iframe's srcdoc. A click
on a node there cannot call Gradio, so the page posts the node id to its parent window, and the
graph component's `js_on_load` listener turns that message into the component's "click" event.

The functions above `build` are pure (view in, HTML or a figure out) and tested without a browser.
"""

from __future__ import annotations

import base64
import functools
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import gradio as gr
import plotly.graph_objects as go
from plotly.subplots import make_subplots
import pyvis
from pyvis.network import Network

from backend.service import Service
from backend.errors import StrataError
from backend.types import NAVIGATION_EDGES, AskResult, EdgeKind, GraphCounts, GraphView, NeighbourView, NodeDetails, NodeKind
from ui import render
from ui.common import PRIVATE, session_workspace, user_errors

KIND_COLORS: dict[NodeKind, str] = {
    NodeKind.DOCUMENT: "#1e3a8a",
    NodeKind.SECTION: "#7b2cbf",
    NodeKind.PARAGRAPH: "#1d4ed8",
    NodeKind.TABLE: "#15803d",
    NodeKind.FIGURE: "#a16207",
    NodeKind.SENTENCE: "#93c5fd",
    NodeKind.ROW: "#86efac",
    NodeKind.OBJECT: "#fcd34d",
    NodeKind.ENTITY: "#db2777",
    NodeKind.CODE: "#475569",
}
EDGE_COLORS: dict[EdgeKind, str] = {
    EdgeKind.CONTAINS: "#cbd5e1",
    EdgeKind.NEXT: "#94a3b8",
    EdgeKind.LINK: "#0ea5e9",
    EdgeKind.XREF: "#f97316",
    EdgeKind.CAPTION: "#a16207",
    EdgeKind.DOC_LINK: "#1e3a8a",
    EdgeKind.MENTIONS: "#f9a8d4",
    EdgeKind.RELATION: "#db2777",
}
LAYER_COLORS: dict[str, str] = {"document": "#1e3a8a", "component": "#1d4ed8", "subcomponent": "#93c5fd", "entity": "#db2777"}
# (vis-network shape, size) per kind: documents stand out, subcomponents stay small.
KIND_SHAPES: dict[NodeKind, tuple[str, int]] = {
    NodeKind.DOCUMENT: ("diamond", 26),
    NodeKind.SECTION: ("triangle", 15),
    NodeKind.PARAGRAPH: ("dot", 11),
    NodeKind.TABLE: ("square", 13),
    NodeKind.FIGURE: ("square", 13),
    NodeKind.SENTENCE: ("dot", 7),
    NodeKind.ROW: ("dot", 7),
    NodeKind.OBJECT: ("dot", 7),
    NodeKind.ENTITY: ("star", 10),
    NodeKind.CODE: ("dot", 11),
}
LAYER_CHOICES = [
    ("Documents and sections", "document"),
    ("Components (paragraphs, tables, figures)", "component"),
    ("Subcomponents (sentences, table rows, figure regions)", "subcomponent"),
    ("Entities", "entity"),
]
DEFAULT_LAYERS = ["document", "component"]
DEFAULT_LIMIT = 250
GRAPH_HEIGHT_PX = 620
# What the graph draws: the hierarchy as a tree, the graph around the chosen node, or around the
# last answer's evidence with the edges a reader follows from it (backend/graph/export.py).
TREE, AROUND_NODE, AROUND_EVIDENCE = "tree", "node", "evidence"
MODE_CHOICES = [
    ("Tree: document > sections > components", TREE),
    ("Around the chosen node", AROUND_NODE),
    ("Around the last answer's evidence", AROUND_EVIDENCE),
]
EVIDENCE_NODES = 8  # ranked results taken as the evidence of an answer that cites nothing
_INTERACTION = {"hover": True, "tooltipDelay": 120, "navigationButtons": False, "multiselect": False}
_NODE_FONT = {"font": {"size": 11, "face": "system-ui, sans-serif"}}
# The tree: one column per depth, left to right (labels run along a column's gaps, not across
# each other); no physics, so it stays as laid out.
TREE_OPTIONS = {
    "layout": {
        "hierarchical": {
            "enabled": True, "direction": "LR", "levelSeparation": 260, "nodeSpacing": 30, "treeSpacing": 60,
            "blockShifting": True, "edgeMinimization": True, "parentCentralization": True,
        },
    },
    "physics": {"enabled": False},
    "interaction": _INTERACTION,
    "edges": {"smooth": {"type": "cubicBezier", "forceDirection": "horizontal", "roundness": 0.45},
              "arrows": {"to": {"enabled": False}}},
    "nodes": _NODE_FONT,
}
VIS_OPTIONS = {
    "physics": {
        "solver": "forceAtlas2Based",
        "forceAtlas2Based": {"gravitationalConstant": -60, "springLength": 110, "avoidOverlap": 0.6},
        "stabilization": {"enabled": True, "iterations": 250, "fit": True},
    },
    # improvedLayout (Kamada-Kawai seeding) gives up with a console warning above ~100 nodes.
    "layout": {"improvedLayout": False},
    "interaction": _INTERACTION,
    "edges": {"smooth": False, "arrows": {"to": {"enabled": True, "scaleFactor": 0.4}}},
    "nodes": _NODE_FONT,
}
# Which labels are placed first where they would overlap: the centres of the view, documents,
# sections by depth, then components, subcomponents and entities (a node's full text is always
# in its hover title).
_KIND_RANK = {
    NodeKind.DOCUMENT: 1, NodeKind.SECTION: 2, NodeKind.TABLE: 10, NodeKind.FIGURE: 10, NodeKind.PARAGRAPH: 11,
    NodeKind.CODE: 11, NodeKind.SENTENCE: 12, NodeKind.ROW: 12, NodeKind.OBJECT: 12, NodeKind.ENTITY: 13,
}
TREE_LABEL_CHARS = 28
FOCUS_COLOR = "#ff2d55"
# pyvis links to bootstrap on a CDN even when vis-network is inlined; the graph needs neither it
# nor the empty heading, and Strata must not fetch anything.
_CDN_TAG = re.compile(r"<(link|script)\b[^>]*https?://[^>]*>(\s*</script>)?", re.IGNORECASE)
_EMPTY_HEADING = re.compile(r"<center>\s*<h1>\s*</h1>\s*</center>", re.IGNORECASE)
# vis-network's stylesheet (220 KB, inlined by pyvis) styles the editing, configuration and navigation
# widgets this view does not use; the tooltip is the one part it needs.
_VIS_CSS_PATH = Path(pyvis.__file__).parent / "lib" / "vis-9.1.2" / "vis-network.css"
TOOLTIP_CSS = (
    "div.vis-tooltip{position:absolute;visibility:hidden;pointer-events:none;z-index:5;padding:5px 7px;"
    "background:#fffbeb;border:1px solid #d6d3d1;border-radius:4px;box-shadow:2px 2px 8px rgba(0,0,0,.15);"
    "font:12px system-ui,sans-serif;color:#111827;white-space:pre-wrap;max-width:360px}"
    "body{margin:0}#mynetwork{border:none!important}"
)
# Runs inside the iframe after pyvis has drawn `network`. Once the layout has settled (physics off
# from then on, so nodes stop drifting and clicks land where the user aims), labels are placed:
# at LABEL_PX on screen whatever the zoom, in rank order (the chosen node first), each only where
# its box (node and label) overlaps no box placed before it and lies in view; the rest stay in
# their hover titles. Placed again after each zoom or drag. Clicked nodes are reported upwards.
LABEL_PX = 12
CLICK_BRIDGE_JS = """
<script>
var LABEL_PX = %d;
(function () {
  if (typeof network === "undefined") { return; }
  var measure = document.createElement("canvas").getContext("2d");
  var pending = null;
  function rankOf(n, selected) {
    if (selected.indexOf(n.id) >= 0) { return -1; }
    return typeof n.labelRank === "number" ? n.labelRank : 20;  // 0 (a centre of the view) is a rank, not a gap
  }
  function placeLabels() {
    var scale = network.getScale();
    if (!(scale > 0)) { return; }
    var frame = document.getElementById("mynetwork").getBoundingClientRect();
    var positions = network.getPositions();
    var selected = network.getSelectedNodes();
    var fontSize = LABEL_PX / scale;
    measure.font = "bold " + LABEL_PX + "px system-ui, sans-serif";  // a selected node's label is bold
    var all = nodes.get();
    all.sort(function (a, b) { return (rankOf(a, selected) - rankOf(b, selected)) || ((a.drawOrder || 0) - (b.drawOrder || 0)); });
    var placed = [], updates = [];
    all.forEach(function (n) {
      var label = " ";
      var p = positions[n.id];
      if (p && n.fullLabel) {
        var c = network.canvasToDOM(p);
        var r = (n.size || 10) * scale;
        var half = Math.max(measure.measureText(n.fullLabel).width / 2 + 6, r + 2);
        var box = {id: n.id, x0: c.x - half, x1: c.x + half, y0: c.y - r - 2, y1: c.y + r + LABEL_PX * 1.6 + 6};
        var inView = box.x0 >= 0 && box.y0 >= 0 && box.x1 <= frame.width && box.y1 <= frame.height;
        var free = !placed.some(function (q) { return box.x0 < q.x1 && q.x0 < box.x1 && box.y0 < q.y1 && q.y0 < box.y1; });
        // The chosen node and the view's centres are always named, at the edge too; they are placed first.
        if ((inView || rankOf(n, selected) <= 0) && free) { placed.push(box); label = n.fullLabel; }
      }
      if (n.label !== label || !n.font || Math.abs(n.font.size - fontSize) > 0.01) {
        updates.push({id: n.id, label: label, font: {size: fontSize}});
      }
    });
    if (updates.length) { nodes.update(updates); }
    // The boxes above are estimates; vis-network measures each label when it draws it. Drawn once,
    // a label whose measured box overlaps one placed before it goes back to its hover title.
    network.redraw();
    var kept = [], hidden = [];
    placed.forEach(function (q) {
      var b = network.getBoundingBox(q.id);
      var m = {x0: b.left * scale, x1: b.right * scale, y0: b.top * scale, y1: b.bottom * scale};
      if (kept.some(function (k) { return m.x0 < k.x1 && k.x0 < m.x1 && m.y0 < k.y1 && k.y0 < m.y1; })) {
        hidden.push({id: q.id, label: " "});
      } else { kept.push(m); }
    });
    if (hidden.length) { nodes.update(hidden); }
    placed = placed.filter(function (q) { return !hidden.some(function (h) { return h.id === q.id; }); });
    window.strataLabelBoxes = placed;
    document.body.setAttribute("data-labels", String(placed.length));
    document.body.setAttribute("data-label-scale", String(scale));
  }
  function later() {
    if (pending) { clearTimeout(pending); }
    pending = setTimeout(function () { pending = null; placeLabels(); }, 120);
  }
  function settle() {
    network.setOptions({physics: false});
    network.fit();
    placeLabels();
    // pyvis fades its progress bar out over 500 ms, and until then the bar swallows clicks.
    var bar = document.getElementById("loadingBar");
    if (bar) { bar.style.display = "none"; }
    document.body.setAttribute("data-layout", network.layoutEngine.options.hierarchical.enabled ? "tree" : "force");
    document.body.setAttribute("data-stable", "true");
    network.on("zoom", later);
    network.on("dragEnd", later);
    network.on("select", later);
  }
  if (network.physics.options.enabled) { network.once("stabilizationIterationsDone", settle); } else { setTimeout(settle, 0); }
  network.on("click", function (params) {
    if (params.nodes.length > 0) {
      window.parent.postMessage({strataGraphNode: String(params.nodes[0])}, "*");
    }
  });
  // A node picked outside the graph (list, id box, a neighbour) is selected and brought into view.
  window.addEventListener("message", function (event) {
    var id = event.source === window.parent && event.data ? event.data.strataSelectNode : null;
    if (typeof id === "string" && nodes.get(id)) {
      network.selectNodes([id]);
      network.focus(id, {scale: Math.max(network.getScale(), 1.0), animation: {duration: 400}});
      network.once("animationFinished", placeLabels);
    }
  });
})();
</script>
""" % LABEL_PX
# On the Gradio side: a message from this component's own iframe becomes its "click" event.
GRAPH_LISTENER_JS = """
window.addEventListener('message', (event) => {
  const frame = element.querySelector('iframe');
  if (!frame || event.source !== frame.contentWindow) { return; }
  const data = event.data || {};
  if (typeof data.strataGraphNode === 'string') { trigger('click', {node: data.strataGraphNode}); }
});
"""
# Neighbours in the details panel carry data-node; clicking one shows that node. When new details
# are shown, the graph's iframe is asked to select that node (it ignores ids it does not show).
DETAILS_CLICK_JS = """
element.addEventListener('click', (event) => {
  const target = event.target.closest('[data-node]');
  if (target) { trigger('click', {node: target.dataset.node}); }
});
watch('value', () => {
  const shown = element.querySelector('[data-node-id]');
  const frame = document.querySelector('#graph-view iframe');
  if (shown && frame && frame.contentWindow) {
    frame.contentWindow.postMessage({strataSelectNode: shown.dataset.nodeId}, '*');
  }
});
"""
NO_GRAPH = render.empty_state(
    "No documents in this workspace yet.", "Upload PDFs in the Library tab and press Ingest; their graph will show up here."
)
NO_NODE = render.empty_state("Click a node in the graph to see its details.", "Or pick one in the list above.")


# ---------------------------------------------------------------- pure renderers


def _tooltip(text: str) -> str:
    # vis-network shows a plain-text title as text, but pyvis switches to an innerHTML popup when a
    # title contains "href"; a zero-width space keeps PDF text out of that path.
    return text.replace("href", "hre\u200bf")


@functools.cache
def _vis_css() -> str:
    return _VIS_CSS_PATH.read_text(encoding="utf-8") if _VIS_CSS_PATH.exists() else ""


def _short_label(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def graph_html(view: GraphView, height_px: int = GRAPH_HEIGHT_PX, tree: bool = False) -> str:
    """The view as a self-contained pyvis page inside a sandboxed iframe (srcdoc, escaped): a tree
    laid out by depth (documents, then sections, then components), or a force layout around the
    view's focus nodes (drawn larger, ringed). Labels are placed by the page where they fit."""
    if not view.nodes:
        if view.total.nodes == 0:
            return NO_GRAPH
        return render.empty_state("No node passes these filters.", "Tick more layers, node kinds or documents above.")
    net = Network(height=f"{height_px - 8}px", width="100%", directed=True, cdn_resources="in_line")
    net.options = TREE_OPTIONS if tree else VIS_OPTIONS
    focus = set(view.focus)
    deepest = max((n.depth for n in view.nodes), default=0)
    for i, n in enumerate(view.nodes):
        shape, size = KIND_SHAPES.get(n.kind, ("dot", 8))
        title = f"{n.kind.value} · {n.doc_name}, p. {n.page}\n{n.text}"
        color = KIND_COLORS.get(n.kind, "#64748b")
        extra: dict = {"level": n.depth if n.depth >= 0 else deepest + 1} if tree else {}
        if n.id in focus:
            size += 8
            extra.update(borderWidth=4, color={"background": color, "border": FOCUS_COLOR})
        else:
            extra["color"] = color
        rank = 0 if n.id in focus else _KIND_RANK.get(n.kind, 20) + (max(n.depth, 0) if n.kind == NodeKind.SECTION else 0)
        net.add_node(
            n.id, label=" ", title=_tooltip(title), shape=shape, size=size,
            fullLabel=_short_label(n.label, TREE_LABEL_CHARS if tree else 40),
            labelRank=rank, drawOrder=i, **extra,
        )
    for e in view.edges:
        net.add_edge(e.src, e.dst, color=EDGE_COLORS.get(e.kind, "#94a3b8"), title=e.kind.value, width=1)
    page = net.generate_html(notebook=False)
    page = _EMPTY_HEADING.sub("", _CDN_TAG.sub("", page))
    if _vis_css():
        page = page.replace(_vis_css(), TOOLTIP_CSS, 1)
    page = page.replace("</body>", CLICK_BRIDGE_JS + "</body>", 1)
    return (
        f'<iframe class="st-graph-frame" title="Graph of the workspace" sandbox="allow-scripts" '
        f'style="height:{int(height_px)}px" data-nodes="{len(view.nodes)}" data-mode="{"tree" if tree else "around"}" '
        f'srcdoc="{render.esc(page)}"></iframe>'
    )


def graph_status(view: GraphView) -> str:
    """'Showing N of M matching nodes' with the edge counts, and what to do when the view is cut."""
    if view.total.nodes == 0:
        return ""
    shown, matched = len(view.nodes), view.matched.nodes
    more = (
        f' <span class="st-graph-cut">The node limit ({view.limit}) hides {matched - shown} node(s): '
        "raise the limit or narrow the filters to see them.</span>"
        if view.truncated
        else ""
    )
    return (
        f'<div class="st-graph-status" data-shown="{shown}" data-matched="{matched}" data-edges="{len(view.edges)}">'
        f"Showing <b>{shown}</b> of <b>{matched}</b> matching nodes and <b>{len(view.edges)}</b> edges between them "
        f'<span class="st-muted">(whole graph: {view.total.nodes} nodes, {view.total.edges} edges)</span>.{more}</div>'
    )


def render_legend() -> str:
    nodes = "".join(
        f'<span class="st-legend-item"><span class="st-gdot" style="background:{c}"></span>{render.esc(k.value)}</span>'
        for k, c in KIND_COLORS.items()
    )
    edges = "".join(
        f'<span class="st-legend-item"><span class="st-gline" style="background:{c}"></span>{render.esc(k.value)}</span>'
        for k, c in EDGE_COLORS.items()
    )
    return f'<div class="st-legend"><b>Nodes</b> {nodes}</div><div class="st-legend"><b>Edges</b> {edges}</div>'


def overview_figure(counts: GraphCounts) -> go.Figure:
    """Three compact bar charts: nodes per layer, nodes per kind, edges per kind, of the nodes that
    pass the filters (before the node limit) and the edges between them."""
    fig = make_subplots(rows=1, cols=3, subplot_titles=("Nodes by layer", "Nodes by kind", "Edges by kind"), horizontal_spacing=0.12)
    parts = [
        (counts.by_layer, [name for name in LAYER_COLORS], LAYER_COLORS),
        (counts.by_kind, [k.value for k in KIND_COLORS], {k.value: c for k, c in KIND_COLORS.items()}),
        (counts.by_edge_kind, [k.value for k in EDGE_COLORS], {k.value: c for k, c in EDGE_COLORS.items()}),
    ]
    for col, (values, order, colors) in enumerate(parts, 1):
        names = [n for n in order if values.get(n)] + sorted(n for n in values if n not in order and values[n])
        fig.add_trace(
            go.Bar(
                x=[values[n] for n in names], y=names, orientation="h", marker_color=[colors.get(n, "#64748b") for n in names],
                text=[values[n] for n in names], textposition="auto", hovertemplate="%{y}: %{x}<extra></extra>",
            ),
            row=1, col=col,
        )
        fig.update_yaxes(autorange="reversed", row=1, col=col)
    fig.update_layout(height=280, showlegend=False, margin={"l": 10, "r": 10, "t": 36, "b": 10}, template="plotly_white")
    return fig


def node_choices(view: GraphView) -> list[tuple[str, str]]:
    """(label, node id) pairs of the shown nodes, for the searchable node picker."""
    return [(f"{n.label} · {n.kind.value} · {n.doc_name} p. {n.page}", n.id) for n in view.nodes]


def _kind_chip(kind: NodeKind) -> str:
    return f'<span class="st-kind" style="border-color:{KIND_COLORS.get(kind, "#64748b")}">{render.esc(kind.value)}</span>'


def _neighbour_item(v: NeighbourView) -> str:
    arrow = "→" if v.direction == "out" else "←"
    why = f' <span class="st-muted">{render.esc(render.snippet(v.provenance, 80))}</span>' if v.provenance else ""
    return (
        f'<li class="st-gnb" data-node="{render.esc(v.node_id)}" title="Show this node">'
        f'<span class="st-gedge" style="border-color:{EDGE_COLORS.get(v.edge_kind, "#94a3b8")}">{arrow} {render.esc(v.edge_kind.value)}</span> '
        f"{_kind_chip(v.kind)} {render.esc(v.label)}{why}</li>"
    )


def render_node_details(details: NodeDetails) -> str:
    """A node's details: what and where it is, its page with the box, its text, parent and neighbours."""
    where = f"{details.doc_name}, page {details.page}"
    if details.bbox:
        where += " · box " + ", ".join(f"{v:.0f}" for v in details.bbox)
    parts = [
        f'<div class="st-gnode" data-node-id="{render.esc(details.id)}" data-kind="{render.esc(details.kind.value)}">',
        f'<div class="st-gnode-title">{_kind_chip(details.kind)} <b>{render.esc(details.label)}</b></div>',
        f'<div class="st-muted">{render.esc(where)} · <span class="st-mono">{render.esc(details.id)}</span></div>',
    ]
    if details.section_path:
        parts.append(f'<div class="st-path">{render.esc(render.join_path(details.section_path))}</div>')
    if details.thumbnail_png:
        data = base64.b64encode(details.thumbnail_png).decode("ascii")
        parts.append(f'<img class="st-gnode-thumb" alt="Page {details.page} with the node\'s box" src="data:image/png;base64,{data}">')
    parts.append(f'<blockquote class="st-quote st-gnode-text">{render.esc(details.text)}</blockquote>')
    if details.parent is not None:
        parts.append(f'<div class="st-gnode-parent">Inside: <ul class="st-gnbs">{_neighbour_item(details.parent)}</ul></div>')
    if details.neighbours:
        cut = (
            f' <span class="st-muted">(first {len(details.neighbours)} of {details.neighbours_total})</span>'
            if details.neighbours_total > len(details.neighbours)
            else ""
        )
        items = "".join(_neighbour_item(v) for v in details.neighbours)
        parts.append(f'<div class="st-gnode-neighbours">Neighbours{cut}: <ul class="st-gnbs">{items}</ul></div>')
    else:
        parts.append('<div class="st-muted">No neighbours.</div>')
    parts.append("</div>")
    return "".join(parts)


# ---------------------------------------------------------------- the tab


def evidence_nodes(result: AskResult | None) -> list[str]:
    """The nodes an answer rests on: its citations, or (when it cites nothing) its first results."""
    if result is None:
        return []
    cited = [c.node_id for c in result.answer.citations]
    return list(dict.fromkeys(cited or [r.node_id for r in result.results[:EVIDENCE_NODES]]))


MODE_HINTS = {
    AROUND_NODE: render.empty_state("Click a node (or pick one in the list) to see the graph around it.",
                                    "Its neighbours over the ticked edge kinds show, under their sections and document."),
    AROUND_EVIDENCE: render.empty_state("No answer to show yet.",
                                        "Ask a question in the Ask tab, then press 'Show the evidence in the graph' there."),
}


@dataclass(slots=True)
class GraphTab:
    tab: gr.Tab
    graph: gr.HTML
    # The last answer's evidence: (workspace, AskResult, filters...) -> show_outputs, drawn around it.
    show_evidence: Callable
    show_inputs: list  # after the workspace and the AskResult
    show_outputs: list
    # The same for one cited node: (workspace, node id, filters...) -> show_outputs.
    show_node_in_graph: Callable


def _filters(layers, kinds, edge_kinds, docs) -> dict:
    # No document chosen means every document; the checkbox groups mean what they show.
    return {"layers": list(layers or []), "node_kinds": list(kinds or []), "edge_kinds": list(edge_kinds or []), "doc_ids": list(docs) if docs else None}


def _export_file(data: bytes, fmt: str) -> str:
    # Gradio serves files under the system temp folder; the workspace root may be elsewhere (a Space's /data).
    folder = Path(tempfile.mkdtemp(prefix="strata-export-"))
    path = folder / f"strata-graph.{fmt}"
    path.write_bytes(data)
    return str(path)


def draw_view(service: Service, ws: Path, mode: str, centre: str | None, evidence: list[str], filters: dict, limit: int) -> GraphView | None:
    """The view a mode draws (None: a mode around nodes with no node to centre on). The tree draws
    the hierarchy edges only; around nodes, the ticked edge kinds (for evidence: the navigational ones)."""
    if mode == AROUND_NODE:
        if not centre:
            return None
        return service.ego_view(ws, [centre], filters["edge_kinds"], filters["layers"], filters["node_kinds"], limit)
    if mode == AROUND_EVIDENCE:
        if not evidence:
            return None
        kinds = [k for k in filters["edge_kinds"] if k in {e.value for e in NAVIGATION_EDGES}]
        return service.ego_view(ws, evidence, kinds, filters["layers"], filters["node_kinds"], limit)
    tree_filters = {**filters, "edge_kinds": [k for k in filters["edge_kinds"] if k == EdgeKind.CONTAINS.value]}
    return service.graph_view(ws, limit=limit, **tree_filters)


def build(service: Service, workspace: gr.State) -> GraphTab:
    with gr.Tab("Graph", id="graph") as tab:
        gr.Markdown(
            "The layered graph of this workspace: documents and their sections, components (paragraphs, tables, "
            "figures), subcomponents (sentences, table rows, figure regions) and entities, joined by hierarchy, "
            "reading-order, link, cross-reference, caption and entity edges. **Click a node** to see its details; "
            "drag to move, scroll to zoom (labels show where they fit; hover a node for its text).",
            elem_classes=["st-small"],
        )
        mode = gr.Radio(
            MODE_CHOICES, value=TREE, label="Show", elem_id="graph-mode",
            info="The tree draws the hierarchy edges; the views around a node or an answer draw the ticked edge kinds "
            "(for an answer: cross-references, links, captions and document links) and where each node sits.",
        )
        with gr.Row(equal_height=False):
            layers = gr.CheckboxGroup(LAYER_CHOICES, value=DEFAULT_LAYERS, label="Layers", elem_id="graph-layers", scale=2)
            kinds = gr.CheckboxGroup(
                [k.value for k in NodeKind], value=[k.value for k in NodeKind], label="Node kinds", elem_id="graph-kinds", scale=2
            )
            edge_kinds = gr.CheckboxGroup(
                [k.value for k in EdgeKind], value=[k.value for k in EdgeKind], label="Edge kinds", elem_id="graph-edge-kinds",
                scale=2,
            )
        with gr.Row(equal_height=True):
            docs = gr.Dropdown(
                label="Documents (none chosen: all)", choices=[], value=[], multiselect=True, scale=3, elem_id="graph-docs"
            )
            limit = gr.Slider(20, 1000, value=DEFAULT_LIMIT, step=10, label="Node limit", scale=2, elem_id="graph-limit")
        status = gr.HTML(elem_id="graph-status")
        evidence = gr.State([])  # node ids of the last answer sent here from the Ask tab
        with gr.Row(equal_height=False):
            with gr.Column(scale=3):
                graph = gr.HTML(NO_GRAPH, elem_id="graph-view", js_on_load=GRAPH_LISTENER_JS)
                gr.HTML(render_legend(), elem_id="graph-legend")
            with gr.Column(scale=2, min_width=320):
                node_id = gr.Textbox(
                    label="Node id", placeholder="click a node in the graph, or type an id and press Enter", elem_id="graph-node-id",
                    max_lines=1,
                )
                node_pick = gr.Dropdown(label="Find a shown node", choices=[], value=None, filterable=True, elem_id="graph-node-pick")
                details = gr.HTML(NO_NODE, elem_id="graph-node-details", js_on_load=DETAILS_CLICK_JS)
        with gr.Accordion("Overview: counts by layer, kind and edge kind (of what passes the filters)", open=True, elem_id="graph-overview-panel"):
            overview = gr.Plot(label="Graph overview", elem_id="graph-overview")
        with gr.Row(equal_height=False):
            with gr.Column(scale=1, min_width=220):
                gr.Markdown("**Export** every node that passes the filters (no node limit) and the edges between them.", elem_classes=["st-small"])
                export_json = gr.Button("Export graph as JSON", size="sm", elem_id="graph-export-json")
                export_graphml = gr.Button("Export graph as GraphML", size="sm", elem_id="graph-export-graphml")
            export_file = gr.File(label="Graph download", elem_id="graph-export-file", scale=2, height=110, interactive=False)

    def draw(ws: Path, mode_v, centre, evidence_v, layers_v, kinds_v, edges_v, docs_v, limit_v):
        filters = _filters(layers_v, kinds_v, edges_v, docs_v)
        view = draw_view(service, ws, mode_v or TREE, (centre or "").strip(), list(evidence_v or []), filters,
                         int(limit_v or DEFAULT_LIMIT))
        if view is None:
            return GraphCounts(), MODE_HINTS[mode_v], "", gr.update(choices=[], value=None)
        html = graph_html(view, tree=(mode_v or TREE) == TREE)
        return view.matched, html, graph_status(view), gr.update(choices=node_choices(view), value=None)

    @user_errors
    def refresh(workspace_value: str, mode_v, centre, evidence_v, layers_v, kinds_v, edges_v, docs_v, limit_v):
        ws = session_workspace(workspace_value)
        documents = service.documents(ws)
        ids = {d.id for d in documents}
        docs_v = [d for d in (docs_v or []) if d in ids]
        matched, html, status_html, picks = draw(ws, mode_v, centre, evidence_v, layers_v, kinds_v, edges_v, docs_v, limit_v)
        return gr.update(choices=render.document_choices(documents), value=docs_v), html, status_html, picks, overview_figure(matched)

    @user_errors
    def redraw(workspace_value: str, mode_v, centre, evidence_v, layers_v, kinds_v, edges_v, docs_v, limit_v):
        matched, html, status_html, picks = draw(
            session_workspace(workspace_value), mode_v, centre, evidence_v, layers_v, kinds_v, edges_v, docs_v, limit_v
        )
        return html, status_html, picks, overview_figure(matched)  # the charts follow the filters

    def recentre(workspace_value: str, mode_v, *rest):
        """After a node is chosen: the view around the chosen node follows it; the others stay."""
        if mode_v != AROUND_NODE:
            return gr.skip(), gr.skip(), gr.skip(), gr.skip()
        return redraw(workspace_value, mode_v, *rest)

    @user_errors
    def show_node(workspace_value: str, node: str | None):
        node = (node or "").strip()
        if not node:
            return gr.skip(), NO_NODE
        details_value = service.node_details(session_workspace(workspace_value), node)
        return node, render_node_details(details_value)

    def on_click(workspace_value: str, evt: gr.EventData):
        return show_node(workspace_value, getattr(evt, "node", None))  # set by the JS listeners above

    @user_errors
    def export(workspace_value: str, fmt: str, layers_v, kinds_v, edges_v, docs_v):
        ws = session_workspace(workspace_value)
        return _export_file(service.export_graph(ws, fmt, **_filters(layers_v, kinds_v, edges_v, docs_v)), fmt)

    @user_errors
    def show_evidence(workspace_value: str, result: AskResult | None, layers_v, kinds_v, edges_v, docs_v, limit_v):
        """The Ask tab's "show in graph": this tab, drawn around the answer's evidence."""
        nodes = evidence_nodes(result)
        if not nodes:
            raise StrataError("There is no answer with evidence to show yet. Ask a question first.")
        html, status_html, picks, fig = redraw(workspace_value, AROUND_EVIDENCE, "", nodes, layers_v, kinds_v, edges_v, docs_v, limit_v)
        return gr.Tabs(selected="graph"), AROUND_EVIDENCE, nodes, gr.skip(), html, status_html, picks, fig

    @user_errors
    def show_node_in_graph(workspace_value: str, node: str | None, layers_v, kinds_v, edges_v, docs_v, limit_v):
        """One cited node of the Ask tab: this tab, drawn around that node, with its details."""
        if not node:
            return (gr.skip(),) * 8
        html, status_html, picks, fig = redraw(workspace_value, AROUND_NODE, node, [], layers_v, kinds_v, edges_v, docs_v, limit_v)
        return gr.Tabs(selected="graph"), AROUND_NODE, gr.skip(), node, html, status_html, picks, fig

    filter_inputs = [workspace, mode, node_id, evidence, layers, kinds, edge_kinds, docs, limit]
    refresh_outputs = [docs, graph, status, node_pick, overview]
    redraw_outputs = [graph, status, node_pick, overview]
    # One queue for every redraw, one at a time: two filters changed in quick succession are two
    # events, and run side by side the older one could finish last and leave a stale graph on screen.
    in_order = {"trigger_mode": "always_last", "concurrency_id": "graph-draw", "concurrency_limit": 1, **PRIVATE}
    tab.select(refresh, inputs=filter_inputs, outputs=refresh_outputs, **in_order)
    for control in (mode, layers, kinds, edge_kinds, docs):
        control.input(redraw, inputs=filter_inputs, outputs=redraw_outputs, **in_order)
    limit.release(redraw, inputs=filter_inputs, outputs=redraw_outputs, **in_order)
    for chosen in (
        graph.click(on_click, inputs=[workspace], outputs=[node_id, details], **PRIVATE),
        details.click(on_click, inputs=[workspace], outputs=[node_id, details], **PRIVATE),
        node_id.submit(show_node, inputs=[workspace, node_id], outputs=[node_id, details], **PRIVATE),
        node_pick.input(show_node, inputs=[workspace, node_pick], outputs=[node_id, details], **PRIVATE),
    ):
        chosen.then(recentre, inputs=filter_inputs, outputs=redraw_outputs, **in_order)
    export_inputs = [workspace, layers, kinds, edge_kinds, docs]
    export_json.click(lambda *a: export(a[0], "json", *a[1:]), inputs=export_inputs, outputs=[export_file], **PRIVATE)
    export_graphml.click(lambda *a: export(a[0], "graphml", *a[1:]), inputs=export_inputs, outputs=[export_file], **PRIVATE)
    return GraphTab(
        tab=tab, graph=graph, show_evidence=show_evidence, show_inputs=[layers, kinds, edge_kinds, docs, limit],
        show_outputs=[mode, evidence, node_id, *redraw_outputs], show_node_in_graph=show_node_in_graph,
    )
