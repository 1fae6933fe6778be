"""Command line: python -m backend ingest | ask | eval | inspect | serve.

Machine-readable output goes to stdout and nothing else does; logs, warnings and progress go
to stderr, so `--json` output can be piped into another program (DESIGN.md section 7).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from backend.checks import checked_question, checked_top_k
from backend.config import Settings
from backend.errors import StrataError, log_name
from backend.logs import configure_logging
from backend.types import ProgressEvent

log = logging.getLogger("strata.cli")
WORKSPACE_DB = "strata.sqlite"  # backend/graph/store.py's DB_NAME, without importing the store


def _expand(paths: list[str]) -> list[Path]:
    files: list[Path] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            files.extend(sorted(f for f in path.rglob("*") if f.is_file() and f.suffix.lower() == ".pdf"))
        else:
            files.append(path)
    return files


def _progress(ev: ProgressEvent) -> None:
    if ev.stage in ("done", "failed"):
        print(f"[{ev.done}/{ev.total}] {log_name(ev.doc)}: {ev.stage} {log_name(ev.message)}", file=sys.stderr)


def _workspace(args, settings: Settings) -> Path:
    ws = args.workspace or settings.workspace
    if ws is None:
        raise StrataError("No workspace given. Pass --workspace DIR or set STRATA_WORKSPACE.")
    return Path(ws)


def _stage_progress(ev: ProgressEvent) -> None:
    """Every event: a cluster ingest sends a few per file and stage, with the cluster's tasks and nodes."""
    tasks = f"; {ev.cluster.line()}" if ev.cluster is not None else ""
    print(f"[{ev.done}/{ev.total}] {log_name(ev.doc)}: {ev.stage} {log_name(ev.message)}{tasks}", file=sys.stderr)


def cmd_ingest(args, settings: Settings) -> int:
    from backend.service import Service

    files = _expand(args.paths)
    if not files:
        print("No PDF files found in the given paths.", file=sys.stderr)
        return 2
    if args.ray is not None:
        settings = settings.model_copy(update={"ingest": settings.ingest.model_copy(update={"ray_address": args.ray})})
    progress = _stage_progress if settings.ingest.ray_address else _progress
    report = Service(settings).ingest(_workspace(args, settings), files, progress)
    out = report.to_dict()
    print(json.dumps(out, indent=None if args.json else 2))
    for f in report.failed:
        print(f"FAILED {log_name(f.file_name)}: {log_name(f.reason or '')}", file=sys.stderr)
    return 0 if report.ok else 1


EXIT_LLM_FAILED = 3  # `ask`: the LLM server failed and the rules answered in its place


def _print_answer(answer: dict, citations: list[dict], label: str, total_ms: float) -> None:
    print(("ABSTAINED: " if answer["abstained"] else "") + answer["text"])
    for c in citations:
        print(f"  [{c['n']}] {c['doc']} p.{c['page']} {' > '.join(c['section_path'])}: {c['text'][:160]}")
    print(f"({label}, {total_ms:.0f} ms)")


def _ask_server(args) -> int:
    """One question to a running Strata server's /ask endpoint (ui/api.py), so this process loads
    no models or indexes: the server has them loaded already. It asks the server's workspace."""
    unsupported = [flag for flag, value in (("--questions", args.questions), ("--params", args.params), ("--budget", args.budget),
                                            ("--workspace", args.workspace), ("--scoped", args.scoped)) if value]
    if unsupported:
        raise StrataError(f"{', '.join(unsupported)} cannot go with --server (the server's /ask takes a question, --method, "
                          "--top-k, --doc and --stages, over the server's workspace). Drop --server to run them here.")
    if not args.question:
        raise StrataError("Give a QUESTION to ask the server.")
    import httpx
    from gradio_client import Client
    from gradio_client.exceptions import AppError

    try:
        client = Client(args.server, verbose=False)
        reply = client.predict(
            question=" ".join(args.question), method=args.method or "", top_k=args.top_k, docs="\n".join(args.doc or []),
            stages=args.stages or "", api_name="/ask",
        )
    except AppError as exc:  # the server's own message (a StrataError there): what to change in the question
        raise StrataError(f"The server at '{args.server}' refused the question: {exc}") from None
    except (OSError, ValueError, httpx.HTTPError) as exc:
        raise StrataError(f"Could not ask the Strata server at '{args.server}': {exc}. Start it with `python app.py` "
                          "(or `python -m backend serve`), or drop --server to load the models here.") from None
    if args.json:
        print(json.dumps(reply))
    else:
        _print_answer(reply["answer"], reply["answer"]["citations"], reply["method"], reply["timings_ms"].get("total", 0))
    if reply.get("llm_error"):  # the server's rules answered in its model's place
        print(f"LLM FAILED: {reply['llm_error']}", file=sys.stderr)
        return EXIT_LLM_FAILED
    return 0


