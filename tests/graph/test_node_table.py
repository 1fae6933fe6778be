"""The corpus's nodes as columns answer what the dict of Node records answered: the same nodes,
field for field, in the same order, and the one-field readers agree with the records."""

from __future__ import annotations

import math
import sys
from array import array

import numpy as np
import pytest

from backend.graph.edges import EdgeTable
from backend.graph.nodes import NodeTable
from backend.types import Edge, EdgeKind, Layer, Node, NodeKind

NODES = [
    Node(id="d1", layer=Layer.DOCUMENT, kind=NodeKind.DOCUMENT, doc="d1", text="Annual report 2023"),
    Node(id="d1:s1", layer=Layer.DOCUMENT, kind=NodeKind.SECTION, doc="d1", text="Revenue", section="d1:s1", page=2,
         bbox=(72.0, 90.5, 540.25, 110.0)),
    Node(id="d1:c1", layer=Layer.COMPONENT, kind=NodeKind.TABLE, doc="d1", text="Year | Revenue\n2023 | 4.2 €bn",
         section="d1:s1", page=2, bbox=(72.0, 120.0, 540.0, 300.0), parent="d1:s1", label="Table 2",
         context="Table 2: Revenue by year", order=3),
    Node(id="d1:c1:r0", layer=Layer.SUBCOMPONENT, kind=NodeKind.ROW, doc="d1", text="Year: 2023; Revenue: 4.2 €bn",
         section="d1:s1", page=2, bbox=(72.0, 140.0, 540.0, 160.0), parent="d1:c1", order=0),
    Node(id="d1:c2", layer=Layer.COMPONENT, kind=NodeKind.FIGURE, doc="d1", text="", section="d1:s1", page=3,
         crop="crops/d1/c2.png", role=None, order=4),
    Node(id="d2:p0", layer=Layer.COMPONENT, kind=NodeKind.PARAGRAPH, doc="d2", text="Ünïcode text, 日本語 and emoji 🙂.",
         role="paragraph", page=1, bbox=(0.1, 0.2, 0.30000000000000004, 1e-7), order=0),
    Node(id="ent:x", layer=Layer.ENTITY, kind=NodeKind.ENTITY, doc="d2", text="Alice", label="person", order=2),
    Node(id="d2:p1", layer=Layer.COMPONENT, kind=NodeKind.PARAGRAPH, doc="d2", text="a lone surrogate \ud800 from a PDF",
         context="caption \udfff", order=1),
]


def test_every_node_comes_back_equal_field_for_field_and_in_order():
    table = NodeTable(NODES)
    assert list(table) == [n.id for n in NODES] and len(table) == len(NODES)
    assert [table[n.id] for n in NODES] == NODES
    assert list(table.values()) == NODES and list(table.values()) == NODES  # a view: read twice
    for n in NODES:
        made = table[n.id]
        assert isinstance(made, Node) and made is not n
        assert type(made.page) is int and type(made.order) is int
        assert made.bbox is None or all(type(v) is float for v in made.bbox)
    assert table["d2:p0"].bbox == (0.1, 0.2, 0.30000000000000004, 1e-7)  # exact floats, not float32
    assert "d1:c1" in table and "nowhere" not in table and table.get("nowhere") is None
    with pytest.raises(KeyError):
        table["nowhere"]


def test_one_field_readers_agree_with_the_records():
    table = NodeTable(NODES)
    for n in NODES:
        assert table.doc_of(n.id) == n.doc and table.parent_of(n.id) == n.parent and table.section_of(n.id) == n.section
        assert table.layer_of(n.id) is n.layer and table.kind_of(n.id) is n.kind and table.text_of(n.id) == n.text
        assert table.page_of(n.id) == n.page and table.order_of(n.id) == n.order
    assert len({n.page for n in NODES}) > 1 and len({n.order for n in NODES}) > 1  # the readers are told apart
    assert table.rows_of_layer(Layer.COMPONENT) == [2, 4, 5, 7]
    assert table.rows_of_kind(NodeKind.SECTION) == [1]
    assert table.kind_counts() == {NodeKind.DOCUMENT: 1, NodeKind.SECTION: 1, NodeKind.TABLE: 1, NodeKind.ROW: 1,
                                   NodeKind.FIGURE: 1, NodeKind.PARAGRAPH: 2, NodeKind.ENTITY: 1}


def test_the_table_keeps_a_records_id_and_no_other_string_of_it():
    records = [Node(id=f"doc:{i}", layer=Layer.COMPONENT, kind=NodeKind.PARAGRAPH, doc=f"doc{i % 3}", text=f"text {i}",
                    context=f"context {i}", parent=f"doc:{i - 1}" if i else None, bbox=(1.0, 2.0, 3.0, float(i)))
               for i in range(50)]
    held = [[sys.getrefcount(x) for x in (n, n.text, n.doc, n.context, n.parent) if x is not None] for n in records]
    table = NodeTable(iter(records))  # any iterable, read once
    assert [[sys.getrefcount(x) for x in (n, n.text, n.doc, n.context, n.parent) if x is not None] for n in records] == held
    assert all(table.canonical(n.id) is n.id for n in records)
    # a pooled value that is an earlier node's id is that node's id string
    assert all(table.parent_of(n.id) is records[i - 1].id for i, n in enumerate(records) if i)
    assert [table[n.id] for n in records] == records


