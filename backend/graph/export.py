"""Read-only views of a workspace's layered graph for people and other programs: the filtered,
size-limited view the Graph tab draws (each node with its depth in the hierarchy, for a tree), the
graph around chosen nodes (an ego view: a clicked node, or an answer's evidence), one node's details (document, page, box, section path,
parent, neighbours), a table component's cells, and the whole graph (or a filtered part of it) as
node-link JSON or GraphML through networkx.

Everything here reads a loaded `Corpus` and returns types from backend/types.py; the service
adds what needs files (the page thumbnail of a node). What it does not do: lay the graph out, pick
colours or escape text for HTML (the UI does), or write anything to the workspace.
"""

from __future__ import annotations

import io
import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Literal

import networkx as nx

from backend.errors import StrataError
from backend.graph.corpus import Corpus
from backend.types import (
    Edge,
    EdgeKind,
    GraphCounts,
    GraphEdgeView,
    GraphNodeView,
    GraphView,
    NAVIGATION_EDGES,
    Layer,
    NeighbourView,
    Node,
    NodeDetails,
    NodeKind,
    TableView,
)

ExportFormat = Literal["json", "graphml"]
EXPORT_FORMATS: tuple[str, ...] = ("json", "graphml")
LAYER_NAMES: dict[Layer, str] = {layer: layer.name.lower() for layer in Layer}  # document | component | subcomponent | entity
LABEL_CHARS = 36
TOOLTIP_CHARS = 240
MAX_NEIGHBOURS = 60
# Neighbours are listed hierarchy first, then navigation, then entities (the long tail).
_EDGE_ORDER = {kind: i for i, kind in enumerate(EdgeKind)}
# XML 1.0 cannot hold these characters (PDF text sometimes carries form feeds and other controls).
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _short(text: str, limit: int) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _parse_choices(values: Iterable | None, enum: type, what: str) -> set | None:
    """None (no filter) or the set of enum members named by `values` (members, values or names)."""
    if values is None:
        return None
    out = set()
    for v in values:
        if isinstance(v, enum):
            out.add(v)
            continue
        text = str(v).strip().lower()
        member = next((m for m in enum if str(m.value).lower() == text or m.name.lower() == text), None)
        if member is None:
            choices = ", ".join(LAYER_NAMES.values()) if enum is Layer else ", ".join(m.value for m in enum)
            raise StrataError(f"Unknown {what} '{v}'. Choose among: {choices}.")
        out.add(member)
    return out


def node_label(corpus: Corpus, node: Node, limit: int = LABEL_CHARS) -> str:
    """A short name for a node: the file name of a document, the title of a section, the label
    of a table or figure ("Table 2"), the name of an entity, else the opening of its text."""
    if node.kind == NodeKind.DOCUMENT:
        doc = corpus.documents.get(node.doc)
        return _short(doc.file_name if doc else node.text, limit)
    if node.kind == NodeKind.SECTION:
        section = corpus.sections.get(node.id)
        return _short(section.title if section else node.text, limit)
    if node.kind in (NodeKind.TABLE, NodeKind.FIGURE):
        return _short(node.label or f"{node.kind.value.title()}: {node.context or node.text}", limit)
    return _short(node.text, limit)


def _valid_edges(corpus: Corpus) -> list[Edge]:
    return list(corpus.edges)  # the corpus keeps only edges between its nodes


def _counts(nodes: Iterable[Node], edges: Iterable[Edge]) -> GraphCounts:
    nodes, edges = list(nodes), list(edges)
    return GraphCounts(
        nodes=len(nodes),
        edges=len(edges),
        by_layer=dict(Counter(LAYER_NAMES[n.layer] for n in nodes)),
        by_kind=dict(Counter(n.kind.value for n in nodes)),
        by_edge_kind=dict(Counter(e.kind.value for e in edges)),
    )


def graph_counts(corpus: Corpus) -> GraphCounts:
    """Nodes by layer and kind, edges by kind, of the whole graph."""
    return _counts(corpus.nodes.values(), _valid_edges(corpus))


def _entity_docs(corpus: Corpus) -> dict[str, set[str]]:
    """Entity id -> the documents it is mentioned in (an entity node belongs to its first document only)."""
    out: dict[str, set[str]] = defaultdict(set)
    for n in corpus.nodes.values():
        if n.layer == Layer.ENTITY:
            out[n.id].add(n.doc)
            for e, other in corpus.neighbours(n.id, (EdgeKind.MENTIONS,)):
                out[n.id].add(corpus.nodes[other].doc)
    return out


