"""Shared helpers of the bench scripts and of the Debian-manual parser test.

What is here: ground-truth PDFs (Debian packages that ship manuals with a PDF outline, fetched
with `apt-get download`), copies of those PDFs with the outline removed or cut to a page
window, heading matching and scoring (title precision/recall/F1, level agreement), a naive
font-size heading detector used as the baseline, and peak-memory / table helpers.

What is not here: parsing (backend.ingest.parser does it) and printing (the scripts print).
Nothing happens at import time; downloads happen only when `fetch_manual` is called.
"""

from __future__ import annotations

import gzip
import os
import re
import resource
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path

import pymupdf

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DEB_CACHE = Path.home() / ".cache" / "strata-test-debs"
APT_TIMEOUT_S = 120


@dataclass(frozen=True, slots=True)
class DebianManual:
    """A PDF manual inside a Debian package; its outline (bookmarks) is the ground truth."""

    name: str  # short label used in tables and test ids
    package: str  # Debian binary package shipping it
    member: str  # path inside the package; a ".pdf.gz" is gunzipped
    producer: str  # what typeset it, so the set covers different heading styles
    test_pages: tuple[int, int]  # 1-based inclusive page window the quick test parses (plus page 1)


# Four typesetting tool chains, all small downloads (1-3 MB .deb), 114-261 pages, 3-5 outline levels.
MANUALS: tuple[DebianManual, ...] = (
    DebianManual(
        "developers-reference", "developers-reference", "usr/share/developers-reference/developers-reference.pdf",
        "Sphinx + pdfLaTeX", (11, 40),
    ),
    DebianManual(
        "debian-policy", "debian-policy", "usr/share/doc/debian-policy/policy.pdf.gz", "Sphinx + XeLaTeX", (13, 42),
    ),
    DebianManual("bashref", "bash-doc", "usr/share/doc/bash/bashref.pdf", "Texinfo (pdfTeX)", (1, 60)),
    DebianManual(
        "debian-reference", "debian-reference-en", "usr/share/debian-reference/debian-reference.en.pdf",
        "DocBook + dblatex (XeLaTeX)", (29, 48),
    ),
)


class ManualUnavailable(RuntimeError):
    """The manual could not be fetched here (no apt-get/dpkg-deb, no package lists, no network)."""


def deb_cache_dir() -> Path:
    """Where fetched .deb files and extracted PDFs are kept (STRATA_DEB_CACHE overrides)."""
    return Path(os.environ.get("STRATA_DEB_CACHE") or DEFAULT_DEB_CACHE)


def _download_deb(package: str, dest: Path) -> Path:
    found = sorted(dest.glob(f"{package}_*.deb"))
    if found:
        return found[-1]
    if shutil.which("apt-get") is None:
        raise ManualUnavailable(f"apt-get is not installed, so the Debian package '{package}' cannot be fetched")
    dest.mkdir(parents=True, exist_ok=True)
    try:
        proc = subprocess.run(
            # Short network timeouts: offline, the download must fail (and the test skip) quickly.
            ["apt-get", "-o", "Acquire::http::Timeout=20", "-o", "Acquire::Retries=0", "download", package],
            cwd=dest, capture_output=True, text=True, timeout=APT_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired as exc:
        raise ManualUnavailable(f"'apt-get download {package}' took over {APT_TIMEOUT_S} s") from exc
    found = sorted(dest.glob(f"{package}_*.deb"))
    if proc.returncode != 0 or not found:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise ManualUnavailable(
            f"'apt-get download {package}' failed (exit {proc.returncode}: {tail[0]}); "
            "run 'apt-get update' or check the network"
        )
    return found[-1]


def _extract_member(deb: Path, member: str, out: Path) -> None:
    if shutil.which("dpkg-deb") is None:
        raise ManualUnavailable(f"dpkg-deb is not installed, so '{deb.name}' cannot be unpacked")
    wanted = {member, f"./{member}"}
    with subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE) as proc:
        assert proc.stdout is not None
        with tarfile.open(fileobj=proc.stdout, mode="r|*") as tar:
            for info in tar:
                if info.name in wanted and info.isfile():
                    data = tar.extractfile(info).read()
                    break
            else:
                raise ManualUnavailable(f"'{member}' is not in {deb.name}; the package layout changed")
        proc.stdout.read()  # drain, so dpkg-deb exits cleanly
    if member.endswith(".gz"):
        data = gzip.decompress(data)
    tmp = out.with_suffix(".part")
    tmp.write_bytes(data)
    tmp.replace(out)


def fetch_manual(manual: DebianManual, cache: Path | None = None) -> Path:
    """The manual's PDF on disk, downloading its package on first use. Raises ManualUnavailable."""
    cache = cache or deb_cache_dir()
    pdf = cache / manual.package / Path(manual.member.removesuffix(".gz")).name
    if pdf.is_file():
        return pdf
    deb = _download_deb(manual.package, cache / manual.package)
    _extract_member(deb, manual.member, pdf)
    return pdf


# ---------------------------------------------------------------- ground truth


@dataclass(frozen=True, slots=True)
class Heading:
    """One heading: from the outline (gold) or from a detector (predicted)."""

    level: int  # 1 = top-level section
    title: str
    page: int  # 1-based


