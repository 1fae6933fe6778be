"""FiF's misses against hybrid, question by question, split by whether its traversal answered every
subquery: the diagnosis behind FiF's `seed_open` (bench/RESULTS.md, issue 10).

For every scored question of a half: is a gold page among FiF's (no seeds) and hybrid's top 5
pages, and did FiF's STOP step report every subquery answered? Prints one line per outcome.

    python bench/fif_failures.py --workspace-root WS_ROOT --collections dev-mmlongbench,dev-tatqa-pdf [--half tune]
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from backend.config import Settings  # noqa: E402
from backend.service import Service  # noqa: E402
from backend.types import AgentStep, Trace  # noqa: E402
from bench.split import DEFAULT_BENCH, load_questions  # noqa: E402

ANSWERED = re.compile(r"(\d+)/(\d+) subqueries answered")


def _top_pages(corpus, hits, n: int = 5) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    for h in hits:
        node = corpus.nodes[h.node_id]
        page = (corpus.documents[node.doc].file_name, node.page)
        if page not in out:
            out.append(page)
    return out[:n]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workspace-root", type=Path, required=True, help="holds one ingested workspace per collection")
    ap.add_argument("--collections", required=True, help="comma-separated names")
    ap.add_argument("--half", default="tune", choices=("tune", "check"))
    ap.add_argument("--bench", type=Path, default=DEFAULT_BENCH)
    args = ap.parse_args(argv)
    service = Service(Settings())
    for name in args.collections.split(","):
        corpus = service.corpus(args.workspace_root / name)
        fif, hybrid = service.retriever("fif", corpus), service.retriever("hybrid", corpus)
        outcomes: Counter[tuple[bool, bool, bool]] = Counter()
        for q in load_questions(name, args.half, args.bench):
            if not q.scored:
                continue
            trace = Trace(method="fif")
            fif_hits = fif.retrieve(q.question, 30, {"seed_weight": 0}, trace)
            hybrid_hits = hybrid.retrieve(q.question, 30, {}, Trace(method="hybrid"))
            stop = [s for s in trace.steps if isinstance(s, AgentStep)][-1]
            m = ANSWERED.search(stop.reason)
            answered = bool(m) and m.group(1) == m.group(2)
            found = [any(g.matches(d, p) for g in q.gold for d, p in _top_pages(corpus, hits)) for hits in (fif_hits, hybrid_hits)]
            outcomes[(found[0], found[1], answered)] += 1
        print(f"{name} ({args.half} half)")
        for f_ok in (True, False):
            for h_ok in (True, False):
                total = outcomes[(f_ok, h_ok, True)] + outcomes[(f_ok, h_ok, False)]
                print(f"  FiF {'finds' if f_ok else 'misses'}, hybrid {'finds' if h_ok else 'misses'}: {total} questions, "
                      f"every subquery answered {outcomes[(f_ok, h_ok, True)]}, some unanswered {outcomes[(f_ok, h_ok, False)]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