def select(
    corpus: Corpus,
    layers: Iterable | None = None,
    node_kinds: Iterable | None = None,
    edge_kinds: Iterable | None = None,
    doc_ids: Iterable[str] | None = None,
) -> tuple[list[Node], list[Edge]]:
    """The nodes that pass the filters and the edges of the chosen kinds between them. None means
    no filter; an empty list lets nothing through. Unknown layer or kind names raise StrataError."""
    layer_set = _parse_choices(layers, Layer, "layer")
    kind_set = _parse_choices(node_kinds, NodeKind, "node kind")
    edge_set = _parse_choices(edge_kinds, EdgeKind, "edge kind")
    doc_set = set(doc_ids) if doc_ids is not None else None
    entity_docs = _entity_docs(corpus) if doc_set is not None else {}
    nodes = []
    for n in corpus.nodes.values():
        if layer_set is not None and n.layer not in layer_set:
            continue
        if kind_set is not None and n.kind not in kind_set:
            continue
        if doc_set is not None and not (entity_docs.get(n.id, {n.doc}) & doc_set):
            continue
        nodes.append(n)
    ids = {n.id for n in nodes}
    edges = [e for e in (corpus.edges if edge_set is None else corpus.edges.of_kind(tuple(edge_set))) if e.src in ids and e.dst in ids]
    return nodes, edges


def _draw_order(corpus: Corpus, nodes: list[Node]) -> list[Node]:
    """The order nodes are let through under a limit: layer by layer from the top, and inside a
    layer the documents taken in turn (each one's units in reading order), so a cut keeps every
    document in view. Entities: the most connected first."""
    rank: dict[str, int] = {}
    by_group: dict[tuple[Layer, str], list[Node]] = defaultdict(list)
    for n in nodes:
        by_group[(n.layer, n.doc if n.layer != Layer.ENTITY else "")].append(n)
    for (layer, _), group in by_group.items():
        if layer == Layer.ENTITY:
            group.sort(key=lambda n: (-corpus.edges.degree(n.id), n.id))
        else:
            group.sort(key=lambda n: (n.kind != NodeKind.DOCUMENT, n.page, n.order, n.id))
        for i, n in enumerate(group):
            rank[n.id] = i
    doc_rank = {d: i for i, d in enumerate(corpus.documents)}
    return sorted(nodes, key=lambda n: (n.layer, rank[n.id], doc_rank.get(n.doc, 0), n.id))


def _depth(corpus: Corpus, node: Node, cache: dict[str, int]) -> int:
    """Steps up the parent chain to the node's document; -1 for a node outside the hierarchy."""
    if node.kind == NodeKind.DOCUMENT:
        return 0
    if node.layer == Layer.ENTITY or node.parent is None:
        return -1
    if node.id not in cache:
        chain: list[Node] = []
        current: Node | None = node
        while current is not None and current.kind != NodeKind.DOCUMENT and current.id not in cache and len(chain) < 64:
            chain.append(current)
            current = corpus.nodes.get(current.parent) if current.parent else None
        base = cache.get(current.id, 0) if current is not None else -1
        for i, n in enumerate(reversed(chain), 1):
            cache[n.id] = base + i if base >= 0 else -1
    return cache[node.id]


def _node_views(corpus: Corpus, nodes: list[Node]) -> list[GraphNodeView]:
    depths: dict[str, int] = {}
    return [
        GraphNodeView(
            id=n.id, label=node_label(corpus, n), kind=n.kind, layer=n.layer, doc=n.doc,
            doc_name=corpus.documents[n.doc].file_name if n.doc in corpus.documents else n.doc, page=n.page,
            text=_short(n.text, TOOLTIP_CHARS), depth=_depth(corpus, n, depths),
        )
        for n in nodes
    ]


def graph_view(
    corpus: Corpus,
    layers: Iterable | None = None,
    node_kinds: Iterable | None = None,
    edge_kinds: Iterable | None = None,
    doc_ids: Iterable[str] | None = None,
    limit: int = 300,
) -> GraphView:
    """The filtered graph, at most `limit` nodes (see `_draw_order` for which ones stay)."""
    if limit < 1:
        raise StrataError(f"The node limit must be at least 1, not {limit}.")
    nodes, edges = select(corpus, layers, node_kinds, edge_kinds, doc_ids)
    shown = _draw_order(corpus, nodes)[:limit]
    shown_ids = {n.id for n in shown}
    shown_edges = [e for e in edges if e.src in shown_ids and e.dst in shown_ids]
    return GraphView(
        nodes=_node_views(corpus, shown),
        edges=[GraphEdgeView(src=e.src, dst=e.dst, kind=e.kind) for e in shown_edges],
        total=graph_counts(corpus),
        matched=_counts(nodes, edges),
        limit=limit,
        truncated=len(nodes) > len(shown),
    )


