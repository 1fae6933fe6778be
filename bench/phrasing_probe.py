"""Phrasing and chain probe on dev-hotpot-pdf: does a method still find the gold pages when a
question is asked in other words, composed the way MuSiQue writes, or needs a third or fourth page?

dev-hotpot-pdf has only HotpotQA's 2-page questions. The probe files (bench/probes/, one per half)
hold questions written by hand over the same corpus, each with its gold pages:
- rewrites (tune only): 37 tune-half questions asked another way, each scored beside its original
  ("In what city is the university where Ralph Hefferline was a psychology professor?");
- chains: questions over pages of the corpus that name one another, 2 to 4 pages long
  (City of Angels -> Meg Ryan -> When Harry Met Sally... -> Nora Ephron);
- composed: chains asked again the way MuSiQue composes questions: a possessive ("Kaiser
  Ventures' founder"), a clause with no relative pronoun ("the series Azie Mira Dungey writes
  for"), a participle, a role after a name;
- untitled hop: two-page questions whose second page is not the bridge entity's own but another
  page that names it ("the treaty that ended the war in which Giuseppe Arimondi died");
- drawn composed (tune only, `drawn-*`): composed questions over chains drawn at random by a
  seeded walk over the pages the title index links.
A probe keeps to its half: a rewrite must rewrite a question of that half with the same gold
pages, and a chain may not name a page that is gold for a question of the other half (the tool
refuses the file otherwise). The tune file has 100 questions (37 rewrites, 27 chains, 16
composed, 8 untitled hops, 12 drawn); the check file 29 (13 chains, 13 composed, 3 untitled hops),
measured to report, never to choose anything by. It is a probe, not a benchmark: questions
written by one person, read for failure modes.

Each question goes through `Service.ask` (retrieve, references, pack, read), as the app asks it;
page R@5 and All@10 as score.py counts them. Every chain, composed and drawn question also carries
`answers`, read by hand from its last page: with `--answers`, the probe asks them at the app's
top-k (10 unless given) and prints each method's answer EM / F1 per group, as score.py's
`score_answer` counts them; `--list` prints each question's answer beside the gold.

Usage:
    python bench/phrasing_probe.py --workspace WS [--half check] [--methods strata,lilac,fif,hybrid] [--top-k 30]
    python bench/phrasing_probe.py --workspace WS --answers [--half check] [--methods strata] [--list]
Prints the command and one markdown table (per method: originals, rewrites, chains, composed,
untitled hops, drawn composed; with --answers: EM / F1 of chains, composed, drawn and all).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from backend.config import Settings  # noqa: E402
from backend.eval.gold import GoldRef, score_question  # noqa: E402
from backend.service import Service  # noqa: E402
from bench.common import command_line  # noqa: E402
from bench.split import DEFAULT_BENCH, score_module, split_of  # noqa: E402

PROBES = {half: Path(__file__).resolve().parent / "probes" / f"dev-hotpot-{half}.jsonl" for half in ("tune", "check")}
PROBE = PROBES["tune"]
COLLECTION = "dev-hotpot-pdf"


def load_probe(path: Path, bench: Path, half: str = "tune") -> tuple[list[dict], dict[str, dict]]:
    """The probe's questions and the originals of its rewrites (id -> question record), which must
    all be questions of the probe's half; a chain must name no page that is gold for a question of
    the other half."""
    probe = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    other = "check" if half == "tune" else "tune"
    originals, other_pages = {}, set()
    for line in (bench / COLLECTION / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        originals[q["id"]] = q
        if split_of(q["id"]) == other:
            other_pages.update(g["doc"] for g in q.get("gold") or [])
    for p in probe:
        if p["of"]:
            if split_of(p["of"]) != half:
                raise SystemExit(f"{p['id']} rewrites {p['of']}, which is not on the {half} half")
            if sorted({g["doc"] for g in originals[p["of"]]["gold"]}) != sorted(p["gold"]):
                raise SystemExit(f"{p['id']}: its gold is not its original's")
        elif seen := sorted(set(p["gold"]) & other_pages):
            raise SystemExit(f"{p['id']} names {seen}, gold for {other}-half questions")
    return probe, originals


def scores(service: Service, workspace: Path, question: str, gold: list[str], method: str, top_k: int,
           params: dict | None = None) -> tuple[float, float]:
    """Page R@5 and All@10 of one question (every gold file's page 1: the corpus has one-page PDFs)."""
    result = service.ask(workspace, question, method, top_k, params=params)
    s = score_question(result.results, [GoldRef(doc=doc, page=1) for doc in gold])
    return s.recall[5], s.all_found


def answer_table(service: Service, workspace: Path, probe: list[dict], methods: list[str], top_k: int,
                 params: dict | None, listing: bool, score_script: Path) -> None:
    """Each method's answer EM / F1 on the probe questions that carry answers, per group."""
    score = score_module(score_script)
    asked = [p for p in probe if p.get("answers")]
    groups = {"chains": [p for p in asked if p["id"].startswith("chain-")],
              "composed": [p for p in asked if p["id"].startswith("composed-")],
              "drawn": [p for p in asked if p["id"].startswith("drawn-")], "all": asked}
    print("| method | " + " | ".join(f"{g} EM / F1 (n={len(items)})" for g, items in groups.items()) + " |")
    print("|---|" + "---|" * len(groups))
    for method in methods:
        got = {}
        for p in asked:
            answer = service.ask(workspace, p["question"], method, top_k, params=params).answer
            got[p["id"]] = score.score_answer({"answers": p["answers"]}, {"answer": {"text": answer.text, "abstained": answer.abstained}})
            if listing:
                print(f"- {method} {p['id']}: EM {got[p['id']]['EM']:.0f} | {answer.text[:90]!r} | gold {p['answers'][0]!r}")
        cells = [" / ".join(f"{sum(got[p['id']][m] for p in items) / len(items):.3f}" for m in ("EM", "F1")) if items else "-"
                 for items in groups.values()]
        print(f"| {method} | " + " | ".join(cells) + " |", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workspace", type=Path, required=True, help="dev-hotpot-pdf ingested")
    ap.add_argument("--bench", type=Path, default=DEFAULT_BENCH)
    ap.add_argument("--half", choices=sorted(PROBES), default="tune", help="the half the probe keeps to")
    ap.add_argument("--probe", type=Path, default=None, help="default: bench/probes/dev-hotpot-<half>.jsonl")
    ap.add_argument("--methods", default="strata,lilac,fif,mirag,mmgraph,hybrid,dense")
    ap.add_argument("--top-k", type=int, default=None, help="default: 30, or 10 (the app's) with --answers")
    ap.add_argument("--answers", action="store_true", help="score the answers of the questions that carry them")
    ap.add_argument("--list", action="store_true", help="with --answers: each question's answer beside the gold")
    ap.add_argument("--params", default="", help="JSON object of method parameters, e.g. '{\"chain\": 0}'")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    probe, originals = load_probe(args.probe or PROBES[args.half], args.bench, args.half)
    params = json.loads(args.params) if args.params else None
    service = Service(Settings())
    methods = [m for m in args.methods.split(",") if m]
    if args.answers:
        print(f"`{command_line()}`\n")
        answer_table(service, args.workspace, probe, methods, args.top_k or 10, params, args.list, args.bench / "score.py")
        return 0
    args.top_k = args.top_k or 30
    rewrites = [p for p in probe if p["of"]]
    composed = [p for p in probe if p["kind"].startswith("composed")]
    mention = [p for p in probe if p["kind"].startswith("mention")]
    drawn = [p for p in probe if p["kind"].startswith("drawn")]
    chains = [p for p in probe if not p["of"] and p not in composed and p not in mention and p not in drawn]
    three = [p for p in chains if len(p["gold"]) == 3]
    four = [p for p in chains if len(p["gold"]) >= 4]
    print(f"`{command_line()}`\n")
    print(f"| method | originals R@5 / All@10 (n={len(rewrites)}) | rewrites R@5 / All@10 | chains R@5 / All@10 (n={len(chains)}) "
          f"| of which 3-page (n={len(three)}) | of which 4-page (n={len(four)}) | composed R@5 / All@10 (n={len(composed)}) "
          f"| untitled hop R@5 / All@10 (n={len(mention)}) | drawn composed R@5 / All@10 (n={len(drawn)}) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for method in methods:
        def mean(items: list[dict], text=lambda p: p["question"]) -> str:
            got = [scores(service, args.workspace, text(p), p["gold"], method, args.top_k, params) for p in items]
            return " / ".join(f"{sum(g[i] for g in got) / len(got):.3f}" for i in range(2)) if got else "-"

        orig = mean(rewrites, lambda p: originals[p["of"]]["question"])
        cells = (orig, mean(rewrites), mean(chains), mean(three), mean(four), mean(composed), mean(mention), mean(drawn))
        print(f"| {method} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
