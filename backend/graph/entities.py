"""MMGraphRAG's entity layer (section 3.2, Multi-modal Graph Constructor): entities and relations
extracted from each document's text components and figure/table captions, the edit-distance
edge filter, and the merge of per-document entities into one node per name when a Corpus loads.

Per document, at ingest (so one transaction stores a document with its entities, and removing the
document removes them): ENTITY nodes (text = name, label = type, context = description), MENTIONS
edges entity -> component and entity -> the sentence or table row that names it, RELATION edges
entity -> entity whose provenance is the relation's description ("directed").
Across documents, at load: per-document entities with the same normalised name become one node
("Ed Wood" in two PDFs is one entity), except figure/table labels ("Table 2"), which name a
different thing in every document. Workspaces ingested before entities existed get them derived
at load with the rules extractor and cached in the store (`derive_missing_entities`).

The extractor is the LLM backend's task 'mmgraph_extract': rules offline
(backend/graph/entity_extractor.py), or with a model the paper's prompts (appendix D, Figure 7: entity
extraction and relationship recognition, asked in one call per chunk) with a JSON schema.
Relations are kept only when both endpoints are within a normalised edit distance of an
extracted entity (the paper's equation 13 asks it of one endpoint; an edge needs both).

What it does not do: caption images (the Mixture of Captioner needs a vision model; a figure is
represented by its caption and OCR text), resolve coreference, or tell apart two things that
share a name.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import re
import time
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from backend.graph.edges import EdgeRow, edge_rows
from backend.graph.entity_extractor import ExtractAnswer, ExtractPayload, ExtractUnit
from backend.graph.entity_extractor import extract as extract_by_rules
from backend.llm.base import LLMBackend
from backend.llm.task import LLMTask
from backend.types import Edge, EdgeKind, Layer, Node, NodeKind

if TYPE_CHECKING:
    from backend.graph.store import WorkspaceStore

log = logging.getLogger(__name__)

RULES_EXTRACTOR = "rules-3"  # bump when the rules change: entities derived by older rules are derived again
MAX_EDIT_DISTANCE = 0.25  # the paper's theta, as a share of the longer name's length
MAX_LLM_CHUNK_CHARS = 4000
MAX_DESCRIPTION_CHARS = 300
MAX_TITLE_WORDS = 8
# Labels of parts of one document ("Table 2", "Fig. 3b", "Section 2.1"), normalised (dots are spaces by then).
REFERENCE_RE = re.compile(r"^(fig|figure|tab|table|section|chapter|appendix|eq|equation)\s+([0-9]+(?: [0-9]+)*[a-z]?|[a-z](?: [0-9]+)*)$")
# Letters NFKD does not split into a base letter and a mark.
_FOLD = str.maketrans({"ø": "o", "Ø": "O", "æ": "ae", "Æ": "AE", "œ": "oe", "Œ": "OE", "ß": "ss", "đ": "d", "Đ": "D",
                       "ł": "l", "Ł": "L", "þ": "th", "Þ": "TH", "ð": "d", "Ð": "D", "ı": "i"})
ENTITY_TYPES = ("person", "organisation", "place", "date", "work", "figure", "table", "other")

EXTRACT_PROMPT = """You are an intelligent assistant that helps a human analyst to extract entities from a given text paragraph and to recognize relationships among them.
- entity_name: name of the entity
- entity_type: one of person, organisation, place, date, work, figure, table, other
- entity_description: comprehensive description of the entity's attributes and activities
- source_entity: source entity of the relationship, must be included in the extracted entities
- target_entity: target entity of the relationship, must be included in the extracted entities
- relationship: relationship between source_entity and target_entity
Pay more attention to the figure entities and table entities in the text.
Format each entity extraction result to be: ["entity_name", "entity_type", "entity_description"]
Format each relationship extraction result to be: ["source_entity", "relationship", "target_entity"]
Respond in a dict of JSON format.

Examples: text paragraph
As shown in Fig 2, Radio City is India's first private FM radio station and was started on 3 July 2001. It plays Hindi, English and regional songs. Radio City recently forayed into New Media in May 2008 with the launch of a music portal - PlanetRadiocity.com that offers music related news, videos, songs, and other music-related features.
Assistant:
{"entities": [["Fig 2", "figure", "The figure depicting Radio City"], ["Radio City", "organisation", "India's first private FM radio station"], ["India", "place", "Country where Radio City operates"], ["Hindi", "other", "Language played by Radio City"], ["3 July 2001", "date", "Date when Radio City was founded"], ["PlanetRadiocity.com", "work", "Music portal launched by Radio City that offers music related news, videos, songs, and other music-related features"]], "relationships": [["Fig 2", "depicts", "Radio City"], ["Radio City", "operates in", "India"], ["Radio City", "plays song of", "Hindi"], ["Radio City", "was founded on", "3 July 2001"], ["PlanetRadiocity.com", "was launched by", "Radio City"]]}

