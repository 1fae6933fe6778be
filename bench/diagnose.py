"""Why one retrieval method finds a question's evidence and another does not, question by question.

    # a small workspace to look into (tune-half questions: diagnosis drives changes)
    python bench/diagnose.py subset --collection dev-hotpot-pdf --docs 40 --out /work/scratch/g/hotpot-small
    python -m backend ingest --workspace /work/scratch/g/ws-hotpot-small $(cat /work/scratch/g/hotpot-small/files.txt)
    # compare two methods run through the CLI over that workspace (traces kept) ...
    python bench/diagnose.py compare --workspace /work/scratch/g/ws-hotpot-small \\
        --questions /work/scratch/g/hotpot-small/questions.jsonl --a strata --b page-dense --out DIR
    # ... or two prediction files (score.py format)
    python bench/diagnose.py compare --workspace WS --questions Q.jsonl --a-pred A.jsonl --b-pred B.jsonl

For every question where one side has a gold page in its top 5 pages and the other does not, the
report shows the gold page's units in the workspace (node id, kind, the exact text they are
indexed by: backend.index.texts.index_texts), each unit's rank among all components under BM25,
dense and hybrid (the Corpus's own indexes, read-only), and, where the method ran through the CLI
(`ask --json`), the path its trace took (fusion inputs, routed documents, beam edges, agent steps,
iterations, entities) with the gold units marked. `page-dense` and `page-bm25` (bench/page_baselines.py)
can stand on either side. Output: a markdown report on stdout, and JSON lines under --out.

What it does not do: change backend code, tune anything, or score (score.py does; bench/split.py
scores one half).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
for _p in (str(REPO), str(HERE)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import split  # noqa: E402
from backend.eval.gold import BenchQuestion, GoldRef  # noqa: E402
from backend.types import EdgeKind  # noqa: E402

log = logging.getLogger("bench.diagnose")

TOP_HIT = 5  # "finds" = a gold page among the first 5 distinct pages (page R@5's cut-off)
PAGE_BASELINES = ("page-dense", "page-bm25")


# ---------------------------------------------------------------- a small subset to ingest


def pick_subset(collection: str, n_docs: int, half: split.Half | None = "tune", bench: Path = split.DEFAULT_BENCH,
                gold_share: float = 2 / 3) -> tuple[list[str], list[BenchQuestion]]:
    """About n_docs documents of a collection: the gold documents of its questions (in file
    order, `half` only) for `gold_share` of them, then distractors the question names in
    meta.context_docs (hotpot's distractor setting) or, failing that, none. Returns the file
    names and the questions whose every gold document is in the subset."""
    raw = {json.loads(line)["id"]: json.loads(line)
           for line in (bench / collection / "questions.jsonl").read_text().splitlines() if line.strip()}
    questions = [q for q in split.load_questions(collection, half, bench) if q.scored]
    gold_budget = max(1, int(n_docs * gold_share))
    docs: list[str] = []
    chosen: list[BenchQuestion] = []
    for q in questions:
        gold = sorted({g.doc for g in q.gold})
        new = [d for d in gold if d not in docs]
        if len(docs) + len(new) > gold_budget:
            continue
        docs.extend(new)
        chosen.append(q)
    # Distractors round robin over the chosen questions (each question's hard negatives in turn).
    pools = [[d for d in raw[q.id].get("meta", {}).get("context_docs", []) if (bench / collection / "corpus" / d).is_file()]
             for q in chosen]
    while len(docs) < n_docs and any(pools):
        for pool in pools:
            while pool and pool[0] in docs:
                pool.pop(0)
            if pool and len(docs) < n_docs:
                docs.append(pool.pop(0))
    in_subset = set(docs)
    answerable = [q for q in questions if {g.doc for g in q.gold} <= in_subset]
    return docs, answerable


def write_subset(collection: str, n_docs: int, out: Path, half: split.Half | None, bench: Path,
                 gold_share: float = 2 / 3) -> None:
    docs, questions = pick_subset(collection, n_docs, half, bench, gold_share)
    out.mkdir(parents=True, exist_ok=True)
    wanted = {q.id for q in questions}
    lines = [line for line in (bench / collection / "questions.jsonl").read_text().splitlines()
             if line.strip() and json.loads(line)["id"] in wanted]
    (out / "questions.jsonl").write_text("".join(line + "\n" for line in lines))
    (out / "files.txt").write_text("".join(str(bench / collection / "corpus" / d) + "\n" for d in docs))
    corpus = out / "corpus"  # links, so the page baselines can read the subset as a collection
    corpus.mkdir(exist_ok=True)
    for d in docs:
        link = corpus / d
        if not link.exists():
            link.symlink_to(bench / collection / "corpus" / d)
    print(f"{len(docs)} documents, {len(questions)} questions ({half or 'all'} half) -> {out}")


# ---------------------------------------------------------------- one side of the comparison


@dataclass(frozen=True, slots=True)
class Ranked:
    """What one method returned for one question: distinct pages in order, and its trace (CLI runs only)."""

    pages: list[tuple[str, int | None]]
    node_ids: list[str] = field(default_factory=list)
    trace: dict | None = None  # backend.types.Trace.to_dict() as `ask --json` prints it


def distinct_pages(results: Iterable[dict]) -> list[tuple[str, int | None]]:
    out: list[tuple[str, int | None]] = []
    for r in results:
        key = (os.path.basename(str(r.get("doc", ""))), r.get("page"))
        if key[0] and key not in out:
            out.append(key)
    return out


def gold_hit(question: BenchQuestion, pages: list[tuple[str, int | None]], k: int = TOP_HIT, every: bool = False) -> bool:
    """A gold page among the first k distinct pages (every=True: all gold pages, what a multi-hop answer needs)."""
    found = [any(g.matches(d, p) for d, p in pages[:k]) for g in question.gold]
    return all(found) if every else any(found)


def read_predictions(path: Path) -> dict[str, Ranked]:
    """A score.py predictions file (also `ask --questions` output); a 'trace' field is kept when present."""
    out: dict[str, Ranked] = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        if "id" not in row:
            raise ValueError(f"{path}:{n}: a prediction line needs an 'id' (score.py's format).")
        results = row.get("results") or []
        out[str(row["id"])] = Ranked(distinct_pages(results), [r["node_id"] for r in results if "node_id" in r], row.get("trace"))
    return out


def run_cli_method(service, workspace: Path, method: str, questions: list[BenchQuestion], top_k: int) -> dict[str, Ranked]:
    """Each question through the same code path as `python -m backend ask --json` (one loaded workspace)."""
    from backend.__main__ import ask_json

    out: dict[str, Ranked] = {}
    for i, q in enumerate(questions, 1):
        row = ask_json(service.ask(workspace, q.question, method, top_k))
        out[q.id] = Ranked(distinct_pages(row["results"]), [r["node_id"] for r in row["results"]], row["trace"])
        if i % 10 == 0:
            log.warning("%s: %d/%d questions", method, i, len(questions))
    return out


def run_page_baseline(method: str, corpus_dir: Path, cache: Path, questions: list[BenchQuestion]) -> dict[str, Ranked]:
    """page-dense / page-bm25 (bench/page_baselines.py) over the PDFs of corpus_dir."""
    import page_baselines as pb

    pages = pb.load_pages(corpus_dir.parent, cache) if corpus_dir.name == "corpus" else pb.read_pages(corpus_dir)
    encoder = pb.MiniLM()
    vectors = pb.page_vectors(pages, encoder, cache)[0] if method == "page-dense" else None
    ranked = pb.PageRanker(pages, vectors, encoder).rank(method, [q.question for q in questions])
    return {q.id: Ranked([(p.doc, p.page) for p, _ in hits]) for q, hits in zip(questions, ranked)}


# ---------------------------------------------------------------- the gold page's units under each signal


@dataclass(frozen=True, slots=True)
class UnitView:
    node_id: str
    kind: str
    page: int
    index_text: str  # exactly what BM25 and the dense index saw (backend.index.texts)
    rank_bm25: int  # 1-based rank among all components; 0 = not a ranked component
    rank_dense: int
    rank_hybrid: int
    rank_dense_titled: int  # dense rank had the unit been indexed as "title > section path\ntext" (hypothesis 1)


@dataclass(frozen=True, slots=True)
class GoldView:
    doc: str
    page: int | None
    in_workspace: bool
    units: list[UnitView]
    linked_from_other_gold: bool  # a doc_link/link edge from another gold document of the question
    title_mentioned_in_other_gold: bool  # its title appears in another gold document's text (hypothesis 2)


def _ranks(scores: np.ndarray) -> np.ndarray:
    """1-based rank of every row under descending scores (ties by row order, as top_scored breaks them)."""
    order = np.lexsort((np.arange(len(scores)), -scores))
    ranks = np.empty(len(scores), dtype=np.int64)
    ranks[order] = np.arange(1, len(scores) + 1)
    return ranks


class SignalProbe:
    """Component ranks of a question under BM25, dense and hybrid, from the corpus's own indexes (read-only)."""

    def __init__(self, corpus, encoder, alpha: float) -> None:
        from backend.index.texts import index_texts

        self.corpus = corpus
        self.encoder = encoder
        self.alpha = alpha
        self.layer = corpus.layers["components"]
        comps = [corpus.nodes[i] for i in self.layer.ids]
        self.texts = index_texts(comps, corpus.sections, corpus.documents)
        self.by_file = {d.file_name: d.id for d in corpus.documents.values()}

    def signal_ranks(self, question: str) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
        from backend.retrieval.scoring import hybrid_scores

        qvec = self.encoder.encode([question])[0]
        dense = self.layer.dense.scores(qvec)
        ranks = {"bm25": _ranks(self.layer.lexical.scores(question)), "dense": _ranks(dense),
                 "hybrid": _ranks(hybrid_scores(self.layer, question, qvec, self.alpha))}
        return ranks, dense, qvec

    def titled_text(self, node_id: str) -> str:
        node = self.corpus.nodes[node_id]
        path = self.corpus.section_path(node_id)
        title = self.corpus.documents[node.doc].title
        head = " > ".join([title, *[p for p in path if p != title]])
        return f"{head}\n{node.text}"

    def gold_units(self, question: str, gold: list[GoldRef]) -> list[GoldView]:
        ranks, dense, qvec = self.signal_ranks(question)
        row = self.layer.dense.row
        views = []
        for g in sorted(set(gold), key=lambda r: (r.doc, r.page or 0)):
            doc_id = self.by_file.get(os.path.basename(g.doc))
            ids = [] if doc_id is None else [c for c in self.corpus.components_by_doc.get(doc_id, [])
                                             if g.page is None or self.corpus.nodes[c].page == g.page]
            ids = [c for c in ids if c in row]
            titled = self.encoder.encode([self.titled_text(c) for c in ids]) if ids else np.zeros((0, len(qvec)))
            units = []
            for c, tvec in zip(ids, titled):
                r = row[c]
                # Rank of the titled vector against every other component as it is indexed today.
                titled_rank = int((np.delete(dense, r) > float(tvec @ qvec)).sum()) + 1
                units.append(UnitView(c, self.corpus.nodes[c].kind.value, self.corpus.nodes[c].page, self.texts[c],
                                      int(ranks["bm25"][r]), int(ranks["dense"][r]), int(ranks["hybrid"][r]), titled_rank))
            units.sort(key=lambda u: u.rank_hybrid)
            views.append(GoldView(os.path.basename(g.doc), g.page, doc_id is not None, units,
                                  *self._bridge_evidence(doc_id, gold)))
        return views

    def _bridge_evidence(self, doc_id: str | None, gold: list[GoldRef]) -> tuple[bool, bool]:
        """(linked from another gold document, its title named in another gold document's text)."""
        if doc_id is None:
            return False, False
        others = {self.by_file.get(os.path.basename(g.doc)) for g in gold} - {doc_id, None}
        edges = self.corpus.edges
        linked = any(self.corpus.nodes[e.src].doc in others for e in edges.into(doc_id, (EdgeKind.DOC_LINK, EdgeKind.LINK)))
        linked = linked or any(self.corpus.nodes[e.src].doc in others for c in self.corpus.components_by_doc.get(doc_id, [])
                               for e in edges.into(c, (EdgeKind.LINK,)))
        title = self.corpus.documents[doc_id].title.lower()
        mentioned = bool(title) and any(title in self.corpus.nodes[c].text.lower()
                                        for o in others for c in self.corpus.components_by_doc.get(o, []))
        return linked, mentioned


# ---------------------------------------------------------------- the path a traversal took

TRACE_SHOW = 5


class TracePath:
    """One line per trace step, saying where the gold units stood in it (rank in a candidate list,
    kept or pruned in a beam, found by an agent step). Gold units are marked with '*'."""

    def __init__(self, corpus, gold_ids: set[str], gold_docs: set[str]) -> None:
        self.corpus = corpus
        self.gold_ids = gold_ids
        self.gold_docs = gold_docs  # file names

    def label(self, node_id: str) -> str:
        node = self.corpus.nodes.get(node_id)
        if node is None:
            return node_id
        doc = self.corpus.documents[node.doc].file_name
        star = "*" if node_id in self.gold_ids else ""
        return f"{star}{doc.removesuffix('.pdf')} p{node.page} {node.kind.value}"

    def gold_rank(self, ids: list[str]) -> str:
        ranks = [str(i + 1) for i, n in enumerate(ids) if n in self.gold_ids]
        return "gold at " + ",".join(ranks) if ranks else f"no gold in {len(ids)}"

    def lines(self, trace: dict) -> list[str]:
        from backend.types import Trace

        t = Trace.model_validate(trace)
        out = [f"params {t.params}"] if t.params else []
        for step in t.steps:
            handler = getattr(self, f"_{step.kind}", None)
            out.append(handler(step) if handler else step.kind)
        return out

    def _nodes(self, hits) -> str:
        return "; ".join(self.label(h.node_id) for h in hits[:TRACE_SHOW])

    def _rank(self, s) -> str:
        ids = [h.node_id for h in s.candidates]
        return f"rank [{s.label}] {self.gold_rank(ids)}: {self._nodes(s.candidates)}"

    def _route_docs(self, s) -> str:
        names = [d.file_name for d in s.docs]
        hit = [str(i + 1) for i, n in enumerate(names) if n in self.gold_docs]
        kept = ", ".join(("*" if n in self.gold_docs else "") + n.removesuffix(".pdf") for n in names[: s.kept])
        return f"route_docs kept {s.kept}: gold docs at {','.join(hit) or 'none'} of {len(names)} [{kept}]"

    def _rank_sections(self, s) -> str:
        ids = [x.anchor for x in s.sections]
        return f"rank_sections {self.gold_rank(ids)}: " + "; ".join(self.label(a) for a in ids[:TRACE_SHOW])

    def _decompose(self, s) -> str:
        return "decompose: " + " | ".join(f"{q.text} ({q.modality})" for q in s.subqueries)

    def _beam(self, s) -> str:
        into_gold = [e for e in s.edges if e.dst in self.gold_ids]
        desc = "; ".join(f"{self.label(e.src)} -> {self.label(e.dst)} {e.edge_kind} {e.score:.3f}"
                         + (" one-sided" if e.one_sided else "") for e in into_gold[:TRACE_SHOW])
        kept = [k for k in s.kept if k in self.gold_ids]
        return (f"beam {s.iteration}: frontier {len(s.frontier)} ({self.gold_rank(s.frontier)}), {len(s.edges)} edges, "
                f"{len(into_gold)} into gold{': ' + desc if desc else ''}; kept {len(s.kept)} ({len(kept)} gold)")

    def _agent(self, s) -> str:
        strat = f" {s.strategy.hop}/g{s.strategy.granularity}" if s.strategy else ""
        found = [h.node_id for h in s.found]
        back = f" backtrack->{s.backtrack_to}" if s.backtrack_to is not None else ""
        return (f"agent {s.step} {s.action}{strat} '{s.subquery}' -> {s.outcome}{back}; found {self.gold_rank(found)}: "
                f"{self._nodes(s.found)}")

    def _iteration(self, s) -> str:
        return f"iteration {s.iteration} queries {s.queries}: found {self.gold_rank([h.node_id for h in s.found])}"

    def _entities(self, s) -> str:
        names = ", ".join(e.name for e in s.entities[:8])
        return f"entities ({s.mode}) [{names}] -> components {self.gold_rank([h.node_id for h in s.components])}"

    def _fuse(self, s) -> str:
        parts = [f"{k} {self.gold_rank([h.node_id for h in v])}" for k, v in s.inputs.items()]
        return f"fuse [{s.label}] weights {s.weights}: " + "; ".join(parts) + (f" ({s.reason})" if s.reason else "")


# ---------------------------------------------------------------- the comparison


@dataclass(frozen=True, slots=True)
class Disagreement:
    id: str
    question: str
    hops: int | None
    found_by: str  # the side with a gold page in its top 5
    missed_by: str
    top_pages: dict[str, list[tuple[str, int | None]]]
    gold: list[GoldView]
    paths: dict[str, list[str]]  # method -> trace path lines (CLI runs only)


def first_gold_rank(question: BenchQuestion, pages: list[tuple[str, int | None]]) -> int:
    """1-based rank of the first gold page among the distinct pages; 0 if none."""
    return next((i + 1 for i, (d, p) in enumerate(pages) if any(g.matches(d, p) for g in question.gold)), 0)


def disagreements(questions: list[BenchQuestion], names: tuple[str, str], runs: tuple[dict[str, Ranked], dict[str, Ranked]],
                  probe: SignalProbe | None, every: bool = False) -> list[Disagreement]:
    out = []
    for q in questions:
        ra, rb = (r.get(q.id, Ranked([])) for r in runs)
        hit_a, hit_b = gold_hit(q, ra.pages, every=every), gold_hit(q, rb.pages, every=every)
        if hit_a == hit_b:
            continue
        found, missed = (names[0], names[1]) if hit_a else (names[1], names[0])
        gold = probe.gold_units(q.question, q.gold) if probe else []
        gold_ids = {u.node_id for g in gold for u in g.units}
        paths = {}
        if probe is not None:
            tp = TracePath(probe.corpus, gold_ids, {os.path.basename(g.doc) for g in q.gold})
            paths = {n: tp.lines(r.trace) for n, r in zip(names, (ra, rb)) if r.trace}
        out.append(Disagreement(q.id, q.question, q.hops, found, missed,
                                {names[0]: ra.pages[:TOP_HIT], names[1]: rb.pages[:TOP_HIT]}, gold, paths))
    return out


def render(d: Disagreement, questions: dict[str, BenchQuestion], max_text: int) -> list[str]:
    q = questions[d.id]
    lines = [f"### {d.id}: found by {d.found_by}, missed by {d.missed_by}", "",
             f"Q ({d.hops or '?'} hops): {d.question}",
             "gold: " + ", ".join(g.label() for g in q.gold)]
    for name, pages in d.top_pages.items():
        lines.append(f"- {name} top {TOP_HIT}: " + ", ".join(("*" if any(g.matches(p[0], p[1]) for g in q.gold) else "")
                                                           + f"{p[0].removesuffix('.pdf')} p{p[1]}" for p in pages))
    for g in d.gold:
        lines.append(f"- gold {g.doc} p{g.page}: " + ("not in the workspace" if not g.in_workspace else
                     f"{len(g.units)} units; linked from another gold doc: {'yes' if g.linked_from_other_gold else 'no'}; "
                     f"title named in another gold doc: {'yes' if g.title_mentioned_in_other_gold else 'no'}"))
        for u in g.units[:4]:
            text = " ".join(u.index_text.split())
            lines.append(f"  - `{u.node_id}` {u.kind}: rank bm25 {u.rank_bm25}, dense {u.rank_dense}, hybrid {u.rank_hybrid}"
                         f" (dense with title+path: {u.rank_dense_titled}); text: \"{text[:max_text]}"
                         + ("..." if len(text) > max_text else "") + "\"")
    for name, path in d.paths.items():
        lines.append(f"- path of {name}:")
        lines.extend(f"  {i + 1}. {step}" for i, step in enumerate(path))
    return lines + [""]


def summary(names: tuple[str, str], questions: list[BenchQuestion], runs, found: list[Disagreement], every: bool = False) -> list[str]:
    """Counts, and the measurements behind the issue's hypotheses over the gold units of the missed side."""
    hits = [sum(gold_hit(q, r.get(q.id, Ranked([])).pages, every=every) for q in questions) for r in runs]
    what = "every gold page" if every else "a gold page"
    lines = [f"{len(questions)} questions; {what} in top {TOP_HIT}: {names[0]} {hits[0]}, {names[1]} {hits[1]}; "
             f"only {names[0]}: {sum(d.found_by == names[0] for d in found)}, only {names[1]}: {sum(d.found_by == names[1] for d in found)}"]
    for side in names:
        missed = [d for d in found if d.missed_by == side]
        golds = [g for d in missed for g in d.gold if g.units]
        if not golds:
            continue
        best = [min(u.rank_hybrid for u in g.units) for g in golds]
        best_dense = [min(u.rank_dense for u in g.units) for g in golds]
        best_titled = [min(u.rank_dense_titled for u in g.units) for g in golds]
        lines.append(
            f"- missed by {side} ({len(missed)} questions, {len(golds)} gold pages): best gold unit median rank "
            f"hybrid {int(np.median(best))}, dense {int(np.median(best_dense))}, dense if indexed with title+path "
            f"{int(np.median(best_titled))} (better for {sum(t < d for t, d in zip(best_titled, best_dense))}, worse for "
            f"{sum(t > d for t, d in zip(best_titled, best_dense))}); gold pages linked from another gold doc "
            f"{sum(g.linked_from_other_gold for g in golds)}, title named in another gold doc "
            f"{sum(g.title_mentioned_in_other_gold for g in golds)}")
    return lines


def titled_effect(probe: SignalProbe, questions: list[BenchQuestion]) -> str:
    """Hypothesis 1 over every question, not only the disagreements: the best gold unit's dense rank
    as indexed today against its rank had it been indexed with the document title and section path."""
    now, titled = [], []
    for q in questions:
        for g in probe.gold_units(q.question, q.gold):
            if g.units:
                now.append(min(u.rank_dense for u in g.units))
                titled.append(min(u.rank_dense_titled for u in g.units))
    if not now:
        return "no gold unit in the workspace"
    top5 = sum(r <= 5 for r in now), sum(r <= 5 for r in titled)
    return (f"all {len(now)} gold pages: best gold unit dense rank median {int(np.median(now))} as indexed, "
            f"{int(np.median(titled))} with title+path; in the top 5 components: {top5[0]} as indexed, {top5[1]} with title+path")


def load_side(name: str, pred: Path | None, args, service, questions) -> dict[str, Ranked]:
    if pred is not None:
        return read_predictions(pred)
    if name in PAGE_BASELINES:
        if args.corpus is None:
            raise SystemExit(f"{name} needs --corpus (the folder of the workspace's PDFs).")
        return run_page_baseline(name, args.corpus, args.cache / "pages" / args.corpus.resolve().parent.name, questions)
    if service is None:
        raise SystemExit(f"Running {name} needs --workspace.")
    return run_cli_method(service, args.workspace, name, questions, args.top_k)


def cmd_compare(args) -> int:
    questions = [BenchQuestion.model_validate_json(line) for line in args.questions.read_text().splitlines() if line.strip()]
    questions = [q for q in questions if q.scored][: args.limit or None]
    service = probe = None
    if args.workspace is not None:
        from backend.config import Settings
        from backend.service import Service

        settings = Settings()
        service = Service(settings)
        corpus = service.corpus(args.workspace)
        probe = SignalProbe(corpus, service.encoders_for(corpus.encoder_signature).text, settings.retrieval.hybrid_alpha)
    names = (args.a, args.b)
    runs = (load_side(args.a, args.a_pred, args, service, questions), load_side(args.b, args.b_pred, args, service, questions))
    if args.out is not None:
        for name, pred, run in zip(names, (args.a_pred, args.b_pred), runs):
            if pred is None:
                save_run(run, args.out / f"run.{name}.jsonl")
    found = disagreements(questions, names, runs, probe, args.every)
    by_id = {q.id: q for q in questions}
    print(f"# {args.a} against {args.b} on {args.questions}\n")
    print("\n".join(summary(names, questions, runs, found, args.every)))
    if probe is not None:
        print("- " + titled_effect(probe, questions))
    print()
    for d in found:
        print("\n".join(render(d, by_id, args.max_text)))
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        path = args.out / f"diagnose.{args.a}.{args.b}.jsonl"
        with path.open("w") as f:
            for d in found:
                f.write(json.dumps(_as_json(d)) + "\n")
        log.warning("wrote %s", path)
    return 0


def save_run(run: dict[str, Ranked], path: Path) -> None:
    """A method's pages (and trace) per question, readable again with --a-pred/--b-pred (and by score.py)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        for qid, r in run.items():
            results = [{"doc": d, "page": p} for d, p in r.pages]  # distinct pages, in rank order
            f.write(json.dumps({"id": qid, "results": results, "answer": None, "trace": r.trace}) + "\n")


def _as_json(d: Disagreement) -> dict:
    from dataclasses import asdict

    return asdict(d)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    sp = sub.add_parser("subset", help="pick ~N documents of a collection and the questions answerable in them")
    sp.add_argument("--bench", type=Path, default=split.DEFAULT_BENCH)
    sp.add_argument("--collection", required=True)
    sp.add_argument("--docs", type=int, default=40)
    sp.add_argument("--half", choices=[*split.HALVES, "all"], default="tune")
    sp.add_argument("--gold-share", type=float, default=2 / 3, help="share of the documents that are gold documents")
    sp.add_argument("--out", type=Path, required=True)
    sp = sub.add_parser("compare", help="questions one method finds (gold page in top 5) and the other misses")
    sp.add_argument("--questions", type=Path, required=True, help="questions.jsonl (bench format)")
    sp.add_argument("--workspace", type=Path, default=None, help="workspace to probe (and to run methods over)")
    sp.add_argument("--a", required=True, help="method name (a registry method, page-dense or page-bm25) or a label")
    sp.add_argument("--b", required=True)
    sp.add_argument("--a-pred", type=Path, default=None, help="predictions file for --a instead of running it")
    sp.add_argument("--b-pred", type=Path, default=None)
    sp.add_argument("--corpus", type=Path, default=None, help="folder of the PDFs, for page-dense / page-bm25")
    sp.add_argument("--cache", type=Path, default=REPO / "bench" / "out", help="page-baseline cache")
    sp.add_argument("--top-k", type=int, default=30, help="units per question for CLI runs (as bench/RESULTS.md)")
    sp.add_argument("--limit", type=int, default=None)
    sp.add_argument("--every", action="store_true", help="'finds' = every gold page in the top 5 (multi-hop), not any")
    sp.add_argument("--max-text", type=int, default=220, help="characters of index text shown per unit")
    sp.add_argument("--out", type=Path, default=None, help="folder for diagnose.A.B.jsonl")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(name)s: %(message)s")
    for noisy in ("bm25s", "sentence_transformers", "faiss.loader"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    if args.command == "subset":
        write_subset(args.collection, args.docs, args.out, None if args.half == "all" else args.half, args.bench, args.gold_share)
        return 0
    return cmd_compare(args)


if __name__ == "__main__":
    sys.exit(main())
