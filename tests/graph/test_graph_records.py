"""Edges, nodes and sections are the most numerous records a corpus holds (about a hundred edges,
25 nodes and three sections per page), so they are slotted pydantic dataclasses: validated like
the other records, the same JSON as when they were Models (workspaces written before read back),
and ~80 bytes an edge instead of ~1,000 (a node keeps its text, but not a __dict__ and a
fields-set of its own)."""

from __future__ import annotations

import tracemalloc

import pytest
from pydantic import ValidationError

from backend.types import EDGE_JSON, NODE_JSON, SECTION_JSON, Edge, EdgeKind, Layer, Node, NodeKind, ParsedDocument, Section

NODE_WRITTEN_BY_THE_MODEL = (  # a sentence as a workspace of 2026-11-24 stores it
    '{"id":"dcb0426e795002c9:p1.0","layer":2,"kind":"sentence","doc":"dcb0426e795002c9","text":"The accounting for '
    'equity-based compensation expense requires the Company to make estimates.","section":"dcb0426e795002c9:s2",'
    '"page":1,"bbox":[54.0,125.44,557.36,152.63],"parent":"dcb0426e795002c9:p1","crop":null,"label":null,"role":null,'
    '"order":3,"context":""}'
)
SECTION_WRITTEN_BY_THE_MODEL = (  # a section as a workspace of 2026-11-24 stores it
    '{"id":"d08b7d72ad9a2d95:s2","doc":"d08b7d72ad9a2d95","title":"1 Introduction","number":"1","level":1,'
    '"parent":"d08b7d72ad9a2d95:s0","path":["Technical Appendix: Canopy and Heat Mapping Methods","1 Introduction"],'
    '"page":1,"bbox":[64.0,205.83497619628906,160.67149353027344,225.80148315429688],"confidence":0.9,"source":"numbering"}'
)
WRITTEN_BY_THE_MODEL = '{"src":"d1:p3","dst":"d1:t2","kind":"xref","weight":1.0,"provenance":"Table 2"}'


def test_json_written_before_reads_back_and_is_written_the_same():
    edge = EDGE_JSON.validate_json(WRITTEN_BY_THE_MODEL)
    assert edge == Edge(src="d1:p3", dst="d1:t2", kind=EdgeKind.XREF, provenance="Table 2")
    assert edge.kind is EdgeKind.XREF
    assert EDGE_JSON.dump_json(edge).decode() == WRITTEN_BY_THE_MODEL


def test_edges_are_validated_like_the_other_records():
    with pytest.raises(ValidationError):
        Edge(src="a", dst="b", kind="teleport")
    with pytest.raises(ValidationError):
        EDGE_JSON.validate_json('{"src":"a","dst":"b","kind":"link","colour":"red"}')


def test_a_parsed_document_carries_its_edges_through_json(tmp_path):
    """The parse worker sends each ParsedDocument to the ingest parent as JSON."""
    import pymupdf

    from backend.config import IngestSettings
    from backend.ingest.parser import parse_pdf

    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "1 Harbour traffic", fontsize=16)
    page.insert_text((72, 110), "The north quay handled 4,200 ships; see Section 1.", fontsize=11)
    doc.save(tmp_path / "harbour.pdf")
    parsed = parse_pdf(tmp_path / "harbour.pdf", IngestSettings(parse_processes=1), None)
    assert parsed.edges and all(isinstance(e, Edge) for e in parsed.edges)
    again = ParsedDocument.model_validate_json(parsed.model_dump_json())
    assert again.edges == parsed.edges and all(isinstance(e, Edge) for e in again.edges)


def test_an_edge_is_small():
    ids = [f"d10e57152f44d1a2:p{i}" for i in range(20_000)]
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    edges = [Edge(src=ids[i], dst=ids[i - 1], kind=EdgeKind.CONTAINS) for i in range(len(ids))]
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    per_edge = sum(s.size_diff for s in after.compare_to(before, "filename")) / len(edges)
    assert not hasattr(edges[0], "__dict__")
    assert per_edge < 200, f"{per_edge:.0f} bytes per edge"


def test_a_node_written_before_reads_back_and_is_written_the_same():
    node = NODE_JSON.validate_json(NODE_WRITTEN_BY_THE_MODEL)
    assert node.layer is Layer.SUBCOMPONENT and node.kind is NodeKind.SENTENCE and node.bbox == (54.0, 125.44, 557.36, 152.63)
    assert NODE_JSON.dump_json(node).decode() == NODE_WRITTEN_BY_THE_MODEL
    assert not hasattr(node, "__dict__")
    with pytest.raises(ValidationError):
        Node(id="x", layer=Layer.COMPONENT, kind=NodeKind.PARAGRAPH, doc="d", text="t", colour="red")


def test_a_section_written_before_reads_back_and_is_written_the_same():
    section = SECTION_JSON.validate_json(SECTION_WRITTEN_BY_THE_MODEL)
    assert section.path == ["Technical Appendix: Canopy and Heat Mapping Methods", "1 Introduction"] and section.level == 1
    assert SECTION_JSON.dump_json(section).decode() == SECTION_WRITTEN_BY_THE_MODEL
    assert not hasattr(section, "__dict__")
    with pytest.raises(ValidationError):
        SECTION_JSON.validate_json(SECTION_WRITTEN_BY_THE_MODEL[:-1] + ',"colour":"red"}')
    with pytest.raises(ValidationError):
        Section(id="d:s1", doc="d", title="t", level="top", parent=None, path=[], page=1, bbox=None, confidence=1.0, source="font")
