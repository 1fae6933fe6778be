"""Answer quality of the reader (EM / token F1 / false abstention, abstention off the corpus),
before and after a change, on the tune and check halves side by side.

    python bench/reader_quality.py --workspace /work/scratch/i/ws --out /work/scratch/i/rq2 \
        --baseline-ref main

One command: builds (or reuses) a small workspace of the first N dev-tatqa-pdf documents (by
file name) and the gold documents of the first dev-hotpot-pdf questions up to N documents;
answers, with `python -m backend ask --questions` and the given method, every question whose
gold documents are all in the workspace, plus an 'offcorpus' set (tatqa questions whose document
is NOT in the workspace, marked unanswerable: the reader should abstain on them); runs the same
with the code of `--baseline-ref` (extracted with `git archive` into the output folder), and
scores both with ../shared/bench/score.py per half.

Halves: bench/split.py's rule (the parity of the first 64 bits of sha256(question id)); used from
bench/split.py when it is there, else the same rule here. Only tune-half questions may be looked
at while changing the reader; the check half is the figure to quote.

What it does not do: tune anything, or score retrieval (bench/retrieval_quality.py does).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO.parent / "shared" / "bench"
SCORE = BENCH / "score.py"
HALVES = ("tune", "check")
SETS = ("tatqa", "hotpot", "offcorpus")
# score.py counts "not enough information" etc. as an abstention; our reader says "not enough
# evidence", so answers go to score.py as {"text", "abstained"} (its documented object form).
log = logging.getLogger("bench.reader_quality")


def split_of(question_id: str) -> str:
    """'tune' or 'check': bench/split.py's rule, repeated here when that file is absent."""
    try:
        sys.path.insert(0, str(REPO / "bench"))
        from split import split_of as shared  # type: ignore[import-not-found]

        return shared(question_id)
    except ImportError:
        digest = hashlib.sha256(str(question_id).encode("utf-8")).digest()
        return "tune" if int.from_bytes(digest[:8], "big") % 2 == 0 else "check"
    finally:
        sys.path.pop(0)


def load_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@dataclass(frozen=True, slots=True)
class Selection:
    pdfs: list[Path]
    questions: dict[str, list[dict]]  # set name -> bench question lines


