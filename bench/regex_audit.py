"""Every module-level regex in `backend/`, timed on long adversarial strings: the patterns whose
time grows faster than the text (catastrophic or quadratic backtracking) show as rows whose time
at the larger size is far more than `--sizes`' ratio times the smaller one.

    python bench/regex_audit.py                      # 8,000 and 32,000 characters, rows over 50 ms
    python bench/regex_audit.py --sizes 2000,8000 --min-ms 5 --modules backend.ingest

Each pattern runs `search` and `findall` (the two ways that try every start position) on each
string; the printed figure is their sum. A flagged pattern matters only where the code runs it
that way on text of that length: `match` at a fixed position is linear for most of them, and
questions are capped at `max_question_chars`. What it found last: bench/RESULTS.md#reliability.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import backend  # noqa: E402

# Repeated units, each a shape PDFs produce: prose with and without a stop, figures, headings,
# leaders, runs of one character.
UNITS = {
    "words": "lantern ", "digits": "1 ", "digit-run": "1", "figures": "1,000 ", "title-case": "Table ",
    "abbrev": "a. ", "mixed": "The 2019 Revenue of $1,204 million, ", "dashes": "- ", "items": "(a) ",
    "spaces": " ", "letters": "a", "numbering": "1.", "cells": "| 1 ", "years": "in 2019 and 2018 ",
}


def patterns(prefixes: tuple[str, ...]) -> dict[str, re.Pattern]:
    """Module-level patterns of every module file under backend/ (by file: some folders are
    namespace packages, which pkgutil does not walk into)."""
    root = Path(backend.__file__).resolve().parent
    found: dict[str, re.Pattern] = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if not name.startswith(prefixes) or parts[-1] == "__main__":
            continue
        try:
            module = importlib.import_module(name)
        except Exception as exc:  # an optional dependency missing: say so, audit the rest
            print(f"skipped {name}: {exc}")
            continue
        for attr, value in vars(module).items():
            if isinstance(value, re.Pattern):
                found.setdefault(f"{name}.{attr}", value)
    return found


def seconds(pattern: re.Pattern, text: str) -> float:
    subject = text.encode() if isinstance(pattern.pattern, bytes) else text  # content-stream patterns are bytes
    start = time.perf_counter()
    pattern.search(subject)
    pattern.findall(subject)
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="8000,32000", help="two string lengths, in characters")
    ap.add_argument("--min-ms", type=float, default=50.0, help="print rows slower than this at the larger size")
    ap.add_argument("--modules", default="backend", help="audit modules whose name starts with one of these (comma-separated)")
    args = ap.parse_args()
    small, large = (int(x) for x in args.sizes.split(","))
    found = patterns(tuple(args.modules.split(",")))
    print(f"{len(found)} patterns; sizes {small:,} and {large:,} characters (a linear pattern grows {large / small:g}x)\n")
    print(f"| pattern | string | ms at {small:,} | ms at {large:,} | growth |\n|---|---|---|---|---|")
    flagged = 0
    for name, pattern in sorted(found.items()):
        for kind, unit in UNITS.items():
            short = seconds(pattern, (unit * (small // len(unit) + 1))[:small])
            if short * (large / small) ** 2 < args.min_ms / 1000:  # even quadratic growth stays under the bar
                continue
            if short * 1000 >= args.min_ms:  # flagged already: the larger size would only take minutes
                flagged += 1
                print(f"| {name} | {kind} | {short * 1000:.1f} | not run | |", flush=True)
                continue
            long = seconds(pattern, (unit * (large // len(unit) + 1))[:large])
            if long * 1000 >= args.min_ms:
                flagged += 1
                print(f"| {name} | {kind} | {short * 1000:.1f} | {long * 1000:.1f} | {long / max(short, 1e-9):.0f}x |", flush=True)
    print(f"\n{flagged} rows over {args.min_ms:g} ms at {large:,} characters")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
