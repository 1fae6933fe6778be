"""Tune and check halves of every ../shared/bench collection, and scoring of one half.

Every knob, threshold and routing rule is to be chosen on the tune half only; reports quote the
check half. A question's half is decided by the sha256 of its id, so it never depends
on the Python version, the file order or the other questions, and a question added later does
not move the others.

    python bench/split.py                       # counts per collection (and writes the halves)
    python bench/split.py --out /work/scratch/g/halves
    python bench/split.py score --half check PRED.jsonl [--collections dev-hotpot-pdf]

Library (other bench scripts: `sys.path` holds bench/ when they run as `python bench/x.py`):
`split_of(question_id)`, `load_questions(collection, half)`, `write_half_bench(...)` (a folder
score.py reads as it is: one `questions.jsonl` per collection holding that half's lines),
`filter_predictions(...)`, `score_half(...)` and `score_module(path)`.

What it does not do: rank, retrieve or change score.py. score.py counts a question with no
prediction as a miss, so scoring a half means scoring against that half's questions file, not
filtering the predictions (`filter_predictions` is there to keep files small and honest).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import logging
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from backend.eval.gold import BenchQuestion  # noqa: E402

log = logging.getLogger("bench.split")

Half = Literal["tune", "check"]
HALVES: tuple[Half, ...] = ("tune", "check")
DEFAULT_BENCH = REPO.parent / "shared" / "bench"
SCORE_SCRIPT = DEFAULT_BENCH / "score.py"


def split_of(question_id: str) -> Half:
    """'tune' or 'check' for a question id: the parity of the first 64 bits of sha256(id)."""
    digest = hashlib.sha256(str(question_id).encode("utf-8")).digest()
    return "tune" if int.from_bytes(digest[:8], "big") % 2 == 0 else "check"


def _check_half(half: str) -> Half:
    if half not in HALVES:
        raise ValueError(f"Unknown half '{half}'. Use 'tune' or 'check'.")
    return half  # type: ignore[return-value]


def collections(bench: Path = DEFAULT_BENCH) -> list[str]:
    """Names of the collections under `bench` (folders holding a questions.jsonl), sorted."""
    found = sorted(p.parent.name for p in bench.glob("*/questions.jsonl"))
    if not found:
        raise FileNotFoundError(f"No collection (a folder with questions.jsonl) under '{bench}'. Pass --bench, "
                                "the folder that holds dev-hotpot-pdf and the others.")
    return found


def _question_lines(collection: str, bench: Path) -> list[tuple[str, str]]:
    """(question id, the raw JSON line) of a collection, in file order."""
    path = bench / collection / "questions.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"No questions file at '{path}'. Known collections: {', '.join(collections(bench))}.")
    out: list[tuple[str, str]] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append((str(json.loads(line)["id"]), line))
        except (json.JSONDecodeError, KeyError) as exc:
            raise ValueError(f"{path}:{n}: not a question line with an 'id' ({exc}).") from exc
    return out


def load_questions(collection: str, half: Half | None, bench: Path = DEFAULT_BENCH) -> list[BenchQuestion]:
    """The questions of one collection in one half (None: all), in file order."""
    if half is not None:
        _check_half(half)
    return [BenchQuestion.model_validate_json(line) for qid, line in _question_lines(collection, bench)
            if half is None or split_of(qid) == half]


def scored_questions(collection: str, half: Half, bench: Path = DEFAULT_BENCH) -> list[dict]:
    """The half's questions as score.py reads them (plain dicts), those it scores retrieval on:
    answerable, with gold."""
    _check_half(half)
    rows = [json.loads(line) for qid, line in _question_lines(collection, bench) if split_of(qid) == half]
    return [q for q in rows if q.get("gold") and not q.get("unanswerable")]


def half_ids(collection: str, half: Half, bench: Path = DEFAULT_BENCH) -> list[str]:
    _check_half(half)
    return [qid for qid, _ in _question_lines(collection, bench) if split_of(qid) == half]


@dataclass(frozen=True, slots=True)
class HalfCounts:
    collection: str
    tune: int
    check: int
    tune_scored: int  # answerable with gold evidence: the retrieval metrics' n
    check_scored: int

    @property
    def total(self) -> int:
        return self.tune + self.check


def count_halves(collection: str, bench: Path = DEFAULT_BENCH) -> HalfCounts:
    qs = load_questions(collection, None, bench)
    tune = [q for q in qs if split_of(q.id) == "tune"]
    check = [q for q in qs if split_of(q.id) == "check"]
    return HalfCounts(collection, len(tune), len(check), sum(q.scored for q in tune), sum(q.scored for q in check))


def write_half_bench(out_root: Path, half: Half, names: Iterable[str] | None = None, bench: Path = DEFAULT_BENCH) -> Path:
    """out_root/<half>/<collection>/questions.jsonl with that half's raw lines (score.py's BENCH
    argument); also out_root/<collection>.<half>.ids (one id per line). Returns out_root/<half>."""
    _check_half(half)
    root = out_root / half
    for name in names or collections(bench):
        lines = [(qid, line) for qid, line in _question_lines(name, bench) if split_of(qid) == half]
        folder = root / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "questions.jsonl").write_text("".join(line + "\n" for _, line in lines), encoding="utf-8")
        (out_root / f"{name}.{half}.ids").write_text("".join(qid + "\n" for qid, _ in lines), encoding="utf-8")
    return root


def filter_predictions(src: Path, dst: Path, half: Half) -> int:
    """Copy the prediction lines of one half from src to dst; returns how many were kept."""
    _check_half(half)
    kept = []
    for line in src.read_text(encoding="utf-8").splitlines():
        if line.strip() and split_of(str(json.loads(line)["id"])) == half:
            kept.append(line)
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text("".join(line + "\n" for line in kept), encoding="utf-8")
    return len(kept)


def score_module(score_script: Path):
    """score.py loaded as a module (its `score_retrieval`, `evaluate`, ...)."""
    spec = importlib.util.spec_from_file_location("bench_score", score_script)
    if spec is None or spec.loader is None or not score_script.is_file():
        raise FileNotFoundError(f"No score.py at '{score_script}'; pass the bench folder that holds it.")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def score_half(predictions: Path, half: Half, names: Iterable[str], bench: Path = DEFAULT_BENCH,
               score_script: Path | None = None) -> tuple[dict, str]:
    """score.py's report and SUMMARY line for the predictions over one half of the collections
    (score.py: the one given, else the bench folder's, else ../shared/bench/score.py)."""
    if score_script is None:
        score_script = bench / "score.py" if (bench / "score.py").is_file() else SCORE_SCRIPT
    score = score_module(score_script)
    with tempfile.TemporaryDirectory(prefix="strata-half-") as tmp:
        root = write_half_bench(Path(tmp), half, list(names), bench)
        report = score.evaluate(str(root), str(predictions), by=())
        line = score.summary_line(report)
    return report, line.replace(f"SUMMARY {half}:", f"SUMMARY {half} half:", 1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", type=Path, default=DEFAULT_BENCH, help="folder of collections")
    ap.add_argument("--collections", default="", help="comma-separated names (default: every collection)")
    sub = ap.add_subparsers(dest="command")
    sp = sub.add_parser("score", help="score a predictions file on one half (score.py's metrics)")
    sp.add_argument("predictions", type=Path)
    sp.add_argument("--half", choices=HALVES, required=True)
    ap.add_argument("--out", type=Path, default=None,
                    help="write <out>/<collection>.<half>.ids and <out>/<half>/<collection>/questions.jsonl")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    names = [c for c in args.collections.split(",") if c] or collections(args.bench)
    if args.command == "score":
        report, line = score_half(args.predictions, args.half, names, args.bench)
        print(json.dumps(report["overall"], indent=2))
        print(line)
        return 0
    print("| collection | questions | tune | check | tune scored | check scored |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name in names:
        c = count_halves(name, args.bench)
        print(f"| {name} | {c.total} | {c.tune} | {c.check} | {c.tune_scored} | {c.check_scored} |")
    if args.out is not None:
        for half in HALVES:
            write_half_bench(args.out, half, names, args.bench)
        print(f"\nhalves written under {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
