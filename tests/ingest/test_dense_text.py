"""Pages dense with text: the layout helpers that read a block's text are linear in its length.
A block of n words once went through a regex search that was O(n^2) (4 s for 2,000 words, hours
for the 50,000 a page inside the text bound may hold), and a paragraph string grown line by line."""

from __future__ import annotations

import re

import pytest

from backend.config import IngestSettings
from backend.ingest.extract import Line
from backend.ingest.layout import _reads_as_prose, join_lines
from backend.ingest.parser import parse_pdf
from bench.hostile import slow_pages

# The pattern the check replaced, as the reference for what "reads as prose" means.
PROSE_RE = re.compile(r"(?:\S+\s+){5,}\S*[.!?]\s*$")


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
