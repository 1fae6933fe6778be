"""Code listings: blocks set in a typewriter font become code units, not paragraphs.

A block is code when every line of it is monospaced (extract.py marks a line `mono` when most of
its characters are), set at about body size (not the smaller size of a footnote) and not bold, and
it reads as code rather than a lone word: two lines or more, or one line with code punctuation
("void f(int x);", "> x <- c(1)"). An option list in a typewriter font stays a list (layout.py).
A document set mostly in a typewriter font (a plain-text filing printed in Courier) has no code
listings to tell apart: code_listings_apply says so and layout.py then marks none.

Code text keeps its line breaks and its indentation (rebuilt from the lines' left edges in
character widths), which paragraph text (joined, de-hyphenated) would lose.
"""

from __future__ import annotations

from collections.abc import Sequence

from backend.ingest.extract import Line, RawPage

MAX_MONO_SHARE = 0.4  # above this share of a document's characters in a typewriter font, nothing is code
CODE_PUNCTUATION = frozenset("(){}[];=<>$#*/|\\")
MIN_SIZE = 0.85  # of body size: smaller typewriter lines are footnotes (a URL at 8 pt under 10 pt text)
MAX_INDENT = 40  # columns of indentation kept for one line


def code_listings_apply(pages: Sequence[RawPage]) -> bool:
    """Whether typewriter text stands out in this document: under MAX_MONO_SHARE of its characters."""
    mono = total = 0
    for page in pages:
        for block in page.blocks:
            for ln in block.lines:
                total += len(ln.text)
                mono += len(ln.text) if ln.mono else 0
    return total > 0 and mono <= MAX_MONO_SHARE * total


def is_code(lines: Sequence[Line], body_size: float) -> bool:
    """Every line monospaced, not bold, about body size (a listing in \\small is; a footnote is not),
    and more than a lone word."""
    if not lines or not all(ln.mono and not ln.bold and MIN_SIZE * body_size <= ln.size <= body_size * 1.08 for ln in lines):
        return False
    if len(lines) >= 2:
        return True
    text = lines[0].text
    return any(c in CODE_PUNCTUATION for c in text)


def _char_width(lines: Sequence[Line]) -> float:
    """The width of one character of the font: monospaced, so a line's width over its length."""
    widths = [(ln.bbox[2] - ln.bbox[0]) / len(ln.text) for ln in lines if len(ln.text) >= 4]
    return sorted(widths)[len(widths) // 2] if widths else max(lines[0].size * 0.52, 1.0)


def _rows(lines: Sequence[Line]) -> list[list[Line]]:
    """Lines grouped into visual rows (a listing set in two columns gives two lines at one height)."""
    rows: list[list[Line]] = []
    for ln in sorted(lines, key=lambda ln: (ln.bbox[1], ln.bbox[0])):
        last = rows[-1][-1] if rows else None
        if last is not None and abs(ln.bbox[1] - last.bbox[1]) < 0.5 * max(ln.size, 4.0):
            rows[-1].append(ln)
        else:
            rows.append([ln])
    return rows


def code_text(lines: Sequence[Line]) -> str:
    """The listing's text: one line per visual row, each indented (and each piece of a row placed)
    by its offset from the leftmost line, in character widths."""
    if not lines:
        return ""
    left = min(ln.bbox[0] for ln in lines)
    width = _char_width(lines)
    out = []
    for row in _rows(lines):
        text = ""
        for ln in sorted(row, key=lambda ln: ln.bbox[0]):
            column = min(MAX_INDENT if not text else 10_000, max(0, round((ln.bbox[0] - left) / width)))
            text += " " * max(column - len(text), 1 if text else 0) + ln.text
        out.append(text)
    return "\n".join(out)
