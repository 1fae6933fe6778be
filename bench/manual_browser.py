"""The questions of issue 48 asked of real manuals in the browser, as a new user asks them: the
real app (`python app.py` on a free port, a fresh workspace root), headless Chromium, the two
manuals uploaded and ingested in the Library tab, each question asked in the Ask tab with its
method over "Your documents", with the rules reader.

    python bench/manual_browser.py --out DIR [--pdfs DIR] [--ingest-timeout 1800] [--keep-workspace]

Manuals: R-intro.pdf (Debian's `r-doc-pdf`, 113 pages) and glpk.pdf (`glpk-doc`, 177 pages), from
--pdfs when they are there, else fetched with `apt-get download` (tests/fixtures/debian_manuals.py).
For each question it reads what the page shows: the answer text (without its citation chips),
the citations' pages, whether the reader abstained; it saves a full-page screenshot as
DIR/<id>.png. A question *holds* when the answer holds an accepted answer (the code, name or value
the manual prints; bench/manual_answers.py's `holds_answer`) and a citation is on a gold page.
Prints a markdown table and the command line; the exit code is 0 only when every question holds.

With --keep-workspace the session's workspace (the sample plus the two manuals) is copied to
DIR/workspace, so `python -m backend ask --workspace DIR/workspace --method M "..."` asks the same
index from the command line.

Not a test of the suite: the ingest of 290 pages takes minutes. The app start, the upload and ask
helpers are the browser tests' (tests/ui/helpers.py).
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import command_line  # noqa: E402
from bench.manual_answers import holds_answer, manual_pdf  # noqa: E402
from tests.ui.helpers import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    UI_TIMEOUT_MS,
    _open_session,
    _open_tab,
    call_and_wait,
    choose_method,
    ingest_files,
    run_done,
    running_app,
    sync_api,
)


@dataclass(frozen=True, slots=True)
class Question:
    id: str
    manual: str
    question: str
    method: str
    answers: tuple[str, ...]  # any one, as written, in the answer text
    pages: tuple[int, ...]  # gold pages, 1-based


QUESTIONS = (
    Question("r-vector", "R-intro.pdf", "How do you create a vector in R?", "hikey", ("x <- c(10.4",), (14,)),
    Question("r-missing", "R-intro.pdf", "How are missing values represented?", "fif", ("NA",), (17,)),
    Question("r-help", "R-intro.pdf", "How do you get help on a specific function?", "strata", ("help(solve)", "?solve"), (10,)),
    Question("glpk-free", "glpk.pdf", "Which type of variable is a free (unbounded) variable?", "strata", ("GLP_FR",), (20, 21)),
)


@dataclass(frozen=True, slots=True)
class Shown:
    """What the Ask tab shows after one question."""

    text: str
    abstained: bool
    citations: tuple[tuple[str, int], ...]  # (doc, page) per citation, in order


def read_answer(page) -> Shown:
    """The answer text without its citation chips, and each citation's document and page."""
    answer = page.locator("#ask-answer .st-answer").first
    abstained = answer.get_attribute("data-abstained") == "true"
    text = "" if abstained else page.locator("#ask-answer .st-answer-text").first.evaluate(
        "el => { const c = el.cloneNode(true); c.querySelectorAll('.st-cite-chip').forEach(b => b.remove());"
        " return c.innerText; }")
    cites = []
    items = page.locator("#ask-citations .st-citation")
    for i in range(items.count()):
        head = items.nth(i).locator("div").first.inner_text()
        found = re.search(r"page (\d+)", head)
        doc = items.nth(i).locator(".st-doc").first.inner_text().strip()
        cites.append((doc, int(found.group(1)) if found else 0))
    return Shown(text.strip(), abstained, tuple(cites))


def ask(page, q: Question) -> Shown:
    """Ask `q` with its method over the session's own documents and wait for this run's answer."""
    scope = page.locator("#ask-scope")
    sync_api.expect(scope).to_be_visible()
    scope.get_by_label("Your documents").check()
    choose_method(page, q.method)
    page.locator("#ask-question textarea").fill(q.question)
    call_and_wait(page, page.locator("#ask-button").click, run_done(page, q.method), f"Ask with {q.method}")
    sync_api.expect(page.locator("#ask-answer .st-answer")).to_be_visible()
    return read_answer(page)