Given text paragraph:
"""

_STRING_LISTS = {"type": "array", "items": {"type": "array", "items": {"type": "string"}}}
EXTRACT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"entities": _STRING_LISTS, "relationships": _STRING_LISTS},
    "required": ["entities", "relationships"],
}


EXTRACT: LLMTask[ExtractPayload, ExtractAnswer] = LLMTask(
    name="mmgraph_extract",
    prompt=lambda p: EXTRACT_PROMPT + p.text,
    payload=ExtractPayload,
    answer=ExtractAnswer,
    rules=extract_by_rules,
    schema=EXTRACT_SCHEMA,
)


# ---------------------------------------------------------------- names


def normalise_name(name: str) -> str:
    """Lowercase ASCII words of a name, a leading 'the' dropped; 'Fig. 2' -> 'figure 2'."""
    text = unicodedata.normalize("NFKD", name.translate(_FOLD)).encode("ascii", "ignore").decode().lower()
    text = re.sub(r"[^a-z0-9]+", " ", text).strip()
    text = re.sub(r"^the ", "", text)
    ref = REFERENCE_RE.match(text)
    if ref:
        word = {"fig": "figure", "tab": "table", "eq": "equation"}.get(ref.group(1), ref.group(1))
        text = f"{word} {ref.group(2)}"
    return text


def merge_key(name: str, entity_type: str | None, doc_id: str) -> str:
    """What makes two entities one node: the normalised name; a figure, table or section label is
    only the same thing inside one document."""
    norm = normalise_name(name)
    if entity_type in ("figure", "table") or REFERENCE_RE.match(norm):
        return f"{doc_id}|{norm}"
    return norm


def _digest(text: str, n: int) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:n]


def document_entity_id(doc_id: str, key: str) -> str:
    return f"{doc_id}:e{_digest(key, 12)}"


def corpus_entity_id(key: str) -> str:
    return f"entity:{_digest(key, 16)}"


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance (insertions, deletions, substitutions), the paper's ED."""
    if len(a) < len(b):
        a, b = b, a
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def name_distance(a: str, b: str) -> float:
    """Edit distance of the normalised names over the longer one's length: 0 same, 1 unrelated."""
    na, nb = normalise_name(a), normalise_name(b)
    if na == nb:
        return 0.0
    longest = max(len(na), len(nb))
    if not longest:
        return 1.0
    if abs(len(na) - len(nb)) / longest > MAX_EDIT_DISTANCE:
        return 1.0  # too different in length to be within the threshold: skip the DP
    return edit_distance(na, nb) / longest


def closest_entity(name: str, entity_names: Iterable[str], max_distance: float = MAX_EDIT_DISTANCE) -> str | None:
    """The entity name nearest to `name` within `max_distance`, or None."""
    best, best_d = None, max_distance
    for cand in entity_names:
        d = name_distance(name, cand)
        if d <= best_d and (best is None or d < best_d):
            best, best_d = cand, d
            if d == 0.0:
                break
    return best


def filter_relations(
    relations: list[tuple[str, str, str]], entity_names: list[str], max_distance: float = MAX_EDIT_DISTANCE
) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
    """The paper's edge filtering: each endpoint is mapped to the extracted entity within
    `max_distance` (normalised edit distance); a relation with an endpoint that matches none is
    dropped. Returns (kept relations with the entities' own names, dropped relations)."""
    exact = {normalise_name(n): n for n in entity_names}
    kept, dropped = [], []
    for src, rel, dst in relations:
        ends = []
        for end in (src, dst):
            ends.append(exact.get(normalise_name(end)) or closest_entity(end, entity_names, max_distance))
        if ends[0] is None or ends[1] is None or ends[0] == ends[1]:
            dropped.append((src, rel, dst))
        else:
            kept.append((ends[0], rel, ends[1]))
    return kept, dropped


