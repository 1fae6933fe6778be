"""The data model. Everything that crosses a module boundary is one of these types.

Persistent graph records (Document, Section, Node, Edge) and query-time records (results,
traces, packs, answers) are pydantic types so that they round-trip through JSON: a run can be
saved, replayed in the UI and scored offline. The two a corpus holds by the million, Node and
Edge, are slotted pydantic dataclasses (NODE_JSON and EDGE_JSON read and write them); the rest
are models.
"""

from __future__ import annotations

from enum import Enum, IntEnum
from typing import Annotated, Literal, NamedTuple, Union

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, TypeAdapter, model_serializer
from pydantic.dataclasses import dataclass as pydantic_dataclass

BBox = tuple[float, float, float, float]  # x0, y0, x1, y1 in PDF points, top-left origin (PyMuPDF)
DocId = str
NodeId = str


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid")

    def to_dict(self) -> dict:
        return self.model_dump(mode="json")

    @classmethod
    def from_dict(cls, data: dict):
        return cls.model_validate(data)


class Layer(IntEnum):
    DOCUMENT = 0  # documents and their section tree
    COMPONENT = 1  # paragraph, table, figure
    SUBCOMPONENT = 2  # sentence, table row (with header), image region
    ENTITY = 3  # optional entity graph


class NodeKind(str, Enum):
    DOCUMENT = "document"
    SECTION = "section"
    PARAGRAPH = "paragraph"
    TABLE = "table"
    FIGURE = "figure"
    SENTENCE = "sentence"
    ROW = "row"
    OBJECT = "object"
    ENTITY = "entity"
    CODE = "code"  # a code listing (a component); last, so stored kind codes keep their numbers


COMPONENT_KINDS = (NodeKind.PARAGRAPH, NodeKind.TABLE, NodeKind.FIGURE, NodeKind.CODE)
SUBCOMPONENT_KINDS = (NodeKind.SENTENCE, NodeKind.ROW, NodeKind.OBJECT)


class EdgeKind(str, Enum):
    CONTAINS = "contains"  # hierarchy: doc -> section -> component -> subcomponent
    NEXT = "next"  # reading order inside a section
    LINK = "link"  # PDF link annotation inside a document
    XREF = "xref"  # "Table 2", "Section 4.1" in text -> the labelled unit
    CAPTION = "caption"  # caption paragraph -> its table/figure
    DOC_LINK = "doc_link"  # document -> another document of the corpus
    MENTIONS = "mentions"
    RELATION = "relation"


# The edges a reader follows from a passage to another place: what an answer's evidence is shown with.
NAVIGATION_EDGES: tuple[EdgeKind, ...] = (EdgeKind.XREF, EdgeKind.LINK, EdgeKind.CAPTION, EdgeKind.DOC_LINK)


class BlockKind(str, Enum):
    """What a layout block on a page is; drives the colours of the parse view."""

    TITLE = "title"
    HEADING = "heading"
    PARAGRAPH = "paragraph"
    LIST_ITEM = "list_item"
    CAPTION = "caption"
    TABLE = "table"
    FIGURE = "figure"
    HEADER = "header"  # running header (furniture)
    FOOTER = "footer"  # running footer (furniture)
    PAGE_NUMBER = "page_number"  # furniture
    TOC = "toc"  # a table-of-contents line or page: shown in the parse view, never evidence
    INDEX = "index"  # a back-of-book index entry: shown in the parse view, never evidence
    CODE = "code"  # a code listing set in a typewriter font: text kept line by line


FURNITURE_KINDS = (BlockKind.HEADER, BlockKind.FOOTER, BlockKind.PAGE_NUMBER)
NAVIGATION_KINDS = (BlockKind.TOC, BlockKind.INDEX)  # point to content, are not content: no graph node


class Document(Model):
    id: DocId
    file_name: str
    title: str
    pages: int
    sha256: str
    bytes: int
    card: str = Field(description="HiKEY Doc_card: title + high-level section paths (+ TOC entries).")
    summary: str = Field("", description="Opening text of the document, used as routing context.")
    hierarchy_source: str = Field(description="outline | numbering+font | flat")
    parser_version: str = Field("1", description="Parser version that produced this document's nodes.")
    page_sizes: list[tuple[float, float]]
    warnings: list[str] = Field(default_factory=list)


