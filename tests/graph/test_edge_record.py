"""Edges are the most numerous record a corpus holds (about a hundred per page), so Edge is a
slotted pydantic dataclass: validated like the other records, the same JSON as when it was a
Model (workspaces written before read back), and ~80 bytes an instance instead of ~1,000."""

from __future__ import annotations

import tracemalloc

import pytest
from pydantic import ValidationError

from backend.types import EDGE_JSON, Edge, EdgeKind, ParsedDocument

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
