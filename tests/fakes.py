"""The one home of test fakes: small hand-built corpora and a scripted LLM.

- `build_corpus` / `doc_of`: documents of paragraphs, each paragraph split into sentences, encoded
  with the session's real encoders, with links between documents (algorithm tests).
- `FILMS` / `FILMS_QUESTION`: a bridge question over six film pages (LILaC, Strata).
- `ScriptedLLM`: the rules backend behind a model's face (every task is one call that costs tokens,
  as a model's would), with fixed replies for the tasks a test scripts.
- `ScriptedModel`: a model backend whose raw replies are given in advance ("down" raises a
  connection error), to test what the guard and the answer models make of a model's text.
- `openai_service`: a Service whose LLM is an OpenAI-compatible server at `base_url`.
- `pipeline_for`: the query pipeline (retrieve -> pack -> read, rules reader) over a built corpus.
- `with_approximate_layer`: a corpus whose one layer is approximate with few candidates, as a
  100k-page workspace's big layers are (most rows share the lowest score).

Test modules import fakes from here and never from one another. Nothing here is a product default.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from backend.graph.corpus import Corpus
from backend.llm.base import LLMUsage
from backend.llm.rules import RulesBackend
from backend.errors import LLMError
from backend.llm.guard import parse_json_reply
from backend.llm.task import A, LLMTask, P, run_on_model
from backend.query import QueryPipeline
from backend.service import Service
from backend.types import Document, Edge, EdgeKind, Layer, Node, NodeKind, PendingDocLink, Section

FILMS = {
    "Moonlit_Harbor.pdf": ["Moonlit Harbor is a 1999 drama film. It was directed by Elena Varga and shot on the coast."],
    "Elena_Varga.pdf": ["Elena Varga is a Hungarian filmmaker and painter. Varga grew up in Kestrel Falls, a mining town."],
    "Night_Train.pdf": ["The director of the film Night Train was born in Lisbon. Night Train premiered in 1987."],
    "Grey_Morning.pdf": ["The director of the film Grey Morning was born in Oslo. Grey Morning is a war drama."],
    "Red_Valley.pdf": ["Red Valley is a western film. Its director was born in Texas and later moved to Spain."],
    "Cinema_Guide.pdf": ["A guide to where each film director was born, from Lisbon to Oslo."],
}
FILMS_QUESTION = "Where was the director of the film Moonlit Harbor born?"


def _id(*parts: str) -> str:
    return hashlib.sha1("/".join(parts).encode()).hexdigest()[:12]



# A 3-page chain, linked as the hotpot corpus links pages: the athlete's page names her high school
# (whose name shares "high school" with a question about it) and her club; the school's page names
# its community, whose page holds the population. A second high school and its town are distractors.
CHAIN = {
    "Dara_Quill.pdf": ["Dara Quill is an American collegiate high jumper for the Kestrel Athletics Club. "
                       "She was a high jumper at Harrow Vale High School."],
    "Harrow_Vale_High_School.pdf": ["Harrow Vale High School is a private Catholic school located in Fenwick Park, Nevada."],
    "Fenwick_Park.pdf": ["Fenwick Park is a planned community in Nevada. At the 2010 census its population was 24,500."],
    "Kestrel_Athletics_Club.pdf": ["The Kestrel Athletics Club is a track club founded in 1960 for collegiate jumpers."],
    "Orchard_Hill_High_School.pdf": ["Orchard Hill High School is a public school in Larch Bay."],
    "Larch_Bay.pdf": ["Larch Bay is a town in Oregon. Its population was 9,100 at the 2010 census."],
}
CHAIN_LINKS = [("Dara_Quill.pdf", 0, "Kestrel_Athletics_Club.pdf"), ("Dara_Quill.pdf", 0, "Harrow_Vale_High_School.pdf"),
               ("Harrow_Vale_High_School.pdf", 0, "Fenwick_Park.pdf"), ("Orchard_Hill_High_School.pdf", 0, "Larch_Bay.pdf")]


def build_corpus(service, docs: dict[str, list[str]], links: list[tuple[str, int, str]] = (), *, labels: bool = False,
                 pages: int = 1) -> Corpus:
    """docs: file name -> paragraphs; links: (file, paragraph index, target file). labels: a
    paragraph that opens with "Figure N:" or "Table N:" is labelled so, as the parser labels a caption.
    pages: every document's page count (its paragraphs are all on page 1), for traits that read it."""
    documents, sections, nodes, edges, doc_links = [], [], [], [], []
    texts: dict[str, list[str]] = {"text": [], "sub": []}
    owners: dict[str, list[str]] = {"text": [], "sub": []}
    for name, paragraphs in docs.items():
        doc_id = _id(name)
        title = name.removesuffix(".pdf").replace("_", " ")
        documents.append(Document(
            id=doc_id, file_name=name, title=title, pages=pages, sha256=_id(name, "sha"), bytes=1, card=title,
            summary=paragraphs[0] if paragraphs else "", hierarchy_source="flat", page_sizes=[(612.0, 792.0)] * pages,
        ))
        sec_id = f"{doc_id}:s0"
        sections.append(Section(id=sec_id, doc=doc_id, title=title, level=0, parent=None, path=[title], page=1, bbox=None,
                                confidence=1.0, source="root"))
        nodes.append(Node(id=doc_id, layer=Layer.DOCUMENT, kind=NodeKind.DOCUMENT, doc=doc_id, text=title))
        nodes.append(Node(id=sec_id, layer=Layer.DOCUMENT, kind=NodeKind.SECTION, doc=doc_id, text=title, section=sec_id))
        edges.append(Edge(src=doc_id, dst=sec_id, kind=EdgeKind.CONTAINS))
        texts["text"] += [title, title]
        owners["text"] += [doc_id, sec_id]
        prev = None
        for i, para in enumerate(paragraphs):
            pid = f"{doc_id}:p{i}"
            y = 72.0 + 60 * i
            label = para.split(":")[0] if labels and para.startswith(("Figure", "Table")) else None
            nodes.append(Node(id=pid, layer=Layer.COMPONENT, kind=NodeKind.PARAGRAPH, doc=doc_id, text=para, section=sec_id,
                              bbox=(72.0, y, 540.0, y + 50), order=i, label=label))
            edges.append(Edge(src=sec_id, dst=pid, kind=EdgeKind.CONTAINS))
            if prev:
                edges.append(Edge(src=prev, dst=pid, kind=EdgeKind.NEXT))
            prev = pid
            texts["text"].append(para)
            owners["text"].append(pid)
            for j, sent in enumerate(s for s in re.split(r"(?<=[.!?])\s+", para) if s.strip()):
                sid = f"{pid}:s{j}"
                nodes.append(Node(id=sid, layer=Layer.SUBCOMPONENT, kind=NodeKind.SENTENCE, doc=doc_id, text=sent,
                                  section=sec_id, parent=pid, bbox=(72.0, y + 10 * j, 540.0, y + 10 * j + 10), order=j))
                edges.append(Edge(src=pid, dst=sid, kind=EdgeKind.CONTAINS))
                texts["sub"].append(sent)
                owners["sub"].append(sid)
    for name, para, target in links:
        doc_id = _id(name)
        doc_links.append((doc_id, PendingDocLink(src=f"{doc_id}:p{para}", target=target, provenance="file link")))
    embeddings = {}
    for space, encoder in (("text", service.encoders.text), ("sub", service.encoders.sub)):
        vecs = encoder.encode(texts[space])
        embeddings.update(dict(zip(owners[space], vecs)))
    dims = {"documents": service.encoders.text.dim, "sections": service.encoders.text.dim,
            "components": service.encoders.text.dim, "subcomponents": service.encoders.sub.dim}
    return Corpus(documents, sections, nodes, embeddings, edges, doc_links, dims=dims)