def _check_ask(args, settings: Settings) -> Path:
    """The workspace of an `ask`, once the call is known to be good: a bad question, top-k or
    workspace fails here, before any model or index is loaded."""
    ws = _workspace(args, settings)
    if args.questions:
        if not args.out:
            raise StrataError("--questions needs --out PRED.jsonl")
    elif args.scoped:
        raise StrataError("--scoped reads each question's meta.doc_scope: use it with --questions; "
                          "for one question, name the documents with --doc.")
    elif not args.question:
        raise StrataError("Give a QUESTION, or --questions FILE.jsonl --out PRED.jsonl.")
    else:
        checked_question(" ".join(args.question), settings)
    checked_top_k(args.top_k, settings)
    if not (ws / WORKSPACE_DB).is_file():
        raise StrataError(f"No workspace at '{ws}'. Ingest a PDF first or set STRATA_WORKSPACE.")
    return ws


def cmd_ask(args, settings: Settings) -> int:
    if args.server:
        return _ask_server(args)
    ws = _check_ask(args, settings)
    params = json.loads(args.params) if args.params else {}
    from backend.service import Service

    service = Service(settings)
    if args.questions:
        return _ask_batch(service, ws, args, params)
    question = " ".join(args.question)
    result = service.ask(ws, question, args.method, args.top_k, params, args.budget, docs=args.doc, stages=args.stages)
    if args.json:
        print(json.dumps(service.ask_reply(result).to_dict()))
    else:
        reply = service.ask_reply(result, with_trace=False).to_dict()
        _print_answer(reply["answer"], reply["answer"]["citations"], result.label or result.method,
                      result.timings_ms.get("total", 0))
    if result.llm_error:  # the answer came from the rules in the model's place: say so, and fail the command
        print(f"LLM FAILED: {result.llm_error}", file=sys.stderr)
        return EXIT_LLM_FAILED
    return 0


def _ask_batch(service, ws: Path, args, params: dict) -> int:
    """One PredictionLine per question of the questions.jsonl file (bench format: id, question).
    A question on which the LLM server failed keeps the rules' answer and its `llm_error`; the
    command then says on how many questions it failed and exits EXIT_LLM_FAILED, as one question does."""
    from backend.query import PredictionLine

    questions = [json.loads(line) for line in Path(args.questions).read_text().splitlines() if line.strip()]
    if args.limit:
        questions = questions[: args.limit]
    out_path = Path(args.out)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    llm_errors: list[str] = []
    with out_path.open("w") as out:
        for i, q in enumerate(questions):
            docs = (q.get("meta") or {}).get("doc_scope") if args.scoped else args.doc
            result = service.ask(ws, q["question"], args.method, args.top_k, params, args.budget, docs=docs, stages=args.stages)
            out.write(PredictionLine.of(str(q["id"]), result).to_json() + "\n")
            if result.llm_error:
                llm_errors.append(result.llm_error)
            if (i + 1) % 25 == 0:
                print(f"{i + 1}/{len(questions)} questions", file=sys.stderr)
    print(str(out_path))
    if llm_errors:  # the rules answered these in the model's place: their figures are not the model's
        print(f"LLM FAILED on {len(llm_errors)} of {len(questions)} questions (the rules answered them; each has llm_error "
              f"in {out_path}): {llm_errors[0]}", file=sys.stderr)
        return EXIT_LLM_FAILED
    return 0


def cmd_eval(args, settings: Settings) -> int:
    from backend.eval.runner import run_eval
    from backend.service import Service

    report = run_eval(
        settings, _workspace(args, settings), Path(args.bench), args.method, service=Service(settings), top_k=args.top_k,
        limit=args.limit, out_dir=Path(args.out_dir) if args.out_dir else None, scoped=args.scoped,
    )
    print(report.text())
    return 0


