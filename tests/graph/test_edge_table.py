"""The corpus's edges as arrays answer what the per-node lists of Edge records answered: the same
edges, values and order, per node, per kind and in all."""

from __future__ import annotations

from collections import defaultdict

from backend.graph.edges import EdgeTable
from backend.types import Edge, EdgeKind

NODES = ["d1", "d1:s1", "d1:c1", "d1:c2", "d2", "d2:c1", "ent:alice"]
EDGES = [
    Edge(src="d1", dst="d1:s1", kind=EdgeKind.CONTAINS),
    Edge(src="d1:s1", dst="d1:c1", kind=EdgeKind.CONTAINS),
    Edge(src="d1:s1", dst="d1:c2", kind=EdgeKind.CONTAINS),
    Edge(src="d1:c1", dst="d1:c2", kind=EdgeKind.NEXT),
    Edge(src="d1:c2", dst="d2", kind=EdgeKind.LINK, provenance="uri: d2.pdf"),
    Edge(src="d1", dst="d2", kind=EdgeKind.DOC_LINK, provenance="uri: d2.pdf"),
    Edge(src="ent:alice", dst="d1:c1", kind=EdgeKind.MENTIONS, weight=0.5),
    Edge(src="ent:alice", dst="d2:c1", kind=EdgeKind.MENTIONS, weight=0.25),
    Edge(src="ent:alice", dst="ent:alice", kind=EdgeKind.RELATION, weight=0.1, provenance="knows herself"),
    Edge(src="d1:c2", dst="d1:c1", kind=EdgeKind.XREF, provenance="Table 2"),
    Edge(src="d1:c1", dst="d1:c2", kind=EdgeKind.NEXT),  # a repeated edge stays, as in a list
]


def _lists(edges):
    out, into = defaultdict(list), defaultdict(list)
    for e in edges:
        out[e.src].append(e)
        into[e.dst].append(e)
    return out, into


def test_each_node_gets_its_edges_in_the_order_they_were_added():
    table = EdgeTable(EDGES, NODES)
    out, into = _lists(EDGES)
    assert len(table) == len(EDGES) and list(table) == EDGES
    for node in [*NODES, "nowhere"]:
        assert table.out_of(node) == out.get(node, []), node
        assert table.into(node) == into.get(node, []), node
        assert table.degree(node) == len(out.get(node, [])) + len(into.get(node, [])), node
        for kinds in [(EdgeKind.NEXT,), (EdgeKind.LINK, EdgeKind.DOC_LINK), (EdgeKind.MENTIONS, EdgeKind.RELATION)]:
            assert table.out_of(node, kinds) == [e for e in out.get(node, []) if e.kind in kinds], (node, kinds)
            assert table.into(node, kinds) == [e for e in into.get(node, []) if e.kind in kinds], (node, kinds)


def test_records_keep_every_value_and_kinds_are_counted():
    table = EdgeTable(EDGES, NODES)
    (rel,) = table.of_kind((EdgeKind.RELATION,))
    assert (rel.src, rel.dst, rel.kind, rel.weight, rel.provenance) == ("ent:alice", "ent:alice", EdgeKind.RELATION, 0.1, "knows herself")
    assert isinstance(rel, Edge) and rel == EDGES[8]
    assert table.of_kind((EdgeKind.LINK, EdgeKind.XREF)) == [EDGES[4], EDGES[9]]
    assert table.counts() == {EdgeKind.CONTAINS: 3, EdgeKind.NEXT: 2, EdgeKind.LINK: 1, EdgeKind.DOC_LINK: 1,
                              EdgeKind.MENTIONS: 2, EdgeKind.RELATION: 1, EdgeKind.XREF: 1}
    assert table.out_of("d1:c2")[0].provenance == "uri: d2.pdf"


