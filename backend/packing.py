"""Ancestry-aware hybrid evidence packing under a token budget (HiKEY Algorithm 1) and the
reader serialisation of HiKEY appendix E/G.

Phase 1 adds every ranked anchor with its governing headers (the section chain from the
document root), in rank order; then, for each anchor in rank order, Phase 2 adds sibling units
under the same parent section (tables and figures first, then by distance from the anchor) and
Phase 3 adds semantic associates: the top-M visual units (tables, figures) of the same document
most similar to the anchor. Every addition is budget-gated; a unit that does not fit is skipped
and the loop moves on. The pack lists its units anchor by anchor, as HiKEY's format reads them.

Where it departs from HiKEY's Algorithm 1 (which runs the three phases anchor by anchor): there,
the first anchor's section and associates can spend the whole budget, so an anchor ranked third
in a near tie never reaches the reader although the ranked results show it (two manuals in one
workspace: R-intro's "To set up a vector ... use the R command" ranked fourth, behind "2.2 Vector
arithmetic" and "2.7 Index vectors" and their 30 siblings). Every ranked unit is read first.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from backend.graph.corpus import Corpus
from backend.types import EvidencePack, Layer, NodeKind, PackedUnit, ScoredNode

UNIT_TYPE = {NodeKind.PARAGRAPH: "Text", NodeKind.TABLE: "Table", NodeKind.FIGURE: "Figure", NodeKind.CODE: "Code"}
TEXT_UNIT_KINDS = (NodeKind.PARAGRAPH, NodeKind.CODE)  # units without an image
MAX_UNIT_CHARS = 2400
IMAGE_TOKENS = 0  # no visual crops go to the rules reader; an LVLM reader would set a patch cost


class TokenBudgetPacker:
    def __init__(self, corpus: Corpus, count_tokens: Callable[[str], int], associates_per_anchor: int = 3) -> None:
        self.corpus = corpus
        self.count_tokens = count_tokens
        self.associates = associates_per_anchor

    def _unit_text(self, node_id: str) -> str:
        n = self.corpus.nodes[node_id]
        return n.text[:MAX_UNIT_CHARS]

    def _unit_tokens(self, node_id: str) -> int:
        n = self.corpus.nodes[node_id]
        return self.count_tokens(self._unit_text(node_id)) + 12 + (IMAGE_TOKENS if n.kind not in TEXT_UNIT_KINDS else 0)

    def _headers(self, node_id: str) -> list[str]:
        """Section node ids from the root down to the governing header of the unit."""
        chain = []
        sec_id = self.corpus.nodes[node_id].section
        while sec_id:
            chain.append(sec_id)
            sec = self.corpus.sections.get(sec_id)
            sec_id = sec.parent if sec else None
        return list(reversed(chain))

    def _associates(self, anchor: str) -> list[str]:
        comps = self.corpus.layers["components"]
        if anchor not in comps.dense.row:
            return []
        doc = self.corpus.nodes.doc_of(anchor)
        visual = [
            c for c in self.corpus.components_by_doc.get(doc, [])
            if c != anchor and self.corpus.nodes.kind_of(c) in (NodeKind.TABLE, NodeKind.FIGURE) and c in comps.dense.row
        ]
        if not visual:
            return []
        rows = np.array([comps.dense.row[c] for c in visual])
        sims = comps.dense.scores_of(rows, comps.dense.vector(comps.dense.row[anchor]))
        order = np.argsort(-sims, kind="stable")[: self.associates]
        return [visual[i] for i in order]

    def pack(self, question: str, ranked: list[ScoredNode], budget: int) -> EvidencePack:
        """The ranked anchors with their headers first, each while it fits; then, anchor by anchor
        in rank order, its siblings and associates. The units are listed anchor by anchor (its
        headers, the anchor, its siblings, its associates), in rank order."""
        groups: dict[str, list[PackedUnit]] = {}
        included: set[str] = set()
        headers_in: set[str] = set()
        used = 0

        def header_cost(node_id: str) -> tuple[int, list[str]]:
            new = [h for h in self._headers(node_id) if h not in headers_in]
            return sum(self.count_tokens(self.corpus.sections[h].title) + 4 for h in new), new

        def add(node_id: str, role: str, anchor: str, with_headers: bool) -> bool:
            nonlocal used
            cost = self._unit_tokens(node_id)
            h_cost, new_headers = header_cost(node_id) if with_headers else (0, [])
            if used + cost + h_cost > budget:
                return False
            group = groups.setdefault(anchor, [])
            for h in new_headers:
                headers_in.add(h)
                group.append(PackedUnit(node_id=h, role="header", tokens=self.count_tokens(self.corpus.sections[h].title) + 4,
                                        path=self.corpus.sections[h].path, anchor=anchor))
            included.add(node_id)
            used += cost + h_cost
            group.append(PackedUnit(node_id=node_id, role=role, tokens=cost, path=self.corpus.section_path(node_id), anchor=anchor))
            return True

        # Phase 1: every ranked anchor with its ancestry, before any anchor's context: a unit the
        # ranking lists is read before the neighbours of a better one (a near tie at the top
        # otherwise spends the budget on the first anchors' sections).
        anchors: list[str] = []
        for hit in ranked:
            anchor = self.corpus.component_of(hit.node_id)
            node = self.corpus.nodes.get(anchor)
            if node is None or node.layer != Layer.COMPONENT or anchor in included:
                continue
            if add(anchor, "anchor", anchor, with_headers=True):
                anchors.append(anchor)
        for anchor in anchors:
            node = self.corpus.nodes[anchor]
            # Phase 2: siblings under the same parent section (visual units first).
            siblings = [s for s in self.corpus.section_members(node.section or "") if s != anchor and s not in included]
            siblings.sort(key=lambda s: (self.corpus.nodes.kind_of(s) in TEXT_UNIT_KINDS, abs(self.corpus.nodes.order_of(s) - node.order)))
            for s in siblings:
                add(s, "sibling", anchor, with_headers=False)
            # Phase 3: semantic associates (visual units elsewhere in the document).
            for m in self._associates(anchor):
                if m not in included:
                    add(m, "associate", anchor, with_headers=True)
        units = [u for anchor in anchors for u in groups[anchor]]
        return EvidencePack(budget=budget, tokens=used, units=units, text=self.serialize(units))

    def serialize(self, units: list[PackedUnit]) -> str:
        """HiKEY appendix E/G format: document meta, scope, then one block per unit."""
        out: list[str] = []
        current_doc = None
        for u in units:
            if u.role == "header":
                continue
            node = self.corpus.nodes[u.node_id]
            doc = self.corpus.documents[node.doc]
            if doc.id != current_doc:
                current_doc = doc.id
                out += ["# Global Context", "[DOC_META]", f"ID: {doc.file_name} | Title: {doc.title}", ""]
            path = " > ".join(u.path[1:]) or doc.title
            if u.role == "anchor":
                out += ["# Hierarchy Anchor (Routing Result)", f"[SCOPE] {path}", ""]
            elif u.role == "sibling":
                out += ["↓ Sibling Evidence (Same Section) ↓"]
            else:
                out += ["↓ Semantic Associate ↓"]
            kind = UNIT_TYPE.get(node.kind, node.kind.value.title())
            out.append(f"[UNIT id={node.id} | Type={kind} | Page={node.page}]")
            out.append(f"Path: {path}")
            if node.kind not in TEXT_UNIT_KINDS and node.context:
                out.append(f"Caption: {node.context}")
            out.append(f"Content: {self._unit_text(u.node_id)}")
            out.append("")
        return "\n".join(out)
