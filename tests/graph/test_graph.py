"""Invariants of the layered graph of the sample workspace (as loaded into a Corpus)."""

from __future__ import annotations

from collections import Counter, defaultdict

from backend.types import COMPONENT_KINDS, SUBCOMPONENT_KINDS, EdgeKind, Layer, NodeKind


def test_every_edge_has_both_endpoints(sample_corpus):
    missing = [e for e in sample_corpus.edges if e.src not in sample_corpus.nodes or e.dst not in sample_corpus.nodes]
    assert missing == []
    assert len(sample_corpus.edges) > 400


def test_layers_and_kinds_agree(sample_corpus):
    for n in sample_corpus.nodes.values():
        if n.kind in (NodeKind.DOCUMENT, NodeKind.SECTION):
            assert n.layer == Layer.DOCUMENT
        elif n.kind in COMPONENT_KINDS:
            assert n.layer == Layer.COMPONENT
        elif n.kind in SUBCOMPONENT_KINDS:
            assert n.layer == Layer.SUBCOMPONENT
        assert n.doc in sample_corpus.documents
    kinds = Counter(n.kind for n in sample_corpus.nodes.values())
    assert kinds[NodeKind.DOCUMENT] == 4
    assert kinds[NodeKind.TABLE] == 9 and kinds[NodeKind.FIGURE] == 6


def test_components_have_a_section_of_their_document(sample_corpus):
    for n in sample_corpus.nodes.values():
        if n.layer != Layer.COMPONENT:
            continue
        section = sample_corpus.sections.get(n.section or "")
        assert section is not None, n.id
        assert section.doc == n.doc
        assert n.parent == section.id
        assert n.id in sample_corpus.section_members(section.id)


def test_subcomponents_hang_from_a_component_of_their_document(sample_corpus):
    contains = {(e.src, e.dst) for e in sample_corpus.edges if e.kind == EdgeKind.CONTAINS}
    for n in sample_corpus.nodes.values():
        if n.layer != Layer.SUBCOMPONENT:
            continue
        parent = sample_corpus.nodes.get(n.parent or "")
        assert parent is not None and parent.layer == Layer.COMPONENT, n.id
        assert parent.doc == n.doc and parent.section == n.section and parent.page == n.page
        assert (parent.id, n.id) in contains
        assert sample_corpus.component_of(n.id) == parent.id


def test_contains_edges_form_a_tree(sample_corpus):
    incoming: dict[str, list[str]] = defaultdict(list)
    for e in sample_corpus.edges:
        if e.kind == EdgeKind.CONTAINS:
            incoming[e.dst].append(e.src)
    hierarchy = [n for n in sample_corpus.nodes.values() if n.layer != Layer.ENTITY]  # entities span documents
    for n in hierarchy:
        if n.kind == NodeKind.DOCUMENT:
            assert incoming[n.id] == []
        else:
            assert incoming[n.id] == [n.parent], (n.id, incoming[n.id], n.parent)
    # Walking up from any node ends at its document.
    for n in hierarchy:
        seen, cur = set(), n
        while cur.kind != NodeKind.DOCUMENT:
            assert cur.id not in seen
            seen.add(cur.id)
            cur = sample_corpus.nodes[cur.parent]
        assert cur.id == n.doc


def test_section_paths_start_with_the_title_and_extend_their_parent(sample_corpus):
    for s in sample_corpus.sections.values():
        doc = sample_corpus.documents[s.doc]
        assert s.path[0] == doc.title
        assert s.path[-1] == s.title
        if s.parent is None:
            assert s.level == 0 and s.path == [doc.title]
        else:
            parent = sample_corpus.sections[s.parent]
            assert parent.doc == s.doc
            assert parent.path == s.path[:-1]
            assert parent.level < s.level
        assert 1 <= s.page <= doc.pages


def test_next_edges_stay_inside_one_section_in_reading_order(sample_corpus):
    nexts = [e for e in sample_corpus.edges if e.kind == EdgeKind.NEXT]
    assert nexts
    out_degree = Counter(e.src for e in nexts)
    for e in nexts:
        a, b = sample_corpus.nodes[e.src], sample_corpus.nodes[e.dst]
        assert a.layer == b.layer == Layer.COMPONENT
        assert a.section == b.section and a.doc == b.doc
        assert a.order < b.order
    assert max(out_degree.values()) == 1


def test_xref_caption_and_link_edges_stay_in_their_document(sample_corpus):
    for e in sample_corpus.edges:
        if e.kind in (EdgeKind.XREF, EdgeKind.CAPTION):
            assert sample_corpus.nodes[e.src].doc == sample_corpus.nodes[e.dst].doc
        if e.kind == EdgeKind.CAPTION:
            assert sample_corpus.nodes[e.src].role == "caption"
            assert sample_corpus.nodes[e.dst].kind in (NodeKind.TABLE, NodeKind.FIGURE)


def test_document_links_connect_different_documents(sample_corpus, sample_docs):
    doc_links = [e for e in sample_corpus.edges if e.kind == EdgeKind.DOC_LINK]
    assert len(doc_links) >= 3
    for e in doc_links:
        assert sample_corpus.nodes[e.src].kind == NodeKind.DOCUMENT
        assert sample_corpus.nodes[e.dst].kind == NodeKind.DOCUMENT
        assert e.src != e.dst
    assert len({(e.src, e.dst) for e in doc_links}) == len(doc_links), "one doc_link per pair of documents"
    ids = {name: d.id for name, d in sample_docs.items()}
    pairs = {(e.src, e.dst): e.provenance for e in doc_links}
    # A file link (GoToR/Launch) and a URI link that names the file.
    file_link = pairs.get((ids["cool_streets_report.pdf"], ids["methods_appendix.pdf"]), "")
    assert file_link.startswith("file link")
    uri_link = pairs.get((ids["policy_brief.pdf"], ids["data_annex.pdf"]), "")
    assert uri_link.startswith("uri link") and uri_link.endswith("data_annex.pdf")
    # The unit the link sits on is linked to the target document too.
    unit_links = [
        e for e in sample_corpus.edges
        if e.kind == EdgeKind.LINK and e.dst in sample_corpus.documents and sample_corpus.nodes[e.src].layer == Layer.COMPONENT
    ]
    assert unit_links
    assert all(sample_corpus.nodes[e.src].doc != e.dst for e in unit_links)


def test_neighbours_are_symmetric(sample_corpus):
    node = next(n for n in sample_corpus.nodes.values() if n.kind == NodeKind.TABLE)
    for edge, other in sample_corpus.neighbours(node.id):
        assert node.id in {o for _, o in sample_corpus.neighbours(other)}
        assert {edge.src, edge.dst} == {node.id, other}


def test_every_node_is_indexed_in_its_layer(sample_corpus):
    layers = sample_corpus.layers
    for n in sample_corpus.nodes.values():
        if n.kind == NodeKind.DOCUMENT:
            name = "documents"
        elif n.kind == NodeKind.SECTION:
            name = "sections"
        elif n.layer == Layer.COMPONENT:
            name = "components"
        elif n.layer == Layer.ENTITY:
            name = "entities"
        else:
            name = "subcomponents"
        assert n.id in layers[name].dense.row and n.id in layers[name].lexical.row, (name, n.id)
