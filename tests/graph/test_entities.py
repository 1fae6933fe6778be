"""The MMGraphRAG entity layer: the rules extractor on known sentences, the edit-distance edge
filter, merging across documents, entities stored at ingest and removed with their document, and
entities derived at load for workspaces built before entities existed."""

from __future__ import annotations

import logging
import sqlite3
from collections import Counter

import numpy as np
import pytest

from backend.graph.corpus import Corpus
from backend.graph.entities import (
    EXTRACT,
    ExtractPayload,
    EXTRACT_SCHEMA,
    MAX_EDIT_DISTANCE,
    MERGED_EDGE_IDENTITY,
    RULES_EXTRACTOR,
    edit_distance,
    extract_document_entities,
    filter_relations,
    merge_entities,
    name_distance,
    normalise_name,
)
from backend.graph.edges import EdgeTable
from backend.graph.store import WorkspaceStore
from backend.llm.rules import RulesBackend
from backend.types import Cell, EdgeKind, Layer, Node, NodeKind, TableRow
from tests.fakes import ScriptedLLM


def _extract(*sentences: str, known: list[str] = (), label: str | None = None, rows: list[list[tuple[str, str]]] = ()) -> dict:
    """rows: each row's (header, value) cells, in the label's table."""
    units = [{"id": f"s{i}", "kind": "caption" if label else "sentence", "text": s} for i, s in enumerate(sentences)]
    tables = [TableRow(table=label, cells=tuple(Cell(h, v) for h, v in cells)) for cells in rows]
    units += [{"id": f"r{i}", "kind": "row", "text": row.index_text(), "row": row} for i, row in enumerate(tables)]
    payload = ExtractPayload(units=units, label=label, known=list(known), text="")
    return RulesBackend().run(EXTRACT, payload).model_dump()


def _types(answer: dict) -> dict[str, str]:
    return {name: etype for name, etype, _desc in answer["entities"]}


def _relations(answer: dict) -> set[tuple[str, str, str]]:
    return {tuple(r) for r in answer["relationships"]}


# ---------------------------------------------------------------- the rules extractor


def test_rules_find_names_with_their_types_and_the_verb_between_them():
    answer = _extract("Ed Wood directed Plan 9 from Outer Space in 1957 for Reynolds Pictures in Los Angeles.")
    types = _types(answer)
    assert set(types) == {"Ed Wood", "Plan 9 from Outer Space", "Reynolds Pictures", "Los Angeles"}
    assert types["Ed Wood"] == "person"
    assert types["Reynolds Pictures"] == "organisation"
    assert types["Los Angeles"] == "place"
    assert ("Ed Wood", "directed", "Plan 9 from Outer Space") in _relations(answer)
    assert ("Reynolds Pictures", "in", "Los Angeles") in _relations(answer)
    # The year is an attribute of the sentence's entities, not a node of its own.
    assert "1957" not in types
    assert all("1957" in desc for _n, _t, desc in answer["entities"])


def test_rules_use_known_titles_quotes_and_acronyms_and_skip_adjectives_and_openers():
    answer = _extract(
        "Kiss and Tell is a 1945 American comedy film starring then 17-year-old Shirley Temple as Corliss Archer.",
        "Although it was CBS's answer to NBC's popular \"A Date with Judy\", it was also broadcast by NBC in 1948.",
        "Guests have included comedian Chris Hardwick.",
        known=["Kiss and Tell"],
    )
    types = _types(answer)
    assert types["Kiss and Tell"] == "work"  # known title, typed by its copula "is a ... film"
    assert types["A Date with Judy"] == "work"  # quoted title
    assert types["NBC"] == "organisation"  # acronym
    assert types["Shirley Temple"] == "person" and types["Chris Hardwick"] == "person"
    assert "American" not in types  # adjective use
    assert "Guests" not in types and "Although" not in types  # capitalised only as sentence openers
    assert "Tell" not in types  # the known title wins over the capitalised span inside it
    kiss = next(d for n, _t, d in answer["entities"] if n == "Kiss and Tell")
    assert kiss.startswith("a 1945 American comedy film")
    assert ("Shirley Temple", "as", "Corliss Archer") in _relations(answer)


