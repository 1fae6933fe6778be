"""Statement tables: a column of line items and columns of figures, set with white space.

A filing's balance sheet, income statement or cash-flow statement is a page-sized table with no
ruling lines and no header over its first column: "Cash and cash equivalents  $ 2,822,795
$ 1,467,576" under "As of December 31, | 2017 | 2016". Neither find_tables (it needs rules) nor
the borderless finder (it needs a header over every column) reads it, so each line came out as
a paragraph of its own, its figures cut from their years. Here such a table is found from the
text lines alone:

- a page's visual rows (borderless._visual_rows); a lone currency sign joins the figure after it,
  a lone "%" or ")" the figure before it;
- a figure row: a label (words) in its first cell and figures only after it ("2,822,795",
  "(20,557)", "—", "12.5%"); a label row: one cell of words left of the figures (a group,
  "Current assets:", or the first line of a label that wraps onto the next row);
- a run of close rows, at least MIN_FIGURE_ROWS figure rows, whose figures stand in columns:
  figures are set flush right, so each column is a cluster of right edges, and no row puts two
  figures in one column;
- its header: the rows right above the run whose cells all stand over the figure columns ("As
  of December 31," spanning both, then "2017 | 2016"); a first run row whose figures are all
  years is a header row too. A header cell spanning several columns heads each of them.

A label row that wraps onto the figure row under it (closer than the rows' usual gap, not ending
in ":") joins that row's label; the other label rows group the rows under them and are not rows
of their own. The result is a RawTable, as find_tables gives one: its first column headed "Line
item" and each figure column by its header text.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from backend.ingest.borderless import _Row, _cell_box, _cell_text, _center_in, _union, _visual_rows, cut_blocks
from backend.ingest.extract import Line, RawPage, RawTable, TextBlock
from backend.types import BBox

MIN_FIGURE_ROWS = 3
MAX_ROW_GAP_EM = 1.6  # white space between two rows of one statement, in font sizes
MAX_HEADER_ROWS = 4
COLUMN_SLACK = 8.0  # points: figures of one column end within this of each other
LABEL_HEADER = "Line item"
_FIGURE_RE = re.compile(r"^[(\[]?[-–—+]?\s*[$€£¥]?\s*[(]?\d[\d,]*(?:\.\d+)?\s*[)\]]?\s*%?[)\]]?$")
_DASH_RE = re.compile(r"^[-–—]+$")
_YEAR_RE = re.compile(r"^(?:19|20)\d{2}$")
_WORD_RE = re.compile(r"[^\W\d_]{2,}")
_BLANK_FIGURES = frozenset(("n/a", "na", "nm", "n/m", "*", "**"))
_CURRENCY = frozenset("$€£¥")
_LEADER_RE = re.compile(r"(?:\s*[.·…]){3,}[\s.·…]*[$€£¥]?\s*$|\s+[$€£¥]\s*$")


def is_figure(text: str) -> bool:
    """A cell holding one number as statements print it: "2,822,795", "$ (20,557)", "—", "12.5%"."""
    t = text.strip()
    return bool(_FIGURE_RE.match(t) or _DASH_RE.match(t) or t.lower() in _BLANK_FIGURES)


@dataclass(slots=True)
class _Cell:
    text: str
    bbox: BBox


@dataclass(slots=True)
class _Line:
    """One visual row as cells of text, classified."""

    cells: list[_Cell]
    bbox: BBox
    size: float

    @property
    def figures(self) -> list[_Cell]:
        return [c for c in self.cells[1:] if is_figure(c.text)] if self.is_figure_row else []

    @property
    def is_figure_row(self) -> bool:
        if len(self.cells) < 2 or all(_YEAR_RE.match(c.text) for c in self.cells):
            return False  # "2017 | 2016" over the figures heads them
        return all(is_figure(c.text) for c in self.cells[1:]) and (
            _WORD_RE.search(self.cells[0].text) is not None or is_figure(self.cells[0].text)
        )

    @property
    def is_label_row(self) -> bool:
        return len(self.cells) == 1 and _WORD_RE.search(self.cells[0].text) is not None


def _label(text: str) -> str:
    """A line item's label without its dot leader and the currency sign after it ("Cash ....... $")."""
    return _LEADER_RE.sub("", text).strip()


def _merged_cells(row: _Row) -> list[_Cell]:
    """The row's cells with a lone currency sign joined to the figure after it and a lone "%" or
    ")" to the one before it."""
    cells = [_Cell(_cell_text(c).strip(), _cell_box(c)) for c in row.cells]
    out: list[_Cell] = []
    pending: _Cell | None = None
    for c in cells:
        if c.text in _CURRENCY:
            pending = c
            continue
        if len(c.text) > 2 and c.text[-1] in _CURRENCY and c.text[-2] == " ":  # "(473) $": the sign is the next figure's
            c = _Cell(c.text[:-2], c.bbox)
        if pending is not None:
            c = _Cell(c.text, _union([pending.bbox, c.bbox]))  # the sign says nothing the header does not
            pending = None
        if out and c.text in ("%", ")") and is_figure(out[-1].text):
            out[-1] = _Cell(out[-1].text + c.text, _union([out[-1].bbox, c.bbox]))
            continue
        out.append(c)
    if pending is not None:
        out.append(pending)
    return out