def _ancestors(corpus: Corpus, node_id: str) -> list[str]:
    """The sections and the document above a node, nearest first."""
    out: list[str] = []
    parent = corpus.nodes[node_id].parent
    while parent and parent in corpus.nodes and parent not in out and len(out) < 64:
        out.append(parent)
        parent = corpus.nodes[parent].parent
    return out


def ego_view(
    corpus: Corpus,
    centres: Iterable[str],
    edge_kinds: Iterable | None = None,
    layers: Iterable | None = None,
    node_kinds: Iterable | None = None,
    limit: int = 300,
) -> GraphView:
    """The graph around some nodes: the centres, their neighbours over edges of `edge_kinds` (None:
    every kind) and the neighbours of what holds them over the navigational kinds among those, that
    pass the layer and kind filters, and the sections and document above each of them, so every node shows where it sits; the edges of those kinds and the hierarchy between
    them. Cut to `limit` nodes, centres first, then their place in the hierarchy, then neighbours."""
    if limit < 1:
        raise StrataError(f"The node limit must be at least 1, not {limit}.")
    wanted = [c for c in dict.fromkeys(centres) if c]
    known = [c for c in wanted if c in corpus.nodes]
    if not known:
        shown_ids = ", ".join(f"'{c}'" for c in wanted[:3]) or "none"
        raise StrataError(f"No node of this workspace to centre on (asked: {shown_ids}). Click a node, or ask a question first.")
    edge_set = _parse_choices(edge_kinds, EdgeKind, "edge kind")
    kinds = tuple(EdgeKind) if edge_set is None else tuple(edge_set)
    layer_set = _parse_choices(layers, Layer, "layer")
    kind_set = _parse_choices(node_kinds, NodeKind, "node kind")

    def passes(n: Node) -> bool:
        return (layer_set is None or n.layer in layer_set) and (kind_set is None or n.kind in kind_set)

    order: dict[str, None] = dict.fromkeys(known)
    for c in known:
        order.update(dict.fromkeys(_ancestors(corpus, c)))
    # The centres' own edges; and the navigational ones of what holds them (a cited sentence's
    # paragraph refers to "Table 2", its document links to another).
    navigational = tuple(k for k in kinds if k in NAVIGATION_EDGES)
    holders = [a for c in known for a in _ancestors(corpus, c)] if navigational else []
    ring = [o for c in known for o in corpus.neighbour_ids(c, kinds)]
    ring += [o for a in holders for o in corpus.neighbour_ids(a, navigational)]
    ring = [o for o in ring if passes(corpus.nodes[o])]
    for o in ring:
        order.update(dict.fromkeys([o, *_ancestors(corpus, o)]))
    ids = list(order)
    shown = set(ids[:limit])
    drawn = set(kinds) | {EdgeKind.CONTAINS}
    edges = [e for i in order for e in corpus.edges.out_of(i, tuple(drawn)) if e.dst in order]
    return GraphView(
        nodes=_node_views(corpus, [corpus.nodes[i] for i in ids[:limit]]),
        edges=[GraphEdgeView(src=e.src, dst=e.dst, kind=e.kind) for e in edges if e.src in shown and e.dst in shown],
        total=graph_counts(corpus),
        matched=_counts((corpus.nodes[i] for i in ids), edges),
        limit=limit,
        truncated=len(ids) > limit,
        focus=known,
    )


def _neighbour(corpus: Corpus, edge: Edge, other: str, direction: Literal["out", "in"]) -> NeighbourView:
    n = corpus.nodes[other]
    return NeighbourView(
        node_id=other, label=node_label(corpus, n, 80), kind=n.kind, edge_kind=edge.kind, direction=direction,
        provenance=edge.provenance,
    )


def node_details(corpus: Corpus, node_id: str, max_neighbours: int = MAX_NEIGHBOURS) -> NodeDetails:
    """A node, its parent and its neighbours (hierarchy edges first), without the page thumbnail."""
    node = corpus.nodes.get(node_id)
    if node is None:
        raise StrataError(f"No node with id '{node_id}' in this workspace. Pick a node of the graph shown above.")
    doc = corpus.documents.get(node.doc)
    parent = None
    neighbours = []
    for e in corpus.edges.out_of(node_id):
        neighbours.append(_neighbour(corpus, e, e.dst, "out"))
    for e in corpus.edges.into(node_id):
        view = _neighbour(corpus, e, e.src, "in")
        if e.kind == EdgeKind.CONTAINS and parent is None:
            parent = view
        neighbours.append(view)
    neighbours.sort(key=lambda v: (_EDGE_ORDER[v.edge_kind], v.direction, v.kind.value, v.label))
    bbox = node.bbox
    if bbox is None and node.kind == NodeKind.SECTION and node.id in corpus.sections:
        bbox = corpus.sections[node.id].bbox
    return NodeDetails(
        id=node.id, kind=node.kind, layer=node.layer, label=node_label(corpus, node, 120), text=node.text, doc=node.doc,
        doc_name=doc.file_name if doc else node.doc, page=node.page, bbox=bbox,
        section_path=corpus.section_path(node_id), parent=parent, neighbours=neighbours[:max_neighbours],
        neighbours_total=len(neighbours),
    )


