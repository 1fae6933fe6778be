"""The nodes of a loaded corpus as columns, with a Node record made only when one is asked for.

A corpus holds about thirty nodes per page. As slotted Node records each took ~140 bytes, its
box a tuple of four Python floats ~170 more, and its text a str object's 49 bytes of header:
at 100k pages 1.2 GB of records, boxes and headers. Here a node is its id string, one row in
array columns (~70 bytes) and its UTF-8 text in one buffer; `table[node_id]` makes the Node
again, without validation (every value was validated when the node was read or built), equal
field for field to the one the table was given. The strings that many nodes share (document,
section and parent ids, roles, labels, crops, contexts) are kept once each and numbered.

The hot paths of retrieval read one field of many nodes (`doc_of`, `layer_of`, `kind_of`,
`parent_of`, `section_of`, `text_of`) without making records. A row number is the node's position in the
order given; the corpus's EdgeTable numbers its ends the same way (`rows`, `ids`).

What the table keeps of a record is its id string and copies of its pooled strings (a pooled
value that is an earlier node's id is that node's id string). A load streams the records one
after the other (`WorkspaceStore.iter_nodes`, which hands each record's id over as a string of
its own), so a record's text, box and other strings die with it and the next record takes their
place: a string kept from a record that dies later would keep the allocator's arenas around it
from going back to the system (at 10k pages the load's memory did not fall at all while the
table kept strings out of the records it had made Nodes of). Whatever else a corpus keeps of an
id (layer rows, document members) is the table's string too: `canonical`.

A row node's cells (`Node.row`, a TableRow) are not kept as strings: its text is the row's index
text, which writes the table label and every header and value in order, so the table keeps the
lengths of those pieces (one int each, in `_row_spec`) and `row_of` cuts them out of the text
again. A row whose text is not its cells' index text is refused when the table is built.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Iterator, Mapping

import numpy as np

from backend.types import Cell, Layer, Node, NodeKind, TableRow

_LAYERS = tuple(Layer)
_LAYER_CODE = {k: i for i, k in enumerate(_LAYERS)}
_KINDS = tuple(NodeKind)
_KIND_CODE = {k: i for i, k in enumerate(_KINDS)}
_NO_BOX = (math.nan,) * 4  # a node without a box
_new_tuple = tuple.__new__  # makes a NamedTuple without its Python-level __new__


def own_string(value: str) -> str:
    """A new string object equal to `value` (str() and slicing return the same object): one
    that does not keep the record it came from, or the memory around that record, alive."""
    return value.encode("utf-8", "surrogatepass").decode("utf-8", "surrogatepass")


def _row_lengths(n: Node) -> list[int]:
    """[table label's length (-1: none), number of cells, then each cell's header and value
    lengths]: what NodeTable keeps of a row node's cells. ValueError when the node's text is not
    its cells' index text (the cells could not be cut out of it)."""
    row = n.row
    if n.text != row.index_text():
        raise ValueError(f"row node {n.id}: its text {n.text[:80]!r} is not its cells' index text "
                         f"{row.index_text()[:80]!r}; build a row node's text with TableRow.index_text().")
    spec = [len(row.table) if row.table else -1, len(row.cells)]
    for header, value in row.cells:
        spec += (len(header), len(value))
    return spec


class _Pool:
    """Distinct values of one optional string field, numbered; -1 is None."""

    def __init__(self) -> None:
        self.values: list[str] = []
        self._number: dict[str, int] = {}
        self.codes = array("i")

    def add(self, value: str | None, rows: Mapping[str, int], ids: list[str]) -> None:
        if value is None:
            self.codes.append(-1)
            return
        code = self._number.get(value)
        if code is None:
            row = rows.get(value)  # an earlier node's id (a document's, a section's, a parent's): its string
            value = ids[row] if row is not None else own_string(value)
            code = self._number[value] = len(self.values)
            self.values.append(value)
        self.codes.append(code)

    def freeze(self, rows: Mapping[str, int], ids: list[str]) -> array:
        """The codes in the smallest signed type that holds them. A value that is a node's id
        (one that came before its node) becomes that id's string, so the pool holds no copy of it."""
        self._number = {}
        for i, value in enumerate(self.values):
            row = rows.get(value)
            if row is not None:
                self.values[i] = ids[row]
        typecode = next(t for t in "bhi" if len(self.values) < 2 ** (8 * array(t).itemsize - 1))
        return array(typecode, self.codes)


