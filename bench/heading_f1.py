"""Heading detection quality on real manuals whose PDF outline is the ground truth.

For each Debian manual (bench/common.py: MANUALS) the outline is removed from a copy of the PDF,
the copy is parsed with backend.ingest.parser.parse_pdf (default IngestSettings), and the
recovered section tree is compared with the outline: title precision / recall / F1 (same
normalised title, page within --page-slack) and level agreement on the matched headings. A
naive font-size-only detector runs on the same copies in the same run as the baseline.

Usage: python bench/heading_f1.py [--manuals NAME ...] [--window] [--cache DIR]
Prints the command line and a markdown table on stdout; logs go to stderr.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from backend.config import IngestSettings  # noqa: E402
from backend.ingest.parser import parse_pdf  # noqa: E402
from bench.common import (  # noqa: E402
    MANUALS,
    HeadingScore,
    ManualUnavailable,
    command_line,
    machine_note,
    fetch_manual,
    font_size_headings,
    markdown_table,
    parsed_headings,
    score_headings,
    scratch_dir,
    write_copy,
)

log = logging.getLogger("bench.heading_f1")
CONFIDENT = 0.6  # the parser's own bar: headings below it come from body-size bold text alone


def _total(scores: list[HeadingScore]) -> HeadingScore:
    return HeadingScore(
        gold=sum(s.gold for s in scores),
        predicted=sum(s.predicted for s in scores),
        matched=sum(s.matched for s in scores),
        level_equal=sum(s.level_equal for s in scores),
        level_shift=0,
        level_equal_shifted=sum(s.level_equal_shifted for s in scores),
    )


def main(argv: list[str] | None = None) -> int:
    names = [m.name for m in MANUALS]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--manuals", nargs="+", choices=names, default=names, help="manuals to score (default: all)")
    ap.add_argument("--window", action="store_true", help="parse only page 1 + the page window the quick test uses")
    ap.add_argument("--page-slack", type=int, default=1, help="a heading matches on the outline page +- this (default 1)")
    ap.add_argument("--cache", type=Path, default=None, help="where .deb files and PDFs are kept (default ~/.cache/strata-test-debs)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")

    machine_at_start = machine_note()
    rows, parser_scores, confident_scores, base_scores = [], [], [], []
    with scratch_dir("strata-heading-f1-") as tmp:
        for manual in (m for m in MANUALS if m.name in args.manuals):
            try:
                src = fetch_manual(manual, args.cache)
            except ManualUnavailable as exc:
                log.error("%s skipped: %s", manual.name, exc)
                continue
            copy = Path(tmp) / f"{manual.name}.pdf"
            gold = write_copy(src, copy, keep_outline=False, page_window=manual.test_pages if args.window else None)
            t0 = time.perf_counter()
            parsed = parse_pdf(copy, IngestSettings(), None)
            parse_s = time.perf_counter() - t0
            ours = score_headings(gold, parsed_headings(parsed.sections), args.page_slack)
            confident = score_headings(
                gold, parsed_headings(s for s in parsed.sections if s.confidence >= CONFIDENT), args.page_slack
            )
            base = score_headings(gold, font_size_headings(copy), args.page_slack)
            parser_scores.append(ours)
            confident_scores.append(confident)
            base_scores.append(base)
            rows.append(
                (manual.name, manual.producer, parsed.document.pages, ours.gold, parsed.document.hierarchy_source,
                 ours.predicted, ours.precision, ours.recall, ours.f1, ours.level_accuracy, confident.f1,
                 base.predicted, base.precision, base.recall, base.f1, base.level_accuracy, base.level_accuracy_shifted,
                 parse_s)
            )
    if not rows:
        log.error("no manual could be fetched; nothing to report")
        return 1
    ours, confident, base = _total(parser_scores), _total(confident_scores), _total(base_scores)
    rows.append(
        ("all (micro)", "", sum(r[2] for r in rows), ours.gold, "", ours.predicted, ours.precision, ours.recall, ours.f1,
         ours.level_accuracy, confident.f1, base.predicted, base.precision, base.recall, base.f1, base.level_accuracy,
         base.level_accuracy_shifted, sum(r[-1] for r in rows))
    )
    header = (
        "manual", "typeset with", "pages", "outline headings", "source", "parser found", "P", "R", "F1", "level acc",
        f"F1 conf>={CONFIDENT}", "baseline found", "base P", "base R", "base F1", "base level acc", "base level acc (best shift)", "parse s",
    )
    print(f"`{command_line()}`")
    print()
    print(f"machine at start: {machine_at_start}; at end: {machine_note()}")
    print()
    print(markdown_table(header, [(*r[:-1], f"{r[-1]:.1f}") for r in rows]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
