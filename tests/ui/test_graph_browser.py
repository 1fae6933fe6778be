"""The Graph tab, the Library's estimate and growing graph, and the Parse tab's jumps, in a real
browser (the shared `python app.py` server and chromium of tests/ui/conftest.py).

Graph: filtering by layer and edge kind changes the counts; a real mouse click on a node in the
pyvis iframe shows that node's details; the GraphML download parses with networkx; nothing is
fetched from outside the app. Library: choosing files shows the estimate before Ingest is
pressed, and the document list and graph counts grow while a batch is still running. Parse: a
section click lands on its page with its heading selected (drawn on the image), and a table
block shows its cells as a table.
"""

from __future__ import annotations

import io
from pathlib import Path
from urllib.parse import urlparse

import networkx as nx
import pytest

import pymupdf

from tests.ui.helpers import (
    BROWSER_MARKS,
    FILLER,
    INGEST_TIMEOUT_MS,
    UI_TIMEOUT_MS,
    SAMPLE_BRIEF,
    _open_session,
    _open_tab,
    _shot,
    call_and_wait,
    sync_api,
)

pytestmark = BROWSER_MARKS
expect = sync_api.expect if sync_api is not None else None

# Pixels of the selection colour (#ff2d55) in the page image, counted in the browser.
COUNT_SELECTION_PIXELS_JS = """
(img) => {
  const canvas = document.createElement('canvas');
  canvas.width = img.naturalWidth; canvas.height = img.naturalHeight;
  const ctx = canvas.getContext('2d');
  ctx.drawImage(img, 0, 0);
  const data = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
  let n = 0;
  for (let i = 0; i < data.length; i += 4) {
    if (Math.abs(data[i] - 255) + Math.abs(data[i + 1] - 45) + Math.abs(data[i + 2] - 85) < 60) { n++; }
  }
  return n;
}
"""
# A node of the wanted kind whose centre is not covered by another node, with its centre in the
# iframe's coordinates.
FIND_NODE_JS = """
(kind) => {
  for (const node of nodes.get()) {
    if (!String(node.title).startsWith(kind + ' ')) { continue; }
    const pos = network.canvasToDOM(network.getPositions([node.id])[node.id]);
    const box = document.getElementById('mynetwork').getBoundingClientRect();
    if (pos.x < 20 || pos.y < 20 || pos.x > box.width - 20 || pos.y > box.height - 20) { continue; }
    if (network.getNodeAt(pos) === node.id) { return {id: node.id, x: pos.x, y: pos.y}; }
  }
  return null;
}
"""


def _status(page) -> dict[str, int]:
    status = page.locator("#graph-status .st-graph-status")
    expect(status).to_be_visible()
    return {k: int(status.get_attribute(f"data-{k}")) for k in ("shown", "matched", "edges")}


def _graph_frame(page):
    frame_el = page.locator("#graph-view iframe")
    expect(frame_el).to_be_visible()
    frame = frame_el.element_handle().content_frame()
    frame.wait_for_selector("body[data-stable=true]", state="attached", timeout=UI_TIMEOUT_MS)
    return frame_el, frame


def _click_graph_node(page, kind: str) -> str:
    """Click, with the mouse, a node of `kind` in the graph; returns its id."""
    frame_el, frame = _graph_frame(page)
    frame_el.scroll_into_view_if_needed()
    target = frame.evaluate(FIND_NODE_JS, kind)
    assert target is not None, f"no uncovered {kind} node in the drawn graph"
    box = frame_el.bounding_box()
    page.mouse.click(box["x"] + target["x"], box["y"] + target["y"])
    return target["id"]


def _toggle(page, group_id: str, label: str) -> None:
    page.locator(f"#{group_id} label").filter(has_text=label).first.click()


def _select_dropdown(page, elem_id: str, option: str) -> None:
    page.locator(f"#{elem_id} input").click()
    page.get_by_role("option", name=option).first.click()


