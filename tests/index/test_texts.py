"""The text a node is indexed by (backend/index/texts.py)."""

from __future__ import annotations

import re

import pytest

from backend.index.texts import index_text, names_title, strip_qualifier
from backend.types import Document, Layer, Node, NodeKind, Section


def _doc(title: str) -> Document:
    return Document(id="d", file_name="d.pdf", title=title, pages=1, sha256="s", bytes=1, card=title,
                    hierarchy_source="flat", page_sizes=[(612.0, 792.0)])


def _section(sid: str, path: list[str]) -> Section:
    return Section(id=sid, doc="d", title=path[-1], level=len(path) - 1, parent=None, path=path, page=1, bbox=None,
                   confidence=1.0, source="root")


def _paragraph(text: str, section: str) -> Node:
    return Node(id=f"d:{section}:p", layer=Layer.COMPONENT, kind=NodeKind.PARAGRAPH, doc="d", text=text, section=section)


def test_a_unit_under_its_title_that_never_writes_it_is_indexed_with_the_title():
    """A paragraph from the middle of an article names nothing of what it is about; its title does."""
    docs = {"d": _doc("Shirley Temple")}
    sections = {"root": _section("root", ["Shirley Temple"]), "career": _section("career", ["Shirley Temple", "Diplomatic career"])}
    mid = _paragraph("In 1969 she was appointed a delegate to the United Nations.", "root")
    assert index_text(mid, sections, docs, {}) == f"Shirley Temple\n{mid.text}"
    named = _paragraph("Shirley Temple Black was an American actress and diplomat.", "root")
    assert index_text(named, sections, docs, {}) == named.text
    under_heading = _paragraph("In 1969 she was appointed a delegate.", "career")
    assert index_text(under_heading, sections, docs, {}) == f"Diplomatic career\n{under_heading.text}"


def test_a_title_is_written_whole_without_its_qualifier_or_before_its_comma():
    assert names_title("Kiss and Tell is a 1945 comedy film.", "Kiss and Tell (1945 film)")
    assert names_title("It lies in Summerlin, Clark County.", "Summerlin, Nevada")
    assert not names_title("Summerlinx is no town.", "Summerlin, Nevada")
    assert not names_title("( ; May 19, 1941) was an American writer.", "Nora Ephron")


# The pattern strip_qualifier replaced (substituting it was O(n^2) on a run of spaces in a title).
_QUALIFIER_PATTERN = re.compile(r"\s*\([^()]*\)\s*$")


@pytest.mark.parametrize("title", [
    "Kiss and Tell (1945 film)", "Kiss and Tell", "Summerlin, Nevada", "A (b) c", "A (b (c))", "(only)", "A ()",
    "Trailing (x)  \n", "A (b)(c)", "", "  (x)", "No (close", "No close)", "x" + " " * 40_000 + "y",
])
def test_strip_qualifier_agrees_with_the_pattern_it_replaced(title):
    assert strip_qualifier(title) == _QUALIFIER_PATTERN.sub("", title)
