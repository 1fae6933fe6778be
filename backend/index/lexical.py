"""BM25 over node texts (bm25s, English stop words, Snowball stemming).

A loaded corpus keeps each layer's index in a file (`BM25Index.cached`): the next load maps it
instead of tokenising every text again, and only the postings of a question's words are read
from it, so the index mostly stays out of the process's memory."""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import shutil
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import Stemmer

log = logging.getLogger(__name__)


def _import_bm25s():
    """bm25s with JAX hidden from it. Where JAX is installed, `import bm25s` imports it and runs a
    top-k on it, which on a GPU machine starts JAX's CUDA backend: the process holds gigabytes
    more (bench/RESULTS.md#defaults), the ingest memory budget is spent before a page is read,
    and JAX takes most of the GPU's memory for itself. Strata
    scores BM25 with numpy, so bm25s needs no JAX; any later `import jax` works as before."""
    hidden = {name: sys.modules.pop(name) for name in list(sys.modules) if name == "jax" or name.startswith("jax.")}
    sys.modules["jax"] = None  # `import jax` raises ImportError while bm25s is imported
    try:
        import bm25s
    finally:
        del sys.modules["jax"]
        sys.modules.update(hidden)
    return bm25s


bm25s = _import_bm25s()

_STEMMER = Stemmer.Stemmer("english")
# Part of every saved index's key: change it with tokenize() or the scoring, and the files
# saved before are rebuilt (the key also covers the texts, ids, k1, b and the bm25s version).
LEXICAL_FORMAT = 1


def index_key(ids: list[str], texts: Iterable[str], k1: float, b: float) -> str:
    """A digest of everything a saved index depends on: rows, texts, parameters, code."""
    h = hashlib.sha256(f"{LEXICAL_FORMAT}|{bm25s.__version__}|{k1}|{b}|{len(ids)}".encode())
    for node_id, text in zip(ids, texts, strict=True):
        h.update(node_id.encode())
        h.update(b"\x00")
        h.update(text.encode("utf-8", "surrogatepass"))
        h.update(b"\x01")
    return h.hexdigest()[:32]


def tokenize(texts: list[str]) -> list[list[str]]:
    return bm25s.tokenize(texts, stopwords="en", stemmer=_STEMMER, return_ids=False, show_progress=False)


def _abandoned(name: str) -> bool:
    """A `.<key>.<pid>.tmp` folder whose process is gone (a save it did not finish)."""
    parts = name.split(".")
    if len(parts) != 4 or parts[3] != "tmp" or not parts[2].isdigit():
        return False
    try:
        os.kill(int(parts[2]), 0)
    except ProcessLookupError:
        return True
    except OSError:  # alive, but another user's
        return False
    return False