@pytest.fixture(scope="module")
def graph_page(browser, app_url):
    context, page = _open_session(browser, app_url)
    page.outside_requests = []
    app_host = urlparse(app_url).netloc

    def record(request) -> None:
        url = urlparse(request.url)
        if url.scheme in ("http", "https", "ws", "wss") and url.netloc != app_host:
            page.outside_requests.append(request.url)

    context.on("request", record)  # every frame of every page, the graph's iframe included
    _open_tab(page, "Graph")
    yield page
    context.close()


# ---------------------------------------------------------------- graph


def test_graph_shows_the_sample_corpus_offline(graph_page):
    page = graph_page
    counts = _status(page)
    assert counts["shown"] == counts["matched"] > 50  # documents, sections and components by default
    _graph_frame(page)
    expect(page.locator("#graph-overview")).to_be_visible()
    expect(page.locator("#graph-overview .js-plotly-plot")).to_have_count(1)  # plotly bundled with Gradio draws it
    expect(page.locator("#graph-docs")).to_be_visible()
    _shot(page, "graph_01_default")
    assert page.outside_requests == []
    assert page.page_errors == []


def test_filters_change_the_counts(graph_page):
    page = graph_page
    before = _status(page)
    _toggle(page, "graph-layers", "Subcomponents")
    expect(page.locator("#graph-status .st-graph-status")).not_to_have_attribute("data-matched", str(before["matched"]))
    with_subs = _status(page)
    assert with_subs["matched"] > before["matched"]
    limit = int(page.locator("#graph-limit input[type=number]").input_value())
    assert with_subs["shown"] == min(limit, with_subs["matched"])
    if with_subs["matched"] > limit:
        expect(page.locator("#graph-status")).to_contain_text("raise the limit or narrow the filters")
    _shot(page, "graph_02_subcomponents")
    _toggle(page, "graph-edge-kinds", "contains")
    expect(page.locator("#graph-status .st-graph-status")).not_to_have_attribute("data-edges", str(with_subs["edges"]))
    without_contains = _status(page)
    assert without_contains["shown"] == with_subs["shown"]  # edge kinds filter edges, not nodes
    assert without_contains["edges"] < with_subs["edges"]
    _shot(page, "graph_03_no_contains")
    # Back to the defaults for the next tests, one update at a time (an input made while the
    # previous redraw is still running was seen lost once in a fresh clone: see the issue note).
    _toggle(page, "graph-edge-kinds", "contains")
    expect(page.locator("#graph-status .st-graph-status")).to_have_attribute("data-edges", str(with_subs["edges"]))
    _toggle(page, "graph-layers", "Subcomponents")
    expect(page.locator("#graph-status .st-graph-status")).to_have_attribute("data-matched", str(before["matched"]))
    expect(page.locator("#graph-status .st-graph-status")).to_have_attribute("data-edges", str(before["edges"]))


def test_clicking_a_node_shows_its_details(graph_page):
    page = graph_page
    node_id = _click_graph_node(page, "paragraph")
    details = page.locator("#graph-node-details .st-gnode")
    expect(details).to_have_attribute("data-node-id", node_id)
    expect(details).to_have_attribute("data-kind", "paragraph")
    expect(page.locator("#graph-node-id input, #graph-node-id textarea").first).to_have_value(node_id)
    expect(details.locator(".st-gnode-thumb")).to_be_visible()  # its page, box highlighted
    expect(details.locator(".st-gnode-parent .st-gnb")).to_have_count(1)  # the section that holds it
    expect(details.locator(".st-gnode-parent")).to_contain_text("section")
    _shot(page, "graph_04_node_details")
    # A neighbour in the list is a link to that node, and the graph selects it.
    parent = details.locator(".st-gnode-parent .st-gnb").first
    parent_id = parent.get_attribute("data-node")
    parent.click()
    expect(page.locator("#graph-node-details .st-gnode")).to_have_attribute("data-node-id", parent_id)
    _, frame = _graph_frame(page)
    frame.wait_for_function("(id) => network.getSelectedNodes().includes(id)", arg=parent_id, timeout=UI_TIMEOUT_MS)
    assert page.page_errors == []