@pydantic_dataclass(slots=True, kw_only=True, config=ConfigDict(extra="forbid"))
class Section:
    """A heading of a document's tree. A slotted pydantic dataclass for the reason Node is one (a
    corpus holds about three per page; a Model instance costs ~1,000 bytes more); keyword-only so
    its fields keep their order, and SECTION_JSON writes and reads the JSON a Model wrote."""

    id: NodeId
    doc: DocId
    title: str
    number: str | None = None
    level: int = Field(description="0 = document root, 1 = top-level section, ...")
    parent: NodeId | None
    path: list[str] = Field(description="Titles from the document title down to this section.")
    page: int
    bbox: BBox | None
    confidence: float = Field(description="How sure the parser is that this is a heading (1.0 = from the outline).")
    source: str = Field(description="root | outline | numbering | font | toc")


SECTION_JSON: TypeAdapter[Section] = TypeAdapter(Section)


class Cell(NamedTuple):
    """One cell of a table row: its column's header ("column 2" when the header is empty) and its
    value. JSON writes it as a pair, ["2019", "261,264"]."""

    header: str
    value: str


@pydantic_dataclass(frozen=True, slots=True, config=ConfigDict(extra="forbid"))
class TableRow:
    """A table row as data: the label of its table and its non-empty cells, in column order, the
    first one naming the row. The parser sets it on every row node (backend/ingest/components.py);
    a row node's text is `index_text()`, what BM25 and the encoders read, and nothing reads the
    cells back out of that text."""

    table: str | None = Field(description="The table's label ('Table 2'), None when it has none.")
    cells: tuple[Cell, ...] = Field(description="(header, value) of each non-empty cell, in column order.")

    @property
    def label(self) -> str:
        """What names the row: its first cell's value ("Operating expenses"); "" without cells."""
        return self.cells[0].value if self.cells else ""

    def index_text(self) -> str:
        """The row's text: "Table 1: column 1: Operating expenses; 2019: 261,264; 2018: 194,054"
        (no "<table>: " when the table has no label)."""
        prefix = f"{self.table}: " if self.table else ""
        return prefix + "; ".join(f"{h}: {v}" for h, v in self.cells)

    def value_spans(self) -> list[tuple[int, int]]:
        """Where the values of the cells after the first stand in `index_text()`: (start, end)
        character offsets, in column order."""
        spans, at = [], len(f"{self.table}: ") if self.table else 0
        for i, (header, value) in enumerate(self.cells):
            start = at + len(header) + 2
            if i:
                spans.append((start, start + len(value)))
            at = start + len(value) + 2
        return spans


@pydantic_dataclass(slots=True, config=ConfigDict(extra="forbid"))
class Node:
    """A node of the layered graph (document, section, component, subcomponent, entity). A slotted
    pydantic dataclass for the reason Edge is one (a corpus holds ~25 per page); NODE_JSON writes
    and reads its JSON, the same text a Model wrote."""

    id: NodeId
    layer: Layer
    kind: NodeKind
    doc: DocId
    text: str
    section: NodeId | None = None
    page: int = Field(1, description="1-based page number.")
    bbox: BBox | None = None
    parent: NodeId | None = None
    crop: str | None = Field(None, description="Crop image path relative to the workspace.")
    label: str | None = Field(None, description="'Table 2', 'Figure 3b' when the unit is labelled.")
    role: str | None = Field(None, description="Layout role of a paragraph: paragraph | caption | list_item | title.")
    order: int = Field(0, description="Reading order inside the document.")
    context: str = Field("", description="HiKEY upper context / caption for tables and figures.")
    row: TableRow | None = Field(None, description="A table row's cells (kind row); its text is row.index_text(). "
                                 "None on other nodes, and on rows of a workspace written before rows carried cells.")

    @model_serializer(mode="wrap")
    def _without_empty_row(self, handler: SerializerFunctionWrapHandler) -> dict:
        """A node's JSON, with no "row" key when it has no cells: every other node is written as it
        was before rows carried cells."""
        data = handler(self)
        if data.get("row", 0) is None:
            del data["row"]
        return data