def cmd_inspect(args, settings: Settings) -> int:
    from backend.service import Service

    service = Service(settings)
    docs = service.documents(_workspace(args, settings))
    print(json.dumps([{"id": d.id, "file_name": d.file_name, "title": d.title, "pages": d.pages, "hierarchy": d.hierarchy_source} for d in docs], indent=2))
    return 0


def cmd_serve(args, settings: Settings) -> int:
    import runpy

    runpy.run_path(str(Path(__file__).resolve().parent.parent / "app.py"), run_name="__main__")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m backend", description="Strata: ask questions of a pile of PDFs.")
    sub = p.add_subparsers(dest="command", required=True)

    def common(sp):
        sp.add_argument("--workspace", help="workspace folder (default: STRATA_WORKSPACE)")
        return sp

    sp = common(sub.add_parser("ingest", help="add PDFs (files or folders) to a workspace"))
    sp.add_argument("paths", nargs="+")
    sp.add_argument("--json", action="store_true", help="one-line JSON report")
    sp.add_argument("--ray", default=None, metavar="ADDRESS",
                    help="ingest on a Ray cluster: auto, local (a throwaway one here) or HOST:PORT "
                         "(default: STRATA_INGEST__RAY_ADDRESS; empty = in this process)")
    sp.set_defaults(fn=cmd_ingest)

    sp = common(sub.add_parser("ask", help="ask a question (or a batch with --questions)"))
    sp.add_argument("question", nargs="*")
    sp.add_argument("--method", default=None)
    sp.add_argument("--top-k", type=int, default=None)
    sp.add_argument("--budget", type=int, default=None, help="token budget of the packed evidence")
    sp.add_argument("--params", default=None, help='method parameters as JSON, e.g. \'{"docs": 5}\'')
    sp.add_argument("--json", action="store_true")
    sp.add_argument("--questions", help="questions.jsonl (bench format) to answer in one run")
    sp.add_argument("--out", help="predictions.jsonl to write with --questions")
    sp.add_argument("--limit", type=int, default=None)
    sp.add_argument("--doc", action="append", default=None, metavar="FILE_NAME",
                    help="ask only this document (its file name, as `inspect` lists it); repeat for several")
    sp.add_argument("--scoped", action="store_true",
                    help="with --questions: ask each question of the documents its meta.doc_scope names")
    sp.add_argument("--stages", default=None, metavar="default|none|NAME[,NAME...]",
                    help="stages run after the method (README \"Stages\"): default, none (the method as its paper "
                         "describes it) or stage names; default: STRATA_RETRIEVAL__STAGES")
    sp.add_argument("--server", default=None, metavar="URL",
                    help="ask a running Strata server (python app.py, e.g. http://127.0.0.1:7860/) through its /ask API "
                         "instead of loading the models here: an answer in about a second instead of a cold start; it asks "
                         "the server's workspace")
    sp.set_defaults(fn=cmd_ask)

    sp = common(sub.add_parser("eval", help="ingest a benchmark folder's corpus and score a method on it"))
    sp.add_argument("--bench", required=True, help="collection folder with corpus/ and questions.jsonl")
    sp.add_argument("--method", default=None)
    sp.add_argument("--top-k", type=int, default=30)
    sp.add_argument("--limit", type=int, default=None)
    sp.add_argument("--out-dir", default=None, help="where predictions are written (default: WORKSPACE/eval)")
    sp.add_argument("--scoped", action="store_true",
                    help="ask each question of the documents its meta.doc_scope names; reported as 'METHOD (scoped)'")
    sp.set_defaults(fn=cmd_eval)

    sp = common(sub.add_parser("inspect", help="list the documents of a workspace"))
    sp.set_defaults(fn=cmd_inspect)

    sp = sub.add_parser("serve", help="start the web app (same as python app.py)")
    sp.set_defaults(fn=cmd_serve)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = Settings()
    except ValueError as exc:
        print(f"error: invalid STRATA_* setting: {exc}", file=sys.stderr)
        return 2
    try:
        configure_logging(settings.log_level)
        return args.fn(args, settings)
    except StrataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