def test_streamed_nodes_are_the_stored_ones_and_their_vectors_stay_unread_until_asked(tmp_path):
    from backend.graph.store import StoredVectors, WorkspaceStore
    from backend.types import Document, ParsedDocument, Section

    store = WorkspaceStore(tmp_path / "ws")
    doc = Document(id="d9", file_name="a.pdf", title="A", pages=1, sha256="x", bytes=1, card="A", hierarchy_source="flat",
                   page_sizes=[(612.0, 792.0)])
    nodes = [Node(id="d9", layer=Layer.DOCUMENT, kind=NodeKind.DOCUMENT, doc="d9", text="A"),
             Node(id="d9:p0", layer=Layer.COMPONENT, kind=NodeKind.PARAGRAPH, doc="d9", text="Body text.", order=0)]
    parsed = ParsedDocument(document=doc, sections=[Section(id="d9:s0", doc="d9", title="A", level=0, parent=None,
                                                            path=["A"], page=1, bbox=None, confidence=1.0, source="root")],
                            nodes=nodes, edges=[], blocks=[])
    source = tmp_path / "a.pdf"
    source.write_bytes(b"%PDF-1.4")
    store.add_document(parsed, source, {n.id: np.array([0.5, 0.5], dtype=np.float32) for n in nodes})
    embs = StoredVectors(store)
    stream = store.iter_nodes(embs, read_layers=())
    first = next(stream)  # read as taken
    assert first == nodes[0] and first.id in embs and "d9:p0" not in embs
    loaded = [first, *stream]
    assert loaded == nodes and NodeTable(loaded)["d9:p0"] == nodes[1]
    assert all(n.id in embs for n in loaded) and embs[loaded[1].id].tolist() == [0.5, 0.5]


def test_a_node_given_twice_is_refused_and_pools_take_the_smallest_type():
    with pytest.raises(ValueError, match="given twice"):
        NodeTable([NODES[0], NODES[0]])
    many = NodeTable(Node(id=f"n{i}", layer=Layer.COMPONENT, kind=NodeKind.PARAGRAPH, doc=f"doc{i}", text="t")
                     for i in range(300))
    assert many._codes["doc"].typecode == "h" and many._codes["label"].typecode == "b"
    assert isinstance(many._codes["doc"], array) and many.doc_of("n299") == "doc299"
    assert math.isnan(many._box[0])  # no box


def test_edges_numbered_by_the_table_share_its_map_and_refuse_an_end_outside_it():
    table = NodeTable(NODES)
    edges = [Edge(src="d1", dst="d1:s1", kind=EdgeKind.CONTAINS), Edge(src="d1:s1", dst="d1:c1", kind=EdgeKind.CONTAINS),
             Edge(src="d1:c1", dst="d1:c1:r0", kind=EdgeKind.CONTAINS), Edge(src="ent:x", dst="d2:p0", kind=EdgeKind.MENTIONS),
             Edge(src="d1:s1", dst="d1:c2", kind=EdgeKind.CONTAINS)]
    shared = EdgeTable(edges, numbering=(table.rows, table.ids))
    alone = EdgeTable(edges, [n.id for n in NODES])
    assert shared._code is table.rows and len(table.rows) == len(NODES)
    for n in NODES:
        assert shared.out_of(n.id) == alone.out_of(n.id) and shared.into(n.id) == alone.into(n.id)
    assert shared.targets("d1:s1", (EdgeKind.CONTAINS,)) == ["d1:c1", "d1:c2"]
    assert shared.targets("ent:x") == ["d2:p0"] and shared.targets("ent:x", (EdgeKind.CONTAINS,)) == []
    with pytest.raises(ValueError, match="not in the shared numbering"):
        EdgeTable([Edge(src="d1", dst="elsewhere", kind=EdgeKind.LINK)], numbering=(table.rows, table.ids))


def test_layer_rows_answer_as_a_dict_of_the_layers_ids_would():
    table = NodeTable(NODES)
    layers = {"components": ["d1:c1", "d1:c2", "d2:p0"], "subcomponents": ["d1:c1:r0"], "documents": ["d1"]}
    views = {name: table.layer_rows(ids) for name, ids in layers.items()}
    for name, ids in layers.items():
        plain = {node_id: r for r, node_id in enumerate(ids)}
        view = views[name]
        assert dict(view) == plain and len(view) == len(plain) and list(view) == ids
        for node_id in [*table, "nowhere"]:
            assert (node_id in view) == (node_id in plain) and view.get(node_id, -7) == plain.get(node_id, -7)
            if node_id not in plain:
                with pytest.raises(KeyError):
                    view[node_id]
    assert views["components"]["d2:p0"] == 2 and "d1:c1:r0" not in views["components"] and "ent:x" not in views["documents"]