def holds(q: Question, shown: Shown) -> bool:
    on_gold = any(doc == q.manual and p in q.pages for doc, p in shown.citations)
    return not shown.abstained and holds_answer(shown.text, list(q.answers)) and on_gold


def keep_workspace(root: Path, dest: Path) -> Path | None:
    """Copy the session workspace that holds the uploads (the newest under sessions/) to `dest`."""
    spaces = sorted((root / "workspaces" / "sessions").glob("*/strata.sqlite"), key=lambda p: p.stat().st_mtime)
    if not spaces:
        return None
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(spaces[-1].parent, dest)
    return dest


def cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def run(args: argparse.Namespace) -> int:
    manuals = [manual_pdf(name, args.pdfs) for name in sorted({q.manual for q in QUESTIONS}, key=str.lower)]
    args.out.mkdir(parents=True, exist_ok=True)
    root = args.out / "app"
    shutil.rmtree(root, ignore_errors=True)  # a fresh workspace root and cache each run
    rows = []
    with running_app(root) as (url, log_path), sync_api.sync_playwright() as pw:  # its cache: root/workspaces/cache
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        context, page = _open_session(browser, url)
        try:
            started = time.monotonic()
            ingest_files(page, manuals, timeout_ms=int(args.ingest_timeout * 1000))
            print(f"ingested {', '.join(m.name for m in manuals)} in the Library tab in {time.monotonic() - started:.0f} s",
                  file=sys.stderr)
            page.screenshot(path=str(args.out / "library.png"), full_page=True)
            _open_tab(page, "Ask")
            for q in QUESTIONS:
                started = time.monotonic()
                shown = ask(page, q)
                page.screenshot(path=str(args.out / f"{q.id}.png"), full_page=True)
                rows.append((q, shown, holds(q, shown)))
                print(f"asked {q.id} with {q.method} in {time.monotonic() - started:.0f} s", file=sys.stderr)
            if args.keep_workspace:
                kept = keep_workspace(root, args.out / "workspace")
                print(f"session workspace copied to {kept}", file=sys.stderr)
            errors = list(page.page_errors)
        finally:
            context.close()
            browser.close()
    print(f"`{command_line()}`\n")
    print("| question | method | answer shown (first 160 chars) | holds | cited page | gold page |")
    print("|---|---|---|---|---|---|")
    for q, shown, ok in rows:
        text = "(abstained)" if shown.abstained else shown.text[:160]
        cited = ", ".join(f"{p}" if doc == q.manual else f"{doc} p.{p}" for doc, p in shown.citations[:4]) or "-"
        gold = "-".join(str(p) for p in (q.pages[0], q.pages[-1])) if len(q.pages) > 1 else str(q.pages[0])
        print(f"| {cell(q.question)} | {q.method} | {cell(text)} | {'yes' if ok else 'NO'} | {cited} | {gold} |")
    held = sum(ok for _, _, ok in rows)
    print(f"\n{held}/{len(rows)} hold; screenshots in {args.out}; app log {log_path}")
    if errors:
        print(f"page errors in the browser: {errors}")
    return 0 if held == len(QUESTIONS) else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="screenshots, the app's workspace root and log (replaced each run)")
    ap.add_argument("--pdfs", type=Path, default=None, help="folder holding R-intro.pdf and glpk.pdf (else apt-get download)")
    ap.add_argument("--ingest-timeout", type=float, default=1800.0, help="seconds the Library tab's ingest may take")
    ap.add_argument("--keep-workspace", action="store_true", help="copy the session workspace to OUT/workspace")
    args = ap.parse_args(argv)
    if CHROMIUM is None or sync_api is None:
        print("needs Debian chromium (apt-get install chromium) and playwright (requirements-test.txt)", file=sys.stderr)
        return 2
    sync_api.expect.set_options(timeout=UI_TIMEOUT_MS)
    return run(args)


if __name__ == "__main__":
    raise SystemExit(main())
