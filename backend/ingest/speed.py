"""How long an ingest will take on this server, from the speed this server measured.

A page costs what drives its work: a plain text page (parse + encode), a page with ruled lines
(find_tables, the slowest parse step, and many rows to encode) or a page without a text layer
(OCR). `page_mix` sorts a PDF's pages into those three kinds from a sample of its pages (cheap:
no parse). Every ingested file adds (its mix, its seconds) to a small JSON file in the cache
folder (Settings.cache_dir, config.cache_folder: one per server, never the current directory); `SpeedModel.rates` fits seconds per page of each kind to those measurements (least squares
pulled towards the defaults, scaled by how much slower or faster this server is than them, so a
kind never measured still follows the server's speed). Before any measurement the defaults hold:
idle rates from bench/ingest_speed.py on the 2-core reference machine (bench/RESULTS.md#defaults).

Rates are kept for an idle machine. A machine shared with other work runs an ingest slower by
about its contention, `max(1, 1-min load average / cores)`, read when a batch starts (before
the ingest's own processes count): a measurement is divided by the contention it ran under, and
an estimate multiplied by the contention now, so one set of defaults holds on an idle machine
and on a busy one.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pymupdf

from backend.ingest.extract import PageBounds, PageCoster

log = logging.getLogger(__name__)

KINDS = ("text", "tables", "ocr")
# Seconds per page on an idle machine before this server measured anything: text-heavy manuals,
# filing pages with ruled tables, image-only slides (bench/ingest_speed.py on the 2-core reference
# machine at load 1: bench/RESULTS.md#defaults).
DEFAULT_SECONDS = {"text": 0.16, "tables": 0.32, "ocr": 0.8}
SAMPLE_PAGES = 24  # pages of a file looked at to sort its pages into kinds
RULED_EDGES = 8  # as extract.py's find_tables gate
PRIOR_PAGES = 5.0  # the defaults weigh as much as this many measured pages of each kind
MAX_OBSERVATIONS = 200
FILE_NAME = "ingest_speed.json"
_LOCK = threading.Lock()


def contention() -> float:
    """How much slower than idle this machine runs a CPU-bound job now: 1-min load average per
    core, at least 1."""
    try:
        load = os.getloadavg()[0]
    except OSError:  # not available on this platform
        return 1.0
    return max(1.0, load / (os.cpu_count() or 1))


@dataclass(frozen=True, slots=True)
class PageMix:
    """Pages of a file (or batch) by what drives their cost."""

    text: int = 0
    tables: int = 0
    ocr: int = 0

    @property
    def pages(self) -> int:
        return self.text + self.tables + self.ocr

    def vector(self) -> np.ndarray:
        return np.array([self.text, self.tables, self.ocr], dtype=np.float64)

    def __add__(self, other: PageMix) -> PageMix:
        return PageMix(self.text + other.text, self.tables + other.tables, self.ocr + other.ocr)


def _page_kind(page: pymupdf.Page, coster: PageCoster) -> str:
    """The page's kind, looked at only when its counted cost is within the parser's bounds: this
    runs in the server or the ingest parent, outside the parse worker's memory and time limits,
    so a page the worker would degrade (an XObject fan-out, a decompression or drawing bomb) is
    sorted by its counts alone and never run (a fan-out page took 280 s and 13 GiB here)."""
    plan = coster.plan(page)
    if not plan.graphics or plan.text_top_level_only or not plan.text:
        return "text"
    if not page.get_text("text").strip():
        return "ocr" if page.get_images() else "text"
    edges = 0
    for d in page.get_drawings()[:2000]:
        for item in d.get("items", ()):
            if item[0] in ("re", "qu"):
                edges += 4
            elif item[0] == "l" and (abs(item[1].x - item[2].x) < 1 or abs(item[1].y - item[2].y) < 1):
                edges += 1
        if edges >= RULED_EDGES:
            return "tables"
    return "text"


def page_mix(pdf: pymupdf.Document, sample: int = SAMPLE_PAGES) -> PageMix:
    """Sort up to `sample` evenly spread pages into kinds and scale the counts to the whole file."""
    n = pdf.page_count
    if n == 0:
        return PageMix()
    picks = sorted({round(i * (n - 1) / max(1, min(sample, n) - 1)) for i in range(min(sample, n))})
    seen = {k: 0 for k in KINDS}
    coster = PageCoster(pdf, PageBounds())
    for i in picks:
        try:
            seen[_page_kind(pdf.load_page(i), coster)] += 1
        except (RuntimeError, ValueError, pymupdf.mupdf.FzErrorBase) as exc:  # a damaged page: counted as text
            log.debug("page %d could not be sorted for the estimate: %s", i + 1, exc)
            seen["text"] += 1
    tables = round(seen["tables"] * n / len(picks))
    ocr = min(n - tables, round(seen["ocr"] * n / len(picks)))
    return PageMix(text=n - tables - ocr, tables=tables, ocr=ocr)


class SpeedModel:
    """Seconds per page of each kind on this server, kept in `root`/ingest_speed.json (root: the cache folder)."""

    def __init__(self, root: Path) -> None:
        self.path = Path(root) / FILE_NAME
        self._obs: list[tuple[PageMix, float, float]] = []  # (pages, seconds, contention it ran under)
        try:
            raw = json.loads(self.path.read_text())
            # Rows written before the contention was kept count as idle.
            self._obs = [(PageMix(*row[:3]), float(row[3]), max(1.0, float(row[4]) if len(row) > 4 else 1.0))
                         for row in raw.get("observations", [])]
        except FileNotFoundError:
            pass
        except (ValueError, TypeError, IndexError, AttributeError) as exc:
            log.warning("ignoring the unreadable ingest speed file %s in the cache folder (%s); estimates start from the defaults",
                        FILE_NAME, exc)

    @property
    def measured(self) -> bool:
        return bool(self._obs)

    def record(self, mix: PageMix, seconds: float, load: float = 1.0) -> None:
        """Add one ingested file's measurement, made under contention `load` (see contention()),
        and save (atomically; concurrent ingests keep theirs)."""
        if mix.pages <= 0 or seconds <= 0:
            return
        with _LOCK:
            fresh = SpeedModel(self.path.parent)._obs  # another ingest may have written since we read
            self._obs = (fresh + [(mix, float(seconds), max(1.0, float(load)))])[-MAX_OBSERVATIONS:]
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f"{FILE_NAME}.{os.getpid()}.{threading.get_ident()}.tmp")
            rows = [[m.text, m.tables, m.ocr, round(s, 3), round(c, 2)] for m, s, c in self._obs]
            tmp.write_text(json.dumps({"kinds": list(KINDS) + ["seconds", "contention"], "observations": rows}))
            os.replace(tmp, self.path)

    def rates(self) -> dict[str, float]:
        """Seconds per page of each kind on this server when idle: ridge least squares towards the
        defaults x this server's overall speed factor (measured seconds / what the defaults
        predict for the same pages), each measurement divided by the contention it ran under."""
        prior = np.array([DEFAULT_SECONDS[k] for k in KINDS])
        if not self._obs:
            return dict(zip(KINDS, prior.tolist()))
        x = np.stack([m.vector() for m, _, _ in self._obs])
        y = np.array([s / c for _, s, c in self._obs])
        factor = float(y.sum() / max(1e-9, (x @ prior).sum()))
        prior = prior * factor
        lam = PRIOR_PAGES**2
        fit = np.linalg.solve(x.T @ x + lam * np.eye(len(KINDS)), x.T @ y + lam * prior)
        fit = np.maximum(fit, 0.1 * prior)  # a kind the fit drove to ~0 keeps a tenth of its prior
        return dict(zip(KINDS, fit.tolist()))

    def estimate(self, mix: PageMix, load: float = 1.0) -> float:
        """Seconds to ingest `mix` under contention `load` (contention() now; 1: idle)."""
        rates = self.rates()
        return float(sum(getattr(mix, k) * rates[k] for k in KINDS)) * max(1.0, load)
