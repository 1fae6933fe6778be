"""Tables without ruling lines, found where a page's text lines align in columns.

find_tables (extract.py) runs only where ruling lines make a table possible, so a table set
without rules ("Type | Bounds | Comment" in a manual, a results table set with white space)
came out as a run of short paragraphs. Here such a table is found from the text lines alone:

- the page's lines are grouped into visual rows (lines at one height);
- a run of consecutive rows, each split into two cells or more by a gap of about an em, close
  together (no blank line between them), whose cells stay inside columns that a vertical gutter
  of white space separates over every row of the run;
- short cells: a line of prose (more than 7 words in a row of two cells, more than 16 in a
  wider row, or wider than 45% of the page) is never a cell, so prose set in two columns never
  reads as a table;
- three columns or more (two when the header row is bold over a plain body), a header row that
  fills every column with short labels and is not a row like the others ("Item 3." over
  "Item 4."), two body rows at least;
- the whole table: a run whose next row goes on in its first column (cut off by a long cell) is
  left as text, not kept in part; a header's first line right above the run joins the header;
- not right above or below a ruled table (its header lines, read with it by find_tables), and
  not a listing whose header row is set in a typewriter font (a program's output: code.py).

A row of one cell right under a row of the run, inside a column other than the first, is that
row's cell wrapped onto a second line. The table's lines leave their text blocks; what remains of
those blocks stays text. The result is a RawTable, as find_tables gives one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from backend.ingest.extract import Line, RawPage, RawTable, TextBlock
from backend.types import BBox

MIN_GAP_EM = 0.8  # a gap between two cells of a row, in font sizes
MAX_ROW_GAP_EM = 1.0  # white space between two rows of one table, in font sizes
MAX_CELL_WORDS = 7  # a cell of more words is prose (in a row of two cells)
MAX_WIDE_ROW_CELL_WORDS = 16  # in a row of three cells or more
MAX_CELL_WIDTH = 0.45  # a cell wider than this share of the page is prose
MAX_HEADER_WORDS = 4
MIN_BODY_ROWS = 2
YEAR_RE = re.compile(r"^(?:19|20)\d{2}$")
WORD_RE = re.compile(r"[^\W\d_]{2,}")


@dataclass(slots=True)
class _Row:
    cells: list[list[Line]]  # lines of each cell, left to right
    bbox: BBox


def _union(boxes) -> BBox:
    boxes = list(boxes)
    return (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes))


def _center_in(b: BBox, region: BBox) -> bool:
    cx, cy = (b[0] + b[2]) / 2, (b[1] + b[3]) / 2
    return region[0] - 1 <= cx <= region[2] + 1 and region[1] - 1 <= cy <= region[3] + 1


def _visual_rows(lines: list[Line]) -> list[_Row]:
    """Lines at one height make a row; in a row, lines closer than MIN_GAP_EM make one cell."""
    rows: list[list[Line]] = []
    for ln in sorted(lines, key=lambda ln: ((ln.bbox[1] + ln.bbox[3]) / 2, ln.bbox[0])):
        mid = (ln.bbox[1] + ln.bbox[3]) / 2
        if rows:
            last = rows[-1]
            last_mid = sum((x.bbox[1] + x.bbox[3]) / 2 for x in last) / len(last)
            if abs(mid - last_mid) < 0.45 * max(ln.size, 4.0):
                last.append(ln)
                continue
        rows.append([ln])
    out: list[_Row] = []
    for row in rows:
        row.sort(key=lambda ln: ln.bbox[0])
        cells: list[list[Line]] = [[row[0]]]
        for prev, ln in zip(row, row[1:]):
            if ln.bbox[0] - prev.bbox[2] >= MIN_GAP_EM * max(ln.size, prev.size):
                cells.append([ln])
            else:
                cells[-1].append(ln)
        out.append(_Row(cells, _union(ln.bbox for ln in row)))
    return out


def _cell_text(cell: list[Line]) -> str:
    return " ".join(ln.text for ln in cell)


def _cell_box(cell: list[Line]) -> BBox:
    return _union(ln.bbox for ln in cell)


def _short_cells(row: _Row, page_width: float) -> bool:
    """No cell of the row reads as prose: a few words (more in a row of three cells or more, which
    prose set in two columns never makes), none wider than MAX_CELL_WIDTH of the page."""
    words = MAX_CELL_WORDS if len(row.cells) < 3 else MAX_WIDE_ROW_CELL_WORDS
    return all(
        len(_cell_text(c).split()) <= words and _cell_box(c)[2] - _cell_box(c)[0] <= MAX_CELL_WIDTH * page_width
        for c in row.cells
    )


def _row_gap(a: _Row, b: _Row) -> float:
    size = max(ln.size for c in b.cells for ln in c)
    return (b.bbox[1] - a.bbox[3]) / max(size, 4.0)


def _columns(rows: Sequence[_Row]) -> list[tuple[float, float]]:
    """The x-ranges of the columns: the cells' ranges merged where they overlap; what is left apart
    is separated by a gutter of white space over every row."""
    spans = sorted((_cell_box(c)[0], _cell_box(c)[2]) for r in rows for c in r.cells)
    cols: list[list[float]] = []
    for x0, x1 in spans:
        if cols and x0 < cols[-1][1] + 2.0:
            cols[-1][1] = max(cols[-1][1], x1)
        else:
            cols.append([x0, x1])
    return [(a, b) for a, b in cols]


def _column_of(cell: list[Line], cols: list[tuple[float, float]]) -> int:
    box = _cell_box(cell)
    mid = (box[0] + box[2]) / 2
    return min(range(len(cols)), key=lambda i: 0 if cols[i][0] <= mid <= cols[i][1] else min(abs(mid - cols[i][0]), abs(mid - cols[i][1])))


def _shape(text: str) -> str:
    return re.sub(r"\d+", "#", text.strip().lower())


def _is_label(text: str) -> bool:
    """A header cell: a few words, one of two letters at least ("R name", not ":=" or "i = 4"), or a year."""
    if YEAR_RE.match(text):
        return True
    return 0 < len(text.split()) <= MAX_HEADER_WORDS and WORD_RE.search(text) is not None


def _accept(rows: list[_Row], cols: list[tuple[float, float]]) -> bool:
    """The run is a table: enough columns, a header filling them with labels, enough body rows."""
    header, body = rows[0], rows[1:]
    if len(body) < MIN_BODY_ROWS or len(header.cells) != len(cols):
        return False
    if not all(_is_label(_cell_text(c)) for c in header.cells):
        return False
    shape = _shape(_cell_text(header.cells[0]))
    if any(_shape(_cell_text(r.cells[0])) == shape for r in body):
        return False  # the first row is a row like the others ("Item 3. | ...", "Item 4. | ..."), not a header
    if len(cols) >= 3:
        return True
    bold_head = all(ln.bold for c in header.cells for ln in c)
    plain_body = not any(ln.bold for r in body for c in r.cells for ln in c)
    return len(cols) == 2 and bold_head and plain_body and len(body) >= 3


def _runs(rows: list[_Row], page_width: float) -> list[tuple[int, int]]:
    """Maximal runs of close rows of two short cells or more, as (first, end) indexes into rows; a
    one-cell row right under such a row and off its first column may join as a wrapped cell."""
    runs: list[tuple[int, int]] = []
    start: int | None = None
    for i, row in enumerate(rows):
        prev = rows[i - 1] if i else None
        close = prev is not None and _row_gap(prev, row) <= MAX_ROW_GAP_EM
        tabular = len(row.cells) >= 2 and _short_cells(row, page_width)
        wrapped = (
            start is not None and len(row.cells) == 1 and len(prev.cells) >= 2 and _short_cells(row, page_width)
            and row.bbox[0] > rows[start].cells[0][0].bbox[0] + 20
        )
        if start is not None and close and (tabular or wrapped):
            continue
        if start is not None and i - start >= 1 + MIN_BODY_ROWS:
            runs.append((start, i))
        start = i if tabular else None
    if start is not None and len(rows) - start >= 1 + MIN_BODY_ROWS:
        runs.append((start, len(rows)))
    return runs


def _within_columns(row: _Row, cols: list[tuple[float, float]]) -> bool:
    """Every cell of the row inside one column (a header's first line), none across a gutter."""
    return all(any(c0 - 2 <= _cell_box(c)[0] and _cell_box(c)[2] <= c1 + 2 for c0, c1 in cols) for c in row.cells)


def _complete(rows: list[_Row], start: int, end: int, cols: list[tuple[float, float]]) -> bool:
    """The run holds the whole table: the row right under it does not go on in its columns (a
    row of cells starting in the first column, cut off because a cell runs long)."""
    if end >= len(rows) or _row_gap(rows[end - 1], rows[end]) > MAX_ROW_GAP_EM:
        return True
    after = rows[end]
    return not (len(after.cells) >= 2 and _column_of(after.cells[0], cols) == 0 and _cell_box(after.cells[0])[0] <= cols[0][1])


def _table(rows: list[_Row], start: int, end: int) -> RawTable | None:
    """The table of rows[start:end], or None when its columns do not hold (or it is not one)."""
    run = rows[start:end]
    while run and len(run[-1].cells) == 1:
        run = run[:-1]  # a one-cell row that ends the run is text after the table
    multi = [r for r in run if len(r.cells) >= 2]
    if len(multi) < 1 + MIN_BODY_ROWS:
        return None
    cols = _columns(multi)
    if len(cols) < 2 or any(len(r.cells) > len(cols) for r in multi) or not _complete(rows, start, end, cols):
        return None
    grid, boxes = _grid(run, cols)
    if grid is None or not _accept(multi, cols):
        return None
    above = rows[start - 1] if start else None
    if above is not None and _row_gap(above, run[0]) <= 0.5 and _within_columns(above, cols):
        for c in above.cells:  # the header's first line ("Schedule" over "/Form")
            grid[0][_column_of(c, cols)].insert(0, _cell_text(c))
        boxes[0] = _union([boxes[0], above.bbox])
    head = [ln for c in multi[0].cells for ln in c]
    if sum(ln.mono for ln in head) * 2 > len(head):
        return None  # a listing set in a typewriter font (a program's output, a data frame printed): code, not a table
    x0, x1 = min(c[0] for c in cols), max(c[1] for c in cols)
    boxes = [(x0, b[1], x1, b[3]) for b in boxes]
    texts = [[" ".join(parts) for parts in row] for row in grid]
    return RawTable(bbox=_union(boxes), header=texts[0], header_bbox=boxes[0], rows=texts[1:], row_bboxes=boxes[1:])


def _grid(run: list[_Row], cols: list[tuple[float, float]]) -> tuple[list[list[list[str]]] | None, list[BBox]]:
    """The cells' texts of each table row, by column (a one-cell row off the first column joins
    the row above: a wrapped cell), and each row's box. None when two cells share a column."""
    grid: list[list[list[str]]] = []
    boxes: list[BBox] = []
    for r in run:
        placed = [_column_of(c, cols) for c in r.cells]
        if len(set(placed)) != len(placed):
            return None, []  # two cells in one column: the gutters do not hold
        if len(r.cells) == 1 and grid:
            if placed[0] == 0:
                return None, []
            grid[-1][placed[0]].append(_cell_text(r.cells[0]))
            boxes[-1] = _union([boxes[-1], r.bbox])
            continue
        cells: list[list[str]] = [[] for _ in cols]
        for c, i in zip(r.cells, placed):
            cells[i].append(_cell_text(c))
        grid.append(cells)
        boxes.append(r.bbox)
    return grid, boxes


def _touches(a: BBox, b: BBox, gap: float = 24.0) -> bool:
    """Two boxes side by side across the page, less than `gap` points apart vertically."""
    across = min(a[2], b[2]) - max(a[0], b[0]) > 0
    return across and max(a[1] - b[3], b[1] - a[3]) < gap


def find_borderless_tables(page: RawPage, figures: Sequence[BBox] = ()) -> tuple[list[RawTable], list[TextBlock]]:
    """The page's tables without ruling lines, and its text blocks with those tables' lines taken
    out (a block is cut where they were; one left without lines is dropped). Lines inside a ruled table or a figure are not
    looked at. A page without such a table comes back as it was."""
    taken = [t.bbox for t in page.tables] + list(figures)
    free = [ln for b in page.blocks if not any(_center_in(b.bbox, t) for t in taken) for ln in b.lines]
    if len(free) < 6:
        return [], page.blocks
    tables: list[RawTable] = []
    used: set[int] = set()
    rows = _visual_rows(free)
    for start, end in _runs(rows, page.width):
        table = _table(rows, start, end)
        if table is None or any(_touches(table.bbox, t.bbox) for t in page.tables):
            continue  # lines just above or below a ruled table are its header or notes, read with it
        tables.append(table)
        used.update(id(ln) for ln in free if _center_in(ln.bbox, table.bbox))
    if not tables:
        return [], page.blocks
    return tables, cut_blocks(page.blocks, used)


def cut_blocks(blocks: list[TextBlock], used: set[int]) -> list[TextBlock]:
    """The text blocks with the lines whose id() is in `used` taken out: a block is cut where they
    were (the lines before and after stay apart); one left without lines is dropped."""
    out: list[TextBlock] = []
    for b in blocks:
        if not any(id(ln) in used for ln in b.lines):
            out.append(b)
            continue
        pieces: list[list[Line]] = [[]]
        for ln in b.lines:
            if id(ln) in used:
                pieces.append([])
            else:
                pieces[-1].append(ln)
        out.extend(TextBlock(lines=p, bbox=_union(ln.bbox for ln in p)) for p in pieces if p)
    return out