def title_names(title: str) -> list[str]:
    """The names a document title gives ("Kiss and Tell (1945 film)" -> "Kiss and Tell")."""
    name = re.sub(r"\s*\([^)]*\)\s*$", "", title or "").strip()
    if not name or len(name.split()) > MAX_TITLE_WORDS or not re.search(r"[A-Za-z]", name):
        return []
    return [name]


def entity_index_text(node: Node) -> str:
    """The text an entity is indexed by (dense and BM25): its name, type and description."""
    return f"{node.text} ({node.label or 'other'}): {node.context}" if node.context else node.text


# ---------------------------------------------------------------- extraction per document


@dataclass
class DocumentEntities:
    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    extractor: str = RULES_EXTRACTOR
    dropped_relations: list[tuple[str, str, str]] = field(default_factory=list)
    llm_calls: int = 0


@dataclass
class _Found:
    name: str
    type: str
    description: str
    page: int
    order: int
    mentions: dict[str, None] = field(default_factory=dict)  # unit ids, in order


def _chunks(nodes: list[Node]) -> list[tuple[Node, list[ExtractUnit]]]:
    """(component, units) to extract from: a paragraph's sentences, a table's caption and rows, a
    figure's caption. Figure OCR text is left out: it is labels and numbers, not sentences."""
    children: dict[str, list[Node]] = defaultdict(list)
    for n in nodes:
        if n.layer == Layer.SUBCOMPONENT and n.parent:
            children[n.parent].append(n)
    out = []
    for comp in (n for n in nodes if n.layer == Layer.COMPONENT):
        units: list[ExtractUnit] = []
        if comp.kind in (NodeKind.PARAGRAPH, NodeKind.CODE):
            kind = "caption" if comp.role == "caption" else "sentence"
            units = [ExtractUnit(id=s.id, kind=kind, text=s.text) for s in children.get(comp.id, []) if s.kind == NodeKind.SENTENCE]
            if not units and comp.text.strip():
                units = [ExtractUnit(id=comp.id, kind=kind, text=comp.text)]
        elif comp.kind in (NodeKind.TABLE, NodeKind.FIGURE):
            if comp.context.strip():
                units.append(ExtractUnit(id=comp.id, kind="caption", text=comp.context))
            if comp.kind == NodeKind.TABLE:
                units += [ExtractUnit(id=r.id, kind="row", text=r.text, row=r.row) for r in children.get(comp.id, []) if r.kind == NodeKind.ROW]
        if units:
            out.append((comp, units))
    return out


def _chunk_text(comp: Node, units: list[ExtractUnit]) -> str:
    if comp.kind == NodeKind.TABLE:
        return comp.text[:MAX_LLM_CHUNK_CHARS]
    return " ".join(u.text for u in units)[:MAX_LLM_CHUNK_CHARS]


def _parse_answer(answer: dict[str, Any]) -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
    """(entities as (name, type, description), relations as (source, relationship, target)) from
    the task's answer; tolerant of 2-item entities and of objects instead of lists."""
    entities = []
    for item in answer.get("entities", []) or []:
        if isinstance(item, dict):
            item = [item.get("entity_name") or item.get("name", ""), item.get("entity_type") or item.get("type", "other"),
                    item.get("entity_description") or item.get("description", "")]
        if not isinstance(item, (list, tuple)) or not item or not str(item[0]).strip():
            continue
        name = str(item[0]).strip()
        if len(item) >= 3:
            etype, desc = str(item[1]).strip().lower(), str(item[2])
        else:
            etype, desc = "other", str(item[1]) if len(item) > 1 else ""
        entities.append((name, etype if etype in ENTITY_TYPES else "other", desc.strip()[:MAX_DESCRIPTION_CHARS]))
    relations = []
    for item in answer.get("relationships", []) or []:
        if isinstance(item, dict):
            item = [item.get("source_entity", ""), item.get("relationship", ""), item.get("target_entity", "")]
        if isinstance(item, (list, tuple)) and len(item) >= 3 and all(str(x).strip() for x in (item[0], item[2])):
            relations.append((str(item[0]).strip(), str(item[1]).strip() or "related to", str(item[2]).strip()))
    return entities, relations


def _mentioned_in(name: str, text: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text, re.I) is not None


