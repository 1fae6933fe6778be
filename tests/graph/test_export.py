"""Views and exports of the graph (backend/graph/export.py through the service): the filtered,
limited view of the Graph tab, a node's details, a table's cells, JSON and GraphML that networkx
reads back, and the ingest estimate the Library shows before an ingest."""

from __future__ import annotations

import io
import json
from collections import Counter

import networkx as nx
import numpy as np
import pymupdf
import pytest
from PIL import Image

from backend.config import cache_folder
from backend.errors import StrataError
from backend.graph import export
from backend.graph.corpus import Corpus
from backend.ingest.speed import DEFAULT_SECONDS, PageMix, SpeedModel
from backend.types import Cell, Document, Edge, EdgeKind, Layer, Node, NodeKind, Section, TableRow
from tests.conftest import SAMPLE_PDFS


def _valid_edges(corpus):
    return [e for e in corpus.edges if e.src in corpus.nodes and e.dst in corpus.nodes]


# ---------------------------------------------------------------- export


def test_graphml_parses_back_with_every_node_and_edge(service, sample_workspace, sample_corpus):
    data = service.export_graph(sample_workspace, "graphml")
    graph = nx.read_graphml(io.BytesIO(data))
    assert graph.number_of_nodes() == len(sample_corpus.nodes)
    assert graph.number_of_edges() == len(_valid_edges(sample_corpus))
    kinds = Counter(k for _, _, k in graph.edges(data="kind"))
    assert kinds == Counter(e.kind.value for e in _valid_edges(sample_corpus))
    table = next(n for n in sample_corpus.nodes.values() if n.kind == NodeKind.TABLE)
    attrs = graph.nodes[table.id]
    assert attrs["kind"] == "table" and attrs["layer"] == int(Layer.COMPONENT) and attrs["page"] == table.page
    assert attrs["text"] == table.text
    assert attrs["doc_name"] == sample_corpus.documents[table.doc].file_name


def test_json_export_is_node_link_data(service, sample_workspace, sample_corpus):
    data = json.loads(service.export_graph(sample_workspace, "json"))
    assert data["directed"] is True and data["multigraph"] is True
    assert len(data["nodes"]) == len(sample_corpus.nodes)
    assert len(data["edges"]) == len(_valid_edges(sample_corpus))
    graph = nx.node_link_graph(data, edges="edges")
    doc = next(iter(sample_corpus.documents.values()))
    assert graph.nodes[doc.id]["label"] == doc.file_name


def test_export_applies_the_filters_without_a_limit(service, sample_workspace, sample_corpus):
    data = service.export_graph(sample_workspace, "graphml", layers=["document"], edge_kinds=["contains"])
    graph = nx.read_graphml(io.BytesIO(data))
    expected_nodes = [n for n in sample_corpus.nodes.values() if n.layer == Layer.DOCUMENT]
    assert graph.number_of_nodes() == len(expected_nodes) > 50
    assert {k for _, _, k in graph.edges(data="kind")} == {"contains"}


def test_unknown_export_format_names_the_choices(service, sample_workspace):
    with pytest.raises(StrataError, match="'csv'.*json, graphml"):
        service.export_graph(sample_workspace, "csv")


def test_control_characters_of_pdf_text_do_not_break_graphml(tiny_corpus):
    graph = nx.read_graphml(io.BytesIO(export.export_graph(tiny_corpus, "graphml")))
    assert graph.nodes["d:p0"]["text"] == "Form feed  here and a bell  there."


# ---------------------------------------------------------------- the Graph tab's view


def test_layer_filter(service, sample_workspace, sample_corpus):
    view = service.graph_view(sample_workspace, layers=["document"], limit=1000)
    expected = [n for n in sample_corpus.nodes.values() if n.layer == Layer.DOCUMENT]
    assert {n.id for n in view.nodes} == {n.id for n in expected}
    assert view.matched.nodes == len(expected) and not view.truncated
    assert view.matched.by_layer == {"document": len(expected)}
    assert view.total.nodes == len(sample_corpus.nodes)
    assert view.total.edges == len(_valid_edges(sample_corpus))
    # Only edges between shown nodes: with documents and sections that is the hierarchy and document links.
    shown = {n.id for n in view.nodes}
    assert view.edges and all(e.src in shown and e.dst in shown for e in view.edges)
    assert {e.kind for e in view.edges} <= {EdgeKind.CONTAINS, EdgeKind.DOC_LINK}


