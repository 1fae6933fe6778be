"""Exact inner-product vector index over normalised embeddings (FAISS; on the GPU when FAISS
sees one). Files are always written from a CPU copy of the index."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import faiss
import numpy as np

log = logging.getLogger(__name__)

TIE_SLACK = 8  # extra hits fetched so that ties at the k-th place can be ordered by row


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
    """ids[i] is the node of row i of `matrix` (n, dim)."""

    def __init__(
        self, ids: list[str], matrix: np.ndarray | None, *, use_gpu: bool = False, index: faiss.Index | None = None,
        row: dict[str, int] | None = None,
    ) -> None:
        """Either `matrix` (n, dim), copied into a new flat index, or `index`: a flat index holding
        one vector per id (a FAISS file a load read). Either way `self.matrix` is a view of the
        index's own vectors, so each vector is held once, not once in numpy and once in FAISS.
        row: the id -> row map when the caller made it already."""
        self.ids = ids
        self.row = row if row is not None else {node_id: i for i, node_id in enumerate(ids)}
        if (matrix is None) == (index is None):
            raise ValueError("give the vectors either as a matrix or as a flat index, not both")
        if matrix is not None:
            matrix = np.ascontiguousarray(matrix, dtype=np.float32)
            index = faiss.IndexFlatIP(matrix.shape[1] if matrix.ndim == 2 and matrix.shape[1] else 1)
            if len(ids):
                index.add(matrix)
        if not isinstance(index, faiss.IndexFlat) or index.ntotal != len(ids):
            raise ValueError("the index must be a flat index holding one vector per id")
        cpu, self.matrix = index, _index_vectors(index)
        self._cpu = cpu
        self._index = cpu
        self.on_gpu = False
        if use_gpu and len(ids):
            try:
                self._index = faiss.index_cpu_to_all_gpus(cpu)
                self.on_gpu = True
            except (AttributeError, RuntimeError) as exc:
                log.warning("FAISS GPU index unavailable, using CPU: %s", exc)

    def __len__(self) -> int:
        return len(self.ids)

    def search(self, query: np.ndarray, k: int) -> list[tuple[str, float]]:
        """Top-k (node id, cosine) for one query vector (dim,)."""
        if not self.ids or k <= 0:
            return []
        scores, rows = self._index.search(np.asarray(query, dtype=np.float32).reshape(1, -1), min(k, len(self.ids)))
        return [(self.ids[r], float(s)) for r, s in zip(rows[0], scores[0]) if r >= 0]

    def search_rows(self, query: np.ndarray, k: int, *, via_faiss: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(rows, cosines) of the k nearest rows, best first, equal scores by row.

        via_faiss None: through the FAISS index when it is on the GPU, else numpy's GEMV and
        argpartition over the same exact vectors (same top-k up to float rounding). Measured on
        the 2-core CPU, 127k x 384 rows, one query, k=60: numpy 3.4 ms, FAISS IndexFlatIP 9.4 ms
        (its single-query path scores row by row with a heap; 8.0 ms forced onto BLAS), so on a
        CPU the flat index is the slower way to the same answer. FAISS's own order among ties is
        not fixed: a few more than k are fetched so that a tie at the k-th place is ordered by row."""
        k = min(k, len(self.ids))
        if k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if not (self.on_gpu if via_faiss is None else via_faiss):
            s = self.matrix @ np.asarray(query, dtype=np.float32)
            top = np.argpartition(-s, k - 1)[:k]
            top = top[np.lexsort((top, -s[top]))]
            return top.astype(np.int64), s[top]
        fetch = min(len(self.ids), k + TIE_SLACK)
        scores, rows = self._index.search(np.asarray(query, dtype=np.float32).reshape(1, -1), fetch)
        keep = rows[0] >= 0
        rows, scores = rows[0][keep].astype(np.int64), scores[0][keep]
        order = np.lexsort((rows, -scores))[:k]
        return rows[order], scores[order]

    def scores(self, query: np.ndarray) -> np.ndarray:
        """Cosine of the query with every row: (n,). For the maths that needs every row (a
        min-max normaliser over the layer); top-k searches go through `search_rows`."""
        if not self.ids:
            return np.zeros(0, dtype=np.float32)
        return self.matrix @ np.asarray(query, dtype=np.float32)

    def scores_many(self, queries: np.ndarray) -> np.ndarray:
        """Cosine of m queries (m, dim) with every row: (n, m), reading the matrix once (a GEMM,
        where m separate `scores` calls read it m times; the read is the cost on a big layer)."""
        queries = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        if not self.ids:
            return np.zeros((0, len(queries)), dtype=np.float32)
        return self.matrix @ queries.T

    def scores_of(self, rows: np.ndarray, queries: np.ndarray) -> np.ndarray:
        """Cosine of only the given rows with m queries (m, dim) or one (dim,): (len(rows), m) or
        (len(rows),), a gather and a dot, for candidate sets (a beam, a document's units)."""
        q = np.asarray(queries, dtype=np.float32)
        sub = self.matrix[np.asarray(rows, dtype=np.int64)]
        return sub @ (q.T if q.ndim == 2 else q)

    def save(self, path: Path) -> None:
        tmp = path.with_suffix(".tmp")
        faiss.write_index(self._cpu, str(tmp))
        os.replace(tmp, path)

    @staticmethod
    def read(path: Path) -> faiss.Index:
        return faiss.read_index(str(path))