def test_graphml_download_parses_with_networkx(graph_page, tmp_path):
    page = graph_page
    _toggle(page, "graph-edge-kinds", "mentions")  # exported edges follow the filters
    expect(page.locator("#graph-status .st-graph-status")).to_be_visible()
    page.locator("#graph-export-graphml").click()
    link = page.locator('#graph-export-file a[href*="strata-graph.graphml"]').first
    expect(link).to_be_visible(timeout=UI_TIMEOUT_MS)
    matched = _status(page)["matched"]
    with page.expect_download() as download_info:
        link.click()
    path = tmp_path / "graph.graphml"
    download_info.value.save_as(path)
    graph = nx.read_graphml(io.BytesIO(path.read_bytes()))
    assert graph.number_of_nodes() == matched  # every node that passes the filters, no limit
    kinds = {k for _, _, k in graph.edges(data="kind")}
    assert "contains" in kinds and "mentions" not in kinds
    assert {d["layer_name"] for _, d in graph.nodes(data=True)} == {"document", "component"}
    _shot(page, "graph_05_export")
    _toggle(page, "graph-edge-kinds", "mentions")


# The drawn tree: every hierarchy edge runs left to right (parent in an earlier column).
TREE_EDGES_JS = """
() => {
  const pos = network.getPositions();
  let tree = 0, backwards = 0;
  for (const e of edges.get()) {
    if (e.title !== 'contains' || !pos[e.from] || !pos[e.to]) { continue; }
    tree++;
    if (!(pos[e.from].x < pos[e.to].x)) { backwards++; }
  }
  return {tree: tree, backwards: backwards, layout: document.body.dataset.layout};
}
"""
# The labels drawn now, measured by vis-network itself (node and label box, in screen pixels),
# and how many pairs of them overlap by more than 3 px each way.
LABELS_JS = """
() => {
  network.redraw();  // vis-network measures a node's label box when it draws it: boxes of the labels placed last
  const scale = network.getScale();
  const shown = nodes.get().filter((n) => n.label && n.label.trim());
  const boxes = shown.map((n) => {
    const b = network.getBoundingBox(n.id);
    return {x0: b.left * scale, x1: b.right * scale, y0: b.top * scale, y1: b.bottom * scale};
  });
  let overlaps = 0;
  const pairs = [];
  for (let i = 0; i < boxes.length; i++) {
    for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i], b = boxes[j];
      if (Math.min(a.x1, b.x1) - Math.max(a.x0, b.x0) > 3 && Math.min(a.y1, b.y1) - Math.max(a.y0, b.y0) > 3) {
        overlaps++;
        pairs.push([shown[i].id, shown[j].id, a, b]);
      }
    }
  }
  return {labelled: shown.map((n) => n.id), kinds: shown.map((n) => String(n.title).split(' ')[0]), total: nodes.length,
          overlaps: overlaps, focus: nodes.get().filter((n) => n.labelRank === 0).map((n) => n.id),
          pairs: pairs.slice(0, 3)};
}
"""


def _labels(frame) -> dict:
    frame.wait_for_function("() => document.body.dataset.labels !== undefined", timeout=UI_TIMEOUT_MS)
    return frame.evaluate(LABELS_JS)


def test_the_default_view_is_a_tree_with_labels_only_where_they_fit(graph_page):
    page = graph_page
    expect(page.locator("#graph-mode input[value=tree]")).to_be_checked()
    frame_el, frame = _graph_frame(page)
    tree = frame.evaluate(TREE_EDGES_JS)
    assert tree["layout"] == "tree" and tree["tree"] > 50 and tree["backwards"] == 0
    labels = _labels(frame)
    assert 0 < len(labels["labelled"]) < labels["total"]  # not every one of the nodes: only those that fit
    assert labels["overlaps"] == 0, labels["pairs"]
    assert {"document", "section"} & set(labels["kinds"])  # the top of the hierarchy is named first
    # Zoomed in, labels are placed again for the new scale, and still none overlaps another.
    before = frame.evaluate("() => document.body.dataset.labelScale")
    frame_el.scroll_into_view_if_needed()
    box = frame_el.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 3, box["y"] + box["height"] / 2)
    page.mouse.wheel(0, -800)
    frame.wait_for_function("(s) => document.body.dataset.labelScale !== s", arg=before, timeout=UI_TIMEOUT_MS)
    zoomed = _labels(frame)
    assert zoomed["overlaps"] == 0, zoomed["pairs"]
    _shot(page, "graph_07_tree")
    assert page.page_errors == []