def test_an_edge_end_that_was_not_numbered_is_numbered_and_an_empty_table_answers():
    table = EdgeTable(EDGES[:2])  # no node ids given first
    assert table.into("d1:s1") == [EDGES[0]] and table.out_of("d1:s1") == [EDGES[1]]
    empty = EdgeTable([], NODES)
    assert len(empty) == 0 and list(empty) == [] and empty.out_of("d1") == [] and empty.counts() == {}
    assert empty.of_kind((EdgeKind.LINK,)) == [] and empty.degree("d1") == 0


def test_the_corpus_answers_as_the_stored_edges_say(service, sample_workspace):
    from backend.graph.store import WorkspaceStore

    corpus = service.corpus(sample_workspace)
    store = WorkspaceStore(sample_workspace)
    try:
        stored = [e for e in store.all_edges() if e.kind not in (EdgeKind.MENTIONS, EdgeKind.RELATION)]  # entities are merged at load
    finally:
        store.close()
    out, into = _lists(corpus.edges)
    assert sum(len(v) for v in out.values()) == len(corpus.edges) > 400
    for e in stored:
        assert e in corpus.edges.out_of(e.src) and e in corpus.edges.into(e.dst), e
    some = next(n for n in corpus.nodes if corpus.edges.degree(n) > 3)
    assert [(e, e.dst) for e in out[some]] + [(e, e.src) for e in into[some]] == corpus.neighbours(some)


def test_the_other_ends_come_without_records_in_the_order_the_records_give_them(sample_corpus):
    kinds = (EdgeKind.MENTIONS,)
    for node_id in sample_corpus.nodes:
        assert sample_corpus.neighbour_ids(node_id) == [other for _e, other in sample_corpus.neighbours(node_id)]
        assert sample_corpus.neighbour_ids(node_id, kinds) == [other for _e, other in sample_corpus.neighbours(node_id, kinds)]
    hub = max(sample_corpus.nodes, key=lambda n: len(sample_corpus.neighbour_ids(n, kinds)))
    assert len(sample_corpus.neighbour_ids(hub, kinds)) > 3 and sample_corpus.neighbour_ids("no such node") == []


def test_repeats_of_a_unique_kind_are_dropped_and_the_first_kept():
    a, b = "ent:a", "ent:b"
    edges = [
        Edge(src=a, dst="d1:c1", kind=EdgeKind.MENTIONS, provenance="in d1"),
        Edge(src=a, dst=b, kind=EdgeKind.RELATION, weight=0.5, provenance="founded"),
        Edge(src=a, dst="d1:c1", kind=EdgeKind.MENTIONS, weight=0.2, provenance="in d2"),  # a repeat: provenance is not identity
        Edge(src=a, dst=b, kind=EdgeKind.RELATION, weight=0.9, provenance="founded"),  # a repeat
        Edge(src=a, dst=b, kind=EdgeKind.RELATION, provenance="sold"),  # another relation
        Edge(src="d1:c1", dst="d1:c2", kind=EdgeKind.NEXT),
        Edge(src="d1:c1", dst="d1:c2", kind=EdgeKind.NEXT),  # not a unique kind: kept
    ]
    table = EdgeTable(edges, unique={EdgeKind.MENTIONS: False, EdgeKind.RELATION: True})
    assert list(table) == [edges[0], edges[1], edges[4], edges[5], edges[6]]
    assert table.out_of(a) == [edges[0], edges[1], edges[4]] and table.into(b) == [edges[1], edges[4]]
    assert table.of_kind((EdgeKind.NEXT,)) == [edges[5], edges[6]] and table.of_kind((EdgeKind.XREF,)) == []


def _old_merge(edges, remap):
    """The merge of entity edges as the corpus did it before the edge table (a set of signatures)."""
    out, seen = [], set()
    for e in edges:
        if e.kind not in (EdgeKind.MENTIONS, EdgeKind.RELATION) or (e.src not in remap and e.dst not in remap):
            out.append(e)
            continue
        src, dst = remap.get(e.src, e.src), remap.get(e.dst, e.dst)
        sig = (src, dst, e.kind.value, e.provenance if e.kind == EdgeKind.RELATION else "")
        if src == dst or sig in seen:
            continue
        seen.add(sig)
        out.append(Edge(src=src, dst=dst, kind=e.kind, weight=e.weight, provenance=e.provenance))
    return out


