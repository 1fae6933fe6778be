"""Page orders tried on stored predictions: what a re-ordering of a method's ranked pages would
score, without running the method again.

    python bench/page_orders.py --predictions DIR --collections dev-tatqa-pdf --methods strata,mmgraph,hybrid
    python bench/page_orders.py --predictions DIR --collections dev-tatqa-pdf --methods strata --half check

DIR holds `<collection>.<method>.jsonl`, as bench/halves_quality.py writes them. Each order takes
the distinct (doc, page) list of one question's results and returns another; the results are
written back in that page order (a page's units together, in their own order) and scored by
score.py's own `score_retrieval` on one half (tune unless `--half` says otherwise: orders are
chosen on tune, bench/split.py). The figures print as one markdown table, base first.

The orders, each a hypothesis about a corpus of short separate reports (dev-tatqa-pdf):
- `document-pages-N`: the other pages of the first N documents follow the document's first
  ranked page (a short report is one context; TAT-QA's gold often spans both pages of one);
- `document-spread-D`: within the first D pages, a document's second page waits for every other
  document's first (diversity against lexical ties);
- `siblings-N-W`: a page of one of the first N pages' documents ranked within the first W pages
  moves up to stand right after it.

Page counts come from the PDFs in the collection's corpus folder (pymupdf), not from docs.jsonl.
What it does not do: run a method, rank pages no prediction holds, or choose an order.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import split

Page = tuple[str, int]
Order = Callable[[list[Page]], list[Page]]


def distinct_pages(results: list[dict]) -> list[Page]:
    """The (doc, page) of the results, each once, in rank order."""
    return list(dict.fromkeys((r["doc"], r["page"]) for r in results))


def document_pages(pages: list[Page], docs: int, page_count: dict[str, int]) -> list[Page]:
    """Each of the first `docs` documents' other pages right after its first ranked page."""
    out: list[Page] = []
    seen: list[str] = []
    for page in pages:
        if page in out:
            continue
        out.append(page)
        if page[0] not in seen:
            seen.append(page[0])
            if len(seen) <= docs:
                out.extend(p for p in ((page[0], n) for n in range(1, page_count.get(page[0], 0) + 1)) if p not in out)
    return out


def document_spread(pages: list[Page], depth: int) -> list[Page]:
    """Within the first `depth` pages, every document's first page before any document's second."""
    head, seen, later = [], set(), []
    for page in pages[:depth]:
        (later if page[0] in seen else head).append(page)
        seen.add(page[0])
    return head + later + pages[depth:]


def siblings(pages: list[Page], leads: int, within: int) -> list[Page]:
    """A page ranked within the first `within` whose document is one of the first `leads` pages'
    moves up to stand right after that page."""
    out = list(pages)
    for lead in pages[:leads]:
        at = out.index(lead)
        for page in [p for p in out[:within] if p[0] == lead[0] and p != lead]:
            if out.index(page) > at + 1:
                out.remove(page)
                out.insert(at + 1, page)
            at = out.index(page)
    return out


def reordered(results: list[dict], order: list[Page]) -> list[dict]:
    """The results grouped by page in `order` (each page's units in their own order); a page the
    order adds with no unit among the results stands as a bare (doc, page) result."""
    by_page: dict[Page, list[dict]] = {}
    for r in results:
        by_page.setdefault((r["doc"], r["page"]), []).append(r)
    return [r for page in order for r in by_page.get(page, [{"doc": page[0], "page": page[1], "text": ""}])]


def orders(page_count: dict[str, int]) -> dict[str, Order]:
    """Every order this script measures, by name."""
    named: dict[str, Order] = {"base": lambda pages: pages}
    for n in (1, 2):
        named[f"document-pages-{n}"] = lambda pages, n=n: document_pages(pages, n, page_count)
    for depth in (10, 30):
        named[f"document-spread-{depth}"] = lambda pages, d=depth: document_spread(pages, d)
    for leads in (1, 2):
        for within in (10, 20):
            named[f"siblings-{leads}-{within}"] = lambda pages, a=leads, w=within: siblings(pages, a, w)
    return named


def page_counts(corpus: Path) -> dict[str, int]:
    """{file name: pages} of the PDFs in a collection's corpus folder."""
    import pymupdf

    out = {}
    for pdf in sorted(corpus.glob("*.pdf")):
        with pymupdf.open(pdf) as doc:
            out[pdf.name] = doc.page_count
    return out


def score_orders(predictions: Path, questions: list[dict], named: dict[str, Order], score, metric: str) -> dict[str, float]:
    """{order name: mean of score.py's `metric` over `questions`} (a question with no prediction is a miss)."""
    preds, _ = score.load_predictions(str(predictions))
    totals = dict.fromkeys(named, 0.0)
    for q in questions:
        pred = preds.get(q["id"])
        results = pred.get("results") or [] if pred else []
        for name, order in named.items():
            moved = {"results": reordered(results, order(distinct_pages(results)))}
            totals[name] += score.score_retrieval(q, moved)[0][metric]
    return {name: total / max(len(questions), 1) for name, total in totals.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--predictions", type=Path, required=True, help="folder of <collection>.<method>.jsonl")
    ap.add_argument("--collections", default="dev-tatqa-pdf")
    ap.add_argument("--methods", default="strata")
    ap.add_argument("--bench", type=Path, default=split.DEFAULT_BENCH)
    ap.add_argument("--half", default="tune", choices=split.HALVES)
    ap.add_argument("--metric", default="R@5", help="a score.py retrieval metric: R@5, All@10, MRR@10, ...")
    args = ap.parse_args(argv)
    score = split.score_module(args.bench / "score.py" if (args.bench / "score.py").is_file() else split.SCORE_SCRIPT)
    print(f"{args.metric} of each page order, {args.half} half; command: python bench/page_orders.py "
          f"{' '.join(argv if argv is not None else sys.argv[1:])}\n")
    rows = []
    for name in (c.strip() for c in args.collections.split(",") if c.strip()):
        questions = split.scored_questions(name, args.half, args.bench)
        named = orders(page_counts(args.bench / name / "corpus"))
        for method in (m.strip() for m in args.methods.split(",") if m.strip()):
            pred = args.predictions / f"{name}.{method}.jsonl"
            if pred.is_file():
                rows.append((name, method, len(questions), score_orders(pred, questions, named, score, args.metric)))
    if not rows:
        print(f"No predictions for those collections and methods in {args.predictions}.", file=sys.stderr)
        return 1
    names = list(rows[0][3])
    print("| collection | method | n | " + " | ".join(names) + " |")
    print("|" + " --- |" * (3 + len(names)))
    for name, method, n, figures in rows:
        print(f"| {name} | {method} | {n} | " + " | ".join(f"{figures[o]:.3f}" for o in names) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