def test_node_and_edge_kind_filters(service, sample_workspace, sample_corpus):
    everything = service.graph_view(sample_workspace, limit=5000)
    contains_only = service.graph_view(sample_workspace, edge_kinds=["contains"], limit=5000)
    assert len(contains_only.nodes) == len(everything.nodes)
    assert 0 < len(contains_only.edges) < len(everything.edges)
    assert {e.kind for e in contains_only.edges} == {EdgeKind.CONTAINS}
    tables = service.graph_view(sample_workspace, node_kinds=["table", "row"], limit=5000)
    assert {n.kind for n in tables.nodes} == {NodeKind.TABLE, NodeKind.ROW}
    assert all(e.kind == EdgeKind.CONTAINS for e in tables.edges)  # a table contains its rows
    nothing = service.graph_view(sample_workspace, layers=[], limit=100)
    assert nothing.nodes == [] and nothing.matched.nodes == 0 and nothing.total.nodes == len(sample_corpus.nodes)


def test_document_filter_keeps_the_entities_a_document_mentions(service, sample_workspace, sample_corpus, sample_docs):
    doc = sample_docs["policy_brief.pdf"]
    view = service.graph_view(sample_workspace, doc_ids=[doc.id], limit=5000)
    own = [n for n in view.nodes if n.kind != NodeKind.ENTITY]
    assert own and all(n.doc == doc.id for n in own)
    assert len(own) == sum(1 for n in sample_corpus.nodes.values() if n.doc == doc.id and n.layer != Layer.ENTITY)
    entities = [n for n in view.nodes if n.kind == NodeKind.ENTITY]
    assert entities
    for e in entities:
        mentioned_in = {sample_corpus.nodes[o].doc for _, o in sample_corpus.neighbours(e.id, (EdgeKind.MENTIONS,))}
        assert doc.id in mentioned_in | {e.doc}


def test_limit_cuts_the_view_top_layer_first(service, sample_workspace, sample_corpus):
    view = service.graph_view(sample_workspace, layers=["document", "component", "subcomponent"], limit=120)
    assert len(view.nodes) == 120 and view.truncated
    assert view.matched.nodes == sum(1 for n in sample_corpus.nodes.values() if n.layer != Layer.ENTITY)
    kinds = Counter(n.kind for n in view.nodes)
    assert kinds[NodeKind.DOCUMENT] == 4  # every document stays in view
    assert kinds[NodeKind.SECTION] == sum(1 for n in sample_corpus.nodes.values() if n.kind == NodeKind.SECTION)
    assert {n.doc for n in view.nodes if n.layer == Layer.COMPONENT} == set(sample_corpus.documents)  # documents in turn


def test_unknown_filter_value_is_named(service, sample_workspace):
    with pytest.raises(StrataError, match="Unknown layer 'chapters'"):
        service.graph_view(sample_workspace, layers=["chapters"])
    with pytest.raises(StrataError, match="Unknown edge kind 'hyperlink'"):
        service.graph_view(sample_workspace, edge_kinds=["hyperlink"])


def test_empty_workspace_has_an_empty_graph(service, tmp_path):
    view = service.graph_view(tmp_path, limit=10)
    assert view.nodes == [] and view.total.nodes == 0
    assert service.graph_counts(tmp_path).nodes == 0


# ---------------------------------------------------------------- node details and tables


def test_details_of_a_sentence_include_its_parent_and_page(service, sample_workspace, sample_corpus):
    sentence = next(n for n in sample_corpus.nodes.values() if n.kind == NodeKind.SENTENCE and n.bbox)
    details = service.node_details(sample_workspace, sentence.id)
    assert details.parent is not None
    assert details.parent.node_id == sentence.parent and details.parent.kind == NodeKind.PARAGRAPH
    assert details.parent.edge_kind == EdgeKind.CONTAINS and details.parent.direction == "in"
    assert any(v.node_id == sentence.parent for v in details.neighbours)
    assert details.section_path == sample_corpus.section_path(sentence.id) and details.section_path
    assert details.text == sentence.text and details.page == sentence.page and details.bbox == sentence.bbox
    image = Image.open(io.BytesIO(details.thumbnail_png)).convert("RGB")
    # The node's box is outlined in the highlight colour (#ff2d55) on the thumbnail.
    pixels = np.asarray(image).reshape(-1, 3).astype(int)
    assert (np.abs(pixels - (0xFF, 0x2D, 0x55)).sum(axis=1) < 30).sum() > 20
    assert json.loads(details.model_dump_json())["thumbnail_png"]  # round-trips as base64


def test_details_of_an_unknown_node(service, sample_workspace):
    with pytest.raises(StrataError, match="No node with id 'nope'"):
        service.node_details(sample_workspace, "nope")


