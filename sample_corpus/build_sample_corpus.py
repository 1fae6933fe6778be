#!/usr/bin/env python3
"""Build the Strata sample corpus: four small, interlinked technical PDFs.

The corpus describes a fictional city programme ("Cool Streets", Larkhaven,
urban heat and tree canopy, 2019-2023).  All texts, numbers, names and charts
are original, written for Strata, and released under CC0-1.0.

The documents are designed to exercise a PDF parser:

* a title, numbered sections / subsections / sub-subsections, an appendix;
* two documents carry a PDF outline (bookmarks), two do not;
* ruled tables with captions above, raster and vector figures with captions
  below;
* in-text cross-references ("Table 1", "Fig. 2", "Section 2.1", "§3",
  "Appendix A") backed by internal GoTo links;
* links to the other PDFs of the corpus (GoToR, Launch) and URI links;
* running headers and "Page N of M" footers;
* one two-column page (policy brief, page 2).

Only the standard library and PyMuPDF are used.  The output is deterministic
(fixed metadata dates, no random document ID, seeded pseudo-random data).

Usage:  python sample_corpus/build_sample_corpus.py
"""

import os
import random

import pymupdf

OUT_DIR = os.path.dirname(os.path.abspath(__file__))

# ---------------------------------------------------------------------------
# Page geometry and typography
# ---------------------------------------------------------------------------
PAGE_W, PAGE_H = 595.0, 842.0  # A4 portrait, points
MARGIN_L = 64.0
MARGIN_R = 64.0
BODY_TOP = 72.0
BODY_BOTTOM = PAGE_H - 70.0
GUTTER = 24.0
HEADER_BASELINE = 42.0
FOOTER_BASELINE = PAGE_H - 36.0

SERIF = ("tiro", "tibo")  # Times-Roman / Times-Bold (base-14)
SANS = ("helv", "hebo")  # Helvetica / Helvetica-Bold (base-14)

BODY_SIZE = 10.5
BODY_LEAD = 14.2
PARA_GAP = 6.5

# level: (fontsize, leading, space before, space after)
HEADING_STYLE = {
    1: (14.5, 18.0, 14.0, 5.0),
    2: (12.0, 15.0, 9.0, 4.0),
    3: (11.0, 14.0, 6.0, 3.0),
}

BLACK = (0, 0, 0)
GRAY = (0.38, 0.38, 0.38)
LINK_BLUE = (0.05, 0.25, 0.62)
TABLE_HEAD_FILL = (0.87, 0.89, 0.92)

FIXED_DATES = {
    "cool_streets_report.pdf": "D:20231124100000+00'00'",
    "methods_appendix.pdf": "D:20231127100000+00'00'",
    "data_annex.pdf": "D:20231208100000+00'00'",
    "policy_brief.pdf": "D:20240212100000+00'00'",
}

BASE_URL = "https://example.org/strata/"

# Anchors of every document, filled while building; used to resolve links
# that point into another PDF of the corpus (GoToR with a page number).
REGISTRY = {}


_FONTS = {}


def text_width(text, font, size):
    # pymupdf.Font metrics are exact for all Latin-1 glyphs (get_text_length
    # under-measures some of them, e.g. "§" and "°", in recent versions).
    if font not in _FONTS:
        _FONTS[font] = pymupdf.Font(font)
    return _FONTS[font].text_length(text, fontsize=size)


# ---------------------------------------------------------------------------
# Inline markup:  [[shown text|target]]  -> link,  **text** -> bold
# targets: sec:2.1  tab:1  fig:2  app:A  (internal, GoTo)
#          file:other.pdf#sec:3         (GoToR into another corpus PDF)
#          launch:other.pdf             (Launch action)
#          uri:https://...              (URI)
# ---------------------------------------------------------------------------
def parse_markup(markup):
    """Return a list of segments (text, bold, target)."""
    segs = []
    i = 0
    while i < len(markup):
        if markup.startswith("[[", i):
            j = markup.index("]]", i)
            shown, target = markup[i + 2:j].split("|", 1)
            segs.append((shown, False, target))
            i = j + 2
        elif markup.startswith("**", i):
            j = markup.index("**", i + 2)
            segs.append((markup[i + 2:j], True, None))
            i = j + 2
        else:
            nxt = [k for k in (markup.find("[[", i), markup.find("**", i)) if k >= 0]
            j = min(nxt) if nxt else len(markup)
            segs.append((markup[i:j], False, None))
            i = j
    return segs


def to_words(segs):
    """Split segments into words; a word is a list of pieces (text, bold, target)."""
    words, cur = [], []
    for text, bold, target in segs:
        if target and len(text) <= 25:
            # keep short cross-references ("Figure 1", "Section 2.1") on one line
            parts = [text]
        else:
            parts = text.split(" ")
        for k, part in enumerate(parts):
            if k > 0 and cur:
                words.append(cur)
                cur = []
            if part:
                cur.append((part, bold, target))
    if cur:
        words.append(cur)
    # never break a line between a number and its unit ("36.8 °C")
    glued = []
    for word in words:
        if glued and word[0][0].startswith("°"):
            glued[-1] = glued[-1] + [(" ", word[0][1], None)] + word
        else:
            glued.append(word)
    return glued


def word_width(word, family, size):
    return sum(text_width(t, family[1] if b else family[0], size) for t, b, _ in word)


