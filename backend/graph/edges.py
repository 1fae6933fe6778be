"""The edges of a loaded corpus as arrays, with each node's out- and in-edges found by offset.

A corpus holds about a hundred edges per page (entity mentions and relations are most of them).
As Edge records in three Python lists (all edges, per source, per target) they took ~130 bytes
each plus the lists; here an edge is 21 bytes of columns and 8 of offsets, and an Edge record
is made only when asked for (`out_of`, `into`, iteration). Records are made without validation:
every value was validated when the edge was first built or written to the store.
"""

from __future__ import annotations

import functools
from array import array
from collections.abc import Iterable, Iterator

import numpy as np

from backend.types import Edge, EdgeKind

_KINDS = tuple(EdgeKind)
_KIND_CODE = {k: i for i, k in enumerate(_KINDS)}


@functools.lru_cache(maxsize=None)
def _kind_mask(kinds: tuple[EdgeKind, ...]) -> np.ndarray:
    """(len(EdgeKind),) True at the codes of `kinds`: a row filter by indexing, where np.isin
    cost ~25 us a call on a node's few edges (FiF asks for a node's neighbours ~500 times a question)."""
    mask = np.zeros(len(_KINDS), dtype=bool)
    mask[[_KIND_CODE[k] for k in kinds]] = True
    return mask
_VALUE_CODE = {k.value: i for i, k in enumerate(_KINDS)}
_EMPTY = np.zeros(0, dtype=np.int64)

# An edge as the store reads it for a load: (src, dst, kind value, weight, provenance). A load
# streams these into the table without making an Edge record for each (WorkspaceStore.iter_edge_rows).
EdgeRow = tuple[str, str, str, float, str]


def edge_rows(edges: Iterable[Edge | EdgeRow]) -> Iterator[EdgeRow]:
    """Edge records as rows (rows pass through)."""
    for e in edges:
        yield e if isinstance(e, tuple) else (e.src, e.dst, e.kind.value, e.weight, e.provenance)


def _record(src: str, dst: str, kind: EdgeKind, weight: float, provenance: str) -> Edge:
    edge = object.__new__(Edge)
    edge.src, edge.dst, edge.kind, edge.weight, edge.provenance = src, dst, kind, weight, provenance
    return edge


