"""Shared helpers of the bench scripts: the naive font-size heading detector (heading_f1.py's
baseline), peak memory, the machine note and markdown tables.

The Debian manuals and heading scoring live in tests/fixtures/debian_manuals.py (the parser test
uses them too) and are imported here.
"""

from __future__ import annotations

import os
import resource
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

import pymupdf

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # run as a script: sys.path[0] is bench/
    sys.path.insert(0, str(REPO_ROOT))
from tests.fixtures.debian_manuals import (  # noqa: E402,F401  (re-exported for the bench scripts)
    MANUALS,
    DebianManual,
    Heading,
    HeadingScore,
    ManualUnavailable,
    fetch_manual,
    parsed_headings,
    score_headings,
    write_copy,
)


# ---------------------------------------------------------------- baseline detector


def font_size_headings(pdf_path: Path, min_ratio: float = 1.05, max_words: int = 20) -> list[Heading]:
    """The naive baseline: a line is a heading when its font size is above the body size
    (the character-weighted most common size); consecutive such lines of one size in one block
    form one heading; level = rank of its size among heading sizes (largest = 1)."""
    lines: list[tuple[int, float, str, int]] = []  # (page, size, text, block key)
    sizes: Counter[float] = Counter()
    with pymupdf.open(pdf_path) as doc:
        for page in doc:
            for bi, block in enumerate(page.get_text("dict")["blocks"]):
                for ln in block.get("lines", []):
                    spans = [s for s in ln["spans"] if s["text"].strip()]
                    if not spans:
                        continue
                    text = " ".join(" ".join(s["text"] for s in spans).split())
                    chars = sum(len(s["text"].strip()) for s in spans)
                    size = round(sum(s["size"] * len(s["text"].strip()) for s in spans) / chars * 2) / 2
                    sizes[size] += chars
                    lines.append((page.number + 1, size, text, page.number * 10_000 + bi))
    if not sizes:
        return []
    body = sizes.most_common(1)[0][0]
    merged: list[list] = []
    for page_no, size, text, key in lines:
        if size < body * min_ratio or not any(c.isalpha() for c in text):
            continue
        if merged and merged[-1][3] == key and merged[-1][1] == size:
            merged[-1][2] += " " + text
            continue
        merged.append([page_no, size, text, key])
    merged = [m for m in merged if len(m[2].split()) <= max_words]
    rank = {s: i + 1 for i, s in enumerate(sorted({m[1] for m in merged}, reverse=True))}
    return [Heading(rank[size], text, page_no) for page_no, size, text, _ in merged]


# ---------------------------------------------------------------- reporting


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MiB (ru_maxrss is KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    def cell(v: object) -> str:
        return f"{v:.3f}" if isinstance(v, float) else str(v)

    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(out)


def machine_note() -> str:
    """CPU count and load, so a figure taken on a busy shared machine can be read as such."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    note = f"{os.cpu_count()} CPUs, 1-min load average {load:.1f}, Python {sys.version.split()[0]}, PyMuPDF {pymupdf.VersionBind}"
    return note + gpu_note()


def gpu_note() -> str:
    """', GPU <name>, torch <version>' where torch sees one (torch is imported only when the NVIDIA
    driver loads, as the encoders decide), else ''."""
    from backend.index.encoders import cuda_driver_present

    if not cuda_driver_present():
        return ""
    import torch

    return f", GPU {torch.cuda.get_device_name(0)}, torch {torch.__version__}" if torch.cuda.is_available() else ""


def command_line() -> str:
    return "python " + " ".join([os.path.relpath(sys.argv[0], REPO_ROOT), *sys.argv[1:]])


def scratch_dir(prefix: str) -> tempfile.TemporaryDirectory:
    return tempfile.TemporaryDirectory(prefix=prefix)
