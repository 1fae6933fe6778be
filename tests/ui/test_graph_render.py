"""Pure renderers of the Graph tab (ui/graph.py), the Library's estimate and graph counts and the
Parse tab's selected unit (ui/render.py, ui/parse.py): views in, HTML or figures out, no browser.
What came from a PDF must stay text: escaped in HTML, and JSON-escaped inside the graph's page."""

from __future__ import annotations

import html
import re

from backend.types import (
    Block,
    BlockKind,
    EdgeKind,
    FileEstimate,
    GraphCounts,
    GraphEdgeView,
    GraphNodeView,
    GraphView,
    IngestEstimate,
    Layer,
    NeighbourView,
    NodeDetails,
    NodeKind,
    Section,
    TableView,
)
from ui import graph, parse, render

EVIL = '</script><script>window.__xss=1</script><img src=x onerror="window.__xss=2"> see href=1'
PNG_1PX = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c6360f8cf00000301010018dd8db00000000049454e44ae426082"
)


def _view(n_nodes: int = 3, matched: int | None = None, label: str = "Intro", text: str = "Some text") -> GraphView:
    nodes = [
        GraphNodeView(id="d", label="report.pdf", kind=NodeKind.DOCUMENT, layer=Layer.DOCUMENT, doc="d", doc_name="report.pdf", page=1),
        GraphNodeView(id="d:s1", label=label, kind=NodeKind.SECTION, layer=Layer.DOCUMENT, doc="d", doc_name="report.pdf", page=1),
        GraphNodeView(id="d:p1", label="Opening", kind=NodeKind.PARAGRAPH, layer=Layer.COMPONENT, doc="d", doc_name="report.pdf",
                      page=2, text=text),
    ][:n_nodes]
    ids = {n.id for n in nodes}
    edges = [e for e in (GraphEdgeView(src="d", dst="d:s1", kind=EdgeKind.CONTAINS), GraphEdgeView(src="d:s1", dst="d:p1", kind=EdgeKind.CONTAINS))
             if e.src in ids and e.dst in ids]
    total = GraphCounts(nodes=10, edges=12, by_layer={"document": 4, "component": 6}, by_kind={"document": 1, "section": 3, "paragraph": 6},
                        by_edge_kind={"contains": 9, "next": 3})
    matched_n = len(nodes) if matched is None else matched
    return GraphView(nodes=nodes, edges=edges, total=total, matched=GraphCounts(nodes=matched_n, edges=len(edges)), limit=max(1, n_nodes),
                     truncated=matched_n > len(nodes))


def _srcdoc(fragment: str) -> str:
    match = re.fullmatch(r'<iframe [^<>]*srcdoc="([^"<>]*)"></iframe>', fragment, flags=re.DOTALL)
    assert match, fragment[:300]
    return html.unescape(match.group(1))


# ---------------------------------------------------------------- graph page


def test_graph_is_an_inline_pyvis_page_in_a_sandboxed_iframe():
    fragment = graph.graph_html(_view())
    assert 'sandbox="allow-scripts"' in fragment and "allow-same-origin" not in fragment
    page = _srcdoc(fragment)  # everything in the attribute is escaped: the fragment holds no other markup
    assert "new vis.Network" in page and "vis-network" in page  # the library is inlined
    assert not re.search(r"""(src|href)\s*=\s*["']?https?:""", page), "the graph page must not load anything from the network"
    assert "strataGraphNode" in page and "window.parent.postMessage" in page  # clicks reach the app
    assert page.index("strataGraphNode") > page.index("drawGraph();")  # the bridge runs after the network exists
    for node_id in ("d", "d:s1", "d:p1"):
        assert f'"id": "{node_id}"' in page
    assert graph.KIND_COLORS[NodeKind.SECTION] in page
    assert 'data-nodes="3"' in fragment


def test_pdf_text_cannot_break_out_of_the_graph_page():
    fragment = graph.graph_html(_view(label=EVIL, text=EVIL))
    assert fragment.count("<") == 2  # <iframe ...> and </iframe>: the payload is escaped in the attribute
    page = _srcdoc(fragment)
    assert "<script>window.__xss" not in page and "<img src=x" not in page  # JSON-escaped inside the page's script
    assert "\\u003c/script\\u003e" in page
    # pyvis shows titles holding "href" with innerHTML; such titles are defused.
    assert "popup.innerHTML" not in page


def test_empty_graph_and_no_match_say_what_to_do():
    empty = GraphView(nodes=[], edges=[], total=GraphCounts(), matched=GraphCounts(), limit=10, truncated=False)
    assert "Upload PDFs in the Library tab" in graph.graph_html(empty)
    assert graph.graph_status(empty) == ""
    no_match = _view(n_nodes=0, matched=0)
    assert "No node passes these filters" in graph.graph_html(no_match)