NODE_JSON: TypeAdapter[Node] = TypeAdapter(Node)


@pydantic_dataclass(slots=True, config=ConfigDict(extra="forbid"))
class Edge:
    """A graph edge. A slotted pydantic dataclass rather than a Model: a corpus holds about a
    hundred per page (1.1M at 10k pages), and a Model instance costs ~1,000 bytes (its __dict__
    and fields-set) against ~80 here. Validated on construction like a Model; EDGE_JSON writes
    and reads its JSON (the same text a Model wrote)."""

    src: NodeId
    dst: NodeId
    kind: EdgeKind
    weight: float = 1.0
    provenance: str = ""


EDGE_JSON: TypeAdapter[Edge] = TypeAdapter(Edge)


class Block(Model):
    """A layout block of a page, as the parse view draws it."""

    page: int
    bbox: BBox
    kind: BlockKind
    text: str
    order: int
    level: int | None = None
    confidence: float | None = None
    node: NodeId | None = None


class PendingDocLink(Model):
    """A link from a unit to another file, resolved against the corpus after parsing."""

    src: NodeId
    target: str = Field(description="File name or URI the link names.")
    provenance: str


class ParsedDocument(Model):
    document: Document
    sections: list[Section]
    nodes: list[Node]
    edges: list[Edge]
    blocks: list[Block]
    doc_links: list[PendingDocLink] = Field(default_factory=list)
    stage_seconds: dict[str, float] = Field(default_factory=dict)


# ---------------------------------------------------------------- ingest reporting


class ClusterTasks(Model):
    """Where an ingest on a Ray cluster stands (backend/ingest/cluster.py), as of one progress event."""

    running: int
    done: int
    failed: int  # tasks that failed: a file's failure, or lost with a node (then run again)
    nodes: int  # nodes that have parsed or encoded a file of the batch

    def line(self) -> str:
        return f"cluster: {self.running} tasks running, {self.done} done, {self.failed} failed; {self.nodes} nodes in use"


class ProgressEvent(Model):
    stage: str
    doc: str
    done: int
    total: int
    message: str = ""
    cluster: ClusterTasks | None = None  # set by an ingest on a cluster


class FileReport(Model):
    file_name: str
    status: Literal["ingested", "replaced", "unchanged", "failed"]
    doc_id: DocId | None = None
    title: str | None = None
    reason: str | None = None
    pages: int = 0
    counts: dict[str, int] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)
    seconds: float = 0.0


class IngestReport(Model):
    workspace: str
    files: list[FileReport]

    @property
    def ok(self) -> list[FileReport]:
        return [f for f in self.files if f.status != "failed"]

    @property
    def failed(self) -> list[FileReport]:
        return [f for f in self.files if f.status == "failed"]


# ---------------------------------------------------------------- query time


class ScoredNode(Model):
    node_id: NodeId
    score: float
    why: str = ""


class ResultItem(Model):
    rank: int
    node_id: NodeId
    doc: str = Field(description="File name of the document.")
    page: int
    bbox: BBox | None
    kind: NodeKind
    section_path: list[str]
    text: str
    score: float
    why: str = ""


class RankStep(Model):
    kind: Literal["rank"] = "rank"
    label: str
    index: str = Field(description="What was searched: bm25 | dense | hybrid | ...")
    candidates: list[ScoredNode]


class DocScore(Model):
    doc_id: DocId
    file_name: str
    bm25: float = Field(description="BM25 of the query against the Doc_card.")
    dense: float = Field(description="Cosine of the query with the Doc_card.")
    evidence: float = Field(0.0, description="Normalised best unit score inside the document.")
    score: float


class RouteDocsStep(Model):
    kind: Literal["route_docs"] = "route_docs"
    alpha: float
    docs: list[DocScore]
    kept: int