def test_rules_read_table_rows_and_the_caption_of_a_labelled_table():
    answer = _extract(
        "Table 1: Option assumptions of Acme Corporation",
        label="Table 1",
        rows=[[("Assumption", "Dividend yield"), ("2019", "4.5%"), ("2018", "4.6%")]],
    )
    types = _types(answer)
    assert types["Table 1"] == "table"
    assert types["Acme Corporation"] == "organisation"
    assert types["2019"] == "date" and "Dividend yield" in types and "Assumption" in types
    rels = _relations(answer)
    assert ("Dividend yield", "2019: 4.5%", "2019") in rels
    assert ("Table 1", "has row", "Dividend yield") in rels
    assert ("Table 1", "depicts", "Acme Corporation") in rels


def test_the_answer_matches_the_prompt_schema():
    answer = _extract("Radio City is India's first private FM radio station.")
    assert set(EXTRACT_SCHEMA["required"]) <= set(answer)
    assert all(isinstance(e, list) and len(e) == 3 and all(isinstance(x, str) for x in e) for e in answer["entities"])
    assert all(isinstance(r, list) and len(r) == 3 for r in answer["relationships"])


# ---------------------------------------------------------------- edit-distance edge filtering


def test_edit_distance_and_normalised_names():
    assert edit_distance("kitten", "sitting") == 3
    assert normalise_name("The Beatles") == normalise_name("beatles") == "beatles"
    assert normalise_name("Fig. 2") == normalise_name("Figure 2") == "figure 2"
    assert normalise_name("Martin Ødegaard") == "martin odegaard"
    assert name_distance("Radio Cty", "Radio City") == pytest.approx(1 / 10)
    assert name_distance("Zorblax Corp", "Radio City") > MAX_EDIT_DISTANCE
    assert name_distance("Radio City Limited", "Radio") == 1.0  # lengths alone rule it out


def test_a_relation_whose_endpoint_is_not_an_entity_is_dropped():
    entities = ["Radio City", "India", "PlanetRadiocity.com"]
    kept, dropped = filter_relations(
        [("Radio Cty", "operates in", "India"), ("Zorblax Corp", "owns", "Radio City"),
         ("PlanetRadiocity.com", "was launched by", "radio city")],
        entities,
    )
    assert kept == [("Radio City", "operates in", "India"), ("PlanetRadiocity.com", "was launched by", "Radio City")]
    assert dropped == [("Zorblax Corp", "owns", "Radio City")]


# A model's extraction reply in which one relation names a non-entity (Radio Mirchi).
EXTRACTION_REPLY = {
    "entities": [["Radio City", "organisation", "India's first private FM radio station"], ["India", "place", "A country"]],
    "relationships": [["Radio City", "operates in", "India"], ["Radio City", "rivals", "Radio Mirchi"]],
}


def _doc_nodes(doc_id: str, title: str, sentences: list[str]) -> list[Node]:
    pid = f"{doc_id}:p1"
    nodes = [
        Node(id=doc_id, layer=Layer.DOCUMENT, kind=NodeKind.DOCUMENT, doc=doc_id, text=title),
        Node(id=pid, layer=Layer.COMPONENT, kind=NodeKind.PARAGRAPH, doc=doc_id, text=" ".join(sentences), role="paragraph"),
    ]
    nodes += [Node(id=f"{pid}.{i}", layer=Layer.SUBCOMPONENT, kind=NodeKind.SENTENCE, doc=doc_id, text=s, parent=pid)
              for i, s in enumerate(sentences)]
    return nodes


def test_a_model_extraction_is_filtered_before_it_becomes_edges():
    llm = ScriptedLLM({"mmgraph_extract": EXTRACTION_REPLY})
    nodes = _doc_nodes("d1", "Radio City", ["Radio City is India's first private FM radio station.", "It plays Hindi songs."])
    found = extract_document_entities("d1", "Radio City", nodes, llm)
    assert [task for task, _ in llm.log] == ["mmgraph_extract"]
    assert "Given text paragraph:" in llm.prompts[0] and "Radio City is India's first" in llm.prompts[0]
    assert found.extractor == "llm:scripted"
    names = {n.id: n.text for n in found.nodes}
    relations = [(names[e.src], e.provenance, names[e.dst]) for e in found.edges if e.kind == EdgeKind.RELATION]
    assert relations == [("Radio City", "operates in", "India")]
    assert found.dropped_relations == [("Radio City", "rivals", "Radio Mirchi")]
    mentions = {(names[e.src], e.dst) for e in found.edges if e.kind == EdgeKind.MENTIONS}
    # The component, and the sentence that names the entity (not the one that does not).
    assert {("Radio City", "d1:p1"), ("Radio City", "d1:p1.0"), ("India", "d1:p1.0")} <= mentions
    assert ("Radio City", "d1:p1.1") not in mentions


# ---------------------------------------------------------------- one entity per name across documents