def extract_document_entities(doc_id: str, title: str, nodes: list[Node], llm: LLMBackend) -> DocumentEntities:
    """Entities, mentions and relations of one document's nodes (see the module doc)."""
    known = title_names(title)
    found: dict[str, _Found] = {}
    relations: dict[tuple[str, str, str], None] = {}
    dropped: list[tuple[str, str, str]] = []
    calls = 0
    for comp, units in _chunks(nodes):
        label = comp.label if comp.kind in (NodeKind.TABLE, NodeKind.FIGURE) or comp.role == "caption" else None
        payload = ExtractPayload(units=units, label=label, known=known, text=_chunk_text(comp, units))
        answer = llm.run(EXTRACT, payload)
        calls += 1
        entities, rels = _parse_answer(answer.model_dump())
        chunk_keys: dict[str, str] = {}  # entity name as extracted -> merge key
        for name, etype, desc in entities:
            key = merge_key(name, etype, doc_id)
            if not key.strip("|") or key.endswith("|"):
                continue
            chunk_keys[name] = key
            have = found.get(key)
            if have is None:
                have = found[key] = _Found(name, etype, desc, comp.page, comp.order)
            elif have.type == "other" and etype != "other":
                have.type = etype
            have.mentions[comp.id] = None
            for u in units:
                if u.id != comp.id and _mentioned_in(name, u.text):
                    have.mentions[u.id] = None
        kept, lost = filter_relations(rels, list(chunk_keys))
        dropped += lost
        for src, rel, dst in kept:
            a, b = chunk_keys[src], chunk_keys[dst]
            if a != b:
                relations.setdefault((a, rel[:120], b), None)
    out = DocumentEntities(extractor=RULES_EXTRACTOR if getattr(llm, "name", "") == "rules" else f"llm:{llm.name}",
                           dropped_relations=dropped, llm_calls=calls)
    ids = {key: document_entity_id(doc_id, key) for key in found}
    for key, f in found.items():
        out.nodes.append(Node(id=ids[key], layer=Layer.ENTITY, kind=NodeKind.ENTITY, doc=doc_id, text=f.name, page=f.page,
                              label=f.type, context=f.description, order=f.order))
        out.edges += [Edge(src=ids[key], dst=unit, kind=EdgeKind.MENTIONS, provenance=out.extractor) for unit in f.mentions]
    for a, rel, b in relations:
        out.edges.append(Edge(src=ids[a], dst=ids[b], kind=EdgeKind.RELATION, provenance=rel))
    return out


# ---------------------------------------------------------------- workspaces built before entities


def entities_to_derive(store: WorkspaceStore, runs: dict[str, str] | None = None, titles: dict[str, str] | None = None) -> list[str]:
    """The documents whose entities `derive_missing_entities` would derive (none once every
    document has the current rules' entities)."""
    runs = store.entity_runs() if runs is None else runs
    doc_ids = titles if titles is not None else (d.id for d in store.documents())
    return [d for d in doc_ids if d not in runs or (runs[d].startswith("rules") and runs[d] != RULES_EXTRACTOR)]


def derive_missing_entities(
    store: WorkspaceStore, nodes: list[Node], edges: Iterable[Edge | EdgeRow]
) -> tuple[list[Node], Iterable[Edge | EdgeRow]]:
    """Entities for the documents that have none yet (ingested before entities existed, or by
    older rules), extracted by the rules and cached in the store. Returns the nodes and the edges
    with them added (the edges as they come: a stream stays a stream). A store that cannot be
    written (read-only, locked) keeps them in memory."""
    from backend.llm.rules import RulesBackend

    runs = store.entity_runs()
    titles = {d.id: d.title for d in store.documents()}
    todo = entities_to_derive(store, runs, titles)
    if not todo:
        return nodes, edges
    t0 = time.perf_counter()
    todo_set = set(todo)
    stale = {d for d in todo if d in runs}
    by_doc: dict[str, list[Node]] = defaultdict(list)
    for n in nodes:
        if n.doc in todo_set and n.layer != Layer.ENTITY:
            by_doc[n.doc].append(n)
    rules = RulesBackend()
    batches = []
    for doc_id in todo:
        ents = extract_document_entities(doc_id, titles.get(doc_id, ""), by_doc.get(doc_id, []), rules)
        batches.append((doc_id, ents.nodes, ents.edges))
    try:
        store.put_entities(batches, RULES_EXTRACTOR)
    except Exception as exc:  # noqa: BLE001 - any store failure leaves the derived entities in memory only
        log.warning("entities derived for %d documents could not be cached in %s: %s", len(todo), store.root, exc)
    if stale:
        old_ids = {n.id for n in nodes if n.layer == Layer.ENTITY and n.doc in stale}
        nodes = [n for n in nodes if n.id not in old_ids]
        edges = (e for e in edge_rows(edges) if e[0] not in old_ids)
    new_nodes = [n for _d, ns, _e in batches for n in ns]
    new_edges = [e for _d, _n, es in batches for e in es]
    log.info("derived %d entities for %d documents in %.1f s (rules, cached in the store)",
             len(new_nodes), len(todo), time.perf_counter() - t0)
    return nodes + new_nodes, itertools.chain(edges, new_edges)


