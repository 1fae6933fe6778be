"""The reader's answers on real manuals a user would upload: does the answer a person reads hold
the answer, is it cited on the right page, and is it a whole sentence (not a clipped one)?

    python bench/manual_answers.py --workspace-root /work/scratch/answers/ws --pdfs DIR [--half check] [--methods strata,hikey] [--list]

Questions: bench/probes/manuals.jsonl, written from the pages of Debian manuals (R-intro.pdf from
`r-doc-pdf`, glpk.pdf from `glpk-doc`): id, manual (its file name), question, pages (the gold
pages, 1-based), answers (accepted strings; any one found in the answer, as written and not inside a longer name, counts). Each manual is
ingested once into WORKSPACE_ROOT/<manual stem> (from --pdfs, or fetched with `apt-get download`
through tests/fixtures/debian_manuals.py) and kept. Halves: bench/split.py's `split_of(id)`;
rules are changed by reading the tune half (`--half tune --list`), the check half is quoted.

Per method and manual: holds (an accepted answer is in the answer text, spacing ignored), cited (a citation on a gold page), clipped (the answer starts inside a sentence, or ends
on words that announce what follows -- "the command is", "as follows:" -- without it), abstained.

What it does not do: judge an answer that is right in other words (the accepted strings are the
code, names and values a manual prints), or retrieve with an LLM.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from backend.config import Settings  # noqa: E402
from backend.service import Service  # noqa: E402
from bench.common import command_line  # noqa: E402
from bench.split import split_of  # noqa: E402

PROBE = Path(__file__).resolve().parent / "probes" / "manuals.jsonl"
# The Debian package and member of each manual the probe asks about.
PACKAGES = {
    "R-intro.pdf": ("r-doc-pdf", "usr/share/R/doc/manual/R-intro.pdf"),
    "glpk.pdf": ("glpk-doc", "usr/share/doc/glpk-doc/glpk.pdf"),
}
ANNOUNCING_END_RE = re.compile(r"(?:\b(?:is|are|was|were|follows|with|by|using|command|example)|:)\s*$", re.I)


@dataclass(frozen=True, slots=True)
class Outcome:
    holds: bool
    cited: bool
    clipped: bool
    abstained: bool


def norm(text: str) -> str:
    return " ".join(text.split())


def holds_answer(text: str, answers: list[str]) -> bool:
    """Whether `text` holds one of the accepted strings as written (spacing ignored), not inside a
    longer name: an accepted string that starts or ends with a name character must not touch
    another one there, one that starts with a sign not follow the same sign ("NA" is not in "NaN",
    "?solve" is not in "??solve"; "c(" is in "x <- c(10.4")."""
    text = norm(text)
    for a in answers:
        a = norm(a)
        before = r"(?<![\w.])" if re.match(r"\w", a) else rf"(?<!{re.escape(a[:1])})"
        after = r"(?!\w)" if re.search(r"\w$", a) else ""
        if re.search(before + re.escape(a) + after, text):
            return True
    return False


def clipped(answer: str) -> bool:
    """Whether a shown answer is a clipped sentence: it starts inside one (a lower-case word that
    is no code: "y with 11 entries ..."), or ends announcing what it leaves out ("... the command is")."""
    text = answer.strip()
    first = text.split(maxsplit=1)[0] if text else ""
    inside = bool(re.match(r"[a-z]", first)) and re.fullmatch(r"[a-z]+[,;]?", first) is not None and len(text.split()) > 3
    return inside or bool(ANNOUNCING_END_RE.search(text.splitlines()[-1] if text else ""))


def load_probe(path: Path, half: str) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if half == "all" or split_of(r["id"]) == half]


def manual_pdf(name: str, pdfs: Path | None) -> Path:
    """The manual's PDF: from --pdfs when it is there, else fetched from its Debian package."""
    if pdfs is not None and (pdfs / name).is_file():
        return pdfs / name
    from tests.fixtures.debian_manuals import DebianManual, fetch_manual

    package, member = PACKAGES[name]
    return fetch_manual(DebianManual(Path(name).stem, package, member, "", (1, 1)))


def workspace_for(root: Path, name: str, pdfs: Path | None) -> Path:
    """WORKSPACE_ROOT/<stem>, ingested once (with `python -m backend ingest`) and kept."""
    ws = root / Path(name).stem
    if not (ws / "corpus").exists() and not any(ws.glob("*")):
        ws.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "backend", "ingest", "--workspace", str(ws), str(manual_pdf(name, pdfs))],
                       check=True, cwd=Path(__file__).resolve().parents[1])
    return ws


def ask_one(service: Service, ws: Path, row: dict, method: str, top_k: int) -> tuple[Outcome, str, list[int]]:
    result = service.ask(ws, row["question"], method, top_k)
    answer = result.answer
    pages = [c.page for c in answer.citations]
    holds = not answer.abstained and holds_answer(answer.text, row["answers"])
    outcome = Outcome(holds=holds, cited=bool(set(pages) & set(row["pages"])),
                      clipped=not answer.abstained and clipped(answer.text), abstained=answer.abstained)
    return outcome, answer.text, pages


def share(items: list[Outcome], field: str) -> str:
    return f"{sum(getattr(o, field) for o in items)}/{len(items)}" if items else "-"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workspace-root", type=Path, required=True, help="one workspace per manual under it (kept)")
    ap.add_argument("--pdfs", type=Path, default=None, help="folder holding the manuals' PDFs (else apt-get download)")
    ap.add_argument("--probe", type=Path, default=PROBE)
    ap.add_argument("--half", choices=("tune", "check", "all"), default="check")
    ap.add_argument("--methods", default="strata")
    ap.add_argument("--top-k", type=int, default=10, help="the app's default")
    ap.add_argument("--list", action="store_true", help="each question's answer beside the accepted ones")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    rows = load_probe(args.probe, args.half)
    service = Service(Settings())
    manuals = sorted({r["manual"] for r in rows})
    spaces = {m: workspace_for(args.workspace_root, m, args.pdfs) for m in manuals}
    print(f"`{command_line()}`\n")
    print(f"{args.half} half: {len(rows)} questions\n")
    print("| method | manual | holds the answer | cites a gold page | clipped | abstained |")
    print("|---|---|---|---|---|---|")
    for method in [m for m in args.methods.split(",") if m]:
        every: list[Outcome] = []
        for manual in manuals:
            got = []
            for row in (r for r in rows if r["manual"] == manual):
                outcome, text, pages = ask_one(service, spaces[manual], row, method, args.top_k)
                got.append(outcome)
                if args.list:
                    mark = "ok " if outcome.holds else "MISS"
                    print(f"- {method} {mark} {row['id']}: {text[:160]!r} p{pages[:3]} | gold {row['answers'][0]!r} p{row['pages']}",
                          file=sys.stderr)
            every += got
            print(f"| {method} | {manual} | {share(got, 'holds')} | {share(got, 'cited')} | {share(got, 'clipped')} | "
                  f"{share(got, 'abstained')} |", flush=True)
        print(f"| {method} | all | {share(every, 'holds')} | {share(every, 'cited')} | {share(every, 'clipped')} | "
              f"{share(every, 'abstained')} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