def with_approximate_layer(corpus: Corpus, name: str, candidates: int) -> Corpus:
    """A shallow copy of `corpus` whose layer `name` is an IVF index over 8-bit codes, every list
    searched, `candidates` rows with their own cosine per query."""
    import copy

    from backend.index.vector import Approximate, VectorIndex

    layer = corpus.layers[name]
    approx = VectorIndex(layer.ids, layer.dense.matrix, approximate=Approximate(rows=1, share=1.0, candidates=candidates))
    out = copy.copy(corpus)
    out.layers = {**corpus.layers, name: type(layer)(name=layer.name, ids=layer.ids, dense=approx, lexical=layer.lexical)}
    return out


def doc_of(corpus: Corpus, node_id: str) -> str:
    return corpus.documents[corpus.nodes[node_id].doc].file_name


class ScriptedLLM:
    """The rules backend behind a model's face: every task is one call costing tokens, as a model's
    would; a task named in `replies` returns that fixed JSON object instead of the rules' answer.
    `log` keeps (task, tokens) per call, `prompts` every prompt sent."""

    name = "scripted"

    def __init__(self, replies: dict[str, dict[str, Any]] | None = None) -> None:
        self.usage = LLMUsage()
        self.replies = dict(replies or {})
        self.rules = RulesBackend()
        self.log: list[tuple[str, int]] = []
        self.prompts: list[str] = []

    def run(self, task: LLMTask[P, A], payload: P) -> A:
        if task.name in self.replies:
            out = task.parse(self.replies[task.name])  # a scripted reply must fit the task, as a model's must
        else:
            out = task.run_rules(payload)
        self._count(task.name, task.prompt(payload), out.model_dump_json())
        return out

    def complete_json(self, task: str, prompt: str, payload: dict[str, Any], schema: dict[str, Any] | None = None) -> dict[str, Any]:
        """The reader's raw 'answer' prompt."""
        out = self.replies[task] if task in self.replies else self.rules.complete_json(task, prompt, payload, schema)
        self._count(task, prompt, json.dumps(out))
        return out

    def _count(self, task: str, prompt: str, reply: str) -> None:
        tokens = (len(prompt) + len(reply)) // 4
        self.usage.calls += 1
        self.usage.tasks[task] = self.usage.tasks.get(task, 0) + 1
        self.usage.prompt_tokens += tokens
        self.log.append((task, tokens))
        self.prompts.append(prompt)