def test_the_view_around_a_clicked_node(graph_page):
    page = graph_page
    whole = _status(page)
    node_id = _click_graph_node(page, "paragraph")
    expect(page.locator("#graph-node-details .st-gnode")).to_have_attribute("data-node-id", node_id)
    page.locator("#graph-mode label").filter(has_text="Around the chosen node").click()
    status = page.locator("#graph-status .st-graph-status")
    expect(status).not_to_have_attribute("data-matched", str(whole["matched"]))
    around = _status(page)
    assert 2 <= around["shown"] < whole["shown"]
    _, frame = _graph_frame(page)
    assert frame.evaluate("() => document.body.dataset.layout") == "force"
    labels = _labels(frame)
    assert labels["focus"] == [node_id] and node_id in labels["labelled"]
    assert labels["overlaps"] == 0, labels["pairs"]
    _shot(page, "graph_08_around_node")
    page.locator("#graph-mode label").filter(has_text="Tree").click()  # back to the default for the next tests
    expect(status).to_have_attribute("data-matched", str(whole["matched"]))


def test_show_in_graph_from_the_ask_tab(graph_page):
    page = graph_page
    _open_tab(page, "Ask")
    page.locator("#ask-question textarea").fill("How many trees did the programme plant?")
    call_and_wait(page, page.locator("#ask-button").click, page.locator("#ask-facts .st-facts"), "Ask")
    links = page.locator("#ask-citations [data-graph-node]")
    cited = [links.nth(i).get_attribute("data-graph-node") for i in range(links.count())]
    assert cited, "the sample question's answer cites its evidence"
    page.locator("#ask-show-in-graph").click()
    expect(page.locator("#graph-mode input[value=evidence]")).to_be_checked()
    expect(page.locator("#graph-view iframe")).to_be_visible()  # the Graph tab is open
    expect(page.locator("#graph-view iframe")).to_have_attribute("data-mode", "around")
    _, frame = _graph_frame(page)
    labels = _labels(frame)
    assert sorted(labels["focus"]) == sorted(set(cited))
    assert labels["overlaps"] == 0, labels["pairs"]
    kinds = set(frame.evaluate("() => edges.get().map((e) => e.title)"))
    assert kinds <= {"contains", "xref", "link", "caption", "doc_link"}  # the evidence's navigational edges
    _shot(page, "graph_09_evidence")
    # One citation's own link: the graph around that passage, with its details.
    _open_tab(page, "Ask")
    links.first.click()
    expect(page.locator("#graph-mode input[value=node]")).to_be_checked()
    expect(page.locator("#graph-node-id input, #graph-node-id textarea").first).to_have_value(cited[0])
    _, frame = _graph_frame(page)
    frame.wait_for_function("(id) => nodes.get().some((n) => n.id === id && n.labelRank === 0)", arg=cited[0], timeout=UI_TIMEOUT_MS)
    page.locator("#graph-mode label").filter(has_text="Tree").click()  # back to the default for the next tests
    expect(page.locator("#graph-mode input[value=tree]")).to_be_checked()
    _graph_frame(page)
    assert page.page_errors == []


LABEL_PX_ON_SCREEN_JS = """
() => {
  const scale = network.getScale();
  return Math.min(...nodes.get().map((n) => ((n.font && n.font.size) || 11) * scale));
}
"""
OVERVIEW_NODES_JS = "(el) => el.data[0].x.reduce((a, b) => a + b, 0)"  # the 'Nodes by layer' bars


def _tree_view(page) -> None:
    """The default view, whatever a test before this one left on screen."""
    if not page.locator("#graph-mode input[value=tree]").is_checked():
        page.locator("#graph-mode label").filter(has_text="Tree").click()
    expect(page.locator("#graph-view iframe")).to_have_attribute("data-mode", "tree")


