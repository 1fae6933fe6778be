"""How far apart two methods are on one half, question by question, and whether that is noise.

The dev check halves hold 96-367 questions, so a gap of 0.005 in R@5 can be one gold page. This
script pairs the two methods' per-question scores (score.py's own `score_retrieval`, so the means
are score.py's), and gives the mean difference with a paired bootstrap interval (questions
resampled with replacement; seeded, so a rerun prints the same figures), how many questions each
method wins, and the share of resamples in which A falls below B.

    python bench/paired_difference.py --predictions DIR --a strata --b hybrid
    python bench/paired_difference.py --predictions DIR --a mmgraph --b hybrid --half check \\
        --collections dev-hotpot-pdf --metric R@5 --margin 0

DIR holds `<collection>.<method>.jsonl`, as bench/halves_quality.py writes them. `--margin` adds
a column saying whether the whole interval clears it (0.05 for strata's bar against the flat
signals).

What it does not do: run any method, or say which is right on a question both miss.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import split

RESAMPLES = 10_000
SEED = 0


@dataclass(frozen=True, slots=True)
class Paired:
    """A against B over the same questions."""

    n: int
    mean_a: float
    mean_b: float
    diff: float  # mean of A - B
    low: float  # the bootstrap interval of diff
    high: float
    a_better: int  # questions where A scores higher
    b_better: int
    below: float  # share of resamples with diff < 0


def per_question(predictions: Path, questions: list[dict], metric: str, score) -> dict[str, float]:
    """{question id: score.py's `metric` for it}; a question with no prediction scores as a miss."""
    preds, _ = score.load_predictions(str(predictions))
    return {q["id"]: score.score_retrieval(q, preds.get(q["id"]))[0][metric] for q in questions}


def paired(a: dict[str, float], b: dict[str, float], resamples: int = RESAMPLES, seed: int = SEED,
           level: float = 0.95) -> Paired:
    """The paired comparison of two {question id: score} maps over the ids they share."""
    ids = sorted(set(a) & set(b))
    if not ids:
        raise ValueError("The two methods share no scored question.")
    x = np.array([a[i] for i in ids], dtype=np.float64)
    y = np.array([b[i] for i in ids], dtype=np.float64)
    d = x - y
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, len(d), size=(resamples, len(d)))].mean(axis=1)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return Paired(len(ids), float(x.mean()), float(y.mean()), float(d.mean()), float(low), float(high),
                  int((d > 0).sum()), int((d < 0).sum()), float((means < 0).mean()))


def compare(predictions: Path, method_a: str, method_b: str, collections: list[str], half: str, metric: str,
            bench: Path, score_script: Path | None = None, resamples: int = RESAMPLES) -> dict[str, Paired]:
    """{collection: A against B} for every collection both methods have predictions for."""
    if score_script is None:
        score_script = bench / "score.py" if (bench / "score.py").is_file() else split.SCORE_SCRIPT
    score = split.score_module(score_script)
    out: dict[str, Paired] = {}
    for name in collections:
        files = [predictions / f"{name}.{m}.jsonl" for m in (method_a, method_b)]
        if not all(f.is_file() for f in files):
            continue
        questions = split.scored_questions(name, half, bench)
        a, b = (per_question(f, questions, metric, score) for f in files)
        out[name] = paired(a, b, resamples)
    return out


def table(results: dict[str, Paired], method_a: str, method_b: str, half: str, metric: str, margin: float | None) -> str:
    head = (f"| collection | half | n | {method_a} | {method_b} | {method_a} - {method_b} | 95% interval | "
            f"{method_a} better | {method_b} better | resamples below 0 |")
    rows = [head + (f" interval above {margin:g} |" if margin is not None else ""),
            "|" + " --- |" * (10 + (margin is not None))]
    for name, r in results.items():
        row = (f"| {name} | {half} | {r.n} | {r.mean_a:.3f} | {r.mean_b:.3f} | {r.diff:+.3f} | "
               f"[{r.low:+.3f}, {r.high:+.3f}] | {r.a_better} | {r.b_better} | {r.below:.2f} |")
        if margin is not None:
            row += f" {'yes' if r.low > margin else 'no'} |"
        rows.append(row)
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--predictions", type=Path, required=True, help="folder of <collection>.<method>.jsonl")
    ap.add_argument("--a", required=True, help="method A")
    ap.add_argument("--b", required=True, help="method B")
    ap.add_argument("--bench", type=Path, default=split.DEFAULT_BENCH)
    ap.add_argument("--collections", default="dev-hotpot-pdf,dev-tatqa-pdf,dev-docugami-10q,dev-mmlongbench")
    ap.add_argument("--half", default="check", choices=split.HALVES)
    ap.add_argument("--metric", default="R@5", help="a score.py retrieval metric: R@5, All@10, MRR@10, ...")
    ap.add_argument("--margin", type=float, default=None, help="say whether the whole interval lies above this")
    ap.add_argument("--resamples", type=int, default=RESAMPLES)
    args = ap.parse_args(argv)
    names = [c.strip() for c in args.collections.split(",") if c.strip()]
    results = compare(args.predictions, args.a, args.b, names, args.half, args.metric, args.bench, resamples=args.resamples)
    if not results:
        print(f"No collection has predictions of both {args.a} and {args.b} in {args.predictions}.", file=sys.stderr)
        return 1
    print(f"{args.metric}, paired bootstrap over questions ({args.resamples} resamples, seed {SEED}); command: "
          f"python bench/paired_difference.py {' '.join(argv if argv is not None else sys.argv[1:])}\n")
    print(table(results, args.a, args.b, args.half, args.metric, args.margin))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