class BM25Index:
    def __init__(self, ids: list[str], texts: list[str], k1: float = 1.5, b: float = 0.75) -> None:
        self.ids = ids
        self._bm25 = bm25s.BM25(k1=k1, b=b)
        if ids:
            tokens = tokenize(texts)
            # bm25s needs at least one token per corpus; an all-stop-word corpus indexes a placeholder.
            if not any(tokens):
                tokens = [["_"] for _ in tokens]
            self._bm25.index(tokens, show_progress=False)
            self._vocab = self._bm25.vocab_dict
        else:
            self._vocab = {}

    @classmethod
    def cached(
        cls, ids: list[str], texts: list[str] | Callable[[], Iterable[str]], folder: Path, k1: float = 1.5, b: float = 0.75,
    ) -> BM25Index:
        """The index of these rows, read from `folder` (memory-mapped) when a load before saved
        one for exactly these ids and texts, else built and saved there for the next load; the
        other indexes saved in `folder` (stale ones) are removed. Same scores either way.
        texts: or a function that makes them, one at a time if it likes: the digest then holds
        none of them (a load's peak), none is alive when a saved index's vocabulary is read (the
        vocabulary is kept, the texts are not), and they are made again only to build."""
        key = index_key(ids, texts() if callable(texts) else texts, k1, b)
        path = folder / key
        if ids and path.is_dir():
            try:
                return cls._read(ids, path)
            except (OSError, ValueError, KeyError) as exc:  # a torn or foreign file: build again
                log.warning("BM25 index %s unreadable, rebuilding: %s", path, exc)
                shutil.rmtree(path, ignore_errors=True)
        index = cls(ids, list(texts()) if callable(texts) else texts, k1, b)
        if ids:
            index._save(path)
        return index

    @classmethod
    def _read(cls, ids: list[str], path: Path) -> BM25Index:
        bm25 = bm25s.BM25.load(str(path), mmap=True, show_progress=False)
        if bm25.scores["num_docs"] != len(ids):
            raise ValueError(f"{bm25.scores['num_docs']} rows saved, {len(ids)} expected")
        index = cls.__new__(cls)
        index.ids = ids
        index._bm25 = bm25
        index._vocab = bm25.vocab_dict
        return index

    def _save(self, path: Path) -> None:
        """Written under a temporary name and renamed, so a reader sees a whole index or none;
        a file in use by another process keeps its data until that process lets it go."""
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            shutil.rmtree(tmp, ignore_errors=True)
            self._bm25.save(str(tmp), show_progress=False)
            try:
                os.rename(tmp, path)
            except OSError:  # another load saved the same index first
                shutil.rmtree(tmp, ignore_errors=True)
            for other in path.parent.iterdir():
                if other.name != path.name and (not other.name.startswith(".") or _abandoned(other.name)):
                    shutil.rmtree(other, ignore_errors=True)
        except OSError as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            log.debug("could not save the BM25 index %s: %s", path, exc)

    @functools.cached_property
    def row(self) -> dict[str, int]:
        """node id -> row; made on first use (the corpus finds rows through the dense index's map)."""
        return {node_id: i for i, node_id in enumerate(self.ids)}

    def __len__(self) -> int:
        return len(self.ids)

    def query_tokens(self, query: str) -> list[str]:
        return [t for t in tokenize([query])[0] if t in self._vocab]

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every row for the query: (n,)."""
        if not self.ids:
            return np.zeros(0, dtype=np.float32)
        toks = self.query_tokens(query)
        if not toks:
            return np.zeros(len(self.ids), dtype=np.float32)
        return np.asarray(self._bm25.get_scores(toks), dtype=np.float32)

    def group_counts(self, group_of_row: np.ndarray, n_groups: int, min_count: int, block: int = 2048
                     ) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """How many rows of each group (a document's units) use each word, from the index's own
        postings (no text is tokenised again): (words by token id, groups using each token (V,),
        and the (token, group, rows) triples with at least `min_count` rows). Rows of group -1
        are left out. Read `block` tokens at a time, so the pairs held at once stay small."""
        vocab = self._vocab
        words = [""] * len(vocab)
        for word, token in vocab.items():
            words[token] = word
        if not self.ids or not words:
            empty = np.zeros(0, dtype=np.int64)
            return words, np.zeros(len(words), dtype=np.int64), empty, empty, empty
        indptr = np.asarray(self._bm25.scores["indptr"], dtype=np.int64)  # bm25s's "" token may have no column
        indices = self._bm25.scores["indices"]
        n_tokens = len(indptr) - 1
        group_of_row = np.asarray(group_of_row, dtype=np.int64)
        spread = np.zeros(len(words), dtype=np.int64)
        kept: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = [(np.zeros(0, dtype=np.int64),) * 3]
        for start in range(0, n_tokens, block):
            end = min(n_tokens, start + block)
            token = np.repeat(np.arange(end - start, dtype=np.int64), np.diff(indptr[start:end + 1]))
            group = group_of_row[np.asarray(indices[indptr[start]:indptr[end]], dtype=np.int64)]
            used = group >= 0
            pairs, rows = np.unique(token[used] * n_groups + group[used], return_counts=True)
            spread[start:end] = np.bincount(pairs // n_groups, minlength=end - start)
            many = rows >= min_count
            kept.append((pairs[many] // n_groups + start, pairs[many] % n_groups, rows[many]))
        return words, spread, *(np.concatenate(parts) for parts in zip(*kept))

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        s = self.scores(query)
        if not len(s) or k <= 0:
            return []
        k = min(k, len(s))
        top = np.argpartition(-s, k - 1)[:k]
        top = top[np.argsort(-s[top], kind="stable")]
        return [(self.ids[i], float(s[i])) for i in top if s[i] > 0]