class SectionScore(Model):
    section_id: NodeId
    path: list[str]
    doc_score: float
    section_score: float
    final: float
    anchor: NodeId


class RankSectionsStep(Model):
    kind: Literal["rank_sections"] = "rank_sections"
    lam: float
    sections: list[SectionScore]


class SubQuery(Model):
    text: str
    modality: Literal["text", "table", "figure", "any"] = "any"
    depends_on: list[int] = Field(default_factory=list, description="Indexes of the subqueries this one needs answered first.")
    status: Literal["open", "answered", "failed"] = "open"


class DecomposeStep(Model):
    """The question split into modality-labelled subqueries (LILaC / FiF / MI-RAG)."""

    kind: Literal["decompose"] = "decompose"
    subqueries: list[SubQuery]
    backend: str = "rules"
    reason: str = ""


class SubqueryMatch(Model):
    subquery: int = Field(description="Index into the decomposed subqueries.")
    node_id: NodeId = Field(description="The subcomponent that won the max for this subquery.")
    score: float


class ScoredEdge(Model):
    src: NodeId
    dst: NodeId
    edge_kind: str = Field(description="contains | next | link | xref | caption | doc_link | mention (a title named in the text) | composed (strata: a dependent subquery searched with its bridge filled in) | dummy")
    score: float = Field(description="Late-interaction score: sum over subqueries of the best subcomponent similarity.")
    matches: list[SubqueryMatch] = Field(default_factory=list)
    one_sided: bool = Field(False, description="Every subquery matched on the same end: the edge returns one node.")


class BeamStep(Model):
    """One LILaC beam-search iteration: the frontier it expanded, the edges it scored, what it kept."""

    kind: Literal["beam"] = "beam"
    iteration: int
    frontier: list[NodeId]
    edges: list[ScoredEdge]
    kept: list[NodeId]
    pruned: list[NodeId] = Field(default_factory=list)


class Strategy(Model):
    """FiF's strategy tuple."""

    hop: Literal["local", "global"] = "local"
    granularity: int = Field(0, ge=0, le=2, description="0: node vector; 1: max over children; 2: max over grandchildren.")
    reasoning: Literal["none", "component", "both"] = "none"


class AgentStep(Model):
    """One FiF agent action with its outcome."""

    kind: Literal["agent"] = "agent"
    step: int
    action: Literal["traverse", "plan", "stop"]
    subquery: str = ""
    strategy: Strategy | None = None
    anchor: list[NodeId] = Field(default_factory=list)
    outcome: Literal["success", "failure", "planned", "stopped"] = "planned"
    found: list[ScoredNode] = Field(default_factory=list)
    backtrack_to: int | None = Field(None, description="The earlier step whose context this one re-anchored to.")
    reason: str = ""
    seconds: float = 0.0
    llm_calls: int = 0
    llm_tokens: int = 0


class IterationStep(Model):
    """One MI-RAG iteration: the queries it searched with, what it found, its reasoning record."""

    kind: Literal["iteration"] = "iteration"
    iteration: int
    queries: list[str]
    found: list[ScoredNode] = Field(default_factory=list)
    record: str = ""
    llm_calls: int = 0


class EntityHit(Model):
    node_id: NodeId
    name: str
    score: float


class EntityEdge(Model):
    src: NodeId
    dst: NodeId
    relation: str = ""
    score: float = 0.0


class EntityStep(Model):
    """MMGraphRAG Entity2Entity retrieval: the entities matched, the edges followed, the units reached."""

    kind: Literal["entities"] = "entities"
    mode: Literal["broad", "narrow"] = "narrow"
    entities: list[EntityHit]
    edges: list[EntityEdge] = Field(default_factory=list)
    components: list[ScoredNode] = Field(default_factory=list)


class FuseStep(Model):
    """How a combining method merged the rankings of its parts."""

    kind: Literal["fuse"] = "fuse"
    label: str
    inputs: dict[str, list[ScoredNode]] = Field(default_factory=dict)
    weights: dict[str, float] = Field(default_factory=dict)
    reason: str = ""


