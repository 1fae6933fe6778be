"""Pages dense with text: the helpers that read a block's or a line's text are linear in its length.
A block of n words once went through a regex search that was O(n^2) (4 s for 2,000 words, hours
for the 50,000 a page inside the text bound may hold), a paragraph string was grown line by line,
and the table-of-contents patterns were O(n^2) on a long line (260 ms at 2,000 characters) or a
run of spaces. Each replacement is checked against the pattern it replaced."""

from __future__ import annotations

import re

import pytest

from backend.config import IngestSettings
from backend.ingest.extract import Line
from backend.ingest.hierarchy import leader_start, toc_entry_title
from backend.ingest.layout import _reads_as_prose, join_lines
from backend.ingest.parser import parse_pdf
from tests.fixtures.hostile_pdfs import slow_pages

# The patterns the checks replaced, as the references for what they mean.
PROSE_RE = re.compile(r"(?:\S+\s+){5,}\S*[.!?]\s*$")
TOC_LINE_RE = re.compile(r"^(?P<title>.*?\w.*?)\s*(?:\.{2,}|…+|\s{2,}|\s)\s*(?P<page>\d{1,4}|[ivxlc]{1,5})$", re.IGNORECASE)
LEADER_RE = re.compile(r"(?:\s*\.){4,}\s*$|\s*…+\s*$")

TOC_LINES = [
    "Porting..... 12", "ASN.1 structure handling . . . . 3", "Introduction 1", "Preface xii", "Appendix A … 214",
    "Chapter 12345", "Total 1,204", "Section 2.3 Results 17", "Contents", "  Overview   iv", ". . . . 5", "Title. . . . 12",
    "Title ..… 5", "Notes 5\n", "Two\nlines 5", "Basic", "a  b  c", "Revenue grew 12 percent in 2019 .... ", "Index\u00a07",
]


@pytest.mark.parametrize("text", [
    "The harbour has 412 lanterns along the quay.",
    "Six words and then a stop !",
    "five words end a sentence.",
    "No stop at the end of these many words",
    "Periods",
    "December 31,",
    "  one two three four five six?  \n",
    "one\ttwo\nthree four five six!",
    "",
    "a b c d e .",
])
def test_reads_as_prose_agrees_with_the_pattern_it_replaced(text):
    assert _reads_as_prose(text) == bool(PROSE_RE.search(text))


@pytest.mark.parametrize("line", TOC_LINES)
def test_toc_entry_title_agrees_with_the_pattern_it_replaced(line):
    m = TOC_LINE_RE.match(line)
    assert toc_entry_title(line) == (m.group("title") if m else None)


@pytest.mark.parametrize("line", TOC_LINES + ["Summary ........", "Summary …", "Summary . . .", "x" + " " * 50 + "....", "...."])
def test_leader_start_agrees_with_the_pattern_it_replaced(line):
    start = leader_start(line)
    assert (start is not None) == bool(LEADER_RE.search(line))
    assert line[:start] == LEADER_RE.sub("", line)


def test_a_long_line_and_a_run_of_spaces_are_read_whole():
    line = "lantern " * 50_000 + "..... 12"  # 400,000 characters: the old patterns took minutes on this
    assert toc_entry_title(line) == "lantern " * 49_999 + "lantern"
    assert leader_start(" " * 400_000 + "x") is None


def _line(text: str) -> Line:
    return Line(text=text, bbox=(0.0, 0.0, 10.0, 10.0), size=10.0, bold=False)


def test_join_lines_dehyphenates_and_keeps_each_line_span():
    text, spans = join_lines([_line("The light-"), _line("house keeper"), _line("lit 412-"), _line("Lanterns")])
    assert text == "The lighthouse keeper lit 412- Lanterns"
    assert [text[s:] for s, _, _ in spans] == ["The lighthouse keeper lit 412- Lanterns", "house keeper lit 412- Lanterns",
                                                "lit 412- Lanterns", "Lanterns"]
    assert [e for _, e, _ in spans] == [10, 21, 30, 39]  # a line's end as it was read, before its hyphen went


def test_a_page_of_fifty_thousand_spans_keeps_every_word(tmp_path):
    doc = parse_pdf(slow_pages(tmp_path / "dense.pdf", pages=1, text_ops=50_000), IngestSettings(), None)
    words = sum(n.text.split().count("lantern") for n in doc.nodes if n.kind.value == "paragraph")
    assert words == 50_000
