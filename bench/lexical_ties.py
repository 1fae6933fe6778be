"""Which of a method's misses the question's own words could have settled (issue 10, dev-tatqa-pdf).

A miss is a question whose gold page is not in the method's top 5 pages. It is a *lexical tie* when
some page the method did rank in its top 5 (not a gold page) holds every content word of the
question that the missed gold page holds, years and numbers included: "What was the change in
Inventory between 2018 and 2019?" asked of 120 report extracts, many of them with an Inventory row
under 2019 and 2018. For a tie nothing written in the question prefers the gold page; only a
question that names its company, its table or its figures would.

    python bench/lexical_ties.py --predictions DIR/dev-tatqa-pdf.strata.jsonl --collection dev-tatqa-pdf
    python bench/lexical_ties.py ... --half tune --show 10

Page text is read from the collection's PDFs with pymupdf (the words a reader sees on the page).
What it does not do: judge synonyms ("sales" for "revenue"), which a dense encoder may weigh.
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pymupdf

import split

WORD = re.compile(r"[a-z0-9]+")
# Words every question of a report collection writes; "2019" and "table" are not here on purpose.
STOP = frozenset(
    "what was the is in of and to for a an from which how many much did does do are were by as between has have "
    "its it this that with".split())


@dataclass
class Ties:
    questions: int = 0
    misses: int = 0
    ties: int = 0
    examples: list[str] = field(default_factory=list)


def content_words(question: str) -> set[str]:
    return {w for w in WORD.findall(question.lower()) if w not in STOP and len(w) > 2}


def holds(text: str, words: set[str]) -> set[str]:
    """The words that start a word of `text` (lower-cased): "revenue" is held by "revenues"."""
    return {w for w in words if re.search(r"\b" + re.escape(w), text)}


def ranked_pages(results: list[dict]) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    for r in results:
        key = (Path(str(r["doc"])).name, int(r["page"]))
        if key not in out:
            out.append(key)
    return out


def lexical_ties(predictions: Path, collection: str, half: str, bench: Path, show: int = 0) -> Ties:
    pages: dict[tuple[str, int], str] = {}

    def text(key: tuple[str, int]) -> str:
        if key not in pages:
            with pymupdf.open(bench / collection / "corpus" / key[0]) as doc:
                pages[key] = doc[key[1] - 1].get_text().lower()
        return pages[key]

    preds = {json.loads(line)["id"]: json.loads(line) for line in predictions.read_text().splitlines() if line.strip()}
    out = Ties()
    for q in split.load_questions(collection, half, bench):
        if not q.gold or q.unanswerable:
            continue
        out.questions += 1
        top = ranked_pages(preds.get(q.id, {}).get("results", []))[:5]
        gold = {(g.doc, g.page) for g in q.gold}
        missed = sorted(g for g in gold if g not in top)
        if not missed:
            continue
        out.misses += 1
        words = content_words(q.question)
        need = holds(text(missed[0]), words)
        rival = next((p for p in top if p not in gold and need <= holds(text(p), words)), None)
        if rival is not None:
            out.ties += 1
            if len(out.examples) < show:
                out.examples.append(f"- {q.question} (gold {missed[0][0]} p.{missed[0][1]}; "
                                    f"{rival[0]} p.{rival[1]} holds every word it holds: {', '.join(sorted(need)) or 'none'})")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--predictions", type=Path, required=True)
    ap.add_argument("--collection", required=True)
    ap.add_argument("--bench", type=Path, default=split.DEFAULT_BENCH)
    ap.add_argument("--half", default="tune", choices=split.HALVES)
    ap.add_argument("--show", type=int, default=0, help="print this many tied misses")
    args = ap.parse_args(argv)
    t = lexical_ties(args.predictions, args.collection, args.half, args.bench, args.show)
    print(f"{args.collection} {args.half} half, {args.predictions.name}: {t.questions} questions, {t.misses} missed "
          f"at R@5, {t.ties} of them lexical ties (a non-gold top-5 page holds every question word the gold page holds)")
    if t.examples:
        print("\n".join(t.examples))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