def select(bench: Path, n_tatqa: int, n_hotpot: int) -> Selection:
    """The documents to ingest and the questions to ask (see the module docstring)."""
    tat_dir, hot_dir = bench / "dev-tatqa-pdf", bench / "dev-hotpot-pdf"
    tat_docs = sorted(p.name for p in (tat_dir / "corpus").glob("*.pdf"))[:n_tatqa]
    tat_q = load_jsonl(tat_dir / "questions.jsonl")
    inside = [q for q in tat_q if q["gold"] and all(g["doc"] in tat_docs for g in q["gold"])]
    outside = [q for q in tat_q if q["gold"] and not any(g["doc"] in tat_docs for g in q["gold"])]
    off = [{**q, "answers": [], "unanswerable": True, "gold": []} for q in outside[: len(inside) // 2]]
    hot_docs: list[str] = []
    hot_q: list[dict] = []
    for q in load_jsonl(hot_dir / "questions.jsonl"):
        docs = [g["doc"] for g in q["gold"] if g["doc"] not in hot_docs]
        if len(hot_docs) + len(set(docs)) > n_hotpot:
            break
        hot_docs += sorted(set(docs))
        hot_q.append(q)
    pdfs = [tat_dir / "corpus" / d for d in tat_docs] + [hot_dir / "corpus" / d for d in hot_docs]
    return Selection(pdfs=pdfs, questions={"tatqa": inside, "hotpot": hot_q, "offcorpus": off})


def env() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False",
            "TOKENIZERS_PARALLELISM": "false"}


def build(workspace: Path, pdfs: list[Path], timeout_s: int) -> float:
    """Ingest the PDFs (the workspace skips files it already holds); seconds taken."""
    t = time.perf_counter()
    cmd = [sys.executable, "-m", "backend", "ingest", "--workspace", str(workspace), *map(str, pdfs)]
    subprocess.run(cmd, cwd=REPO, env=env(), check=True, timeout=timeout_s, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def code_of(ref: str, dest: Path) -> Path:
    """The backend/ of a git ref, extracted under dest (to run the 'before' reader)."""
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(suffix=".tar") as tar:
        subprocess.run(["git", "archive", "-o", tar.name, ref, "backend"], cwd=REPO, check=True)
        with tarfile.open(tar.name) as tf:
            tf.extractall(dest, filter="data")
    return dest


def predict(code: Path, workspace: Path, questions: Path, out: Path, method: str, timeout_s: int) -> None:
    cmd = [sys.executable, "-m", "backend", "ask", "--workspace", str(workspace), "--method", method,
           "--questions", str(questions), "--out", str(out)]
    subprocess.run(cmd, cwd=code, env=env(), check=True, timeout=timeout_s, stdout=subprocess.DEVNULL)


def score(questions: list[dict], preds: Path, folder: Path) -> dict:
    """score.py's overall figures for these questions (a one-collection folder written for it)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")
    report = folder / "report.json"
    subprocess.run([sys.executable, str(SCORE), str(folder), str(preds), "--by", "source", "--json-out", str(report)],
                   check=True, stdout=subprocess.DEVNULL)
    collections = json.loads(report.read_text(encoding="utf-8"))["collections"]
    return next(iter(collections.values()))["overall"]


def figures(overall: dict) -> dict[str, float | None]:
    ans, una = overall.get("answer") or {}, overall.get("unanswerable") or {}
    return {"n": overall.get("n"), "EM": ans.get("EM"), "F1": ans.get("F1"),
            "false_abstain": ans.get("false_abstention"), "abstain": una.get("abstention_rate")}


def run_side(code: Path, label: str, sel: Selection, args: argparse.Namespace) -> dict[tuple[str, str], dict]:
    """Predictions of one code version on every set, scored per half."""
    out: dict[tuple[str, str], dict] = {}
    all_q = [q for s in SETS for q in sel.questions[s]]
    qfile = args.out / "questions.jsonl"
    qfile.write_text("".join(json.dumps(q) + "\n" for q in all_q), encoding="utf-8")
    preds = args.out / f"pred-{label}.jsonl"
    t = time.perf_counter()
    if not (args.reuse and preds.exists()):
        predict(code, args.workspace, qfile, preds, args.method, args.timeout)
    log.info("%s: %d questions answered in %.0f s", label, len(all_q), time.perf_counter() - t)
    for s in SETS:
        for half in HALVES:
            qs = [q for q in sel.questions[s] if split_of(q["id"]) == half]
            if qs:
                out[(s, half)] = figures(score(qs, preds, args.out / f"score-{label}-{s}-{half}"))
    return out


def fmt(v: float | int | None) -> str:
    return "-" if v is None else (str(v) if isinstance(v, int) else f"{v:.3f}")


def table(sides: dict[str, dict[tuple[str, str], dict]]) -> str:
    rows = ["| set | half | n | " + " | ".join(f"{k} {m}" for m in ("EM", "F1", "false abst.", "abstain") for k in sides) + " |"]
    rows.append("|" + " --- |" * (3 + 4 * len(sides)))
    first = next(iter(sides.values()))
    for key in first:
        cells = [key[0], key[1], fmt(first[key]["n"])]
        for m in ("EM", "F1", "false_abstain", "abstain"):
            cells += [fmt(side.get(key, {}).get(m)) for side in sides.values()]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workspace", type=Path, required=True, help="workspace folder (built or topped up here)")
    ap.add_argument("--out", type=Path, required=True, help="scratch folder for predictions and scores")
    ap.add_argument("--bench", type=Path, default=BENCH)
    ap.add_argument("--tatqa-docs", type=int, default=25)
    ap.add_argument("--hotpot-docs", type=int, default=50)
    ap.add_argument("--method", default="hikey")
    ap.add_argument("--baseline-ref", help="git ref whose reader is the 'before' (e.g. main)")
    ap.add_argument("--reuse", action="store_true", help="score existing predictions in --out instead of asking again")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per ingest / per prediction run")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    args.out.mkdir(parents=True, exist_ok=True)
    sel = select(args.bench, args.tatqa_docs, args.hotpot_docs)
    log.info("ingest %d PDFs: %.0f s", len(sel.pdfs), build(args.workspace, sel.pdfs, args.timeout))
    log.info("questions: %s", {s: len(q) for s, q in sel.questions.items()})
    sides: dict[str, dict[tuple[str, str], dict]] = {}
    if args.baseline_ref:
        sides[args.baseline_ref] = run_side(code_of(args.baseline_ref, args.out / "baseline-code"), "before", sel, args)
    sides["this"] = run_side(REPO, "after", sel, args)
    print(f"method {args.method}; {os.getloadavg()[0]:.1f} load; 'offcorpus' = tatqa questions whose document is "
          "not in the workspace, counted as unanswerable")
    print(table(sides))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