def test_layer_codes_and_parent_rows_are_the_one_field_readers_as_arrays():
    table = NodeTable(NODES)
    assert table.layer_codes().tolist() == [list(Layer).index(n.layer) for n in NODES]
    assert table.parent_rows().tolist() == [table.rows[n.parent] if n.parent else -1 for n in NODES]
    assert table.parent_rows()[table.rows["d1:c1:r0"]] == table.rows["d1:c1"]
    orphan = NodeTable([*NODES, Node(id="d3:r0", layer=Layer.SUBCOMPONENT, kind=NodeKind.ROW, doc="d3", text="x", parent="gone")])
    assert orphan.parent_rows()[-1] == -1  # a parent that is no node


def _row_node(node_id: str, row, **fields) -> Node:
    return Node(id=node_id, layer=Layer.SUBCOMPONENT, kind=NodeKind.ROW, doc="d9", text=row.index_text(), row=row,
                parent="d9:t1", **fields)


def test_a_row_nodes_cells_round_trip_through_the_store_and_the_table(tmp_path, caplog):
    """Cells go to disk with the node and come back equal from the store, from the NodeTable's
    records and from row_of, also cells whose values hold the row's separators ("; ", ": "). A row
    stored without cells (a workspace written before rows had them) loads with row None, and the
    load says so."""
    import json
    import logging
    import sqlite3

    from backend.graph.store import DB_NAME, StoredVectors, WorkspaceStore
    from backend.types import NODE_JSON, Cell, Document, ParsedDocument, Section, TableRow

    labelled = TableRow(table="Table 3", cells=(Cell("column 1", "Deferred revenue"), Cell("2019", "$(263)"),
                                                Cell("Note", "see 4; restated: yes"), Cell("2 0 1 8", "1,024")))
    plain = TableRow(table=None, cells=(Cell("Ward", "Ünïcode Nörth 🙂"), Cell("Trees", "1,240")))
    empty = TableRow(table="Table 4", cells=())
    nodes = [Node(id="d9", layer=Layer.DOCUMENT, kind=NodeKind.DOCUMENT, doc="d9", text="A"),
             Node(id="d9:t1", layer=Layer.COMPONENT, kind=NodeKind.TABLE, doc="d9", text="table", label="Table 3"),
             _row_node("d9:t1.0", labelled, page=2), _row_node("d9:t1.1", plain, order=5), _row_node("d9:t1.2", empty)]
    store = WorkspaceStore(tmp_path / "ws")
    doc = Document(id="d9", file_name="a.pdf", title="A", pages=2, sha256="x", bytes=1, card="A", hierarchy_source="flat",
                   page_sizes=[(612.0, 792.0)] * 2)
    parsed = ParsedDocument(document=doc, sections=[Section(id="d9:s0", doc="d9", title="A", level=0, parent=None,
                                                            path=["A"], page=1, bbox=None, confidence=1.0, source="root")],
                            nodes=nodes, edges=[], blocks=[])
    source = tmp_path / "a.pdf"
    source.write_bytes(b"%PDF-1.4")
    store.add_document(parsed, source, {})
    loaded = list(store.iter_nodes(StoredVectors(store)))
    assert loaded == nodes and loaded[2].row == labelled and loaded[2].text == labelled.index_text()
    table = NodeTable(loaded)
    assert [table[n.id] for n in nodes] == nodes
    assert [table.row_of(n.id) for n in nodes] == [None, None, labelled, plain, empty]
    assert table.row_of("d9:t1.0").label == "Deferred revenue" and table.row_of("d9:t1.2").label == ""
    # A row written before rows carried cells: its record has no "row" key.
    old = json.loads(NODE_JSON.dump_json(loaded[3]))
    del old["row"]
    with sqlite3.connect(tmp_path / "ws" / DB_NAME) as db:
        db.execute("UPDATE nodes SET json=? WHERE id=?", (json.dumps(old), "d9:t1.1"))
    with caplog.at_level(logging.WARNING, logger="backend.graph.store"):
        reloaded = list(store.iter_nodes(StoredVectors(store)))
    assert reloaded[3].row is None and reloaded[3].text == plain.index_text()
    assert NodeTable(reloaded).row_of("d9:t1.1") is None
    assert any("1 table rows" in r.message and "Re-ingest" in r.message for r in caplog.records)
    store.close()


def test_a_row_whose_text_is_not_its_cells_index_text_is_refused():
    from backend.types import Cell, TableRow

    row = TableRow(table="Table 1", cells=(Cell("column 1", "Revenue"), Cell("2019", "4.2")))
    node = Node(id="r", layer=Layer.SUBCOMPONENT, kind=NodeKind.ROW, doc="d", text="Revenue 2019 4.2", row=row)
    with pytest.raises(ValueError, match="TableRow.index_text"):
        NodeTable([node])