class EdgeTable:
    """Edges in their insertion order; `out_of(node)` and `into(node)` keep that order too."""

    def __init__(
        self, edges: Iterable[Edge | EdgeRow], node_ids: Iterable[str] = (), *, unique: dict[EdgeKind, bool] | None = None,
        numbering: tuple[dict[str, int], list[str]] | None = None,
    ) -> None:
        """edges: Edge records or EdgeRows, any iterable, read once (a stream keeps only one alive at a time).
        node_ids: ids to number first; an edge end that is no node gets a number too.
        numbering: (id -> number, number -> id) to share instead (a corpus passes its NodeTable's
        rows and ids, so the million-entry map is held once); every edge end must be in it, and
        it is not changed. unique: kinds whose repeats are dropped, the first kept: an edge of
        such a kind repeats an earlier one with the same ends and kind, and the same provenance
        too where the kind maps to True."""
        self._shared = numbering is not None
        self._code: dict[str, int] = {} if numbering is None else numbering[0]
        self._ids: list[str] = [] if numbering is None else numbering[1]
        for node_id in node_ids:
            self._number(node_id)
        provenance: dict[str, int] = {}
        self._provenance: list[str] = []
        src, dst, kind, weight, prov = array("i"), array("i"), array("b"), array("d"), array("i")
        for e_src, e_dst, e_kind, e_weight, e_prov in edge_rows(edges):
            src.append(self._number(e_src))
            dst.append(self._number(e_dst))
            kind.append(_VALUE_CODE[e_kind])
            weight.append(e_weight)
            p = provenance.get(e_prov)
            if p is None:
                p = provenance[e_prov] = len(self._provenance)
                self._provenance.append(e_prov)
            prov.append(p)
        self._src = np.asarray(src, dtype=np.int32)
        self._dst = np.asarray(dst, dtype=np.int32)
        self._kind = np.asarray(kind, dtype=np.int8)
        self._weight = np.asarray(weight, dtype=np.float64)  # an Edge's weight is a Python float: kept exact
        self._prov = np.asarray(prov, dtype=np.int32)
        del src, dst, kind, weight, prov
        if unique:
            keep = self._first_of_each(unique)
            for name in ("_src", "_dst", "_kind", "_weight", "_prov"):
                setattr(self, name, getattr(self, name)[keep])
        self._out_start, self._out = self._index(self._src)
        self._in_start, self._in = self._index(self._dst)

    def _first_of_each(self, unique: dict[EdgeKind, bool]) -> np.ndarray:
        """(n_edges,) True for every edge but the later repeats among the `unique` kinds."""
        keep = np.ones(len(self._src), dtype=bool)
        rows = np.flatnonzero(np.isin(self._kind, [_KIND_CODE[k] for k in unique]))
        if len(rows):
            with_prov = np.isin(self._kind[rows], [_KIND_CODE[k] for k, v in unique.items() if v])
            keys = np.stack([self._src[rows], self._dst[rows], self._kind[rows].astype(np.int32),
                             np.where(with_prov, self._prov[rows], -1)], axis=1)
            _, first = np.unique(keys, axis=0, return_index=True)  # the first row of each key
            keep[rows] = False
            keep[rows[first]] = True
        return keep

    def _number(self, node_id: str) -> int:
        code = self._code.get(node_id)
        if code is None:
            if self._shared:
                raise ValueError(f"edge end {node_id} is not in the shared numbering")
            code = self._code[node_id] = len(self._ids)
            self._ids.append(node_id)
        return code

    def _index(self, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(starts, order): the edges with end j are order[starts[j]:starts[j + 1]], in insertion order."""
        order = np.argsort(ends, kind="stable").astype(np.int32)
        starts = np.zeros(len(self._ids) + 1, dtype=np.int64)
        np.cumsum(np.bincount(ends, minlength=len(self._ids)), out=starts[1:])
        return starts, order

    def __len__(self) -> int:
        return len(self._src)

    def __iter__(self) -> Iterator[Edge]:
        for i in range(len(self._src)):
            yield self._edge(i)

    def _edge(self, i: int) -> Edge:
        return _record(
            self._ids[self._src[i]], self._ids[self._dst[i]], _KINDS[self._kind[i]], float(self._weight[i]),
            self._provenance[self._prov[i]],
        )

    def _rows(self, node_id: str, starts: np.ndarray, order: np.ndarray, kinds: tuple[EdgeKind, ...] | None) -> np.ndarray:
        code = self._code.get(node_id)
        if code is None:
            return _EMPTY
        rows = order[starts[code]:starts[code + 1]]
        if kinds is not None and len(rows):
            rows = rows[_kind_mask(tuple(kinds))[self._kind[rows]]]
        return rows

    def neighbour_ids(self, node_id: str, kinds: tuple[EdgeKind, ...] | None = None) -> list[str]:
        """The other end of each of `node_id`'s edges (of those kinds): the out-edges' targets, then
        the in-edges' sources, each in the order added; no Edge record is made (an entity named
        across thousands of documents has thousands of mentions)."""
        out = self._rows(node_id, self._out_start, self._out, kinds)
        into = self._rows(node_id, self._in_start, self._in, kinds)
        ids = self._ids
        return [ids[i] for i in self._dst[out].tolist()] + [ids[i] for i in self._src[into].tolist()]

    def targets(self, node_id: str, kinds: tuple[EdgeKind, ...] | None = None) -> list[str]:
        """The targets of `node_id`'s out-edges (of those kinds), in the order added, without records."""
        ids = self._ids
        return [ids[i] for i in self._dst[self._rows(node_id, self._out_start, self._out, kinds)].tolist()]

    def out_of(self, node_id: str, kinds: tuple[EdgeKind, ...] | None = None) -> list[Edge]:
        """The edges from `node_id` (of those kinds), in the order they were added."""
        return [self._edge(i) for i in self._rows(node_id, self._out_start, self._out, kinds)]

    def into(self, node_id: str, kinds: tuple[EdgeKind, ...] | None = None) -> list[Edge]:
        """The edges to `node_id` (of those kinds), in the order they were added."""
        return [self._edge(i) for i in self._rows(node_id, self._in_start, self._in, kinds)]

    def of_kind(self, kinds: tuple[EdgeKind, ...]) -> list[Edge]:
        """Every edge of those kinds, in the order they were added (records made for those only)."""
        rows = np.flatnonzero(np.isin(self._kind, [_KIND_CODE[k] for k in kinds]))
        return [self._edge(i) for i in rows]

    def ends(self, kinds: tuple[EdgeKind, ...]) -> tuple[np.ndarray, np.ndarray]:
        """(sources, targets) of every edge of those kinds as the table's numbers (a corpus's node
        rows, where it shares the node table's numbering), in the order added: for maths over many
        edges at once, without an id or a record per edge."""
        rows = np.flatnonzero(_kind_mask(tuple(kinds))[self._kind])
        return self._src[rows], self._dst[rows]

    def incident(self, node_id: str, kinds: tuple[EdgeKind, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(other end, source, target, provenance code) of each of `node_id`'s edges of those kinds,
        as the table's numbers: the out-edges, then the in-edges, each in the order added (the order
        Corpus.neighbours gives), without a record per edge."""
        out = self._rows(node_id, self._out_start, self._out, kinds)
        into = self._rows(node_id, self._in_start, self._in, kinds)
        rows = np.concatenate([out, into])
        return np.concatenate([self._dst[out], self._src[into]]), self._src[rows], self._dst[rows], self._prov[rows]

    def id_of(self, number: int) -> str:
        return self._ids[number]

    def provenance_of(self, code: int) -> str:
        return self._provenance[code]

    def degree(self, node_id: str) -> int:
        """How many edges start or end at `node_id`."""
        code = self._code.get(node_id)
        if code is None:
            return 0
        return int(self._out_start[code + 1] - self._out_start[code] + self._in_start[code + 1] - self._in_start[code])

    def counts(self) -> dict[EdgeKind, int]:
        return {_KINDS[k]: int(n) for k, n in enumerate(np.bincount(self._kind, minlength=len(_KINDS))) if n}

    def nbytes(self) -> int:
        """Bytes of the columns and offsets (not the id and provenance strings, shared or small)."""
        arrays = (self._src, self._dst, self._kind, self._weight, self._prov, self._out_start, self._out, self._in_start, self._in)
        return sum(a.nbytes for a in arrays)