def _lines(rows: list[_Row]) -> list[_Line]:
    return [_Line(_merged_cells(r), r.bbox, max(ln.size for c in r.cells for ln in c)) for r in rows]


def _gap(a: _Line, b: _Line) -> float:
    return (b.bbox[1] - a.bbox[3]) / max(b.size, 4.0)


def _runs(lines: list[_Line]) -> list[tuple[int, int]]:
    """Maximal runs of close figure and label rows, as (first, end) indexes, trimmed to start and
    end on a figure row and holding MIN_FIGURE_ROWS figure rows."""
    runs: list[tuple[int, int]] = []
    start: int | None = None
    for i, ln in enumerate(lines + [None]):  # None closes the last run
        fits = ln is not None and (ln.is_figure_row or ln.is_label_row)
        if start is not None and fits and _gap(lines[i - 1], ln) <= MAX_ROW_GAP_EM:
            continue
        if start is not None:
            idx = [j for j in range(start, i) if lines[j].is_figure_row]
            if len(idx) >= MIN_FIGURE_ROWS:
                runs.append((_leading_labels(lines, start, idx[0]), idx[-1] + 1))
        start = i if fits else None
    return runs


def _leading_labels(lines: list[_Line], start: int, first: int) -> int:
    """Where a run starts: its first figure row, after the label rows right above it that stand
    in the line items' column ("Assets", "Current assets:"), not a centred title."""
    left = lines[first].cells[0].bbox[0] + 24
    while first > start and lines[first - 1].cells[0].bbox[0] <= left:
        first -= 1
    return first


def _figure_columns(lines: Sequence[_Line]) -> list[tuple[float, float]] | None:
    """The figure columns as (left, right) x-ranges, from the figures' right edges; None when a row
    puts two figures in one column or a figure starts left of the labels' right edge."""
    rights = sorted(c.bbox[2] for ln in lines for c in ln.figures)
    clusters: list[list[float]] = []
    for x in rights:
        if clusters and x - clusters[-1][-1] <= COLUMN_SLACK:
            clusters[-1].append(x)
        else:
            clusters.append([x])
    centers = [statistics.median(c) for c in clusters if len(c) >= 2]
    if not centers:
        return None
    lefts: dict[int, float] = {}
    for ln in lines:
        seen: set[int] = set()
        for c in ln.figures:
            k = min(range(len(centers)), key=lambda i: abs(centers[i] - c.bbox[2]))
            if abs(centers[k] - c.bbox[2]) > 2 * COLUMN_SLACK or k in seen:
                return None
            seen.add(k)
            lefts[k] = min(lefts.get(k, c.bbox[0]), c.bbox[0])
    return [(lefts.get(k, centers[k] - 20), centers[k]) for k in range(len(centers))]


def _column_index(cell: _Cell, cols: list[tuple[float, float]]) -> int:
    return min(range(len(cols)), key=lambda i: abs(cols[i][1] - cell.bbox[2]))


def _over_columns(cell: _Cell, cols: list[tuple[float, float]]) -> list[int]:
    """The figure columns a header cell stands over (those its x-range overlaps, or the nearest)."""
    x0, x1 = cell.bbox[0], cell.bbox[2]
    hit = [i for i, (a, b) in enumerate(cols) if min(x1, b) - max(x0, a) > 0]
    return hit or [_column_index(cell, cols)]


def _header_rows(lines: list[_Line], start: int, cols: list[tuple[float, float]], taken: set[int]) -> int:
    """How many rows right above lines[start] head the figure columns: every cell of each but a
    label on the left stands over the figures, holds no figure but a year, and no table found
    before took it."""
    left_edge = min(a for a, _ in cols) - 3 * COLUMN_SLACK
    first = start
    while first > 0 and start - first < MAX_HEADER_ROWS:
        above = lines[first - 1]
        over = above.cells[1:] if above.cells[0].bbox[2] < left_edge else above.cells
        if id(above) in taken or _gap(above, lines[first]) > MAX_ROW_GAP_EM or not over:
            break
        if any(c.bbox[0] < left_edge or (is_figure(c.text) and not _YEAR_RE.match(c.text)) for c in over):
            break  # text across the figures, or figures: a row of a table, not its header
        first -= 1
    return start - first