def outline_headings(doc: pymupdf.Document) -> list[Heading]:
    return [Heading(level, title.strip(), page) for level, title, page, *_ in doc.get_toc(simple=True) if page >= 1]


def write_copy(src: Path, dst: Path, *, keep_outline: bool, page_window: tuple[int, int] | None = None) -> list[Heading]:
    """Save a copy of `src` (optionally only page 1 + the 1-based inclusive page window), with
    its outline removed or kept (cut to the kept pages). Returns the outline of the copy, with
    page numbers of the copy, as ground truth."""
    with pymupdf.open(src) as doc:
        gold = outline_headings(doc)
        if page_window is not None:
            first, last = page_window
            kept = sorted({1, *range(first, min(last, doc.page_count) + 1)})
            new_no = {old: i + 1 for i, old in enumerate(kept)}
            gold = [Heading(h.level, h.title, new_no[h.page]) for h in gold if h.page in new_no]
            doc.select([p - 1 for p in kept])
        if keep_outline:
            # Levels must not jump by more than one for set_toc; drop the cut's orphans.
            toc, prev = [], 0
            for h in gold:
                if h.level <= prev + 1:
                    toc.append([h.level, h.title, h.page])
                    prev = h.level
            doc.set_toc(toc)
        else:
            doc.set_toc([])
        doc.save(dst, garbage=3, deflate=True)
    return gold


# ---------------------------------------------------------------- matching and scores

_NUMBER_PREFIX = re.compile(
    r"^(?:(?i:chapter|section|appendix|part)\s+)?(?:\d+(?:\.\d+)*|[A-Z](?:\.\d+)*|[IVXL]+)\b[.:)]?\s+"
)


def norm_title(text: str) -> str:
    """Comparable heading text: numbering ("3.1.2", "Appendix B", "Chapter 4:") and everything
    but letters and digits removed, lower case. Outlines often leave the number out."""
    text = " ".join(text.split())
    # "A Title" loses its "A" too; harmless, as both sides are normalised the same way.
    stripped = _NUMBER_PREFIX.sub("", text, count=1)
    return re.sub(r"[^a-z0-9]+", "", (stripped or text).lower())


@dataclass(frozen=True, slots=True)
class HeadingScore:
    gold: int
    predicted: int
    matched: int
    level_equal: int  # matched pairs with the same level
    level_shift: int  # most common (gold level - predicted level) among matches
    level_equal_shifted: int  # matched pairs with the same level after that shift

    @property
    def precision(self) -> float:
        return self.matched / self.predicted if self.predicted else 0.0

    @property
    def recall(self) -> float:
        return self.matched / self.gold if self.gold else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    @property
    def level_accuracy(self) -> float:
        return self.level_equal / self.matched if self.matched else 0.0

    @property
    def level_accuracy_shifted(self) -> float:
        return self.level_equal_shifted / self.matched if self.matched else 0.0


def match_headings(gold: Sequence[Heading], predicted: Sequence[Heading], page_slack: int = 1) -> list[tuple[Heading, Heading]]:
    """One-to-one pairs (gold, predicted): same normalised title (or near-identical, ratio >= 0.9,
    for ligature/hyphenation noise) on a page within `page_slack`. Exact pairs are taken first."""
    keys_g = [norm_title(h.title) for h in gold]
    keys_p = [norm_title(h.title) for h in predicted]
    used_g: set[int] = set()
    used_p: set[int] = set()
    pairs: list[tuple[int, int]] = []
    for exact in (True, False):
        for gi, g in enumerate(gold):
            if gi in used_g or not keys_g[gi]:
                continue
            best, best_key = None, None
            for pi, p in enumerate(predicted):
                if pi in used_p or abs(p.page - g.page) > page_slack or not keys_p[pi]:
                    continue
                if exact:
                    ok = keys_p[pi] == keys_g[gi]
                else:
                    ok = SequenceMatcher(None, keys_p[pi][:200], keys_g[gi][:200]).ratio() >= 0.9
                if ok:
                    key = (abs(p.page - g.page), abs(p.level - g.level))
                    if best_key is None or key < best_key:
                        best, best_key = pi, key
            if best is not None:
                used_g.add(gi)
                used_p.add(best)
                pairs.append((gi, best))
    return [(gold[gi], predicted[pi]) for gi, pi in sorted(pairs)]


def score_headings(gold: Sequence[Heading], predicted: Sequence[Heading], page_slack: int = 1) -> HeadingScore:
    pairs = match_headings(gold, predicted, page_slack)
    shifts = Counter(g.level - p.level for g, p in pairs)
    shift = shifts.most_common(1)[0][0] if shifts else 0
    return HeadingScore(
        gold=len(gold),
        predicted=len(predicted),
        matched=len(pairs),
        level_equal=sum(1 for g, p in pairs if g.level == p.level),
        level_shift=shift,
        level_equal_shifted=sum(1 for g, p in pairs if g.level == p.level + shift),
    )


def parsed_headings(sections: Iterable) -> list[Heading]:
    """Headings of a ParsedDocument's section tree (the root, level 0, is the document itself)."""
    return [Heading(s.level, s.title, s.page) for s in sections if s.level >= 1]


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