def test_status_says_showing_n_of_m():
    cut = graph.graph_status(_view(n_nodes=2, matched=40))
    assert 'data-shown="2"' in cut and 'data-matched="40"' in cut and 'data-edges="1"' in cut
    assert "Showing <b>2</b> of <b>40</b>" in cut and "hides 38 node(s)" in cut
    whole = graph.graph_status(_view())
    assert "Showing <b>3</b> of <b>3</b>" in whole and "hides" not in whole


def test_overview_figure_has_one_bar_chart_per_count():
    counts = _view().total
    fig = graph.overview_figure(counts)
    bars = [t for t in fig.data if t.type == "bar"]
    assert len(bars) == 3
    assert dict(zip(bars[0].y, bars[0].x)) == counts.by_layer
    assert dict(zip(bars[1].y, bars[1].x)) == counts.by_kind
    assert dict(zip(bars[2].y, bars[2].x)) == counts.by_edge_kind


def test_node_choices_label_the_shown_nodes():
    choices = graph.node_choices(_view())
    assert [v for _, v in choices] == ["d", "d:s1", "d:p1"]
    assert choices[2][0] == "Opening · paragraph · report.pdf p. 2"


def test_node_details_are_escaped_and_link_their_neighbours():
    parent = NeighbourView(node_id="d:p1", label=EVIL, kind=NodeKind.PARAGRAPH, edge_kind=EdgeKind.CONTAINS, direction="in")
    other = NeighbourView(node_id='x"y', label="Next one", kind=NodeKind.SENTENCE, edge_kind=EdgeKind.NEXT, direction="out")
    details = NodeDetails(
        id="d:p1.0", kind=NodeKind.SENTENCE, layer=Layer.SUBCOMPONENT, label=EVIL, text=EVIL, doc="d", doc_name="<b>r</b>.pdf", page=2,
        bbox=(10, 20, 30, 40), section_path=["Report", EVIL], parent=parent, neighbours=[parent, other], neighbours_total=9,
        thumbnail_png=PNG_1PX,
    )
    out = graph.render_node_details(details)
    assert "<script" not in out and "<img src=x" not in out and "<b>r</b>" not in out
    assert html.escape(EVIL) in out
    assert 'data-node="d:p1"' in out and 'data-node="x&quot;y"' in out
    assert 'data-node-id="d:p1.0"' in out
    assert "first 2 of 9" in out
    assert 'src="data:image/png;base64,iVBORw0KGgo' in out
    assert "page 2" in out and "box 10, 20, 30, 40" in out


# ---------------------------------------------------------------- library and parse pieces


def test_estimate_lists_files_and_warnings():
    est = IngestEstimate(
        files=[
            FileEstimate(file_name="a<b>.pdf", pages=12, bytes=3 * 2**20, status="new"),
            FileEstimate(file_name="old.pdf", pages=3, bytes=1000, status="unchanged", reason="already in the workspace"),
            FileEstimate(file_name="bad.pdf", status="invalid", reason="not a PDF"),
        ],
        pages=12, seconds=150.0, seconds_per_page=12.5, measured=True, warnings=["bad.pdf will fail: not a PDF"],
    )
    out = render.render_estimate(est)
    assert 'data-pages="12"' in out and 'data-seconds="150.0"' in out
    assert "About <b>2 min</b> for <b>12</b> page(s)" in out and "measured on this server" in out
    assert "a&lt;b&gt;.pdf" in out and "<b>.pdf" not in out
    assert 'data-status="invalid"' in out and "will fail" in out and "3.0 MiB" in out and "1 KB" in out
    nothing = render.render_estimate(est.model_copy(update={"pages": 0, "seconds": 0.0}))
    assert "Nothing to process" in nothing
    assert render.render_estimate(IngestEstimate(files=[], pages=0, seconds=0, seconds_per_page=1, measured=False)) == ""


def test_graph_counts_line():
    counts = GraphCounts(nodes=30, edges=50, by_layer={"document": 5, "component": 25}, by_kind={"document": 2})
    out = render.render_graph_counts(counts, growing=True)
    assert "Graph so far" in out and 'data-nodes="30"' in out and 'data-documents="2"' in out
    assert "<b>25</b> components" in out and "<b>50</b> edges" in out and "entities" not in out
    assert render.render_graph_counts(GraphCounts()) == ""


def test_table_is_shown_as_escaped_cells():
    view = TableView(node_id="d:t1", label="Table 1", caption="Table 1: <i>x</i>", header=["Name", "<b>Value</b>"],
                     rows=[["a", EVIL], ["b", ""]])
    out = render.render_table(view)
    assert out.count("<tr>") == 3 and out.count("<td>") == 4
    assert "<th>&lt;b&gt;Value&lt;/b&gt;</th>" in out and "<caption>Table 1: &lt;i&gt;x&lt;/i&gt;</caption>" in out
    assert "<script" not in out and "<img" not in out
    block = Block(page=3, bbox=(64, 88, 531, 225), kind=BlockKind.TABLE, text=EVIL, order=2, node="d:t1")
    unit = render.render_unit(block, 2, "#15803d", view)
    assert 'class="st-cells"' in unit and "page 3" in unit and "box 64, 88, 531, 225" in unit
    assert html.escape(EVIL) in render.render_unit(block, 2, "#15803d")  # without cells: the text, escaped