class LayerRows(Mapping[str, int]):
    """node id -> row in one index layer, for the nodes of that layer only: what a dict of the
    layer's ids would answer, read through the table's row map and one array of layer rows shared
    by the layers (a node is in one at most), so no second million-entry map and no int object per
    row is held (~165 MB at 100k pages)."""

    def __init__(self, table: NodeTable, ids: list[str], shared: array) -> None:
        self._rows = table.rows
        self._ids = ids
        self._shared = shared
        for r, node_id in enumerate(ids):
            shared[table.rows[node_id]] = r

    def __getitem__(self, node_id: str) -> int:
        r = self.get(node_id)
        if r is None:
            raise KeyError(node_id)
        return r

    def get(self, node_id: str, default=None):
        row = self._rows.get(node_id)
        if row is None:
            return default
        r = self._shared[row]
        return r if 0 <= r < len(self._ids) and self._ids[r] == node_id else default

    def __contains__(self, node_id: object) -> bool:
        return self.get(node_id) is not None  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)


class NodeTable(Mapping[str, Node]):
    """Nodes in the order given, read-only; a Mapping from node id to Node."""

    _POOLED = ("doc", "section", "parent", "crop", "label", "role", "context")

    def __init__(self, nodes: Iterable[Node]) -> None:
        """nodes: any iterable, read once; ids must be distinct."""
        self.ids: list[str] = []
        self.rows: dict[str, int] = {}
        layer, kind, page, order = array("b"), array("b"), array("i"), array("q")
        boxes, ends = array("d"), array("q")
        text = bytearray()
        pools = {name: _Pool() for name in self._POOLED}
        row_at, row_spec = array("q"), array("i")  # per node: its start in row_spec, -1 without cells
        for n in nodes:
            if n.id in self.rows:
                raise ValueError(f"node {n.id} given twice")
            self.rows[n.id] = len(self.ids)
            self.ids.append(n.id)
            layer.append(_LAYER_CODE[n.layer])
            kind.append(_KIND_CODE[n.kind])
            page.append(n.page)
            order.append(n.order)
            boxes.extend(_NO_BOX if n.bbox is None else n.bbox)
            text += n.text.encode("utf-8", "surrogatepass")  # PDF text can hold a lone surrogate
            ends.append(len(text))
            for name, pool in pools.items():
                pool.add(getattr(n, name), self.rows, self.ids)
            row_at.append(-1 if n.row is None else len(row_spec))
            if n.row is not None:
                row_spec.extend(_row_lengths(n))
        # array columns: indexing one gives a Python value without numpy's per-scalar cost
        self._layer, self._kind, self._page, self._order, self._box, self._ends = layer, kind, page, order, boxes, ends
        self._text = bytes(text)
        del text
        self._codes = {name: pool.freeze(self.rows, self.ids) for name, pool in pools.items()}
        self._values = {name: pool.values for name, pool in pools.items()}
        self._doc, self._docs = self._codes["doc"], self._values["doc"]
        self._parent, self._parents = self._codes["parent"], self._values["parent"]
        self._layer_row: array | None = None  # made by the first layer_rows
        self._row_at, self._row_spec = row_at, row_spec

    # ---------------------------------------------------------------- Mapping

    def __getitem__(self, node_id: str) -> Node:
        return self.node(self.rows[node_id])

    def __contains__(self, node_id: object) -> bool:
        return node_id in self.rows

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids)

    def __len__(self) -> int:
        return len(self.ids)

    # ---------------------------------------------------------------- rows

    def node(self, row: int) -> Node:
        """The Node at a row, made without validation."""
        n = object.__new__(Node)
        n.id = self.ids[row]
        n.layer = _LAYERS[self._layer[row]]
        n.kind = _KINDS[self._kind[row]]
        n.doc = self._docs[self._doc[row]]
        n.text = self._text_at(row)
        n.section = self._pooled("section", row)
        n.page = self._page[row]
        box = self._box[4 * row:4 * row + 4]
        n.bbox = None if box[0] != box[0] else tuple(box)  # NaN: no box
        n.parent = self._pooled("parent", row)
        n.crop = self._pooled("crop", row)
        n.label = self._pooled("label", row)
        n.role = self._pooled("role", row)
        n.order = self._order[row]
        n.context = self._pooled("context", row) or ""
        n.row = self._table_row(row, n.text)
        return n

    def _table_row(self, row: int, text: str) -> TableRow | None:
        """The cells of the node at `row`, cut out of its text by the lengths kept for them; made
        without validation, as `node` makes a Node (the cells were validated when the node was)."""
        at = self._row_at[row]
        if at < 0:
            return None
        spec = self._row_spec
        table_len, n_cells = spec[at], spec[at + 1]
        pos = table_len + 2 if table_len > 0 else 0
        cells = []
        for i in range(at + 2, at + 2 + 2 * n_cells, 2):
            value_at, value_len = pos + spec[i] + 2, spec[i + 1]
            cells.append(_new_tuple(Cell, (text[pos:value_at - 2], text[value_at:value_at + value_len])))  # Cell(h, v), faster
            pos = value_at + value_len + 2
        table_row = object.__new__(TableRow)
        object.__setattr__(table_row, "table", None if table_len < 0 else text[:table_len])  # frozen: set as its __init__ does
        object.__setattr__(table_row, "cells", tuple(cells))
        return table_row

    def _pooled(self, name: str, row: int) -> str | None:
        code = self._codes[name][row]
        return None if code < 0 else self._values[name][code]

    def _text_at(self, row: int) -> str:
        return self._text[self._ends[row - 1] if row else 0:self._ends[row]].decode("utf-8", "surrogatepass")

    # ---------------------------------------------------------------- one field, no record

    def canonical(self, node_id: str) -> str:
        """The table's string for an id (equal to `node_id`): what a corpus keeps."""
        return self.ids[self.rows[node_id]]

    def doc_of(self, node_id: str) -> str:
        return self._docs[self._doc[self.rows[node_id]]]

    def parent_of(self, node_id: str) -> str | None:
        code = self._parent[self.rows[node_id]]
        return None if code < 0 else self._parents[code]

    def section_of(self, node_id: str) -> str | None:
        return self._pooled("section", self.rows[node_id])

    def layer_of(self, node_id: str) -> Layer:
        return _LAYERS[self._layer[self.rows[node_id]]]

    def kind_of(self, node_id: str) -> NodeKind:
        return _KINDS[self._kind[self.rows[node_id]]]

    def text_of(self, node_id: str) -> str:
        return self._text_at(self.rows[node_id])

    def row_of(self, node_id: str) -> TableRow | None:
        """A row node's cells (None for other nodes, and for rows stored without cells)."""
        row = self.rows[node_id]
        return self._table_row(row, self._text_at(row)) if self._row_at[row] >= 0 else None

    def page_of(self, node_id: str) -> int:
        return self._page[self.rows[node_id]]

    def order_of(self, node_id: str) -> int:
        return self._order[self.rows[node_id]]

    def doc_at(self, row: int) -> str:
        return self._docs[self._doc[row]]

    def rows_of_layer(self, layer: Layer) -> list[int]:
        """The rows of the nodes of that layer, in order."""
        return np.flatnonzero(np.frombuffer(self._layer, dtype=np.int8) == _LAYER_CODE[layer]).tolist()

    def rows_of_kind(self, kind: NodeKind) -> list[int]:
        """The rows of the nodes of that kind, in order."""
        return np.flatnonzero(np.frombuffer(self._kind, dtype=np.int8) == _KIND_CODE[kind]).tolist()

    def layer_rows(self, ids: list[str]) -> LayerRows:
        """The row map of an index layer holding `ids` (nodes of the table, in each at most one
        layer's `ids`)."""
        if self._layer_row is None:
            self._layer_row = array("i", [-1]) * len(self.ids)
        return LayerRows(self, ids, self._layer_row)

    def layer_codes(self) -> np.ndarray:
        """(n,) each node's layer as its position in `Layer` (a view of the column, no copy)."""
        return np.frombuffer(self._layer, dtype=np.int8)

    def parent_rows(self) -> np.ndarray:
        """(n,) the row of each node's parent: -1 for a node without one, or whose parent is no node."""
        value_rows = np.array([self.rows.get(v, -1) for v in self._parents] + [-1], dtype=np.int64)
        return value_rows[np.asarray(self._parent, dtype=np.int64)]  # code -1 reads the -1 appended

    def kind_counts(self) -> dict[NodeKind, int]:
        counts = np.bincount(np.frombuffer(self._kind, dtype=np.int8), minlength=len(_KINDS))
        return {_KINDS[k]: int(n) for k, n in enumerate(counts) if n}

    def nbytes(self) -> int:
        """Bytes of the columns and the text buffer (not the id strings or the pooled values)."""
        columns = (self._layer, self._kind, self._page, self._order, self._box, self._ends, self._row_at, self._row_spec,
                   *self._codes.values())
        return sum(len(a) * a.itemsize for a in columns) + len(self._text)