def _header(head: list[_Line], cols: list[tuple[float, float]], left_edge: float) -> list[str]:
    """The table's header: "Line item" (or the head's own label cell) and each column's texts,
    top to bottom."""
    parts: list[list[str]] = [[] for _ in range(len(cols) + 1)]
    for ln in head:
        for c in ln.cells:
            if c.bbox[2] < left_edge:
                parts[0].append(c.text)
                continue
            for k in _over_columns(c, cols):
                parts[k + 1].append(c.text)
    return [" ".join(parts[0]) or LABEL_HEADER] + [" ".join(p) for p in parts[1:]]


def _body(run: list[_Line], cols: list[tuple[float, float]]) -> tuple[list[list[str]], list[BBox]]:
    """The data rows (label, then each column's figure) and their boxes; a label row that wraps
    onto the row under it joins that row's label, the other label rows group and are dropped."""
    gaps = [_gap(a, b) for a, b in zip(run, run[1:]) if a.is_figure_row and b.is_figure_row]
    usual = statistics.median(gaps) if gaps else 0.5
    rows: list[list[str]] = []
    boxes: list[BBox] = []
    carry: list[_Line] = []
    for i, ln in enumerate(run):
        if ln.is_label_row:
            nxt = run[i + 1] if i + 1 < len(run) else None
            wraps = nxt is not None and not ln.cells[0].text.endswith(":") and _gap(ln, nxt) < 0.6 * usual
            carry = carry + [ln] if wraps else []
            continue
        cells = [""] * (len(cols) + 1)
        label = ln.cells[0]
        if is_figure(label.text) and not _WORD_RE.search(label.text):
            cells[_column_index(label, cols) + 1] = label.text  # a row of figures only (a total under a rule)
        else:
            cells[0] = _label(" ".join([c.cells[0].text for c in carry] + [label.text]))
        for c in ln.figures:
            cells[_column_index(c, cols) + 1] = c.text
        rows.append(cells)
        boxes.append(_union([ln.bbox] + [c.bbox for c in carry]))
        carry = []
    return rows, boxes


def _statement(lines: list[_Line], start: int, end: int, taken: set[int]) -> tuple[RawTable, list[_Line]] | None:
    """The statement over lines[start:end] with the header rows above it, and the lines it takes;
    None when its figures do not stand in columns."""
    run = lines[start:end]
    first = next(i for i, ln in enumerate(run) if ln.is_figure_row)
    years = all(_YEAR_RE.match(c.text) for c in run[first].figures)
    head_inside = first + 1 if years and sum(ln.is_figure_row for ln in run) > MIN_FIGURE_ROWS else 0
    body = run[head_inside:]
    cols = _figure_columns([ln for ln in body if ln.is_figure_row])
    if cols is None:
        return None
    labels = [ln.cells[0].bbox[2] for ln in body if ln.is_figure_row and _WORD_RE.search(ln.cells[0].text)]
    if not labels or max(labels) > min(a for a, _ in cols) + COLUMN_SLACK:
        return None  # no line items, or a "label" reaching into the figures: text set in columns
    n_above = _header_rows(lines, start, cols, taken)
    head = lines[start - n_above:start] + run[:head_inside]
    header = _header(head, cols, min(a for a, _ in cols) - 3 * COLUMN_SLACK)
    rows, boxes = _body(body, cols)
    if len(rows) < MIN_FIGURE_ROWS:
        return None
    x0 = min(ln.bbox[0] for ln in run)
    x1 = max(b for _, b in cols)
    boxes = [(x0, b[1], x1, b[3]) for b in boxes]
    head_box = _union([ln.bbox for ln in head]) if head else None
    taken = head + run
    table = RawTable(bbox=_union([ln.bbox for ln in taken]), header=header, header_bbox=head_box, rows=rows, row_bboxes=boxes)
    return table, taken


def find_statement_tables(page: RawPage, figures: Sequence[BBox] = ()) -> tuple[list[RawTable], list[TextBlock]]:
    """The page's statement tables, and its text blocks with those tables' lines taken out. Lines
    inside a table already found or a figure are not looked at. A page without a statement comes
    back as it was."""
    taken_regions = [t.bbox for t in page.tables] + list(figures)
    free: list[Line] = [ln for b in page.blocks if not any(_center_in(b.bbox, t) for t in taken_regions) for ln in b.lines]
    if len(free) < 2 * MIN_FIGURE_ROWS:
        return [], page.blocks
    rows = _visual_rows(free)
    lines = _lines(rows)
    tables: list[RawTable] = []
    used_rows: set[int] = set()
    for start, end in _runs(lines):
        found = _statement(lines, start, end, used_rows)
        if found is None:
            continue
        table, taken = found
        tables.append(table)
        used_rows.update(id(ln) for ln in taken)
    if not tables:
        return [], page.blocks
    row_of = {id(ln): r for ln, r in zip(lines, rows)}
    used = {id(x) for key in used_rows for c in row_of[key].cells for x in c}
    return tables, cut_blocks(page.blocks, used)