def test_blocks_are_clickable_and_mark_the_selected_one():
    blocks = [Block(page=1, bbox=(0, 0, 10, 10), kind=BlockKind.PARAGRAPH, text=f"b{i}", order=i) for i in range(3)]
    out = render.render_blocks(blocks, {}, selected=1)
    assert [m for m in re.findall(r'data-block="(\d+)"', out)] == ["0", "1", "2"]
    assert out.count("st-block-selected") == 1
    assert re.search(r'class="st-block-row st-block-selected" data-block="1"', out)


def test_a_section_selects_its_heading_block():
    section = Section(id="d:s3", doc="d", title="3 Results", level=1, parent="d:s0", path=["R", "3 Results"], page=2,
                      bbox=(64.0, 100.0, 200.0, 115.0), confidence=1.0, source="outline")
    blocks = [
        Block(page=2, bbox=(64, 60, 500, 90), kind=BlockKind.PARAGRAPH, text="p", order=1, node="d:p1"),
        Block(page=2, bbox=(64, 100.3, 200, 115), kind=BlockKind.HEADING, text="3 Results", order=2, node="d:s3"),
    ]
    assert parse.section_block(blocks, section) == 1
    blocks[1] = blocks[1].model_copy(update={"node": None})
    assert parse.section_block(blocks, section) == 1  # by box when the block names no node
    assert parse.section_block(blocks[:1], section) is None
    rings = parse.selection_highlights(blocks[1])
    assert [h.color for h in rings] == [parse.SELECTED_COLOR] * 2
    assert rings[1].bbox[0] < rings[0].bbox[0] < blocks[1].bbox[0]


# ---------------------------------------------------------------- tree, views around nodes, labels


def _nodes_of(page: str) -> list[dict]:
    import json

    match = re.search(r"nodes = new vis\.DataSet\((\[.*?\])\);", page, flags=re.DOTALL)
    assert match, "pyvis page without its node list"
    return json.loads(match.group(1))


def test_the_tree_is_laid_out_by_depth_left_to_right():
    view = _view()
    view = view.model_copy(update={"nodes": [n.model_copy(update={"depth": d}) for n, d in zip(view.nodes, (0, 1, 2))]})
    page = _srcdoc(graph.graph_html(view, tree=True))
    assert '"hierarchical": {"enabled": true, "direction": "LR"' in page and '"physics": {"enabled": false}' in page
    nodes = {n["id"]: n for n in _nodes_of(page)}
    assert [nodes[i]["level"] for i in ("d", "d:s1", "d:p1")] == [0, 1, 2]
    force = _srcdoc(graph.graph_html(view))
    assert '"hierarchical": {"enabled": true' not in force and all("level" not in n for n in _nodes_of(force))


def test_labels_are_placed_by_the_page_with_the_full_text_in_the_title():
    long = "A section title that runs on far longer than any label should be drawn"
    page = _srcdoc(graph.graph_html(_view(label=long), tree=True))
    nodes = {n["id"]: n for n in _nodes_of(page)}
    assert all(n["label"] == " " for n in nodes.values())  # nothing drawn until the page has placed them
    assert nodes["d:s1"]["fullLabel"].endswith("…") and len(nodes["d:s1"]["fullLabel"]) <= graph.TREE_LABEL_CHARS
    assert nodes["d"]["labelRank"] < nodes["d:s1"]["labelRank"] < nodes["d:p1"]["labelRank"]  # documents, sections first
    assert "placeLabels" in page and "strataLabelBoxes" in page


def test_focus_nodes_are_ringed_and_labelled_first():
    view = _view().model_copy(update={"focus": ["d:p1"]})
    nodes = {n["id"]: n for n in _nodes_of(_srcdoc(graph.graph_html(view)))}
    assert nodes["d:p1"]["labelRank"] == 0 and nodes["d:p1"]["color"]["border"] == graph.FOCUS_COLOR
    assert nodes["d:p1"]["size"] > graph.KIND_SHAPES[NodeKind.PARAGRAPH][1]


def test_evidence_is_the_cited_nodes_or_else_the_first_results():
    from backend.types import Answer, AskResult, Citation

    cite = Citation(n=1, node_id="d:p1.0", doc="r.pdf", page=1, bbox=None, kind=NodeKind.SENTENCE, section_path=[], text="x")
    assert graph.evidence_nodes(None) == []
    result = AskResult.model_construct(answer=Answer(text="a", abstained=False, citations=[cite, cite]), results=[])
    assert graph.evidence_nodes(result) == ["d:p1.0"]