def test_entities_merge_across_documents_by_normalised_name():
    rules = RulesBackend()
    docs = {
        "a": _doc_nodes("a", "Plan 9 from Outer Space", ["Plan 9 from Outer Space was directed by Ed Wood in Los Angeles."]),
        "b": _doc_nodes("b", "Ed Wood", ["Ed Wood was an American filmmaker.", "Wood worked with Bela Lugosi."]),
    }
    nodes, edges, vectors = [], [], {}
    for doc_id, doc_nodes in docs.items():
        found = extract_document_entities(doc_id, doc_nodes[0].text, doc_nodes, rules)
        nodes += doc_nodes + found.nodes
        edges += found.edges
        for i, n in enumerate(found.nodes):
            vectors[n.id] = np.eye(8, dtype=np.float32)[i % 8]
    per_doc = [n for n in nodes if n.kind == NodeKind.ENTITY and normalise_name(n.text) == "ed wood"]
    assert {n.doc for n in per_doc} == {"a", "b"}, "fixture check: both documents name Ed Wood"

    merged = merge_entities(nodes, vectors)
    merged_edges = list(EdgeTable(merged.rewrite(edges), unique=MERGED_EDGE_IDENTITY))
    ed = [n for n in merged.nodes if n.kind == NodeKind.ENTITY and n.text == "Ed Wood"]
    assert len(ed) == 1
    ed_id = ed[0].id
    assert sorted(merged.members[ed_id]) == sorted(n.id for n in per_doc)
    mentioned_docs = {e.dst.split(":")[0] for e in merged_edges if e.kind == EdgeKind.MENTIONS and e.src == ed_id}
    assert mentioned_docs == {"a", "b"}
    # Its vector is the re-normalised mean of its documents' vectors.
    expected = np.mean([vectors[n.id] for n in per_doc], axis=0)
    assert np.allclose(merged.vectors[ed_id], expected / np.linalg.norm(expected))
    # No edge still points at a per-document entity.
    per_doc_ids = {n.id for n in nodes if n.kind == NodeKind.ENTITY}
    assert not any(e.src in per_doc_ids or e.dst in per_doc_ids for e in merged_edges)
    assert Counter(n.kind for n in merged.nodes)[NodeKind.ENTITY] == len(merged.entity_ids) < len(per_doc_ids)


def test_figure_and_table_labels_stay_per_document():
    nodes = []
    for doc_id in ("a", "b"):
        nodes.append(Node(id=f"{doc_id}:e1", layer=Layer.ENTITY, kind=NodeKind.ENTITY, doc=doc_id, text="Table 1", label="table"))
        nodes.append(Node(id=f"{doc_id}:e2", layer=Layer.ENTITY, kind=NodeKind.ENTITY, doc=doc_id, text="Acme Corp", label="organisation"))
    merged = merge_entities(nodes, {})
    names = Counter(n.text for n in merged.nodes)
    assert names == {"Table 1": 2, "Acme Corp": 1}
    assert len(merged.missing) == 3  # no vectors given: encoded on first use


# ---------------------------------------------------------------- stored at ingest, removed with the document


def _rows(ws, sql, args=()):
    db = sqlite3.connect(ws / "strata.sqlite")
    try:
        return db.execute(sql, args).fetchall()
    finally:
        db.close()


def test_ingest_stores_entities_of_every_document(sample_workspace, sample_corpus):
    runs = dict(_rows(sample_workspace, "SELECT doc, extractor FROM entity_runs"))
    assert set(runs) == set(sample_corpus.documents) and set(runs.values()) == {RULES_EXTRACTOR}
    per_doc = dict(_rows(sample_workspace, "SELECT doc, COUNT(*) FROM nodes WHERE layer=? GROUP BY doc", (int(Layer.ENTITY),)))
    assert set(per_doc) == set(sample_corpus.documents) and min(per_doc.values()) >= 5
    with_vectors = _rows(sample_workspace, "SELECT COUNT(*) FROM nodes WHERE layer=? AND emb IS NOT NULL", (int(Layer.ENTITY),))
    assert with_vectors[0][0] == sum(per_doc.values())

    entities = [n for n in sample_corpus.nodes.values() if n.kind == NodeKind.ENTITY]
    layer = sample_corpus.layers["entities"]
    assert len(entities) == len(layer.ids) > 20
    assert not sample_corpus._entities_without_vectors
    kinds = Counter(e.kind for e in sample_corpus.edges)
    assert kinds[EdgeKind.MENTIONS] > len(entities) and kinds[EdgeKind.RELATION] > 10
    for e in sample_corpus.edges:
        if e.kind == EdgeKind.MENTIONS:
            assert sample_corpus.nodes[e.src].kind == NodeKind.ENTITY
            assert sample_corpus.nodes[e.dst].layer in (Layer.COMPONENT, Layer.SUBCOMPONENT)
        elif e.kind == EdgeKind.RELATION:
            assert sample_corpus.nodes[e.src].kind == sample_corpus.nodes[e.dst].kind == NodeKind.ENTITY and e.provenance
    # The four reports share names (the city, its districts): some entities span documents.
    assert any(n.order >= 2 for n in entities)
    labels = {n.label for n in entities}
    assert {"table", "figure"} <= labels


