"""How long an ingest will take on this server, from the speed this server measured.

A page costs what drives its work: a plain text page (parse + encode), a page with ruled lines
(find_tables, the slowest parse step, and many rows to encode) or a page without a text layer
(OCR). `page_mix` sorts a PDF's pages into those three kinds from a sample of its pages (cheap:
no parse). Every ingested file adds (its mix, its seconds) to a small JSON file in the workspace
root; `SpeedModel.rates` fits seconds per page of each kind to those measurements (least squares
pulled towards the defaults, scaled by how much slower or faster this server is than them, so a
kind never measured still follows the server's speed). Before any measurement the defaults hold:
calibrated with bench/ingest_speed.py on the 2-core reference machine.
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
# Seconds per page before this server measured anything (bench/ingest_speed.py, 2-core machine
# under load ~10, defaults): text-heavy manuals, 10-Q filing pages, image-only slides.
DEFAULT_SECONDS = {"text": 0.6, "tables": 1.2, "ocr": 3.0}
SAMPLE_PAGES = 24  # pages of a file looked at to sort its pages into kinds
RULED_EDGES = 8  # as extract.py's find_tables gate
PRIOR_PAGES = 5.0  # the defaults weigh as much as this many measured pages of each kind
MAX_OBSERVATIONS = 200
FILE_NAME = "ingest_speed.json"
_LOCK = threading.Lock()


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
    """Seconds per page of each kind on this server, kept in `root`/ingest_speed.json."""

    def __init__(self, root: Path) -> None:
        self.path = Path(root) / FILE_NAME
        self._obs: list[tuple[PageMix, float]] = []
        try:
            raw = json.loads(self.path.read_text())
            self._obs = [(PageMix(*row[:3]), float(row[3])) for row in raw.get("observations", [])]
        except FileNotFoundError:
            pass
        except (ValueError, TypeError, IndexError, AttributeError) as exc:
            log.warning("ignoring the unreadable ingest speed file %s (%s); estimates start from the defaults", self.path, exc)

    @property
    def measured(self) -> bool:
        return bool(self._obs)

    def record(self, mix: PageMix, seconds: float) -> None:
        """Add one ingested file's measurement and save (atomically; concurrent ingests keep theirs)."""
        if mix.pages <= 0 or seconds <= 0:
            return
        with _LOCK:
            fresh = SpeedModel(self.path.parent)._obs  # another ingest may have written since we read
            self._obs = (fresh + [(mix, float(seconds))])[-MAX_OBSERVATIONS:]
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f"{FILE_NAME}.{os.getpid()}.{threading.get_ident()}.tmp")
            rows = [[m.text, m.tables, m.ocr, round(s, 3)] for m, s in self._obs]
            tmp.write_text(json.dumps({"kinds": list(KINDS) + ["seconds"], "observations": rows}))
            os.replace(tmp, self.path)

    def rates(self) -> dict[str, float]:
        """Seconds per page of each kind: ridge least squares towards the defaults x this server's
        overall speed factor (measured seconds / what the defaults predict for the same pages)."""
        prior = np.array([DEFAULT_SECONDS[k] for k in KINDS])
        if not self._obs:
            return dict(zip(KINDS, prior.tolist()))
        x = np.stack([m.vector() for m, _ in self._obs])
        y = np.array([s for _, s in self._obs])
        factor = float(y.sum() / max(1e-9, (x @ prior).sum()))
        prior = prior * factor
        lam = PRIOR_PAGES**2
        fit = np.linalg.solve(x.T @ x + lam * np.eye(len(KINDS)), x.T @ y + lam * prior)
        fit = np.maximum(fit, 0.1 * prior)  # a kind the fit drove to ~0 keeps a tenth of its prior
        return dict(zip(KINDS, fit.tolist()))

    def estimate(self, mix: PageMix) -> float:
        rates = self.rates()
        return float(sum(getattr(mix, k) * rates[k] for k in KINDS))