def test_a_document_filter_at_the_node_limit_keeps_labels_and_overview(graph_page):
    page = graph_page
    _tree_view(page)
    whole = _status(page)
    status = page.locator("#graph-status .st-graph-status")
    _select_dropdown(page, "graph-docs", "cool_streets_report")
    expect(status).not_to_have_attribute("data-matched", str(whole["matched"]))
    one_document = _status(page)
    _toggle(page, "graph-layers", "Subcomponents")
    # Both updates have landed before the slider is touched: a click while the second one is still
    # processing can be lost (seen once in a fresh clone: the limit stayed at its default).
    expect(status).not_to_have_attribute("data-matched", str(one_document["matched"]))
    # The node limit at about 120: fewer nodes than that one document has, enough to crowd the view.
    track = page.locator("#graph-limit input[type=range]")
    box = track.bounding_box()
    page.mouse.click(box["x"] + box["width"] * 0.1, box["y"] + box["height"] / 2)
    expect(page.locator("#graph-status")).to_contain_text("raise the limit or narrow the filters")
    filtered = _status(page)
    assert 80 <= filtered["shown"] < filtered["matched"]
    _, frame = _graph_frame(page)
    # Every label is drawn at a readable size at the fitted scale, not hidden as a bare dot.
    assert frame.evaluate(LABEL_PX_ON_SCREEN_JS) >= 7.5
    # The overview charts count what passes the filters, not the whole graph.
    plot = page.locator("#graph-overview .js-plotly-plot")
    page.wait_for_function(
        f"(m) => {{ const el = document.querySelector('#graph-overview .js-plotly-plot'); return el && ({OVERVIEW_NODES_JS})(el) === m; }}",
        arg=filtered["matched"], timeout=UI_TIMEOUT_MS,
    )
    assert plot.evaluate(OVERVIEW_NODES_JS) == filtered["matched"] != whole["matched"]
    _shot(page, "graph_06_document_filter_at_limit")
    assert page.page_errors == []  # the last test on graph_page: its filters stay as they are


# ---------------------------------------------------------------- library


def _pdf(path: Path, title: str, pages: int) -> Path:
    with pymupdf.open() as pdf:
        for i in range(pages):
            page = pdf.new_page()
            if i == 0:
                page.insert_text((72, 90), title, fontsize=20, fontname="hebo")
            page.insert_text((72, 130), f"{i + 1} Part {i + 1}", fontsize=13, fontname="hebo")
            page.insert_textbox(pymupdf.Rect(72, 145, 520, 700), f"{title} notes, part {i + 1}. " + FILLER * 6, fontsize=10.5)
        pdf.save(path)
    return path


# Rows of the table (1-based) whose box reaches past a scrolling ancestor's visible box.
# The table's rows (Gradio's dataframe marks each cell with data-row), and the 1-based numbers of
# those whose cells reach past the visible box of a scrolling ancestor inside the table.
ROWS_CLIPPED_JS = """
(table) => {
  const first = new Map();
  for (const cell of table.querySelectorAll("[data-row]")) {
    const row = cell.getAttribute("data-row");
    if (!first.has(row)) { first.set(row, cell); }
  }
  const clipped = [];
  for (const [row, cell] of first) {
    const r = cell.getBoundingClientRect();
    for (let el = cell.parentElement; el && el !== table; el = el.parentElement) {
      const style = getComputedStyle(el);
      if (!/(auto|scroll|hidden)/.test(style.overflowY) || el.scrollHeight <= el.clientHeight + 1) { continue; }
      const box = el.getBoundingClientRect();
      if (r.bottom > box.bottom + 1 || r.top < box.top - 1) { clipped.push(Number(row) + 1); break; }
    }
  }
  return {rows: first.size, clipped: clipped};
}
"""