def test_removing_a_document_removes_its_entities(service, workspace_copy):
    before = service.corpus(workspace_copy)
    doc = next(d for d in before.documents.values() if d.file_name == "data_annex.pdf")
    service.remove_document(workspace_copy, doc.id)
    assert _rows(workspace_copy, "SELECT COUNT(*) FROM nodes WHERE doc=?", (doc.id,))[0][0] == 0
    assert _rows(workspace_copy, "SELECT COUNT(*) FROM edges WHERE doc=?", (doc.id,))[0][0] == 0
    assert _rows(workspace_copy, "SELECT COUNT(*) FROM entity_runs WHERE doc=?", (doc.id,))[0][0] == 0
    after = service.corpus(workspace_copy)
    assert len(after.documents) == 3
    for e in after.edges:
        if e.kind == EdgeKind.MENTIONS:
            assert after.nodes[e.dst].doc != doc.id
    # An entity only the removed document named is gone; one that other documents name too stays.
    entities = [n for n in before.nodes.values() if n.kind == NodeKind.ENTITY]
    only_there = {n.id for n in entities if n.order == 1 and n.doc == doc.id}
    shared = {n.id for n in entities if n.order >= 2 and any(
        before.nodes[before.component_of(u)].doc == doc.id for _e, u in before.neighbours(n.id, (EdgeKind.MENTIONS,)))}
    assert only_there and shared, "fixture check: the annex names entities of its own and shared ones"
    assert not only_there & set(after.nodes)
    assert shared <= set(after.nodes)


# ---------------------------------------------------------------- workspaces built before entities


def test_entities_are_derived_at_load_for_old_workspaces_and_cached(service, sample_corpus, workspace_copy, caplog):
    db = sqlite3.connect(workspace_copy / "strata.sqlite")
    db.execute("DELETE FROM nodes WHERE layer=?", (int(Layer.ENTITY),))
    db.execute("DELETE FROM edges WHERE kind IN ('mentions', 'relation')")
    db.execute("DROP TABLE entity_runs")  # as a workspace written before the table existed
    db.commit()
    db.close()
    dims = {name: service.encoders.for_layer(name).dim for name in ("documents", "sections", "components", "subcomponents")}
    store = WorkspaceStore(workspace_copy, create=False)
    caplog.set_level(logging.INFO, logger="backend.graph.entities")
    try:
        generation = store.generation
        corpus = Corpus.load(store, dims=dims)
        assert any("derived" in r.getMessage() and "4 documents" in r.getMessage() for r in caplog.records)
        assert store.generation == generation, "a derived cache does not change the graph's generation"
        assert set(store.entity_runs().values()) == {RULES_EXTRACTOR}
        assert len(store.entity_runs()) == 4
    finally:
        store.close()
    # The same rules as at ingest: the same entities, but without vectors until first use.
    names = sorted(n.text for n in corpus.nodes.values() if n.kind == NodeKind.ENTITY)
    assert names == sorted(n.text for n in sample_corpus.nodes.values() if n.kind == NodeKind.ENTITY)
    assert len(corpus._entities_without_vectors) == len(names)
    layer = corpus.entity_layer(service.encoders.sub)
    assert not corpus._entities_without_vectors
    assert np.allclose(np.linalg.norm(layer.dense.matrix, axis=1), 1.0, atol=1e-4)
    query = service.encoders.sub.encode(["canopy cover"])[0]
    assert layer.dense.search(query, 1)
    # Cached: the second load derives nothing and finds the same entities.
    caplog.clear()
    store = WorkspaceStore(workspace_copy, create=False)
    try:
        again = Corpus.load(store, dims=dims)
    finally:
        store.close()
    assert not any("derived" in r.getMessage() for r in caplog.records)
    assert sorted(n.text for n in again.nodes.values() if n.kind == NodeKind.ENTITY) == names
