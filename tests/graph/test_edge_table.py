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