def table_view(corpus: Corpus, node_id: str) -> TableView:
    """The header and rows of a table component. The parser stores a table as its caption (or
    upper context) followed by one ' | '-joined line per row, header first; a very long table's
    text was cut, so rows past the cut are taken from its row units' cells."""
    node = corpus.nodes.get(node_id)
    if node is None or node.kind != NodeKind.TABLE:
        raise StrataError(f"'{node_id}' is not a table of this workspace.")
    body = node.text
    if node.context and body.startswith(node.context + "\n"):
        body = body[len(node.context) + 1:]
    lines = [line for line in body.split("\n") if line.strip()]
    header = lines[0].split(" | ") if lines else []
    rows = [line.split(" | ") for line in lines[1:]]
    row_units = [corpus.nodes[c] for c in corpus.children(node_id) if corpus.nodes[c].kind == NodeKind.ROW]
    note = ""
    if len(rows) < len(row_units):
        # The last line may be cut mid-row: rebuild it and every later row from the row units.
        rows = rows[:-1] if rows else rows
        rows += [_row_values(unit, header) for unit in row_units[len(rows):]]
        note = "This table is long; rows past the first part were rebuilt from its row units."
    width = max([len(header)] + [len(r) for r in rows]) if (header or rows) else 0
    header = header + [""] * (width - len(header))
    rows = [r + [""] * (width - len(r)) for r in rows]
    return TableView(node_id=node_id, label=node.label, caption=node.context, header=header, rows=rows, note=note)


def _row_values(unit: Node, header: list[str]) -> list[str]:
    """A row unit's values in header order ("" for a cell left empty, and so left out of the unit);
    a row stored without cells shows its whole text in one cell."""
    if unit.row is None:
        return [unit.text]
    names = [h or f"column {i + 1}" for i, h in enumerate(header)]
    values = dict.fromkeys(names, "")
    for cell in unit.row.cells:
        if cell.header in values:
            values[cell.header] = cell.value
    return list(values.values()) if names else [cell.value for cell in unit.row.cells]


# ---------------------------------------------------------------- export


def _xml_safe(value: str) -> str:
    return _XML_INVALID.sub(" ", value)


def to_networkx(corpus: Corpus, nodes: list[Node], edges: list[Edge]) -> nx.MultiDiGraph:
    """A networkx multigraph (two units can be joined by several edges of different kinds) whose
    attributes are plain strings and numbers, as GraphML needs."""
    graph = nx.MultiDiGraph(name="strata", documents=len({n.doc for n in nodes}))
    for n in nodes:
        doc = corpus.documents.get(n.doc)
        graph.add_node(
            n.id,
            label=_xml_safe(node_label(corpus, n, 80)),
            kind=n.kind.value,
            layer=int(n.layer),
            layer_name=LAYER_NAMES[n.layer],
            doc=n.doc,
            doc_name=_xml_safe(doc.file_name if doc else ""),
            page=n.page,
            bbox=" ".join(f"{v:g}" for v in n.bbox) if n.bbox else "",
            section=n.section or "",
            section_path=_xml_safe(" > ".join(corpus.section_path(n.id))),
            parent=n.parent or "",
            unit_label=_xml_safe(n.label or ""),
            text=_xml_safe(n.text),
        )
    for e in edges:
        graph.add_edge(e.src, e.dst, kind=e.kind.value, weight=float(e.weight), provenance=_xml_safe(e.provenance))
    return graph


def export_graph(
    corpus: Corpus,
    fmt: str = "json",
    layers: Iterable | None = None,
    node_kinds: Iterable | None = None,
    edge_kinds: Iterable | None = None,
    doc_ids: Iterable[str] | None = None,
) -> bytes:
    """The graph (every node that passes the filters, no limit) as node-link JSON or GraphML."""
    if fmt not in EXPORT_FORMATS:
        raise StrataError(f"Unknown export format '{fmt}'. Choose one of: {', '.join(EXPORT_FORMATS)}.")
    nodes, edges = select(corpus, layers, node_kinds, edge_kinds, doc_ids)
    graph = to_networkx(corpus, nodes, edges)
    if fmt == "graphml":
        buf = io.BytesIO()
        nx.write_graphml(graph, buf, encoding="utf-8", prettyprint=False)
        return buf.getvalue()
    data = nx.node_link_data(graph, edges="edges")
    return json.dumps(data, ensure_ascii=False, indent=1).encode("utf-8")
