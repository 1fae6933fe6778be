"""The reading context of one evidence unit: what a sentence announces and what a fragment continues.

A manual writes an instruction across blocks: "To get more information on any specific named
function, for example solve, the command is" / "> help(solve)"; "On most R installations help is
available in HTML format by running" / "> help.start()" / "which will launch a Web browser ...".
A unit that does not end its sentence (no full stop, or a colon) is followed by the blocks it
announces (`follows`); a unit that starts inside a sentence (a lower-case word) is led by the
blocks that sentence started in (`lead`). The reader shows the whole (backend/reader/rules.py).

What is not here: deciding which unit answers (rules.py) or scoring units (reader.py).
"""

from __future__ import annotations

import re

from backend.graph.corpus import Corpus
from backend.reader.patterns import code_line, ended
from backend.types import EdgeKind, NodeKind

CONTINUES_RE = re.compile(r"^[a-z]")
CAPTION_RE = re.compile(r"^\s*(?:Table|Figure|Fig\.)\s+\d+[:.]")
MAX_BLOCKS = 6  # blocks taken on either side (a list's items are blocks)
MAX_CHARS = 400  # characters taken on either side
SHORT_OPEN_WORDS = 8  # an open sentence this short after a code line announces more code ("An alternative is")


READ_ON_KINDS = (NodeKind.PARAGRAPH, NodeKind.CODE)  # blocks a sentence runs on into


def _step(corpus: Corpus, component: str, forward: bool) -> str | None:
    """The paragraph or code block before or after one in reading order (the NEXT edges); None at
    a section's end and at a table, a figure or a caption (a table announced "as follows:" is read
    by its rows, not appended)."""
    edges = corpus.edges.out_of(component, (EdgeKind.NEXT,)) if forward else corpus.edges.into(component, (EdgeKind.NEXT,))
    for edge in edges:
        other = edge.dst if forward else edge.src
        if corpus.nodes.kind_of(other) not in READ_ON_KINDS or CAPTION_RE.match(corpus.nodes.text_of(other)) \
                or corpus.edges.out_of(other, (EdgeKind.CAPTION,)):
            return None  # a table, a figure or a caption
        return other
    return None


def _is_code(corpus: Corpus, component: str, block: str) -> bool:
    """Whether a block is code: a code unit, or a paragraph that reads as a line of code."""
    return corpus.nodes.kind_of(component) == NodeKind.CODE or code_line(block)


def in_paragraph(corpus: Corpus, unit_id: str) -> bool:
    """Whether a unit is a paragraph or one of its sentences (not a table's, a figure's or an object's)."""
    return corpus.nodes.kind_of(corpus.component_of(unit_id)) == NodeKind.PARAGRAPH


def follows(corpus: Corpus, unit_id: str, text: str) -> str:
    """The blocks a unit announces: none when it ends its sentence; else the next blocks in reading
    order: a sentence left open or a list item (";") takes the block after it too; a line of code takes the next one
    when that is code or a short open sentence ("An alternative is" before "> ?solve"); up to
    MAX_BLOCKS and MAX_CHARS."""
    if ended(text):
        return ""
    component = corpus.component_of(unit_id)
    subs = corpus.subcomponents(component)
    if subs and subs[-1] != unit_id and unit_id in subs:  # the announced text is the unit's own block's next sentence
        return corpus.nodes[subs[subs.index(unit_id) + 1]].text.strip()
    taken: list[str] = []
    while len(taken) < MAX_BLOCKS and (component := _step(corpus, component, forward=True)) is not None:
        block = corpus.nodes[component].text.strip()
        if not block or sum(map(len, taken)) + len(block) > MAX_CHARS and taken:
            break
        taken.append(block)
        if not _is_code(corpus, component, block):
            if ended(block) and not block.endswith(";"):
                break
            continue  # an open sentence: what it announces comes next; a list item: the list goes on
        nxt = _step(corpus, component, forward=True)
        after = corpus.nodes[nxt].text.strip() if nxt is not None else ""
        if not after or not (_is_code(corpus, nxt, after) or (not ended(after) and len(after.split()) <= SHORT_OPEN_WORDS)):
            break
    return " ".join(taken)


def lead(corpus: Corpus, unit_id: str, text: str) -> str:
    """The blocks a unit continues: when it starts inside a sentence (a lower-case word) and is the
    first sentence of its block, the blocks before it back to the one that opens that sentence (a
    code line the sentence names, "by running" before it), up to MAX_BLOCKS and MAX_CHARS."""
    if not CONTINUES_RE.match(text.lstrip()):
        return ""
    component = corpus.component_of(unit_id)
    subs = corpus.subcomponents(component)
    if subs and subs[0] != unit_id:
        return ""
    taken: list[str] = []
    while len(taken) < MAX_BLOCKS and (component := _step(corpus, component, forward=False)) is not None:
        block = corpus.nodes[component].text.strip()
        if not block or (ended(block) and not _is_code(corpus, component, block)) or sum(map(len, taken)) + len(block) > MAX_CHARS:
            break
        taken.insert(0, block)
        if not _is_code(corpus, component, block):
            break  # the sentence that the code line sits in opens here
    return " ".join(taken)