def test_a_corpus_streamed_from_its_store_holds_the_edges_the_list_merge_held(service, sample_workspace):
    from backend.graph.entities import merge_entities
    from backend.graph.store import WorkspaceStore

    corpus = service.corpus(sample_workspace)
    store = WorkspaceStore(sample_workspace)
    try:
        nodes, vectors = store.all_nodes()
        stored, links = store.all_edges(), store.all_doc_links()
    finally:
        store.close()
    merged = merge_entities(nodes, vectors)
    assert merged.remap, "fixture check: the sample has entities to merge"
    expected = [e for e in _old_merge(stored, merged.remap) + corpus._resolve_doc_links(links)
                if e.src in corpus.nodes and e.dst in corpus.nodes]
    assert list(corpus.edges) == expected
    assert sum(e.kind == EdgeKind.MENTIONS for e in expected) > 50


def test_the_store_reads_each_edge_as_a_row_with_the_values_of_its_record(workspace_copy):
    import sqlite3

    from backend.graph.edges import edge_rows
    from backend.graph.store import DB_NAME, WorkspaceStore
    from backend.types import EDGE_JSON

    db = sqlite3.connect(workspace_copy / DB_NAME)  # one stored edge gets a weight other than 1.0
    rowid, js = db.execute("SELECT rowid, json FROM edges WHERE kind='mentions' LIMIT 1").fetchone()
    edge = EDGE_JSON.validate_json(js)
    edge.weight = 0.375
    db.execute("UPDATE edges SET json=? WHERE rowid=?", (EDGE_JSON.dump_json(edge).decode(), rowid))
    db.commit()
    db.close()
    store = WorkspaceStore(workspace_copy)
    try:
        records, rows = list(store.iter_edges()), list(store.iter_edge_rows())
    finally:
        store.close()
    assert len(rows) == len(records) > 400
    assert rows == list(edge_rows(records))
    assert any(r[4] for r in rows) and [r[3] for r in rows if r[3] != 1.0] == [0.375]
    assert EdgeTable(rows).of_kind(tuple(EdgeKind)) == [e for e in records]  # every kind, in stored order


def test_the_ends_of_a_kind_are_numbered_as_the_table_numbers_them_in_the_order_added():
    table = EdgeTable(EDGES, NODES)
    for kinds in [(EdgeKind.MENTIONS,), (EdgeKind.NEXT, EdgeKind.XREF), (EdgeKind.CAPTION,)]:  # CAPTION: none
        src, dst = table.ends(kinds)
        expected = [(NODES.index(e.src), NODES.index(e.dst)) for e in EDGES if e.kind in kinds]
        assert list(zip(src.tolist(), dst.tolist())) == expected, kinds


def test_incident_edges_are_the_neighbours_as_numbers():
    table = EdgeTable(EDGES, NODES)
    for node in [*NODES, "nowhere"]:
        for kinds in [(EdgeKind.MENTIONS, EdgeKind.RELATION), (EdgeKind.NEXT,), (EdgeKind.LINK, EdgeKind.DOC_LINK)]:
            other, src, dst, prov = table.incident(node, kinds)
            expected = [(e, e.dst) for e in table.out_of(node, kinds)] + [(e, e.src) for e in table.into(node, kinds)]
            assert [table.id_of(o) for o in other.tolist()] == [o for _e, o in expected], (node, kinds)
            assert [(table.id_of(s), table.id_of(d), table.provenance_of(p)) for s, d, p in zip(src.tolist(), dst.tolist(), prov.tolist())] == \
                [(e.src, e.dst, e.provenance) for e, _o in expected], (node, kinds)