class ScriptedModel:
    """A model backend whose replies (raw text) are given in advance; "down" fails the call.
    check_schema=False leaves a misfit to the task's answer model, as a lenient server would."""

    def __init__(self, replies: list[str], check_schema: bool = True) -> None:
        self.name = "scripted:test"
        self.usage = LLMUsage()
        self.replies = list(replies)
        self.check_schema = check_schema
        self.prompts: list[str] = []

    def run(self, task: LLMTask[P, A], payload: P) -> A:
        return run_on_model(self, task, payload)

    def complete_json(self, task: str, prompt: str, payload: dict[str, Any], schema: dict[str, Any] | None = None) -> dict[str, Any]:
        self.usage.calls += 1
        self.prompts.append(prompt)
        reply = self.replies.pop(0)
        if reply == "down":
            raise LLMError("connection refused")
        return parse_json_reply(reply, schema if self.check_schema else None)


def openai_service(service: Service, base_url: str, **llm) -> Service:
    """The session service's settings and encoders with the `openai` backend at `base_url`."""
    s = service.settings
    settings = s.model_copy(update={
        "reader": s.reader.model_copy(update={"llm_backend": "openai"}),
        "llm": s.llm.model_copy(update={"base_url": base_url, "model": "fake-model", "max_retries": 0, **llm}),
    })
    return Service(settings, encoder=service.encoder, sub_encoder=service.encoders.sub)


def pipeline_for(service: Service, corpus: Corpus) -> QueryPipeline:
    """The query pipeline over a built corpus, as the service makes it for a workspace (rules reader)."""
    encoders = service.encoders_for(corpus.encoder_signature)
    return QueryPipeline(corpus=corpus, llm=service.llm("rules"), count_tokens=encoders.text.count_tokens,
                         question_vectors=lambda q: (encoders.text.encode([q])[0], encoders.sub.encode([q])[0]),
                         reader=service.settings.reader)


def ruled_table(page, top: float, rows: list[list[str]], open_top: bool = False) -> None:
    """Draw `rows` on a pymupdf page as a ruled table (cell text inside drawn lines), which
    pymupdf's find_tables reads as a table at ingest. `open_top`: no rule above the first row, as
    where a table runs on from the page before (find_tables then reads that row as a header "external"
    to the table)."""
    left, col, row_h = 72, 150, 22
    for r, cells in enumerate(rows):
        for c, cell in enumerate(cells):
            page.insert_text((left + c * col + 4, top + r * row_h + 15), cell, fontsize=10)
    for r in range(1 if open_top else 0, len(rows) + 1):
        page.draw_line((left, top + r * row_h), (left + col * len(rows[0]), top + r * row_h))
    for c in range(len(rows[0]) + 1):
        page.draw_line((left + c * col, top), (left + c * col, top + row_h * len(rows)))


def drawn_report(prose: str, rows: list[list[str]], fontsize: float = 11):
    """A page-drawing function for `ingest_drawn`: a line of prose above a ruled table."""
    def draw(page):
        page.insert_text((72, 72), prose, fontsize=fontsize)
        ruled_table(page, 120, rows)
    return draw


def ingest_drawn(service: Service, ws, folder, drawn: dict[str, Any]):
    """Ingest one-page PDFs into the workspace `ws`: each file named in `drawn` is a new page that
    its function draws on (text, a ruled table), saved in `folder`. No file may fail; returns ws."""
    import pymupdf

    paths = []
    for name, draw in drawn.items():
        doc = pymupdf.open()
        draw(doc.new_page())
        doc.save(folder / name)
        paths.append(folder / name)
    report = service.ingest(ws, paths)
    assert not report.failed, report.failed
    return ws