class StageMove(Model):
    """One unit a stage moved: its 1-based rank before and after the stage (None before: the stage
    brought it in; None after: the stage dropped it)."""

    node_id: NodeId
    from_rank: int | None
    to_rank: int | None


class StageStep(Model):
    """What one named stage of the query pipeline (backend/stages/) did: the units it moved out of
    the method's order (those whose order relative to the rest changed), and in words what it read.
    A stage that rewrites the question records the rewrite as its note and moves nothing."""

    kind: Literal["stage"] = "stage"
    name: str
    description: str = Field(description="One line, for the UI.")
    moves: list[StageMove] = Field(default_factory=list)
    note: str = Field("", description="What the stage read, in words.")


class ProfileStep(Model):
    """The corpus profile a question ran under (backend/stages/profile.py): its name, the measured
    traits it was chosen by, and every strategy parameter it set for this method."""

    kind: Literal["profile"] = "profile"
    name: str
    traits: dict[str, float] = Field(default_factory=dict)
    overrides: dict[str, float | int | str | bool] = Field(default_factory=dict)
    chosen_by: str = Field("traits", description="traits: measured on the corpus; setting: STRATA_RETRIEVAL__PROFILE.")


TraceStep = Annotated[
    Union[
        RankStep, RouteDocsStep, RankSectionsStep, DecomposeStep, BeamStep, AgentStep, IterationStep, EntityStep, FuseStep,
        StageStep, ProfileStep,
    ],
    Field(discriminator="kind"),
]


class Trace(Model):
    method: str
    params: dict[str, float | int | str | bool] = Field(default_factory=dict)
    steps: list[TraceStep] = Field(default_factory=list)
    llm_backend: str = "rules"
    llm_calls: int = Field(0, description="LLM calls made while retrieving (the reader's are in AskResult).")
    llm_tokens: int = 0
    notes: list[str] = Field(default_factory=list, description="What the user should know, e.g. figures without an image encoder.")

    def add(self, step) -> None:
        self.steps.append(step)


class PackedUnit(Model):
    node_id: NodeId
    role: Literal["anchor", "header", "sibling", "associate"]
    tokens: int
    path: list[str]
    anchor: NodeId | None = Field(None, description="The anchor this unit was packed for.")


class EvidencePack(Model):
    budget: int
    tokens: int
    units: list[PackedUnit]
    text: str = Field(description="The serialised reader input (HiKEY appendix E/G).")


class Citation(Model):
    n: int
    node_id: NodeId
    doc: str
    page: int
    bbox: BBox | None
    kind: NodeKind
    section_path: list[str]
    text: str


class Answer(Model):
    text: str
    abstained: bool
    citations: list[Citation] = Field(default_factory=list)
    confidence: float = 0.0
    reason: str = ""


class AskResult(Model):
    question: str
    method: str
    results: list[ResultItem]
    pack: EvidencePack
    answer: Answer
    trace: Trace
    timings_ms: dict[str, float]
    llm_backend: str
    llm_calls: int = 0
    llm_tokens: int = 0
    stages: list[str] = Field(default_factory=list, description="The stages selected for this run, in pipeline order.")
    label: str = Field("", description='The method and its stages: "hikey", "hikey + stages", "hikey + stages(a,b)".')
    llm_error: str | None = Field(
        None, description="Why the LLM server failed during this question (unreachable, an error status, a reply that is not "
        "the task's JSON); the tasks it failed were answered by the rules backend. None when it did not fail.",
    )


# ---------------------------------------------------------------- service views


class StageInfo(Model):
    """A stage of the query pipeline as the UI lists it (Service.stage_infos)."""

    name: str
    description: str
    acts_on: str = Field(description="On which kinds of corpus it acts, in words.")
    switchable: bool = Field(True, description="False for the scope filter, which is on whenever documents are chosen.")


class ParamInfo(Model):
    name: str
    default: float | int
    minimum: float | int
    maximum: float | int
    description: str