def test_table_view_reads_header_and_rows(service, sample_workspace, sample_corpus, sample_docs):
    report = sample_docs["cool_streets_report.pdf"].id
    table = next(n for n in sample_corpus.nodes.values() if n.doc == report and n.label == "Table 1")
    view = service.table_view(sample_workspace, table.id)
    assert view.header[0] == "District" and view.header[-1] == "Trees planted"
    assert len(view.rows) == len(sample_corpus.subcomponents(table.id)) == 7
    assert view.rows[-1] == ["All districts", "41.8", "18.1", "20.1", "+2.0", "4,820"]
    assert view.caption.startswith("Table 1") and view.note == ""
    with pytest.raises(StrataError, match="is not a table"):
        service.table_view(sample_workspace, sample_corpus.subcomponents(table.id)[0])


def test_table_view_rebuilds_rows_past_a_cut_text(tiny_corpus):
    view = export.table_view(tiny_corpus, "d:t0")
    assert view.header == ["Name", "Value"]
    assert view.rows == [["alpha", "1"], ["beta", "2; or 3"], ["gamma", ""]]
    assert "rebuilt" in view.note


# ---------------------------------------------------------------- ingest estimate


def test_estimate_counts_pages_and_flags_bad_and_known_files(service, sample_workspace, tmp_path, monkeypatch):
    monkeypatch.setattr("backend.service.contention", lambda: 1.0)  # an idle machine, whatever runs beside the suite
    new_pdf = tmp_path / "fresh.pdf"
    with pymupdf.open() as pdf:
        for i in range(3):
            pdf.new_page().insert_text((72, 72), f"Page {i + 1} of a fresh file.")
        pdf.save(new_pdf)
    not_pdf = tmp_path / "notes.pdf"
    not_pdf.write_text("just text")
    known = next(p for p in SAMPLE_PDFS if p.name == "policy_brief.pdf")
    est = service.estimate_ingest(sample_workspace, [new_pdf, not_pdf, known])
    by_name = {f.file_name: f for f in est.files}
    assert by_name["fresh.pdf"].status == "new" and by_name["fresh.pdf"].pages == 3
    assert by_name["notes.pdf"].status == "invalid" and "not a PDF" in by_name["notes.pdf"].reason
    assert by_name["policy_brief.pdf"].status == "unchanged"
    assert est.pages == 3  # only the new file will be processed
    assert est.seconds == pytest.approx(3 * est.seconds_per_page, abs=0.1)
    assert any("notes.pdf will fail" in w for w in est.warnings)
    if not est.measured:
        assert est.seconds_per_page == DEFAULT_SECONDS["text"]  # text pages, before any measurement


def test_estimate_uses_the_rate_measured_by_ingests(strata_settings, tmp_path, monkeypatch):
    from backend.service import Service

    monkeypatch.setattr("backend.service.contention", lambda: 1.0)

    settings = strata_settings.model_copy(update={"workspace_root": tmp_path / "root"})  # no measurement yet
    svc = Service(settings)
    pdf_path = tmp_path / "a.pdf"
    with pymupdf.open() as pdf:
        for _ in range(4):
            pdf.new_page()
        pdf.save(pdf_path)
    assert not svc.estimate_ingest(tmp_path / "ws", [pdf_path]).measured
    SpeedModel(cache_folder(settings)).record(PageMix(text=10), 5.0)  # what an ingest of 10 text pages in 5 s records
    est = svc.estimate_ingest(tmp_path / "ws", [pdf_path])
    assert est.measured and est.seconds_per_page == 0.5 and est.seconds == 2.0
    assert not any("busy" in w for w in est.warnings)
    # The same server at load 6 on 2 cores: three times the idle time, and it says why.
    monkeypatch.setattr("backend.service.contention", lambda: 3.0)
    busy = svc.estimate_ingest(tmp_path / "ws", [pdf_path])
    assert busy.seconds == 6.0 and busy.seconds_per_page == 1.5
    assert any("busy with other work" in w and "3.0x" in w for w in busy.warnings)


# ---------------------------------------------------------------- a tiny hand-built corpus