def test_library_estimates_before_ingest_and_grows_while_ingesting(browser, app_url, tmp_path):
    small = _pdf(tmp_path / "growth_small.pdf", "Small Growth Note", 1)
    large = _pdf(tmp_path / "growth_large.pdf", "Large Growth Report", 8)
    context, page = _open_session(browser, app_url)
    try:
        expect(page.locator("#ingest-graph .st-graph-counts")).to_contain_text("Graph of this workspace")
        documents_before = int(page.locator("#ingest-graph .st-graph-counts").get_attribute("data-documents"))
        page.locator("#upload-files input[type=file]").set_input_files([str(small), str(large), str(SAMPLE_BRIEF)])
        estimate = page.locator("#ingest-estimate .st-estimate")
        expect(estimate).to_have_attribute("data-pages", "9")  # the sample brief is already there: skipped
        expect(estimate.locator('tr[data-file="policy_brief.pdf"]')).to_have_attribute("data-status", "unchanged")
        expect(estimate.locator('tr[data-file="growth_large.pdf"]')).to_have_attribute("data-status", "new")
        expect(estimate).to_contain_text("s per page")
        expect(page.locator("#ingest-progress .st-progress")).to_have_count(0)  # nothing has started
        _shot(page, "library_01_estimate")
        page.locator("#ingest-button").click()
        # After the first file is stored, while the 8-page one is still being processed, the
        # documents list and the graph counts already hold it.
        growing = page.locator("#ingest-graph .st-graph-counts")
        expect(growing).to_contain_text("Graph so far", timeout=INGEST_TIMEOUT_MS)
        expect(page.locator("#documents-table")).to_contain_text("growth_small.pdf")
        _shot(page, "library_02_growing")
        expect(page.locator('#ingest-progress [data-running="false"]')).to_be_visible(timeout=INGEST_TIMEOUT_MS)
        final = page.locator("#ingest-graph .st-graph-counts")
        expect(final).to_contain_text("Graph of this workspace")
        expect(final).to_have_attribute("data-documents", str(documents_before + 2))
        expect(page.locator("#documents-table")).to_contain_text("growth_large.pdf")
        expect(page.locator("#ingest-estimate .st-estimate")).to_have_count(0)  # cleared with the uploaded files
        # Six documents now: at 1280x800 the table shows its fifth and sixth rows whole, not cut
        # behind its own scroll bar.
        table = page.locator("#documents-table")
        table.scroll_into_view_if_needed()
        rows = table.evaluate(ROWS_CLIPPED_JS)
        assert rows["rows"] >= 5 and rows["clipped"] == [], f"rows cut by the table's scroll box: {rows}"
        _shot(page, "library_03_done")
        assert page.page_errors == []
    finally:
        context.close()


# ---------------------------------------------------------------- parse


def test_parse_section_click_selects_its_heading_and_tables_show_cells(browser, app_url):
    context, page = _open_session(browser, app_url)
    try:
        _open_tab(page, "Parse")
        _select_dropdown(page, "parse-document", "cool_streets_report.pdf (5 p.)")
        image = page.locator("#parse-page-image img")
        expect(image).to_be_visible()
        expect(page.locator("#parse-unit .st-unit")).to_have_count(0)
        assert image.evaluate(COUNT_SELECTION_PIXELS_JS) < 20  # no selection drawn yet
        page.locator("#parse-tree").get_by_text("3.3 Tree planting and survival").click()
        expect(page.locator("#parse-page input")).to_have_value("3")
        unit = page.locator("#parse-unit .st-unit")
        expect(unit).to_have_attribute("data-kind", "heading")
        expect(unit).to_contain_text("3.3 Tree planting and survival")
        expect(unit).to_contain_text("page 3")
        selected_row = page.locator("#parse-blocks tr.st-block-selected")
        expect(selected_row).to_have_count(1)
        expect(selected_row).to_contain_text("3.3 Tree planting and survival")
        page.wait_for_function(
            f"(img) => img.complete && ({COUNT_SELECTION_PIXELS_JS})(img) > 100", arg=image.element_handle(), timeout=UI_TIMEOUT_MS
        )
        _shot(page, "parse_01_section_selected")
        # A table block shows the table's cells.
        page.locator("#parse-blocks tr.st-block-row").filter(has=page.locator(".st-kind", has_text="table")).first.click()
        expect(page.locator("#parse-unit .st-unit")).to_have_attribute("data-kind", "table")
        cells = page.locator("#parse-unit table.st-cells")
        expect(cells.locator("th").first).to_have_text("District")
        expect(cells.locator("tbody tr")).to_have_count(7)
        expect(cells.locator("tbody tr").last).to_contain_text("4,820")
        _shot(page, "parse_02_table_cells")
        assert page.page_errors == []
    finally:
        context.close()
