"""Stage 4: the section tree (HiKEY's document hierarchy parsing, rule-based).

Sources, strongest first: the PDF outline; heading numbering (1, 1.2, 1.2.1, A.1, Appendix B,
roman); font size/weight clusters learned from the numbered headings; a table-of-contents page
(which raises the confidence of headings it lists). Every block gets the section it falls under,
so every unit has a section path and a governing header.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from difflib import SequenceMatcher

from backend.ingest.layout import LayoutBlock
from backend.types import FURNITURE_KINDS as FURNITURE
from backend.types import BlockKind, Section

# A TOC entry: a title, a separator (a dot leader, an ellipsis or a space) and a page number at the
# end. The pattern `^(.*?\w.*?)\s*(?:\.{2,}|…+|\s{2,}|\s)\s*(\d{1,4}|[ivxlc]{1,5})$` is O(n^2) on a
# line of n characters (260 ms at 2,000, and a dense page's lines are longer), so its tail is
# matched on the reversed line, in one anchored pass: the greedy tail is the lazy title's rest.
_TOC_TAIL_REVERSED_RE = re.compile(r"\n?(?:[ivxlc]{1,5}|\d{1,4})\s*(?:\.{2,}|…+|\s)\s*", re.IGNORECASE)
_WORD_RE = re.compile(r"\w")
TOC_NUMBER_LINE_RE = re.compile(r"(?:\d{1,4}|[A-Z])(?:\.\d{1,3})*\.?|[ivxlc]{1,6}")
# A dot leader ending a TOC line: `(?:\s*\.){4,}\s*$|\s*…+\s*$`, searched. Searching that is
# O(n^2) over a run of n spaces, so both are matched on the reversed line (leader_start).
_LEADER_REVERSED_RES = (re.compile(r"\s*(?:\.\s*){4,}"), re.compile(r"\s*…+\s*"))
# A title, a dot leader and a page number: "ASN.1 structure handling . . . . 3", "Porting.....12".
LEADER_ENTRY_RE = re.compile(r"\w.*?(?:\s?\.){3,}\s*(?:\d{1,4}|[ivxlc]{1,6})\s*$|\w.*?…+\s*\d{1,4}\s*$", re.IGNORECASE)
# A back-of-book index entry: a term, then page numbers after a comma or a dot leader ("trees, 4, 12-14").
INDEX_ENTRY_RE = re.compile(r"^\S.*?(?:,|(?:\s?\.){3,})\s*\d{1,4}(?:[-–]\d{1,4})?(?:,\s*\d{1,4}(?:[-–]\d{1,4})?)*\s*$")
INDEX_TITLE_RE = re.compile(r"^(?:[\w ,&/-]{0,40} )?index(?:es)?$", re.IGNORECASE)  # "Index", "Concept Index"
JUNK_TITLES = re.compile(r"^(untitled|microsoft word|document\d*|slide \d+|none)\b", re.IGNORECASE)


def leader_start(line: str) -> int | None:
    """Where the dot leader (four dots or more, or an ellipsis) ending the line starts, or None."""
    rev = line[::-1]
    longest = max((m.end() for m in (r.match(rev) for r in _LEADER_REVERSED_RES) if m), default=0)
    return len(line) - longest if longest else None


def toc_entry_title(line: str) -> str | None:
    """The title of a TOC entry line ("Porting..... 12" -> "Porting"), or None."""
    tail = _TOC_TAIL_REVERSED_RE.match(line[::-1])
    if tail is None:
        return None
    title = line[: len(line) - tail.end()]
    return title if "\n" not in title and _WORD_RE.search(title) else None


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", text.lower())


@dataclass(slots=True)
class Heading:
    block: LayoutBlock
    level: int
    confidence: float
    source: str


@dataclass(slots=True)
class Hierarchy:
    title: str
    title_block: LayoutBlock | None
    headings: dict[int, Heading]  # block order -> heading
    virtual: list[tuple[int, int, str]]  # (insert before block order, level, title): outline entries with no block
    toc_entries: list[str]
    source: str


def _number_depth(number: str) -> int:
    if re.fullmatch(r"[A-Z]", number) or re.fullmatch(r"[IVX]+", number):
        return 1
    return number.count(".") + 1


def _pick_title(blocks: list[LayoutBlock], body_size: float) -> LayoutBlock | None:
    first_page = [b for b in blocks if b.page == 1 and b.lines and b.kind not in (BlockKind.HEADER, BlockKind.FOOTER, BlockKind.PAGE_NUMBER, BlockKind.CAPTION)]
    if not first_page:
        return None
    best = max(first_page, key=lambda b: (b.size, -b.bbox[1]))
    if best.size >= body_size * 1.25 and len(best.text.split()) <= 30 and any(c.isalpha() for c in best.text):
        return best
    return None


def _toc_pages(blocks: list[LayoutBlock]) -> tuple[set[int], list[str]]:
    by_page: dict[int, list[str]] = defaultdict(list)
    for b in blocks:
        for ln in b.lines:
            by_page[b.page].append(ln.text)
    pages: set[int] = set()
    entries: list[str] = []
    for page, lines in by_page.items():
        if page > 12:
            continue
        hits = [title.strip(" .") for title in map(toc_entry_title, lines) if title is not None]
        has_word = any("contents" in t.lower() for t in lines[:10])
        number_lines = sum(1 for t in lines if re.fullmatch(r"\d{1,4}", t.strip()))
        # Entry numbers and page numbers set on lines of their own ("5" / "Managing Packages" /
        # "29") say nothing either way; without this a TOC page that does not repeat the word
        # "Contents" falls under the half-of-the-lines bar and its entries become headings.
        worded = sum(1 for t in lines if not TOC_NUMBER_LINE_RE.fullmatch(t.strip()))
        leaders = [t for t in lines if leader_start(t) is not None]
        if len(hits) >= 6 and (has_word or len(hits) >= 0.5 * worded):
            pages.add(page)
            entries.extend(h for h in hits if len(h) > 2)
        elif len(leaders) >= 6 and len(leaders) >= 0.25 * worded:
            # Entry number, title + dot leader and page number on lines of their own (LaTeX).
            pages.add(page)
            entries.extend(e for e in (t[: leader_start(t)].strip() for t in lines) if len(e) > 2 and not TOC_NUMBER_LINE_RE.fullmatch(e))
        elif has_word and number_lines >= 5:
            # Titles and page numbers on separate lines.
            pages.add(page)
            entries.extend(t.strip() for t in lines if 3 < len(t.strip()) < 120 and not re.fullmatch(r"\d{1,4}", t.strip()) and "contents" not in t.lower())
    return pages, entries


def _is_index_page(lines: list[str], titled: bool) -> bool:
    entries = sum(1 for t in lines if INDEX_ENTRY_RE.match(t.strip()))
    worded = sum(1 for t in lines if len(t.strip()) > 1 and not INDEX_TITLE_RE.match(t.strip()))  # not "A", "B" group letters
    return titled and entries >= 4 and entries >= 0.4 * max(worded, 1)


def _index_pages(blocks: list[LayoutBlock]) -> set[int]:
    """Pages of the back-of-book index: in the second half of the document, opened by a block
    titled "... Index" (or continuing an index page), mostly entries with page numbers."""
    by_page: dict[int, list[LayoutBlock]] = defaultdict(list)
    for b in blocks:
        if b.kind not in FURNITURE:
            by_page[b.page].append(b)
    last = max(by_page, default=0)
    pages: set[int] = set()
    for page in sorted(by_page):
        if page <= last / 2:
            continue
        lines = [ln.text for b in by_page[page] for ln in b.lines]
        titled = page - 1 in pages or any(INDEX_TITLE_RE.match(b.text.strip()) for b in by_page[page])
        if _is_index_page(lines, titled):
            pages.add(page)
    return pages


def _is_toc_block(b: LayoutBlock, on_toc_page: bool) -> bool:
    """A block of table-of-contents lines: most of its lines are entries with a dot leader and a
    page number (or entry numbers on lines of their own). On a detected TOC page any leader
    line, a short block ("Contents", "Appendix A") or one TOC entry (toc_entry_title) per line counts too."""
    lines = [ln.text.strip() for ln in b.lines] or [b.text.strip()]
    leaders = sum(1 for t in lines if LEADER_ENTRY_RE.match(t) or leader_start(t) is not None)
    numbers = sum(1 for t in lines if TOC_NUMBER_LINE_RE.fullmatch(t))
    if leaders and leaders + numbers >= 0.6 * len(lines):
        return True
    if not on_toc_page:
        return False
    # "Appendix A" / "Copying Information . . . 24": a label line above its entry.
    entries = sum(1 for t in lines if toc_entry_title(t) is not None)
    return leaders > 0 or len(b.text.split()) <= 4 or entries + numbers >= 0.6 * len(lines)


def mark_navigation(blocks: list[LayoutBlock], headings: dict[int, Heading], toc_pages: set[int]) -> None:
    """Table-of-contents lines and back-of-book index entries point to content and are not
    content: mark them TOC / INDEX so they stay visible in the parse view and never become units
    (else a TOC line such as "ASN.1 structure handling . . . 3" comes back as evidence and as the answer)."""
    index_pages = _index_pages(blocks)
    for b in blocks:
        if b.order in headings or b.kind in (*FURNITURE, BlockKind.TITLE, BlockKind.TABLE, BlockKind.FIGURE, BlockKind.CODE):
            continue
        if b.page in index_pages:
            b.kind = BlockKind.INDEX
        elif _is_toc_block(b, b.page in toc_pages):
            b.kind = BlockKind.TOC
        else:
            continue
        b.heading_candidate = False


def _merge_split_headings(blocks: list[LayoutBlock]) -> list[LayoutBlock]:
    """Join a heading that wrapped into two blocks of the same style ("2.1 A long" + "title")."""
    out: list[LayoutBlock] = []
    for b in blocks:
        prev = out[-1] if out else None
        if (
            prev is not None
            and prev.heading_candidate
            and b.heading_candidate
            and b.number is None
            and prev.page == b.page
            and abs(prev.size - b.size) < 0.6
            and prev.bold == b.bold
            and 0 <= b.bbox[1] - prev.bbox[3] < max(prev.size, 6) * 0.9
            and len(prev.text.split()) + len(b.text.split()) <= 22
        ):
            prev.text = f"{prev.text} {b.text}"
            prev.lines = prev.lines + b.lines
            prev.bbox = (min(prev.bbox[0], b.bbox[0]), prev.bbox[1], max(prev.bbox[2], b.bbox[2]), b.bbox[3])
            continue
        out.append(b)
    return out


_UNITS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
_TEENS = ("ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen")
_TENS = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
CHAPTER_LABEL_RE = re.compile(r"^(?:chapter|appendix)(?:\s+(?P<num>\S.{0,24}?))?\.?$", re.IGNORECASE)
ROMAN_RE = re.compile(r"^[IVXLC]{1,7}$")


def _number_word(text: str) -> int | None:
    """1-99 written as a word, as LaTeX chapter labels do ("ONE", "TWENTYONE", "twenty-two")."""
    word = re.sub(r"[\s\-]+", "", text.lower())
    for i, unit in enumerate((*_UNITS, *_TEENS)):
        if word == unit:
            return i + 1
    for i, tens in enumerate(_TENS):
        if word.startswith(tens):
            rest = word[len(tens):]
            if not rest:
                return 20 + 10 * i
            if rest in _UNITS:
                return 20 + 10 * i + _UNITS.index(rest) + 1
    return None


def _label_number(text: str) -> str | None:
    """The chapter number a label part names: "3", "IV", "B" (appendix), "ONE" -> "1"."""
    text = text.strip().rstrip(".:")
    if re.fullmatch(r"\d{1,3}", text) or ROMAN_RE.fullmatch(text) or re.fullmatch(r"[A-Z]", text):
        return text
    n = _number_word(text)
    return str(n) if n is not None else None


def _fold_chapter_labels(blocks: list[LayoutBlock]) -> list[LayoutBlock]:
    """Fold a chapter label set apart from its title ("CHAPTER" / "ONE" / "ABOUT THIS MANUAL",
    "Chapter 3" / "Methods") into the title block, which takes the label's number. Without this
    the label becomes a level-1 section of its own and the real title sinks a level."""
    out: list[LayoutBlock] = []
    i = 0
    while i < len(blocks):
        b = blocks[i]
        m = CHAPTER_LABEL_RE.match(b.text.strip()) if b.heading_candidate else None
        if m is None:
            out.append(b)
            i += 1
            continue
        label = [b]
        number = _label_number(m.group("num")) if m.group("num") else None
        j = i + 1
        if m.group("num") is None and j < len(blocks) and blocks[j].page == b.page and blocks[j].heading_candidate:
            number = _label_number(blocks[j].text)
            if number is not None:
                label.append(blocks[j])
                j += 1
        title = blocks[j] if j < len(blocks) else None
        if number is None or title is None or title.page != b.page or not title.heading_candidate or title.number:
            out.append(b)
            i += 1
            continue
        title.number = number
        title.lines = [ln for blk in label for ln in blk.lines] + title.lines
        title.bbox = (
            min(blk.bbox[0] for blk in (*label, title)), min(blk.bbox[1] for blk in (*label, title)),
            max(blk.bbox[2] for blk in (*label, title)), max(blk.bbox[3] for blk in (*label, title)),
        )
        out.append(title)
        i = j + 1
    return out


def _demote_definition_terms(blocks: list[LayoutBlock], body_size: float) -> None:
    """A body-size bold term whose next block is indented under it, every line of it ("required" /
    "    Packages which are necessary ..."), is the term of a definition list, not a heading. A
    one-line next block may be a paragraph with a first-line indent after a heading, so it only
    counts when it follows the term with no paragraph spacing, as definition lists set it."""
    content = [b for b in blocks if b.kind not in (BlockKind.HEADER, BlockKind.FOOTER, BlockKind.PAGE_NUMBER)]
    for b, nxt in zip(content, content[1:]):
        if (
            b.heading_candidate
            and not b.number
            and b.size < body_size * 1.12
            and nxt.page == b.page
            and not nxt.heading_candidate
            and nxt.kind == BlockKind.PARAGRAPH  # plain body text, not a list or a bold table header
            and not nxt.bold
            and abs(nxt.size - body_size) < 0.6
            and nxt.lines  # a block made from a table's header cells carries its text without lines
            and 0 <= nxt.bbox[1] - b.bbox[3] < (2 if len(nxt.lines) >= 2 else 0.35) * body_size  # right under the term
            and max(8.0, 0.8 * body_size) <= min(ln.bbox[0] for ln in nxt.lines) - b.bbox[0] <= 6 * body_size
        ):
            b.heading_candidate = False
            b.kind = BlockKind.PARAGRAPH


def _outline_headings(
    blocks: list[LayoutBlock], toc: list[list], title_block: LayoutBlock | None
) -> tuple[dict[int, Heading], list[tuple[int, int, str]]]:
    headings: dict[int, Heading] = {}
    virtual: list[tuple[int, int, str]] = []
    by_page: dict[int, list[LayoutBlock]] = defaultdict(list)
    for b in blocks:
        if b.lines and b.kind not in (BlockKind.HEADER, BlockKind.FOOTER, BlockKind.PAGE_NUMBER):
            by_page[b.page].append(b)
    used: set[int] = set()
    max_level = max(e[0] for e in toc)
    for level, title, page, *_ in toc:
        key = _norm(title)
        if not key or page is None or page < 1:
            continue
        best, best_score = None, 0.0
        for cand_page in (page, page + 1, page - 1):
            for b in by_page.get(cand_page, []):
                if b.order in used or b is title_block and level > 1:
                    continue
                bkey = _norm(b.text)
                if not bkey:
                    continue
                if bkey == key:
                    score = 1.0
                elif len(key) >= 4 and (bkey.startswith(key) and len(bkey) <= len(key) * 1.6 or key.startswith(bkey) and len(bkey) >= 0.5 * len(key)):
                    score = 0.9
                else:
                    score = SequenceMatcher(None, bkey[:120], key[:120]).ratio()
                score += 0.05 if b.heading_candidate else 0.0
                score -= 0.02 * abs(cand_page - page)
                if score > best_score:
                    best, best_score = b, score
            if best_score >= 1.0:
                break
        if best is not None and best_score >= 0.8:
            used.add(best.order)
            headings[best.order] = Heading(best, level, 1.0, "outline")
        else:
            first = next((b.order for b in blocks if b.page >= page), len(blocks))
            virtual.append((first, level, title.strip()))
    # Numbered headings deeper than the outline goes keep their own level.
    for b in blocks:
        if b.heading_candidate and b.order not in headings and b.number and _number_depth(b.number) > max_level:
            headings[b.order] = Heading(b, _number_depth(b.number), 0.6, "numbering")
    return headings, virtual


def _style(b: LayoutBlock) -> tuple[float, bool]:
    return (round(b.size * 2) / 2, b.bold)


def _font_numbering_headings(
    blocks: list[LayoutBlock], body_size: float, title_block: LayoutBlock | None, toc_pages: set[int], toc_entries: list[str]
) -> dict[int, Heading]:
    cands = [b for b in blocks if b.heading_candidate and b is not title_block and b.page not in toc_pages]
    if not cands:
        return {}
    votes: dict[tuple[float, bool], Counter[int]] = defaultdict(Counter)
    for b in cands:
        if b.number:
            votes[_style(b)][_number_depth(b.number)] += 1
    mapped = {s: c.most_common(1)[0][0] for s, c in votes.items()}
    styles = sorted({_style(b) for b in cands}, key=lambda s: (-s[0], not s[1]))
    level_of: dict[tuple[float, bool], int] = {}
    for rank, s in enumerate(styles):
        if s in mapped:
            level_of[s] = mapped[s]
        elif mapped:
            more = [mapped[m] for m in styles[:rank] if m in mapped]
            level_of[s] = min(6, (max(more) + 1) if more else 1)
        else:
            level_of[s] = min(4, rank + 1)
    toc_keys = {_norm(e) for e in toc_entries}
    out: dict[int, Heading] = {}
    for b in cands:
        ratio = b.size / body_size if body_size else 1.0
        if b.number:
            level = _number_depth(b.number)
            conf = 0.9 if (ratio >= 1.1 or b.bold) else 0.7
            source = "numbering"
        else:
            level = level_of[_style(b)]
            conf = 0.8 if ratio >= 1.3 else 0.65 if ratio >= 1.12 else 0.5
            source = "font"
        if _norm(b.text) in toc_keys:
            conf = min(0.95, conf + 0.15)
            source = "toc" if source == "font" else source
        out[b.order] = Heading(b, level, round(conf, 2), source)
    return out


def build_hierarchy(
    blocks: list[LayoutBlock], toc: list[list], metadata_title: str, file_stem: str, body_size: float
) -> tuple[list[LayoutBlock], Hierarchy]:
    blocks = _fold_chapter_labels(_merge_split_headings(blocks))
    for i, b in enumerate(blocks):
        b.order = i
    _demote_definition_terms(blocks, body_size)
    title_block = _pick_title(blocks, body_size)
    toc_pages, toc_entries = _toc_pages(blocks)
    usable_toc = [e for e in toc if len(e) >= 3 and e[2] is not None and e[2] >= 1]
    if len(usable_toc) >= 2:
        headings, virtual = _outline_headings(blocks, usable_toc, title_block)
        source = "outline"
    else:
        headings = _font_numbering_headings(blocks, body_size, title_block, toc_pages, toc_entries)
        virtual = []
        source = "numbering+font" if headings else "flat"
    # Candidates that did not become headings are body text.
    for b in blocks:
        if b.kind == BlockKind.HEADING and b.order not in headings:
            b.kind = BlockKind.PARAGRAPH
        if b.order in headings:
            b.kind = BlockKind.HEADING
    if title_block is not None and title_block.order not in headings:
        title_block.kind = BlockKind.TITLE
    mark_navigation(blocks, headings, toc_pages)
    if title_block is not None and title_block.order in headings and headings[title_block.order].level <= 1 and source == "outline":
        # The outline's first entry is often the document title itself.
        del headings[title_block.order]
        title_block.kind = BlockKind.TITLE
        outline = [h for h in headings.values() if h.source == "outline"]
        if outline and all(h.level >= 2 for h in outline) and all(v[1] >= 2 for v in virtual):
            # The title was the outline's only top entry, so its children are the top-level
            # sections: level 1 under the document root, not 2.
            for h in outline:
                h.level -= 1
            virtual = [(order, level - 1, text) for order, level, text in virtual]
    title = title_block.text if title_block is not None else ""
    if not title:
        meta = (metadata_title or "").strip()
        title = meta if meta and not JUNK_TITLES.match(meta) else ""
    if not title:
        first = min(headings.values(), key=lambda h: h.block.order, default=None)
        title = first.block.text if first is not None else file_stem
    return blocks, Hierarchy(title=title.strip(), title_block=title_block, headings=headings, virtual=virtual, toc_entries=toc_entries, source=source)


def assign_sections(
    blocks: list[LayoutBlock], hier: Hierarchy, doc_id: str
) -> tuple[list[Section], dict[int, str], dict[int, str]]:
    """Walk blocks in reading order with a stack of open sections.

    Returns (sections, block order -> section id it belongs to, heading block order -> its section id).
    """
    root = Section(
        id=f"{doc_id}:s0", doc=doc_id, title=hier.title, number=None, level=0, parent=None, path=[hier.title],
        page=1, bbox=hier.title_block.bbox if hier.title_block is not None else None, confidence=1.0, source="root",
    )
    sections = [root]
    stack: list[Section] = [root]
    owner: dict[int, str] = {}
    heading_section: dict[int, str] = {}
    virtual = sorted(hier.virtual)
    vi = 0

    def open_section(title: str, level: int, number: str | None, page: int, bbox, confidence: float, source: str) -> Section:
        while len(stack) > 1 and stack[-1].level >= level:
            stack.pop()
        parent = stack[-1]
        sec = Section(
            id=f"{doc_id}:s{len(sections)}", doc=doc_id, title=title, number=number, level=level, parent=parent.id,
            path=[*parent.path, title], page=page, bbox=bbox, confidence=confidence, source=source,
        )
        sections.append(sec)
        stack.append(sec)
        return sec

    for b in blocks:
        while vi < len(virtual) and virtual[vi][0] <= b.order:
            _, level, title = virtual[vi]
            open_section(title, level, None, b.page, None, 0.9, "outline")
            vi += 1
        h = hier.headings.get(b.order)
        if h is not None:
            sec = open_section(b.text, h.level, b.number, b.page, b.bbox, h.confidence, h.source)
            heading_section[b.order] = sec.id
        owner[b.order] = stack[-1].id
    while vi < len(virtual):
        _, level, title = virtual[vi]
        open_section(title, level, None, blocks[-1].page if blocks else 1, None, 0.9, "outline")
        vi += 1
    return sections, owner, heading_section
