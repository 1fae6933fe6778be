"""Inner-product vector index over normalised embeddings (FAISS; on the GPU when FAISS sees one).
Files are always written from a CPU copy of the index.

A layer is exact (a flat index of float32 rows) unless it holds at least `Approximate.rows` rows:
then it is an IVF index over 8-bit codes (a quarter of the memory), searched in a `share` of its
lists, and a question's every-row scores come from candidates (see `VectorIndex.scores`).
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import faiss
import numpy as np

log = logging.getLogger(__name__)

TIE_SLACK = 8  # extra hits fetched so that ties at the k-th place can be ordered by row
TRAIN_PER_LIST = 64  # k-means training rows per IVF list (FAISS warns under 39)
MAX_LISTS = 2048  # training and adding grow with the lists: the 2.7M rows of a 100k-page workspace's three big layers built in ~4 min on 2 busy cores
GPU_MAX_K = 2048  # FAISS GPU searches return at most this many rows
FLOOR_PROBE_SHARE = 0.2  # of the probed lists, searched for a question's lowest row (Approximate.floor_probes)


@dataclass(frozen=True)
class Candidates:
    """One query's scores in an approximate layer: `rows` (FAISS's order) have their own `scores`,
    every other row scores `rest`."""

    rows: np.ndarray
    scores: np.ndarray
    rest: np.float32


@dataclass(frozen=True)
class Approximate:
    """When and how a layer is searched approximately (settings `index.approximate_*`).

    rows: layers with at least this many rows are approximate (0: none is);
    share: the share of the IVF lists searched per query (recall follows the share, not the count:
    see `probes`);
    candidates: rows whose own (8-bit) score a question's every-row scores hold."""

    rows: int = 0
    share: float = 0.1
    candidates: int = 2048

    def applies(self, n_rows: int) -> bool:
        return self.rows > 0 and n_rows >= self.rows

    def floor_probes(self, lists: int) -> int:
        """Lists searched for a question's lowest row (the negated question's nearest): a fifth of
        `probes`, at least one. It lies in the lists nearest the negated question, so a fifth of
        the probed lists finds the same lowest score as all of them at a fifth of the search
        (bench/RESULTS.md#defaults)."""
        return max(1, math.ceil(self.probes(lists) * FLOOR_PROBE_SHARE))

    def probes(self, lists: int) -> int:
        """Lists searched per query: the share of them, at least one. The default share (~10%)
        is about the least whose recall@10 against exact search reaches 0.95
        (bench/RESULTS.md#defaults)."""
        return max(1, min(lists, math.ceil(self.share * lists)))

    def kind(self, n_rows: int) -> str:
        """What a layer of n_rows is held as: the FAISS file's kind recorded in index/meta.json."""
        return f"ivf{lists_for(n_rows)}-sq8" if self.applies(n_rows) else "flat"