@pytest.fixture(scope="module")
def tiny_corpus() -> Corpus:
    doc = Document(
        id="d", file_name="tiny.pdf", title="Tiny", pages=1, sha256="0" * 64, bytes=1, card="Tiny", hierarchy_source="flat",
        page_sizes=[(612.0, 792.0)],
    )
    section = Section(id="d:s0", doc="d", title="Tiny", level=0, parent=None, path=["Tiny"], page=1, bbox=None, confidence=1.0, source="root")
    # A table whose stored text was cut mid-way through its second row (as MAX_TABLE_TEXT does).
    nodes = [
        Node(id="d", layer=Layer.DOCUMENT, kind=NodeKind.DOCUMENT, doc="d", text="Tiny"),
        Node(id="d:s0", layer=Layer.DOCUMENT, kind=NodeKind.SECTION, doc="d", text="Tiny", section="d:s0", parent="d"),
        Node(id="d:p0", layer=Layer.COMPONENT, kind=NodeKind.PARAGRAPH, doc="d", text="Form feed\x0c here and a bell\x07 there.",
             section="d:s0", parent="d:s0"),
        Node(id="d:t0", layer=Layer.COMPONENT, kind=NodeKind.TABLE, doc="d", text="Table 1: Cut\nName | Value\nalpha | 1\nbeta | 2",
             section="d:s0", parent="d:s0", label="Table 1", context="Table 1: Cut"),
        *(Node(id=f"d:t0.{i}", layer=Layer.SUBCOMPONENT, kind=NodeKind.ROW, doc="d", text=row.index_text(), row=row,
               section="d:s0", parent="d:t0")
          for i, row in enumerate(TableRow(table="Table 1", cells=tuple(Cell(h, v) for h, v in cells)) for cells in (
              [("Name", "alpha"), ("Value", "1")], [("Name", "beta"), ("Value", "2; or 3")], [("Name", "gamma")]))),
    ]
    edges = [Edge(src=n.parent, dst=n.id, kind=EdgeKind.CONTAINS) for n in nodes if n.parent]
    dims = {name: 4 for name in ("documents", "sections", "components", "subcomponents")}
    return Corpus([doc], [section], nodes, {}, edges, [], dims=dims)


# ---------------------------------------------------------------- tree depth and views around nodes


def test_every_node_knows_its_depth_in_the_hierarchy(service, sample_workspace, sample_corpus):
    view = service.graph_view(sample_workspace, layers=["document", "component", "entity"], limit=5000)
    depth = {n.id: n.depth for n in view.nodes}
    for n in view.nodes:
        node = sample_corpus.nodes[n.id]
        if n.kind == NodeKind.DOCUMENT:
            assert n.depth == 0
        elif n.kind == NodeKind.ENTITY:
            assert n.depth == -1
        else:
            assert n.depth == depth.get(node.parent, export._depth(sample_corpus, sample_corpus.nodes[node.parent], {})) + 1
    assert max(depth.values()) >= 2  # document > section > component at least


def test_ego_view_around_a_node_holds_its_neighbours_and_its_place(service, sample_workspace, sample_corpus):
    para = next(n for n in sample_corpus.nodes.values() if n.kind == NodeKind.PARAGRAPH and n.parent
                and sample_corpus.neighbour_ids(n.id, (EdgeKind.NEXT,)))
    view = service.ego_view(sample_workspace, [para.id], limit=500)
    ids = {n.id for n in view.nodes}
    assert view.focus == [para.id] and view.nodes[0].id == para.id
    assert set(export._ancestors(sample_corpus, para.id)) <= ids  # its sections and its document
    assert set(sample_corpus.neighbour_ids(para.id, (EdgeKind.NEXT,))) <= ids
    assert ids < set(sample_corpus.nodes)  # a neighbourhood, not the graph
    assert all(e.src in ids and e.dst in ids for e in view.edges)
    assert any(e.kind == EdgeKind.NEXT for e in view.edges)
    cut = service.ego_view(sample_workspace, [para.id], limit=2)
    assert len(cut.nodes) == 2 and cut.truncated and cut.nodes[0].id == para.id


def test_evidence_view_follows_navigational_edges_only(service, sample_workspace, sample_corpus):
    navigational = [e for e in sample_corpus.edges if e.kind in export.NAVIGATION_EDGES and e.src in sample_corpus.nodes]
    assert navigational, "the sample corpus has cross-references and captions"
    edge = navigational[0]
    view = service.ego_view(sample_workspace, [edge.src], edge_kinds=export.NAVIGATION_EDGES, layers=None, limit=500)
    ids = {n.id for n in view.nodes}
    assert edge.dst in ids
    assert {e.kind for e in view.edges} <= set(export.NAVIGATION_EDGES) | {EdgeKind.CONTAINS}
    assert EdgeKind.NEXT not in {e.kind for e in view.edges}


def test_ego_view_of_unknown_nodes_says_what_to_do(service, sample_workspace):
    with pytest.raises(StrataError, match="No node of this workspace to centre on.*'nope'.*Click a node"):
        service.ego_view(sample_workspace, ["nope"])