# ---------------------------------------------------------------- one node per name across documents


ENTITY_EDGE_KINDS = (EdgeKind.MENTIONS, EdgeKind.RELATION)
_ENTITY_EDGE_VALUES = frozenset(k.value for k in ENTITY_EDGE_KINDS)
# Which entity edges repeat one another once merged: same ends and kind, and for a relation the
# same wording too (EdgeTable(unique=...) keeps the first of each).
MERGED_EDGE_IDENTITY = {EdgeKind.MENTIONS: False, EdgeKind.RELATION: True}


@dataclass
class MergedEntities:
    nodes: list[Node]  # every non-entity node, then one node per merged entity
    remap: dict[str, str]  # per-document entity id -> merged id
    entity_ids: list[str]
    vectors: dict[str, np.ndarray]  # merged id -> mean of its documents' vectors (re-normalised)
    missing: list[str]  # merged ids none of whose documents has a vector (derived at load)
    members: dict[str, list[str]]  # merged id -> per-document entity ids

    def rewrite(self, edges: Iterable[Edge | EdgeRow]) -> Iterator[EdgeRow]:
        """The edges, as rows, with their entity ends pointed at the merged ids, one at a time (a
        corpus streams them into its EdgeTable); an edge the merge turns into a self-loop is
        dropped. Repeats (two relations with the same wording, say) are left to
        EdgeTable(unique=MERGED_EDGE_IDENTITY), which keeps the first."""
        remap = self.remap
        for row in edge_rows(edges):
            src, dst, kind = row[0], row[1], row[2]
            if kind not in _ENTITY_EDGE_VALUES or (src not in remap and dst not in remap):
                yield row
                continue
            src, dst = remap.get(src, src), remap.get(dst, dst)
            if src != dst:
                yield src, dst, kind, row[3], row[4]


def merge_entities(nodes: list[Node], embeddings: dict[str, np.ndarray]) -> MergedEntities:
    """Per-document entity nodes -> one node per merge key (see `merge_key`); their edges follow
    through `MergedEntities.rewrite`."""
    groups: dict[str, list[Node]] = defaultdict(list)
    others: list[Node] = []
    for n in nodes:
        if n.layer == Layer.ENTITY:
            groups[merge_key(n.text, n.label, n.doc)].append(n)
        else:
            others.append(n)
    if not groups:
        return MergedEntities(others, {}, [], {}, [], {})
    remap: dict[str, str] = {}
    merged_nodes: list[Node] = []
    vectors: dict[str, np.ndarray] = {}
    missing: list[str] = []
    members: dict[str, list[str]] = {}
    for key, group in groups.items():
        group.sort(key=lambda n: (n.doc, n.order, n.id))  # the same node whatever order the documents were loaded in
        mid = corpus_entity_id(key)
        members[mid] = [n.id for n in group]
        for n in group:
            remap[n.id] = mid
        first = group[0]
        # The most frequent spelling; on a tie, one without underscores ("Trees planted", not "trees_planted").
        name = max(Counter(n.text for n in group).items(), key=lambda kv: (kv[1], "_" not in kv[0], kv[0]))[0]
        types = Counter(n.label for n in group if n.label and n.label != "other")
        descriptions = list(dict.fromkeys(n.context for n in group if n.context))
        merged_nodes.append(Node(
            id=mid, layer=Layer.ENTITY, kind=NodeKind.ENTITY, doc=first.doc, text=name, page=first.page,
            label=types.most_common(1)[0][0] if types else (first.label or "other"),
            context=" | ".join(descriptions)[:MAX_DESCRIPTION_CHARS], order=len({n.doc for n in group}),
        ))
        vecs = [embeddings[n.id] for n in group if n.id in embeddings]
        if vecs:
            v = np.mean(np.stack(vecs), axis=0)
            vectors[mid] = (v / (np.linalg.norm(v) or 1.0)).astype(np.float32)
        else:
            missing.append(mid)
    return MergedEntities(others + merged_nodes, remap, [n.id for n in merged_nodes], vectors, missing, members)