# ---------------------------------------------------------------------------
# Document builder with a simple flow layout (frames = columns)
# ---------------------------------------------------------------------------
class DocBuilder:
    def __init__(self, filename, short_title, org, meta, outline):
        self.filename = filename
        self.short_title = short_title
        self.org = org
        self.meta = meta
        self.outline = outline
        self.doc = pymupdf.open()
        self.page = None
        self.pno = -1
        self.frames = []
        self.fi = 0
        self.y = 0.0
        self.anchors = {}
        self.links = []  # (pno, rect, target)
        self.toc = []
        self.new_page(1)

    # -- frames -----------------------------------------------------------
    def new_page(self, ncols=1):
        self.page = self.doc.new_page(width=PAGE_W, height=PAGE_H)
        self.pno += 1
        if ncols == 1:
            self.frames = [pymupdf.Rect(MARGIN_L, BODY_TOP, PAGE_W - MARGIN_R, BODY_BOTTOM)]
        else:
            colw = (PAGE_W - MARGIN_L - MARGIN_R - GUTTER) / 2
            self.frames = [
                pymupdf.Rect(MARGIN_L, BODY_TOP, MARGIN_L + colw, BODY_BOTTOM),
                pymupdf.Rect(PAGE_W - MARGIN_R - colw, BODY_TOP, PAGE_W - MARGIN_R, BODY_BOTTOM),
            ]
        self.fi = 0
        self.y = BODY_TOP

    @property
    def frame(self):
        return self.frames[self.fi]

    def at_top(self):
        return self.y <= self.frame.y0 + 0.01

    def next_frame(self):
        if self.fi + 1 < len(self.frames):
            self.fi += 1
            self.y = self.frame.y0
        else:
            self.new_page(1)

    def fit(self, h):
        if self.y + h > self.frame.y1 and not self.at_top():
            self.next_frame()

    def space(self, h):
        if not self.at_top():
            self.y += h

    def page_break(self, ncols=1):
        self.new_page(ncols)

    def column_break(self):
        self.next_frame()

    # -- text -------------------------------------------------------------
    def _take_line(self, words, start, width, family, size):
        space = text_width(" ", family[0], size)
        end, w = start, 0.0
        while end < len(words):
            ww = word_width(words[end], family, size)
            add = ww if end == start else space + ww
            if end > start and w + add > width:
                break
            w += add
            end += 1
        return end

    def _render_line(self, words, x, baseline, family, size, color):
        # Build runs of identical (bold, target); spaces join a run only
        # when both neighbours belong to the same target.
        pieces = []
        for k, word in enumerate(words):
            if k > 0:
                prev, nxt = pieces[-1], word[0]
                tgt = prev[2] if prev[2] == nxt[2] else None
                pieces.append((" ", prev[1] if prev[2] == nxt[2] else False, tgt))
            pieces.extend(word)
        runs = []
        for t, b, tg in pieces:
            if runs and runs[-1][1] == b and runs[-1][2] == tg:
                runs[-1][0] += t
            else:
                runs.append([t, b, tg])
        for t, b, tg in runs:
            font = family[1] if b else family[0]
            w = text_width(t, font, size)
            self.page.insert_text(
                (x, baseline), t, fontname=font, fontsize=size,
                color=LINK_BLUE if tg else color,
            )
            if tg:
                # inset by 0.6 pt so that the rect does not touch neighbouring glyphs
                rect = pymupdf.Rect(x + 0.6, baseline - 0.86 * size, x + w - 0.6, baseline + 0.26 * size)
                self.links.append((self.pno, rect, tg))
            x += w

    def text(self, markup, family=SERIF, size=BODY_SIZE, lead=BODY_LEAD,
             color=BLACK, indent=0.0, gap=PARA_GAP, keep=2, align="left",
             width=None):
        words = to_words(parse_markup(markup))
        self.fit(keep * lead)
        i = 0
        while i < len(words):
            if self.y + lead > self.frame.y1 and not self.at_top():
                self.next_frame()
            fr = self.frame
            avail = (width or fr.width) - indent
            j = self._take_line(words, i, avail, family, size)
            line = words[i:j]
            x = fr.x0 + indent
            if align == "center":
                space = text_width(" ", family[0], size)
                lw = sum(word_width(w, family, size) for w in line) + space * (len(line) - 1)
                x = fr.x0 + (fr.width - lw) / 2
            baseline = self.y + 0.5 * (lead - size) + 0.80 * size
            self._render_line(line, x, baseline, family, size, color)
            self.y += lead
            i = j
        self.y += gap

    def para(self, markup, **kw):
        self.text(markup, **kw)

    def bullet(self, markup):
        """A dash list item with a hanging indent."""
        self.fit(BODY_LEAD)
        base = self.y + 0.5 * (BODY_LEAD - BODY_SIZE) + 0.80 * BODY_SIZE
        self.page.insert_text((self.frame.x0 + 3, base), "-", fontname=SERIF[0], fontsize=BODY_SIZE)
        self.text(markup, indent=14.0, gap=3.0, keep=1)

    def title_block(self, title, subtitle, byline):
        self.text("**" + title + "**", family=SANS, size=21, lead=26, gap=4)
        self.text(subtitle, family=SANS, size=12.5, lead=16, gap=6, color=GRAY)
        self.text(byline, family=("tiit", "tibi"), size=10, lead=13, gap=18, color=GRAY)

    def heading(self, level, number, title):
        size, lead, before, after = HEADING_STYLE[level]
        label = f"{number} {title}"
        self.space(before)
        # keep heading with at least three body lines
        n_lines = max(1, int(text_width(label, SANS[1], size) // self.frame.width) + 1)
        self.fit(n_lines * lead + 3 * BODY_LEAD)
        if number.startswith("Appendix"):
            key = "app:" + number.split()[1].rstrip(":")
        else:
            key = "sec:" + number
        self.anchors[key] = (self.pno, self.frame.x0, self.y)
        self.toc.append([level, label, self.pno + 1, self.frame.x0, self.y])
        self.text("**" + label + "**", family=SANS, size=size, lead=lead, gap=after, keep=1)

    # -- captions, tables, figures -----------------------------------------
    def caption(self, label, text, gap):
        self.text(f"**{label}:** {text}", family=SANS, size=9, lead=11.5, gap=gap, keep=1)

    def _caption_height(self, label, text, width):
        words = to_words(parse_markup(f"**{label}:** {text}"))
        n, i = 0, 0
        while i < len(words):
            i = self._take_line(words, i, width, SANS, 9)
            n += 1
        return n * 11.5

    def table(self, num, caption, header, rows, widths, align=None, size=8.4):
        fr = self.frame
        tw = fr.width
        colw = [w * tw / sum(widths) for w in widths]
        align = align or ["l"] * len(header)
        pad_x, pad_y, lead = 4.0, 3.2, size * 1.28

        def cell_lines(txt, w, font):
            words = txt.split(" ")
            lines, cur = [], ""
            for wd in words:
                cand = wd if not cur else cur + " " + wd
                if cur and text_width(cand, font, size) > w - 2 * pad_x:
                    lines.append(cur)
                    cur = wd
                else:
                    cur = cand
            lines.append(cur)
            return lines

        all_rows = [(header, True)] + [(r, False) for r in rows]
        laid = []
        for cells, is_head in all_rows:
            font = SANS[1] if is_head else SANS[0]
            cl = [cell_lines(str(c), w, font) for c, w in zip(cells, colw)]
            h = max(len(c) for c in cl) * lead + 2 * pad_y
            laid.append((cl, h, font, is_head))
        total = self._caption_height(f"Table {num}", caption, tw) + 4 + sum(h for _, h, _, _ in laid)
        self.fit(total + 4)
        fr = self.frame
        self.anchors[f"tab:{num}"] = (self.pno, fr.x0, self.y)
        self.caption(f"Table {num}", caption, gap=4)
        shape = self.page.new_shape()
        y = self.y
        cells_text = []
        for cl, h, font, is_head in laid:
            x = fr.x0
            for lines, w, al in zip(cl, colw, align):
                r = pymupdf.Rect(x, y, x + w, y + h)
                shape.draw_rect(r)
                shape.finish(width=0.6, color=BLACK, fill=TABLE_HEAD_FILL if is_head else None)
                cells_text.append((r, lines, font, al))
                x += w
            y += h
        shape.commit()
        for r, lines, font, al in cells_text:
            by = r.y0 + pad_y + 0.80 * size + 0.5 * (lead - size)
            for ln in lines:
                if al == "r":
                    x = r.x1 - pad_x - text_width(ln, font, size)
                else:
                    x = r.x0 + pad_x
                self.page.insert_text((x, by), ln, fontname=font, fontsize=size, color=BLACK)
                by += lead
        self.y = y + 12

    def figure_image(self, num, caption, png, width, aspect):
        fr = self.frame
        w = min(width, fr.width)
        h = w * aspect
        total = h + 6 + self._caption_height(f"Figure {num}", caption, fr.width)
        self.fit(total + 4)
        fr = self.frame
        x0 = fr.x0 + (fr.width - w) / 2
        rect = pymupdf.Rect(x0, self.y, x0 + w, self.y + h)
        self.anchors[f"fig:{num}"] = (self.pno, fr.x0, self.y)
        self.page.insert_image(rect, stream=png)
        self.y += h + 6
        self.caption(f"Figure {num}", caption, gap=12)

    def figure_vector(self, num, caption, draw_fn, height):
        fr = self.frame
        total = height + 6 + self._caption_height(f"Figure {num}", caption, fr.width)
        self.fit(total + 4)
        fr = self.frame
        rect = pymupdf.Rect(fr.x0, self.y, fr.x1, self.y + height)
        self.anchors[f"fig:{num}"] = (self.pno, fr.x0, self.y)
        draw_fn(self.page, rect)
        self.y += height + 6
        self.caption(f"Figure {num}", caption, gap=12)

    # -- finishing ----------------------------------------------------------
    def _resolve(self, target):
        if target.startswith("uri:"):
            return {"kind": pymupdf.LINK_URI, "uri": target[4:]}
        if target.startswith("launch:"):
            return {"kind": pymupdf.LINK_LAUNCH, "file": target[7:]}
        if target.startswith("file:"):
            fname, _, key = target[5:].partition("#")
            pno, x, y = REGISTRY.get(fname, {}).get(key, (0, 0.0, 0.0))
            return {"kind": pymupdf.LINK_GOTOR, "file": fname, "page": pno,
                    "to": pymupdf.Point(x, max(0.0, y - 8))}
        if target not in self.anchors:
            raise KeyError(f"{self.filename}: unresolved cross-reference target {target!r}")
        pno, x, y = self.anchors[target]
        return {"kind": pymupdf.LINK_GOTO, "page": pno, "to": pymupdf.Point(x, max(0.0, y - 8))}

    def finish(self, save=True):
        REGISTRY[self.filename] = dict(self.anchors)
        if not save:
            return
        n = self.doc.page_count
        for pno in range(n):
            page = self.doc[pno]
            page.insert_text((MARGIN_L, HEADER_BASELINE), self.short_title,
                             fontname=SANS[0], fontsize=8, color=GRAY)
            page.insert_text((PAGE_W - MARGIN_R - text_width(self.org, SANS[0], 8), HEADER_BASELINE),
                             self.org, fontname=SANS[0], fontsize=8, color=GRAY)
            foot = f"Page {pno + 1} of {n}"
            page.insert_text(((PAGE_W - text_width(foot, SANS[0], 8)) / 2, FOOTER_BASELINE),
                             foot, fontname=SANS[0], fontsize=8, color=GRAY)
        by_page = {}
        for pno, rect, target in self.links:
            by_page.setdefault(pno, []).append((rect, target))
        for pno in sorted(by_page):
            page = self.doc[pno]
            for rect, target in by_page[pno]:
                link = self._resolve(target)
                link["from"] = rect
                page.insert_link(link)
        if self.outline:
            toc = [[lvl, title, page, {"kind": pymupdf.LINK_GOTO,
                                        "to": pymupdf.Point(x, max(0.0, y - 8))}]
                   for lvl, title, page, x, y in self.toc]
            self.doc.set_toc(toc)
        date = FIXED_DATES[self.filename]
        meta = {
            "creator": "Strata sample corpus builder (build_sample_corpus.py)",
            "producer": "PyMuPDF",
            "creationDate": date,
            "modDate": date,
            "trapped": "",
        }
        meta.update(self.meta)
        self.doc.set_metadata(meta)
        path = os.path.join(OUT_DIR, self.filename)
        try:
            self.doc.save(path, garbage=4, deflate=True, no_new_id=True, reproducible=True)
        except TypeError:  # older PyMuPDF without `reproducible`
            self.doc.save(path, garbage=4, deflate=True, no_new_id=True)
        self.doc.close()


# ---------------------------------------------------------------------------
# Charts
# ---------------------------------------------------------------------------
def _centered(page, cx, y, text, size, font="helv", color=BLACK):
    page.insert_text((cx - text_width(text, font, size) / 2, y), text,
                     fontname=font, fontsize=size, color=color)


def bar_chart_png(categories, series, y_max, y_min, y_step, y_label,
                  w=460, h=250, value_fmt="{:.1f}", dpi=130):
    """Draw a grouped bar chart on a scratch page and return PNG bytes.

    The chart is a real raster image: its labels are pixels, not PDF text.
    """
    tmp = pymupdf.open()
    page = tmp.new_page(width=w, height=h)
    page.draw_rect(page.rect, color=None, fill=(1, 1, 1))
    left, right, top, bottom = 50, w - 12, 30, h - 40
    ph = bottom - top

    def ypos(v):
        return bottom - (v - y_min) / (y_max - y_min) * ph

    v = y_min
    while v <= y_max + 1e-9:
        yy = ypos(v)
        page.draw_line((left, yy), (right, yy), color=(0.85, 0.85, 0.85), width=0.6)
        lab = f"{v:g}"
        page.insert_text((left - 6 - text_width(lab, "helv", 8), yy + 3), lab,
                         fontname="helv", fontsize=8)
        v += y_step
    page.draw_line((left, top), (left, bottom), color=BLACK, width=0.8)
    page.draw_line((left, bottom), (right, bottom), color=BLACK, width=0.8)
    page.insert_text((14, top + ph / 2 + text_width(y_label, "helv", 8.5) / 2), y_label,
                     fontname="helv", fontsize=8.5, rotate=90)
    ncat, nser = len(categories), len(series)
    slot = (right - left) / ncat
    bw = slot * 0.72 / nser
    for ci, cat in enumerate(categories):
        x0 = left + ci * slot + slot * 0.14
        for si, (_, values, color) in enumerate(series):
            val = values[ci]
            r = pymupdf.Rect(x0 + si * bw, ypos(val), x0 + (si + 1) * bw - 1.5, bottom)
            page.draw_rect(r, color=None, fill=color)
            _centered(page, (r.x0 + r.x1) / 2, r.y0 - 3, value_fmt.format(val), 6.5)
        cx = left + (ci + 0.5) * slot
        parts = cat.split("\n")
        for k, p in enumerate(parts):
            _centered(page, cx, bottom + 12 + 9 * k, p, 7.8)
    if nser > 1:
        lx = right - 10
        for name, _, color in reversed(series):
            lw = text_width(name, "helv", 8)
            lx -= lw
            page.insert_text((lx, 17), name, fontname="helv", fontsize=8)
            lx -= 13
            page.draw_rect(pymupdf.Rect(lx, 9, lx + 9, 18), color=None, fill=color)
            lx -= 14
    pix = page.get_pixmap(dpi=dpi, alpha=False)
    png = pix.tobytes("png")
    tmp.close()
    return png, h / w


def _axes(page, plot, x_ticks, y_ticks, x_label, y_label, fx, fy):
    page.draw_line(plot.bl, plot.tl, color=BLACK, width=0.8)
    page.draw_line(plot.bl, plot.br, color=BLACK, width=0.8)
    for v, lab in x_ticks:
        x = fx(v)
        page.draw_line((x, plot.y1), (x, plot.y1 + 3), color=BLACK, width=0.6)
        _centered(page, x, plot.y1 + 12, lab, 7.5)
    for v, lab in y_ticks:
        y = fy(v)
        page.draw_line((plot.x0 - 3, y), (plot.x0, y), color=BLACK, width=0.6)
        page.insert_text((plot.x0 - 6 - text_width(lab, "helv", 7.5), y + 2.6), lab,
                         fontname="helv", fontsize=7.5)
    _centered(page, (plot.x0 + plot.x1) / 2, plot.y1 + 25, x_label, 8.5)
    page.insert_text((plot.x0 - 30, (plot.y0 + plot.y1) / 2 + text_width(y_label, "helv", 8.5) / 2),
                     y_label, fontname="helv", fontsize=8.5, rotate=90)


OLD_QUAY_HOURLY = [26.0, 25.4, 24.9, 24.5, 24.2, 24.1, 24.6, 25.9, 27.8, 29.9, 31.8, 33.4,
                   34.7, 35.8, 36.5, 36.8, 36.4, 35.5, 34.1, 32.4, 30.6, 29.1, 27.9, 26.8]
KINGSWAY_HOURLY = [22.1, 21.5, 21.0, 20.7, 20.4, 20.3, 21.0, 22.6, 24.6, 26.7, 28.6, 30.2,
                   31.5, 32.4, 32.9, 33.1, 32.7, 31.6, 30.0, 28.1, 26.2, 24.6, 23.4, 22.6]


def draw_hourly_chart(page, rect):
    """Vector line chart: hourly air temperature at two stations."""
    plot = pymupdf.Rect(rect.x0 + 95, rect.y0 + 20, rect.x1 - 70, rect.y1 - 32)

    def fx(h):
        return plot.x0 + h / 23.0 * plot.width

    def fy(t):
        return plot.y1 - (t - 18.0) / (40.0 - 18.0) * plot.height

    _axes(page, plot,
          [(h, f"{h:02d}:00") for h in range(0, 24, 3)],
          [(t, f"{t}") for t in range(20, 41, 5)],
          "Hour of day, 19 July 2023", "Air temperature (°C)", fx, fy)
    page.draw_polyline([(fx(h), fy(t)) for h, t in enumerate(OLD_QUAY_HOURLY)],
                       color=(0.80, 0.25, 0.10), width=1.6)
    page.draw_polyline([(fx(h), fy(t)) for h, t in enumerate(KINGSWAY_HOURLY)],
                       color=(0.15, 0.50, 0.25), width=1.6, dashes="[4 2] 0")
    for h in (15,):
        page.draw_circle((fx(h), fy(OLD_QUAY_HOURLY[h])), 2.2, color=None, fill=(0.80, 0.25, 0.10))
        page.insert_text((fx(h) + 5, fy(OLD_QUAY_HOURLY[h]) - 4), "36.8 °C",
                         fontname="helv", fontsize=7.5)
        page.draw_circle((fx(h), fy(KINGSWAY_HOURLY[h])), 2.2, color=None, fill=(0.15, 0.50, 0.25))
        page.insert_text((fx(h) - 4, fy(KINGSWAY_HOURLY[h]) + 14), "33.1 °C",
                         fontname="helv", fontsize=7.5)
    # legend (top left, inside the plot area)
    lx, ly = plot.x0 + 10, plot.y0 + 6
    page.draw_line((lx, ly), (lx + 18, ly), color=(0.80, 0.25, 0.10), width=1.6)
    page.insert_text((lx + 23, ly + 2.8), "OQ-03 Harbour Street, Old Quay", fontname="helv", fontsize=7.5)
    page.draw_line((lx, ly + 12), (lx + 18, ly + 12), color=(0.15, 0.50, 0.25), width=1.6,
                   dashes="[4 2] 0")
    page.insert_text((lx + 23, ly + 14.8), "KW-02 Kingsway Cemetery, Kingsway", fontname="helv",
                     fontsize=7.5)


def draw_scatter_chart(page, rect):
    """Vector scatter plot: land surface temperature against canopy cover."""
    plot = pymupdf.Rect(rect.x0 + 95, rect.y0 + 10, rect.x1 - 70, rect.y1 - 32)

    def fx(c):
        return plot.x0 + c / 60.0 * plot.width

    def fy(t):
        return plot.y1 - (t - 28.0) / (48.0 - 28.0) * plot.height

    _axes(page, plot,
          [(c, f"{c}") for c in range(0, 61, 10)],
          [(t, f"{t}") for t in range(28, 49, 4)],
          "Tree canopy cover of grid cell (%)", "Surface temperature (°C)", fx, fy)
    rng = random.Random(20230719)
    for _ in range(150):
        c = min(58.0, max(0.5, rng.betavariate(1.6, 4.2) * 62))
        t = min(47.6, max(28.4, 44.5 - 0.21 * c + rng.gauss(0, 1.25)))
        page.draw_circle((fx(c), fy(t)), 1.7, color=None, fill=(0.20, 0.35, 0.65))
    page.draw_line((fx(0), fy(44.5)), (fx(60), fy(44.5 - 0.21 * 60)),
                   color=(0.75, 0.15, 0.10), width=1.2, dashes="[5 3] 0")
    page.insert_text((fx(33), fy(43.6)), "Linear fit: T = 44.5 - 0.21 x canopy",
                     fontname="helv", fontsize=7.5, color=(0.75, 0.15, 0.10))
    page.insert_text((fx(33), fy(43.6) + 10), "R² = 0.64, n = 669 cells",
                     fontname="helv", fontsize=7.5, color=(0.75, 0.15, 0.10))


# ---------------------------------------------------------------------------
# Shared data
# ---------------------------------------------------------------------------
DISTRICTS = ["Old Quay", "Millbrook", "Harrow Fields", "Eastgate", "Saltmarsh", "Kingsway"]
AREA = [4.1, 6.8, 9.5, 5.3, 7.2, 8.9]
CANOPY_2019 = [8.4, 14.2, 21.7, 10.9, 19.8, 24.6]
CANOPY_2023 = [11.9, 16.8, 23.1, 14.6, 20.9, 26.0]
TREES = [1240, 910, 530, 1105, 385, 650]  # sum 4,820
LST = {  # mean July land surface temperature, deg C, 2019..2023
    "Old Quay": [41.2, 40.8, 41.5, 40.1, 39.6],
    "Millbrook": [38.9, 38.6, 39.0, 38.2, 37.8],
    "Harrow Fields": [35.4, 35.1, 35.6, 35.2, 34.9],
    "Eastgate": [40.3, 40.0, 40.4, 39.1, 38.5],
    "Saltmarsh": [36.1, 35.8, 36.3, 35.9, 35.7],
    "Kingsway": [34.2, 34.0, 34.5, 34.1, 33.8],
}


def area_weighted(values):
    return sum(a * v for a, v in zip(AREA, values)) / sum(AREA)


CITY_LST = [round(area_weighted([LST[d][k] for d in DISTRICTS]), 1) for k in range(5)]
CITY_CANOPY = (round(area_weighted(CANOPY_2019), 1), round(area_weighted(CANOPY_2023), 1))
assert sum(TREES) == 4820
assert CITY_LST == [37.0, 36.7, 37.2, 36.5, 36.2], CITY_LST
assert CITY_CANOPY == (18.1, 20.1), CITY_CANOPY

REPORT_TITLE = "Cool Streets Programme 2019-2023: Final Report"
METHODS_TITLE = "Technical Appendix: Canopy and Heat Mapping Methods"
ANNEX_TITLE = "Data Annex: Cool Streets Monitoring Tables 2019-2023"
BRIEF_TITLE = "Shade Where It Matters: Lessons from Larkhaven's Cool Streets Programme"
ORG = "Larkhaven City Council"


# ---------------------------------------------------------------------------
# Document 1: main report (with outline)
# ---------------------------------------------------------------------------
def build_report(save):
    b = DocBuilder("cool_streets_report.pdf", "Cool Streets Programme - Final Report 2019-2023", ORG,
                   {"title": REPORT_TITLE, "author": "Amara Okonkwo; Larkhaven City Council",
                    "subject": "Urban heat and tree canopy in Larkhaven, 2019-2023",
                    "keywords": "urban heat, tree canopy, LiDAR, land surface temperature, Larkhaven"},
                   outline=True)
    b.title_block(REPORT_TITLE, "Urban heat and tree canopy in Larkhaven",
                  "Dr. Amara Okonkwo, Programme Director, Department of Parks and Urban Climate, "
                  "Larkhaven City Council  |  November 2023")
    b.para("**Summary.** Between 2019 and 2023 the Cool Streets Programme set out to reduce summer heat "
           "exposure in Larkhaven by expanding the urban tree canopy where it was thinnest. The programme "
           "planted 4,820 trees between March 2021 and October 2023, and citywide canopy cover rose from "
           "18.1% to 20.1%. Mean July land surface temperature fell by 0.8 °C across the city and by "
           "1.8 °C in Eastgate, the district with the largest canopy gain. This report summarises the "
           "approach, the results and the recommendations for the next phase.")

    b.heading(1, "1", "Introduction")
    b.para("Larkhaven is a river port of about 142,000 residents on the estuary of the River Lark. Its "
           "older districts, Old Quay and Eastgate, were built at high density around the docks and have "
           "little room for street trees, while Kingsway and Harrow Fields grew later around parks and "
           "cemeteries. During the heatwave of July 2018 the ambulance service logged 211 heat-related "
           "call-outs, most of them in the two dock districts. In response, the Environment Committee, "
           "chaired by Councillor Daniel Ashford, approved the Cool Streets Programme on 14 March 2019 "
           "with a budget of 3.4 million euros for five years.")
    b.para("The programme had three goals: to map the existing canopy and surface temperature at street "
           "level, to plant and establish trees where heat exposure was highest, and to monitor the effect "
           "on temperatures over several summers. The long-term target adopted by the council is 25% "
           "canopy cover citywide by 2035, with an interim milestone of 22% by 2028. The work was led by "
           "Dr. Amara Okonkwo together with the Urban Climate Lab of Northbrook University under "
           "Prof. Ingrid Halvorsen.")
    b.para("This report is one of four companion documents. The processing chain is documented in the "
           "[[Technical Appendix: Canopy and Heat Mapping Methods|file:methods_appendix.pdf#sec:2]] "
           "(methods_appendix.pdf), the underlying tables are published in the Data Annex at "
           "[[https://example.org/strata/data_annex.pdf|uri:https://example.org/strata/data_annex.pdf]], "
           "and the recommendations are summarised for decision makers in the policy brief "
           "[[Shade Where It Matters|launch:policy_brief.pdf]] (policy_brief.pdf). The methods are "
           "outlined in [[Section 2.1|sec:2.1]] and [[Section 2.2|sec:2.2]], the results in "
           "[[§3|sec:3]], and the core monitoring stations are listed in [[Appendix A|app:A]].")

    b.heading(1, "2", "Methods")
    b.para("The evaluation combined repeated airborne surveys of the canopy, satellite measurements of "
           "land surface temperature and a network of street-level air temperature sensors. All spatial "
           "data were aggregated to the six districts and to a 250 m grid covering the 41.8 km² of the city.")
    b.heading(2, "2.1", "Canopy mapping")
    b.para("Canopy cover was mapped from airborne LiDAR flown by Skyline Survey Ltd on 18 June 2019 and "
           "again on 21 June 2023. Vegetation taller than 3 m was classified as tree canopy, and the "
           "resulting maps were checked against 1,200 reference points interpreted from aerial "
           "photographs. The overall accuracy of the 2023 canopy map was 94.6%. The classification "
           "steps and thresholds are described in the Technical Appendix.")
    b.heading(2, "2.2", "Temperature monitoring")
    b.para("Land surface temperature was derived from Landsat 8 and Landsat 9 thermal images acquired on "
           "clear July afternoons; for each year between three and four scenes were averaged into a mean "
           "July value. Because surface temperature is not the temperature people feel, 38 air "
           "temperature sensors were installed on lamp posts at a height of 3.0 m in May and June 2019, "
           "logging every 10 minutes. [[Figure 1|fig:1]] shows a typical hot day recorded by two of "
           "these sensors.")
    b.para("On 19 July 2023, the hottest day of the monitoring period, the sensor at Harbour Street in "
           "Old Quay (station OQ-03) reached 36.8 °C at 15:00, while the sensor at Kingsway Cemetery "
           "(station KW-02) reached 33.1 °C. The gap between the two stations stayed between 3.2 and "
           "4.5 °C throughout the day and was largest in the late evening, which suggests that it is "
           "driven by land cover and stored heat rather than by a short-lived afternoon effect "
           "(see [[Fig. 1|fig:1]]).")
    b.figure_vector(1, "Hourly air temperature at stations OQ-03 (Old Quay) and KW-02 (Kingsway), "
                       "19 July 2023", draw_hourly_chart, 205)

    b.heading(1, "3", "Results")
    b.heading(2, "3.1", "Canopy change")
    b.para("Citywide canopy cover increased from 18.1% in 2019 to 20.1% in 2023, a gain of 2.0 percentage "
           "points, as shown in [[Table 1|tab:1]]. The largest gains were in Eastgate (+3.7 points) and "
           "Old Quay (+3.5 points), the two districts that received the most new trees. In Old Quay the "
           "canopy grew by 42% in relative terms, from 8.4% to 11.9%. Most of the measured gain came from "
           "the growth of existing trees and from fewer removals; the young trees planted under the "
           "programme are estimated to have contributed only 0.3 percentage points so far.")
    rows = []
    for d, a, c19, c23, t in zip(DISTRICTS, AREA, CANOPY_2019, CANOPY_2023, TREES):
        rows.append([d, f"{a:.1f}", f"{c19:.1f}", f"{c23:.1f}", f"+{c23 - c19:.1f}", f"{t:,}"])
    rows.append(["All districts", f"{sum(AREA):.1f}", f"{CITY_CANOPY[0]:.1f}", f"{CITY_CANOPY[1]:.1f}",
                 f"+{CITY_CANOPY[1] - CITY_CANOPY[0]:.1f}", f"{sum(TREES):,}"])
    b.table(1, "Canopy cover by district, 2019-2023",
            ["District", "Area (km²)", "Canopy 2019 (%)", "Canopy 2023 (%)", "Change (pp)", "Trees planted"],
            rows, [1.5, 1, 1.2, 1.2, 1.1, 1.1], align=["l", "r", "r", "r", "r", "r"])

    b.heading(2, "3.2", "Surface temperature")
    b.para("Mean July land surface temperature fell in every district between 2019 and 2023 (see "
           "[[Figure 2|fig:2]]). The citywide mean dropped from 37.0 °C to 36.2 °C. Eastgate recorded the "
           "largest decrease, 1.8 °C, followed by Old Quay with 1.6 °C, while Kingsway, already the "
           "coolest district, changed by only 0.4 °C. Year-to-year weather explains part of this pattern: "
           "the summer of 2021 was warmer than 2019 in all districts. The annual series is given in "
           "Table 1 of the Data Annex.")
    png, aspect = bar_chart_png(
        DISTRICTS,
        [("2019", [LST[d][0] for d in DISTRICTS], (0.93, 0.55, 0.25)),
         ("2023", [LST[d][4] for d in DISTRICTS], (0.25, 0.50, 0.70))],
        y_max=44, y_min=30, y_step=2, y_label="Land surface temperature (°C)")
    b.figure_image(2, "Mean July land surface temperature by district, 2019 and 2023", png, 400, aspect)

    b.heading(2, "3.3", "Tree planting and survival")
    b.para("The programme planted 4,820 trees between March 2021 and October 2023 in six planting "
           "seasons ([[Fig. 3|fig:3]]). Planting was concentrated in autumn, when new trees can establish roots "
           "before their first summer; the largest single season was autumn 2022 with 1,150 trees. In "
           "total 27 species were used. [[Table 2|tab:2]] lists the five most planted species, led by "
           "small-leaved lime (Tilia cordata) with 612 trees. After the first summer 91.7% of all trees "
           "were alive, and Ginkgo biloba showed the highest survival (96.2%). Planting and three years "
           "of aftercare cost 2.1 million euros, or about 436 euros per tree.")
    seasons = ["Spring\n2021", "Autumn\n2021", "Spring\n2022", "Autumn\n2022", "Spring\n2023", "Autumn\n2023"]
    planted = [640, 980, 710, 1150, 560, 780]
    assert sum(planted) == 4820
    png, aspect = bar_chart_png(seasons, [("Trees", planted, (0.30, 0.60, 0.35))],
                                y_max=1400, y_min=0, y_step=200, y_label="Trees planted",
                                h=210, value_fmt="{:,.0f}")
    b.figure_image(3, "Trees planted per planting season, March 2021 to October 2023", png, 360, aspect)
    b.table(2, "Five most planted species and first-summer survival",
            ["Species", "Common name", "Trees planted", "Share (%)", "Survival (%)"],
            [["Tilia cordata", "Small-leaved lime", "612", "12.7", "94.1"],
             ["Acer campestre", "Field maple", "548", "11.4", "92.6"],
             ["Quercus robur", "English oak", "433", "9.0", "89.8"],
             ["Pyrus calleryana", "Callery pear", "395", "8.2", "90.4"],
             ["Ginkgo biloba", "Ginkgo", "287", "6.0", "96.2"],
             ["Other (22 species)", "-", "2,545", "52.8", "90.9"],
             ["All species", "-", "4,820", "100.0", "91.7"]],
            [1.5, 1.4, 1, 1, 1], align=["l", "l", "r", "r", "r"])

    b.heading(1, "4", "Conclusions and recommendations")
    b.para("The first phase shows that targeted planting and better protection of existing trees can raise "
           "canopy cover measurably within five years, and that the districts with the least canopy "
           "benefit most. The results in [[§3|sec:3]] support three recommendations. First, planting "
           "should continue at about 1,500 trees per year, with at least half in Old Quay and Eastgate, so "
           "that both districts reach 20% canopy by 2030. Second, the sensor network described in "
           "[[Section 2.2|sec:2.2]] should be maintained until at least 2028 so that the interim "
           "milestone can be evaluated. Third, the council should adopt a tree protection rule for new "
           "developments, since avoided removals contributed more to the gain than new planting. A "
           "second phase with a budget of 1.2 million euros per year was proposed to the Environment "
           "Committee on 7 December 2023.")

    b.page_break()
    b.heading(1, "Appendix A:", "Core monitoring stations")
    b.para("The six stations below are the reference stations of the 38-sensor network, one per district. "
           "They were installed first and serve as the reference for quality control of the remaining "
           "sensors; the two stations shown in [[Figure 1|fig:1]] are OQ-03 and KW-02. The full sensor "
           "summary is published in Table 3 of the Data Annex.")
    b.table(3, "Core monitoring stations, one per district",
            ["Station", "Location", "District", "Installed", "Interval"],
            [["OQ-03", "Harbour Street", "Old Quay", "12 May 2019", "10 min"],
             ["MB-01", "Millbrook Library", "Millbrook", "14 May 2019", "10 min"],
             ["HF-05", "Harrow Fields Park", "Harrow Fields", "20 May 2019", "10 min"],
             ["EG-02", "Eastgate Bus Depot", "Eastgate", "21 May 2019", "10 min"],
             ["SM-04", "Saltmarsh Primary School", "Saltmarsh", "3 June 2019", "10 min"],
             ["KW-02", "Kingsway Cemetery", "Kingsway", "4 June 2019", "10 min"]],
            [0.8, 1.8, 1.2, 1.1, 0.8])
    b.finish(save)


# ---------------------------------------------------------------------------
# Document 2: technical appendix (no outline; has 2.1.1 / 2.2.1 and Appendix A)
# ---------------------------------------------------------------------------
def build_methods(save):
    b = DocBuilder("methods_appendix.pdf", "Cool Streets - Technical Appendix", ORG,
                   {"title": METHODS_TITLE,
                    "author": "Tomasz Wieczorek; Ingrid Halvorsen",
                    "subject": "LiDAR canopy mapping, land surface temperature and sensor network methods",
                    "keywords": "LiDAR, canopy height model, Landsat, emissivity, validation"},
                   outline=False)
    b.title_block(METHODS_TITLE, "Cool Streets Programme, Larkhaven, 2019-2023",
                  "Tomasz Wieczorek (GIS Lead, Larkhaven City Council) and Prof. Ingrid Halvorsen "
                  "(Urban Climate Lab, Northbrook University)  |  November 2023")
    b.heading(1, "1", "Introduction")
    b.para("This appendix documents how canopy cover and temperature were measured for the "
           f"[[{REPORT_TITLE}|file:cool_streets_report.pdf#sec:2]] (cool_streets_report.pdf). It is "
           "intended for analysts who want to reproduce the district figures or extend the time series. "
           "[[Section 2.1|sec:2.1]] describes the canopy mapping, [[Section 2.2|sec:2.2]] the satellite "
           "surface temperature and [[Section 2.3|sec:2.3]] the street-level sensors. The accuracy "
           "assessment is reported in [[§3|sec:3]], and all processing parameters are listed in "
           "[[Appendix A|app:A]].")

    b.heading(1, "2", "Methods")
    b.para("All layers were projected to the national grid and clipped to the city boundary, which "
           "encloses 41.8 km². Processing was scripted so that exactly the same steps could be repeated "
           "for each survey year, and intermediate products were archived with the final maps.")
    b.heading(2, "2.1", "Canopy mapping from airborne LiDAR")
    b.para("Two LiDAR surveys were flown by Skyline Survey Ltd, on 18 June 2019 and 21 June 2023, both in "
           "leaf-on conditions. The 2023 survey used a newer sensor and reached a mean density of 18 "
           "points per square metre, compared with 11 points per square metre in 2019. To keep the two "
           "years comparable, the 2023 point cloud was thinned to the 2019 density before classification.")
    b.heading(3, "2.1.1", "Point cloud classification")
    b.para("Ground points were separated with a progressive morphological filter and interpolated to a "
           "digital terrain model with a cell size of 0.5 m. Non-ground points were then classified into "
           "buildings and vegetation using the planarity of local neighbourhoods and the number of "
           "returns per pulse: vegetation typically produces several returns, while roofs produce a "
           "single strong return.")
    b.heading(3, "2.1.2", "Canopy height threshold")
    b.para("A normalised canopy height model was computed by subtracting the terrain model from the "
           "highest vegetation return in each cell. Cells with vegetation taller than 3.0 m were "
           "classified as tree canopy, and patches smaller than 10 m² were removed to suppress isolated "
           "shrubs and street furniture. The 3.0 m threshold follows the national urban forest inventory; "
           "a sensitivity test with thresholds of 2.5 m and 4.0 m changed citywide canopy by +0.6 and "
           "-0.9 percentage points respectively.")
    b.heading(2, "2.2", "Land surface temperature")
    b.para("Land surface temperature (LST) was derived from the thermal infrared band 10 of Landsat 8 and "
           "Landsat 9, which the data provider resamples to 30 m. Only afternoon overpasses in July were "
           "used, so that the values describe the hottest part of the year.")
    b.heading(3, "2.2.1", "Scene selection")
    b.para("For each year from 2019 to 2023 all July scenes with less than 10% cloud over the city were "
           "selected. This yielded 17 scenes in total: 4 in 2019, 3 in 2020, 3 in 2021, 4 in 2022 and 3 "
           "in 2023. The scenes of each year were averaged into a mean July LST after masking clouds and "
           "cloud shadows.")
    b.heading(3, "2.2.2", "Emissivity and atmospheric correction")
    b.para("Surface emissivity was assigned per land cover class, from 0.97 for asphalt to 0.99 for water "
           "and tree canopy, and atmospheric effects were corrected with a single-channel algorithm using "
           "water vapour from the radiosonde station at Larkhaven Airport. The selection rules in "
           "[[Section 2.2.1|sec:2.2.1]] keep all scenes within the recommended water vapour range of the "
           "algorithm.")
    b.heading(2, "2.3", "Air temperature sensor network")
    b.para("Thirty-eight sensors were mounted on lamp posts at 3.0 m above ground inside white radiation "
           "shields. Each logger records air temperature every 10 minutes with a stated accuracy of "
           "±0.2 °C. Before deployment all loggers were compared for 14 days against a reference "
           "thermometer on the roof station of Northbrook University; two loggers with an offset above "
           "0.3 °C were replaced. The six core stations are listed in Appendix A of the Final Report.")

    b.heading(1, "3", "Validation")
    b.para("The 2023 canopy map was validated against 1,200 reference points, 200 per district, "
           "interpreted by two analysts from 10 cm aerial photographs taken in July 2023. "
           "[[Table 1|tab:1]] reports the accuracy per class. The overall accuracy was 94.6% and Cohen's "
           "kappa was 0.91. Most errors occurred between tree canopy and tall shrubs along railway "
           "embankments, where the 3.0 m threshold of [[§2.1.2|sec:2.1.2]] is close to the height of the "
           "vegetation.")
    b.table(1, "Accuracy of the 2023 land cover classification by class",
            ["Class", "Reference points", "Producer's accuracy (%)", "User's accuracy (%)", "F1 score"],
            [["Tree canopy", "312", "95.8", "94.3", "0.95"],
             ["Shrubs below 3 m", "96", "84.4", "87.1", "0.86"],
             ["Grass and low vegetation", "221", "93.2", "95.4", "0.94"],
             ["Buildings", "298", "97.0", "96.3", "0.97"],
             ["Roads and paving", "231", "95.2", "94.0", "0.95"],
             ["Water", "42", "100.0", "97.7", "0.99"]],
            [1.7, 1, 1.2, 1.2, 0.8], align=["l", "r", "r", "r", "r"])
    b.para("Surface temperature differs strongly by land cover, as shown in [[Fig. 1|fig:1]]. In July "
           "2023 tree canopy was on average 15.9 °C cooler than asphalt and paving, and 6.0 °C cooler "
           "than light-coloured roofs. Water was the coolest surface at 27.9 °C.")
    covers = ["Asphalt,\npaving", "Dark\nroofs", "Bare\nsoil", "Light\nroofs", "Grass", "Tree\ncanopy", "Water"]
    png, aspect = bar_chart_png(covers, [("2023", [47.3, 45.1, 41.5, 37.4, 36.2, 31.4, 27.9],
                                          (0.80, 0.40, 0.20))],
                                y_max=50, y_min=20, y_step=5, y_label="Surface temperature (°C)", h=230)
    b.figure_image(1, "Mean July surface temperature by land cover, 2023", png, 380, aspect)
    b.para("At the scale of the 250 m grid, cells with more canopy were consistently cooler "
           "([[Figure 2|fig:2]]). A linear fit over all 669 grid cells gives a slope of -0.21 °C per "
           "percentage point of canopy (R² = 0.64): 10 additional points of canopy are associated with a "
           "surface about 2.1 °C cooler.")
    b.figure_vector(2, "Surface temperature against canopy cover for 250 m grid cells, July 2023 "
                       "(random sample of 150 of the 669 cells)", draw_scatter_chart, 200)

    b.heading(1, "4", "Limitations")
    b.para("Surface temperature measures the skin of roofs, roads and leaves, not the air that people "
           "breathe, so the satellite results of [[Section 2.2|sec:2.2]] should be read together with the "
           "sensor data. The 30 m thermal pixels also mix several surfaces in narrow streets. Finally, the "
           "five-year record is short: the summer of 2022 was unusually hot and dry, and a longer series "
           "is needed to separate the effect of the canopy from the variability of the weather.")

    b.page_break()
    b.heading(1, "Appendix A:", "Processing parameters")
    b.para("The parameters below were used for both survey years unless stated otherwise. Together with "
           "[[Section 2.1|sec:2.1]] and [[Section 2.2|sec:2.2]] they are sufficient to reproduce the "
           "district values in Table 1 of the Final Report.")
    b.table(2, "Processing parameters",
            ["Step", "Parameter", "Value"],
            [["LiDAR", "Point density after thinning", "11 points/m²"],
             ["Terrain model", "Cell size", "0.5 m"],
             ["Canopy", "Minimum vegetation height", "3.0 m"],
             ["Canopy", "Minimum patch area", "10 m²"],
             ["LST", "Maximum cloud cover per scene", "10%"],
             ["LST", "Emissivity, tree canopy / asphalt", "0.99 / 0.97"],
             ["Aggregation", "Grid cell size", "250 m"]],
            [1, 2, 1])
    b.finish(save)


# ---------------------------------------------------------------------------
# Document 3: data annex (with outline; table heavy)
# ---------------------------------------------------------------------------
def build_annex(save):
    b = DocBuilder("data_annex.pdf", "Cool Streets - Data Annex v1.2", ORG,
                   {"title": ANNEX_TITLE, "author": "Priya Raman; Larkhaven City Council",
                    "subject": "District tables of the Cool Streets Programme",
                    "keywords": "open data, land surface temperature, heat health, sensors"},
                   outline=True)
    b.title_block(ANNEX_TITLE, "Version 1.2",
                  "Compiled by Priya Raman, Data Manager, Department of Parks and Urban Climate, "
                  "Larkhaven City Council  |  8 December 2023")
    b.heading(1, "1", "Introduction")
    b.para("This annex publishes the district-level tables behind the "
           f"[[{REPORT_TITLE}|file:cool_streets_report.pdf#sec:3]]. It covers mean July land surface "
           "temperature ([[Table 1|tab:1]]), heat-related health indicators ([[Table 2|tab:2]]), the air "
           "temperature sensor network ([[Table 3|tab:3]]) and the fields of the downloadable dataset "
           "([[Table 4|tab:4]]). Sources and processing steps are summarised in [[§2|sec:2]]; the full "
           f"methods are in the [[{METHODS_TITLE}|file:methods_appendix.pdf#sec:2.2]].")
    b.para("All values are released as open data. Questions about the tables should be sent to the data "
           "manager, Priya Raman. Version 1.2 corrects the Saltmarsh sensor count, which was given as 6 "
           "instead of 5 in version 1.1 of 20 November 2023.")

    b.heading(1, "2", "Data sources and processing")
    b.heading(2, "2.1", "Surface temperature")
    b.para("District values are area-weighted means of the 30 m Landsat land surface temperature for all "
           "clear July scenes of each year, computed as described in Section 2.2 of the Technical "
           "Appendix. The citywide value weights each district by its area, from 4.1 km² for Old Quay to "
           "9.5 km² for Harrow Fields.")
    b.heading(2, "2.2", "Health indicators")
    b.para("Heat-related ambulance call-outs were provided by the Larkhaven Ambulance Service for 1 June "
           "to 31 August of each year, using the diagnostic codes for heat exhaustion, heat stroke and "
           "dehydration. Rates per 10,000 residents use the 2021 census population of 142,000. A hot day "
           "is a day on which the maximum temperature at Larkhaven Airport reached at least 30 °C; a "
           "heatwave episode is a run of at least three consecutive hot days.")
    b.heading(2, "2.3", "Sensor data")
    b.para("Sensor statistics are computed from the 10-minute readings of July 2023 after the quality "
           "control described in the Technical Appendix. Hours above 30 °C are counted from hourly means, "
           "and district values are averages over the sensors of each district.")

    b.heading(1, "3", "Tables")
    b.para("[[Table 1|tab:1]] gives the annual series of mean July land surface temperature, computed as "
           "described in [[Section 2.1|sec:2.1]]. The citywide mean fell from 37.0 °C in 2019 to 36.2 °C "
           "in 2023, but the series is not monotonic: 2021 was the warmest year at 37.2 °C.")
    rows = [[d] + [f"{v:.1f}" for v in LST[d]] for d in DISTRICTS]
    rows.append(["Citywide (area-weighted)"] + [f"{v:.1f}" for v in CITY_LST])
    b.table(1, "Mean July land surface temperature by district (°C), 2019-2023",
            ["District", "2019", "2020", "2021", "2022", "2023"], rows,
            [2.2, 1, 1, 1, 1, 1], align=["l", "r", "r", "r", "r", "r"])
    b.para("[[Table 2|tab:2]] shows that heat-related call-outs follow the number of hot days more "
           "closely than canopy change. The summer of 2022 had 19 hot days and 232 call-outs, the highest "
           "values of the period, while 2020 had only 9 hot days and 121 call-outs (see "
           "[[Section 2.2|sec:2.2]] for definitions).")
    b.table(2, "Heat-health indicators by summer (June-August), 2019-2023",
            ["Summer", "Hot days", "Heatwave episodes", "Ambulance call-outs", "Call-outs per 10,000"],
            [["2019", "14", "2", "186", "13.1"],
             ["2020", "9", "1", "121", "8.5"],
             ["2021", "11", "2", "149", "10.5"],
             ["2022", "19", "3", "232", "16.3"],
             ["2023", "16", "2", "174", "12.3"]],
            [1, 1, 1.2, 1.3, 1.3], align=["l", "r", "r", "r", "r"])
    b.para("The sensor network is summarised in [[Table 3|tab:3]]. In July 2023 the Old Quay sensors "
           "recorded 96 hours above 30 °C, 2.6 times as many as the Kingsway sensors (37 hours).")
    b.table(3, "Air temperature sensors by district, July 2023",
            ["District", "Sensors", "Mean daily maximum (°C)", "Hours above 30 °C"],
            [["Old Quay", "8", "29.4", "96"],
             ["Millbrook", "7", "28.6", "71"],
             ["Harrow Fields", "6", "27.3", "44"],
             ["Eastgate", "7", "29.0", "88"],
             ["Saltmarsh", "5", "27.8", "52"],
             ["Kingsway", "5", "26.9", "37"],
             ["All sensors", "38", "28.3", "68"]],
            [1.6, 0.8, 1.4, 1.3], align=["l", "r", "r", "r"])

    b.heading(1, "4", "Access and data dictionary")
    b.para("The dataset is distributed as a single CSV file, cool_streets_districts_v1.2.csv, with one row "
           "per district and year. [[Table 4|tab:4]] describes its fields. This annex is available at "
           "[[https://example.org/strata/data_annex.pdf|uri:https://example.org/strata/data_annex.pdf]] "
           "and the Final Report at "
           "[[https://example.org/strata/cool_streets_report.pdf|uri:https://example.org/strata/cool_streets_report.pdf]].")
    b.table(4, "Fields of cool_streets_districts_v1.2.csv",
            ["Field", "Type", "Unit", "Description"],
            [["district", "text", "-", "District name, one of the six districts"],
             ["year", "integer", "-", "Survey year, 2019 to 2023"],
             ["canopy_pct", "decimal", "%", "Tree canopy cover; only for the LiDAR years 2019 and 2023"],
             ["lst_july_c", "decimal", "°C", "Mean July land surface temperature"],
             ["trees_planted", "integer", "trees", "Trees planted by the programme in that year"],
             ["callouts", "integer", "count", "Heat-related ambulance call-outs; citywide rows only"]],
            [1.2, 0.8, 0.6, 3.2])
    b.finish(save)


# ---------------------------------------------------------------------------
# Document 4: policy brief (no outline; page 2 in two columns)
# ---------------------------------------------------------------------------
def build_brief(save):
    b = DocBuilder("policy_brief.pdf", "Policy Brief 2024/01 - Shade Where It Matters", ORG,
                   {"title": BRIEF_TITLE, "author": "Helena Marsh; Larkhaven City Council",
                    "subject": "Policy brief on urban heat and tree canopy",
                    "keywords": "policy brief, urban heat, tree planting, Larkhaven"},
                   outline=False)
    b.title_block(BRIEF_TITLE, "Policy Brief 2024/01",
                  "Helena Marsh, Policy Adviser, Larkhaven City Council  |  12 February 2024")
    b.para("**Key messages**", family=SANS, size=11.5, lead=15, gap=3)
    b.bullet("Tree canopy in Larkhaven rose from 18.1% to 20.1% between 2019 and 2023, and the hottest "
             "districts gained the most.")
    b.bullet("Mean July surface temperature fell by 1.8 °C in Eastgate and 1.6 °C in Old Quay, against "
             "0.8 °C citywide.")
    b.bullet("Protecting existing trees mattered more in the short term than planting new ones.")
    b.bullet("Reaching 25% canopy by 2035 requires about 1,500 new trees per year and a tree protection "
             "rule for new developments.")
    b.y += 4
    b.heading(1, "1", "Introduction")
    b.para("Summer heat is the deadliest weather hazard in Larkhaven. In the hot summer of 2022 the "
           "ambulance service answered 232 heat-related call-outs, or 16.3 per 10,000 residents. The "
           "Cool Streets Programme, launched by the City Council in March 2019, tested whether trees "
           "planted where people live and walk can lower this risk. This brief summarises the "
           f"[[{REPORT_TITLE}|file:cool_streets_report.pdf#sec:1]] for councillors and partner "
           "organisations; the findings are in [[§3|sec:3]] and the recommendations in [[§4|sec:4]].")
    b.heading(1, "2", "Methods")
    b.para("The programme compared two airborne LiDAR surveys of the city's trees, flown in June 2019 and "
           "June 2023, with satellite measurements of surface temperature for every July from 2019 to "
           "2023 and with readings from 38 street-level air temperature sensors. The methods are "
           "documented in the [[Technical Appendix|launch:methods_appendix.pdf]] (methods_appendix.pdf) "
           "and all district tables are in the Data Annex, "
           "[[https://example.org/strata/data_annex.pdf|uri:https://example.org/strata/data_annex.pdf]].")
    b.para("Canopy was counted as vegetation taller than 3 m. Surface temperature is the temperature of "
           "roofs, roads and leaves seen from space; it is not the air temperature people feel, which is "
           "why the street sensors were added. Health data come from the Larkhaven Ambulance Service.")

    # ---- page 2: two columns -------------------------------------------------
    b.page_break(ncols=2)
    b.heading(1, "3", "Findings")
    b.heading(2, "3.1", "Canopy and temperature")
    b.para("Canopy grew in all six districts. The biggest gains were in Eastgate and Old Quay, the dense "
           "dock districts where heat exposure is highest, because the programme sent most new trees "
           "there: 2,345 of the 4,820 trees planted between March 2021 and October 2023.")
    b.para("Surface temperature fell most in the same two districts, by 1.8 °C in Eastgate and 1.6 °C in "
           "Old Quay. On the hottest day of the period, 19 July 2023, the air at Harbour Street in Old "
           "Quay reached 36.8 °C, 3.7 °C more than at Kingsway Cemetery.")
    b.heading(2, "3.2", "Health")
    b.para("Heat-related ambulance call-outs varied between 8.5 and 16.3 per 10,000 residents per summer "
           "([[Figure 1|fig:1]]). The variation follows the weather: 2022 had 19 days at or above 30 °C. "
           "Five summers are too few to show an effect of the canopy on health, and no such effect should "
           "be expected before the new trees have matured.")
    png, aspect = bar_chart_png(["2019", "2020", "2021", "2022", "2023"],
                                [("Call-outs", [13.1, 8.5, 10.5, 16.3, 12.3], (0.70, 0.20, 0.25))],
                                y_max=20, y_min=0, y_step=5, y_label="Call-outs per 10,000",
                                w=300, h=220)
    b.figure_image(1, "Heat-related ambulance call-outs per 10,000 residents, summers 2019-2023",
                   png, 230, aspect)
    b.heading(2, "3.3", "Costs")
    b.para("The programme cost 3.4 million euros over five years. Planting and three years of aftercare "
           "cost about 436 euros per tree, and 91.7% of the trees survived their first summer.")
    b.para("Most of the money went into the ground: 2.1 million euros for planting and aftercare, "
           "0.6 million euros for monitoring, and 0.7 million euros for community engagement, including "
           "the street tree volunteers who watered 1,900 young trees during the dry summer of 2022. "
           "Compared with the cost of heat-related emergency care, which the ambulance service puts at "
           "about 900 euros per call-out, the programme is modest, but its benefits on health will only "
           "become measurable over decades rather than years.")
    b.heading(1, "4", "Recommendations")
    b.para("The findings in [[Section 3.1|sec:3.1]] point to four actions for the second phase, "
           "2024-2028.")
    b.heading(2, "4.1", "Plant where heat is highest")
    b.para("Plant about 1,500 trees per year, at least half of them in Old Quay and Eastgate, so that both "
           "districts reach 20% canopy by 2030.")
    b.heading(2, "4.2", "Protect the trees we have")
    b.para("Adopt a tree protection rule for new developments: in the first phase, avoided removals added "
           "more canopy than new planting.")
    b.heading(2, "4.3", "Keep measuring")
    b.para("Maintain the 38-sensor network until at least 2028 and repeat the LiDAR survey in 2028 to "
           "evaluate the interim target of 22% canopy.")
    b.heading(2, "4.4", "Fund the second phase")
    b.para("A budget of 1.2 million euros per year was proposed to the Environment Committee on "
           "7 December 2023. A decision is expected in March 2024.")

    # ---- page 3: back to one column ------------------------------------------
    b.page_break(ncols=1)
    b.heading(1, "5", "Further reading")
    b.para("The three companion documents of the Cool Streets Programme give the full detail behind this "
           "brief:")
    b.bullet(f"[[{REPORT_TITLE}|file:cool_streets_report.pdf#sec:1]] (cool_streets_report.pdf), "
             "Larkhaven City Council, November 2023.")
    b.bullet(f"[[{METHODS_TITLE}|file:methods_appendix.pdf#sec:1]] (methods_appendix.pdf), "
             "November 2023.")
    b.bullet(f"{ANNEX_TITLE}, version 1.2, 8 December 2023: "
             "[[https://example.org/strata/data_annex.pdf|uri:https://example.org/strata/data_annex.pdf]].")
    b.y += 6
    b.para("Contact: Helena Marsh, Policy Adviser, Larkhaven City Council. This brief reflects the "
           "evidence available in February 2024 and does not commit the council to any decision.")
    b.finish(save)


BUILDERS = [build_report, build_methods, build_annex, build_brief]


def main():
    # Pass 1 lays out every document to learn where sections, tables and
    # figures land (needed for GoToR links into other files); pass 2 saves.
    for build in BUILDERS:
        build(save=False)
    for build in BUILDERS:
        build(save=True)
    names = ["cool_streets_report.pdf", "methods_appendix.pdf", "data_annex.pdf", "policy_brief.pdf"]
    for name in names:
        path = os.path.join(OUT_DIR, name)
        with pymupdf.open(path) as doc:
            print(f"{name}: {doc.page_count} pages, {os.path.getsize(path):,} bytes")


if __name__ == "__main__":
    main()