def lists_for(n_rows: int) -> int:
    """IVF lists for a layer: ~4 sqrt(n), at least 1, at most MAX_LISTS, never fewer than
    TRAIN_PER_LIST rows per list to train on."""
    return int(max(1, min(MAX_LISTS, 4 * np.sqrt(n_rows), n_rows // TRAIN_PER_LIST)))


def build_approximate(matrix: np.ndarray, approximate: Approximate) -> faiss.Index:
    """An IVF index over 8-bit codes of `matrix` (n, dim), with a direct map (so a row's vector
    can be read back). Trained on evenly spaced rows, so the same matrix gives the same index."""
    n, dim = matrix.shape
    lists = lists_for(n)
    index = faiss.index_factory(dim, f"IVF{lists},SQ8", faiss.METRIC_INNER_PRODUCT)
    sample = matrix[np.linspace(0, n - 1, min(n, lists * TRAIN_PER_LIST)).astype(np.int64)]
    faiss.extract_index_ivf(index).cp.min_points_per_centroid = 1  # a tiny layer (tests) trains quietly
    index.train(sample)
    index.add(matrix)
    index.make_direct_map()
    index.nprobe = approximate.probes(lists)
    return index


def gpu_available(setting: str = "auto") -> bool:
    if setting == "no":
        return False
    try:
        n = faiss.get_num_gpus()
    except AttributeError:  # faiss-cpu builds without the GPU symbols
        n = 0
    return n > 0 if setting == "auto" else setting == "yes" and n > 0


def _index_vectors(index: faiss.IndexFlat) -> np.ndarray:
    """The flat index's vectors as an (n, dim) array over its own memory, keeping the index alive."""
    if not index.ntotal:
        return np.zeros((0, index.d), dtype=np.float32)
    stored = faiss.rev_swig_ptr(index.get_xb(), index.ntotal * index.d).reshape(index.ntotal, index.d).view(_IndexStorage)
    stored.owner = index  # views of the array keep the index, and so the memory, alive
    return stored


class _IndexStorage(np.ndarray):
    """An array over a FAISS index's vectors that keeps the index alive."""

    owner: faiss.Index | None = None


class VectorIndex:
    """ids[i] is the node of row i. Exact (`self.matrix` (n, dim), the float32 rows) or
    approximate (IVF over 8-bit codes; no matrix: rows are read back with `vectors`)."""

    def __init__(
        self, ids: list[str], matrix: np.ndarray | None, *, use_gpu: bool = False, index: faiss.Index | None = None,
        row: Mapping[str, int] | None = None, approximate: Approximate | None = None,
    ) -> None:
        """Either `matrix` (n, dim), copied into a new index, or `index`: a FAISS index holding one
        vector per id (a file a load read). A flat index's vectors are `self.matrix`, a view of the
        index's own memory, so each vector is held once. approximate: from a matrix, the layer is
        built approximate when it has enough rows; and the candidates of `scores`.
        row: the id -> row map when the caller made it already."""
        self.ids = ids
        self.row = row if row is not None else {node_id: i for i, node_id in enumerate(ids)}
        self.approximate = approximate or Approximate()
        if (matrix is None) == (index is None):
            raise ValueError("give the vectors either as a matrix or as a FAISS index, not both")
        if matrix is not None:
            matrix = np.ascontiguousarray(matrix, dtype=np.float32)
            if self.approximate.applies(len(ids)):
                index = build_approximate(matrix, self.approximate)
            else:
                index = faiss.IndexFlatIP(matrix.shape[1] if matrix.ndim == 2 and matrix.shape[1] else 1)
                if len(ids):
                    index.add(matrix)
        self.exact = isinstance(index, faiss.IndexFlat)
        if index.ntotal != len(ids) or not (self.exact or isinstance(index, faiss.IndexIVFScalarQuantizer)):
            raise ValueError("the index must be a flat or IVF-SQ index holding one vector per id")
        if not self.exact:
            index.nprobe = self.approximate.probes(index.nlist)
        self.matrix = _index_vectors(index) if self.exact else None
        self._cpu = index
        self._index = index
        self.on_gpu = False
        if use_gpu and len(ids):
            try:
                self._index = faiss.index_cpu_to_all_gpus(index)
                self.on_gpu = True
            except (AttributeError, RuntimeError) as exc:
                log.warning("FAISS GPU index unavailable, using CPU: %s", exc)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def dim(self) -> int:
        return self._cpu.d

    @property
    def nbytes(self) -> int:
        """Bytes of vector data held: the float32 rows, or the 8-bit codes."""
        return self.matrix.nbytes if self.exact else self._cpu.ntotal * self._cpu.code_size

    def vectors(self, rows: np.ndarray) -> np.ndarray:
        """(len(rows), dim) the rows' vectors (decoded from their codes when approximate)."""
        rows = np.asarray(rows, dtype=np.int64)
        if self.exact:
            return self.matrix[rows]
        if not len(rows):
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._cpu.reconstruct_batch(rows)

    def vector(self, row: int) -> np.ndarray:
        return self.vectors(np.array([row]))[0]

    def _search(self, queries: np.ndarray, k: int, nprobe: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """FAISS search of m queries (m, dim): (scores, rows), each (m, k), -1 rows where fewer.
        nprobe: lists to search in an IVF layer on the CPU, instead of its own (a GPU index keeps its own)."""
        x = np.ascontiguousarray(queries, dtype=np.float32)
        if nprobe is not None and not self.exact and not self.on_gpu:
            return self._index.search(x, k, params=faiss.SearchParametersIVF(nprobe=nprobe))
        return self._index.search(x, min(k, GPU_MAX_K) if self.on_gpu else k)

    def search(self, query: np.ndarray, k: int) -> list[tuple[str, float]]:
        """Top-k (node id, cosine) for one query vector (dim,)."""
        if not self.ids or k <= 0:
            return []
        scores, rows = self._search(np.asarray(query).reshape(1, -1), min(k, len(self.ids)))
        return [(self.ids[r], float(s)) for r, s in zip(rows[0], scores[0]) if r >= 0]

    def search_rows(self, query: np.ndarray, k: int, *, via_faiss: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(rows, cosines) of the k nearest rows, best first, equal scores by row.

        Approximate layers always search through FAISS. Exact ones, via_faiss None: through the
        FAISS index when it is on the GPU, else numpy's GEMV and argpartition over the same exact
        vectors (same top-k up to float rounding).
        Measured on the 2-core CPU, 127k x 384 rows, one query, k=60: numpy 3.4 ms, FAISS
        IndexFlatIP 9.4 ms (its single-query path scores row by row with a heap; 8.0 ms forced onto
        BLAS), so on a CPU the flat index is the slower way to the same answer. FAISS's own order
        among ties is not fixed: a few more than k are fetched so that a tie at the k-th place is
        ordered by row."""
        k = min(k, len(self.ids))
        if k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if self.exact and not (self.on_gpu if via_faiss is None else via_faiss):  # an approximate layer has no matrix
            s = self.matrix @ np.asarray(query, dtype=np.float32)
            top = np.argpartition(-s, k - 1)[:k]
            top = top[np.lexsort((top, -s[top]))]
            return top.astype(np.int64), s[top]
        fetch = min(len(self.ids), k + TIE_SLACK)
        scores, rows = self._search(np.asarray(query).reshape(1, -1), fetch)
        keep = rows[0] >= 0
        rows, scores = rows[0][keep].astype(np.int64), scores[0][keep]
        order = np.lexsort((rows, -scores))[:k]
        return rows[order], scores[order]

    def scores(self, query: np.ndarray) -> np.ndarray:
        """Cosine of the query with every row: (n,). For the maths that needs every row (a
        min-max normaliser over the layer); top-k searches go through `search_rows`.
        Approximate: see `scores_many`."""
        if not self.ids:
            return np.zeros(0, dtype=np.float32)
        if not self.exact:
            return self.scores_many(np.asarray(query).reshape(1, -1))[:, 0]
        return self.matrix @ np.asarray(query, dtype=np.float32)

    def scores_many(self, queries: np.ndarray) -> np.ndarray:
        """Cosine of m queries (m, dim) with every row: (n, m), reading the matrix once (a GEMM,
        where m separate `scores` calls read it m times; the read is the cost on a big layer).

        Approximate, without reading every row: per query, its `candidates` nearest rows get
        their own score; every other row gets the layer's lowest score (found as the nearest row
        to the negated query in `Approximate.floor_probes` lists, so a min-max normaliser still
        sees the layer's range), as a hybrid
        engine gives 0 to a document one of its searches did not return. The candidates keep
        their exact order; every other row ranks below them. (The last candidate's score for every
        other row, an upper bound of its own, agrees less with exact search.)"""
        queries = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        n, m = len(self.ids), len(queries)
        if not n:
            return np.zeros((0, m), dtype=np.float32)
        if self.exact:
            return self.matrix @ queries.T
        out = np.empty((m, n), dtype=np.float32)  # filled a query at a time, handed back as (n, m)
        for j, found in enumerate(self.candidates_many(queries)):
            out[j] = found.rest
            out[j, found.rows] = found.scores
        return out.T

    def candidates_many(self, queries: np.ndarray) -> list[Candidates]:
        """An approximate layer's every-row scores of m queries (m, dim) as `scores_many` gives
        them, without the (n, m) array: per query, the candidates' rows and own scores and the
        score of every other row (the layer's lowest). Only approximate layers."""
        if self.exact:
            raise ValueError("an exact layer scores every row itself: use scores_many")
        queries = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        top_s, top_r = self._search(queries, min(len(self.ids), self.approximate.candidates))
        low_s, low_r = self._search(-queries, 1, self.approximate.floor_probes(self._cpu.nlist))
        out = []
        for j in range(len(queries)):
            found = top_r[j] >= 0
            rows, s = top_r[j][found].astype(np.int64), top_s[j][found]
            rest = -low_s[j, 0] if low_r[j, 0] >= 0 else (s[-1] if len(s) else 0.0)
            out.append(Candidates(rows, s, np.float32(rest)))
        return out

    def scores_of(self, rows: np.ndarray, queries: np.ndarray) -> np.ndarray:
        """Cosine of only the given rows with m queries (m, dim) or one (dim,): (len(rows), m) or
        (len(rows),), a gather and a dot, for candidate sets (a beam, a document's units)."""
        q = np.asarray(queries, dtype=np.float32)
        return self.vectors(rows) @ (q.T if q.ndim == 2 else q)

    def save(self, path: Path) -> None:
        tmp = path.with_suffix(".tmp")
        faiss.write_index(self._cpu, str(tmp))
        os.replace(tmp, path)

    @staticmethod
    def read(path: Path) -> faiss.Index:
        return faiss.read_index(str(path))