class MethodInfo(Model):
    name: str
    description: str
    params: list[ParamInfo] = Field(default_factory=list)


class Highlight(Model):
    bbox: BBox
    color: str = "#ff2d55"
    label: str = ""


class PageView(Model):
    doc_id: DocId
    file_name: str
    page: int
    pages: int
    width: float
    height: float
    blocks: list[Block]


# ---------------------------------------------------------------- graph tab views and ingest estimates
# (the Graph tab, graph export, the Library's estimate before an ingest; built by backend/graph/export.py)


class GraphCounts(Model):
    """How many nodes and edges a graph (or the part of it that passes some filters) holds."""

    nodes: int = 0
    edges: int = 0
    by_layer: dict[str, int] = Field(default_factory=dict, description="Layer name (document | component | ...) -> nodes.")
    by_kind: dict[str, int] = Field(default_factory=dict, description="Node kind -> nodes.")
    by_edge_kind: dict[str, int] = Field(default_factory=dict, description="Edge kind -> edges.")


class GraphNodeView(Model):
    id: NodeId
    label: str = Field(description="Short plain-text label to draw (not escaped).")
    kind: NodeKind
    layer: Layer
    doc: DocId
    doc_name: str = Field(description="File name of the node's document.")
    page: int
    text: str = Field("", description="The opening of the node's text, for a tooltip (not escaped).")
    depth: int = Field(0, description="Steps up the hierarchy to its document (a document 0, its top sections 1); -1 off the hierarchy (entities).")


class GraphEdgeView(Model):
    src: NodeId
    dst: NodeId
    kind: EdgeKind


class GraphView(Model):
    """The part of a workspace's graph that passes the filters, cut to a node limit."""

    nodes: list[GraphNodeView]
    edges: list[GraphEdgeView]
    total: GraphCounts = Field(description="The whole graph of the workspace.")
    matched: GraphCounts = Field(description="Nodes that pass the filters and edges between them, before the limit.")
    limit: int
    truncated: bool = Field(description="More nodes passed the filters than the limit let through.")
    focus: list[NodeId] = Field(default_factory=list, description="The nodes a view around nodes is centred on (empty: the whole graph).")


class NeighbourView(Model):
    node_id: NodeId
    label: str
    kind: NodeKind
    edge_kind: EdgeKind
    direction: Literal["out", "in"] = Field(description="out: this node -> neighbour; in: neighbour -> this node.")
    provenance: str = ""


class NodeDetails(Model):
    """One node with where it sits: document, page, box, section path, parent and neighbours."""

    model_config = ConfigDict(extra="forbid", ser_json_bytes="base64", val_json_bytes="base64")

    id: NodeId
    kind: NodeKind
    layer: Layer
    label: str
    text: str
    doc: DocId
    doc_name: str
    page: int
    bbox: BBox | None = None
    section_path: list[str] = Field(default_factory=list)
    parent: NeighbourView | None = Field(None, description="The node that contains this one.")
    neighbours: list[NeighbourView] = Field(default_factory=list)
    neighbours_total: int = Field(0, description="All neighbours, when `neighbours` was cut short.")
    thumbnail_png: bytes | None = Field(None, description="The node's page as a PNG with its box highlighted.")


class TableView(Model):
    """The cells of a table component, as the parser read them."""

    node_id: NodeId
    label: str | None = None
    caption: str = ""
    header: list[str]
    rows: list[list[str]]
    note: str = Field("", description="Why the cells may be incomplete (e.g. a very long table was cut).")


class FileEstimate(Model):
    file_name: str
    pages: int = 0
    bytes: int = 0
    status: Literal["new", "replaces", "unchanged", "invalid"]
    reason: str = ""


class IngestEstimate(Model):
    """What an ingest of some files will cost, read before it starts (page counts only)."""

    files: list[FileEstimate]
    pages: int = Field(description="Pages that will be parsed and encoded (new and replacing files).")
    seconds: float
    seconds_per_page: float
    measured: bool = Field(description="The rate was measured on this server; otherwise it is a typical CPU figure.")
    warnings: list[str] = Field(default_factory=list)
