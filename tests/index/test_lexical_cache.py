"""A layer's BM25 index is saved with the workspace's indexes and memory-mapped by the next load:
the same scores as one built from the texts, rebuilt when a text changes or the file is torn."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from backend.graph.corpus import LAYER_NAMES, Corpus
from backend.graph.store import WorkspaceStore
from backend.index.lexical import BM25Index

IDS = ["a", "b", "c", "d"]
TEXTS = [
    "Revenue grew 12% in fiscal 2023, driven by services.",
    "The board approved a dividend of $0.24 per share.",
    "Services revenue includes AppleCare and cloud subscriptions.",
    "The the and of",  # stop words only: no token of its own
]
QUERIES = ["services revenue", "dividend per share", "unknownword", "the", "Revenue services AppleCare dividend"]


def _same_scores(a: BM25Index, b: BM25Index) -> None:
    for q in QUERIES:
        assert a.query_tokens(q) == b.query_tokens(q), q
        assert np.array_equal(a.scores(q), b.scores(q)), q
        assert a.search(q, 3) == b.search(q, 3), q


def _mapped(index: BM25Index) -> bool:
    return isinstance(index._bm25.scores["data"], np.memmap)


def test_a_saved_index_is_read_mapped_and_scores_as_the_built_one(tmp_path: Path):
    built = BM25Index(IDS, TEXTS)
    first = BM25Index.cached(IDS, TEXTS, tmp_path)
    second = BM25Index.cached(IDS, TEXTS, tmp_path)
    assert not _mapped(first) and _mapped(second)
    assert [p.name for p in tmp_path.iterdir()] and len(list(tmp_path.iterdir())) == 1
    _same_scores(built, first)
    _same_scores(built, second)
    assert second.search("services revenue", 2)[0][0] == "c"


def test_a_changed_text_builds_a_new_index_and_drops_the_stale_one(tmp_path: Path):
    BM25Index.cached(IDS, TEXTS, tmp_path)
    (old,) = tmp_path.iterdir()
    texts = [*TEXTS[:3], "A dividend was declared."]
    changed = BM25Index.cached(IDS, texts, tmp_path)
    assert not _mapped(changed)
    (new,) = tmp_path.iterdir()
    assert new.name != old.name
    _same_scores(BM25Index(IDS, texts), changed)
    assert changed.search("dividend", 4)[0][0] in {"b", "d"} and len(changed.search("dividend", 4)) == 2
    # the same texts under other ids are another index too (rows are part of it)
    assert not _mapped(BM25Index.cached(["w", "x", "y", "z"], texts, tmp_path))


def test_a_torn_index_file_is_rebuilt_with_the_same_scores(tmp_path: Path):
    BM25Index.cached(IDS, TEXTS, tmp_path)
    (saved,) = tmp_path.iterdir()
    data = next(saved.glob("data*.npy"))
    data.write_bytes(data.read_bytes()[:40])
    rebuilt = BM25Index.cached(IDS, TEXTS, tmp_path)
    assert not _mapped(rebuilt)
    _same_scores(BM25Index(IDS, TEXTS), rebuilt)
    assert _mapped(BM25Index.cached(IDS, TEXTS, tmp_path))  # and saved again, whole


def test_a_workspace_loads_its_saved_lexical_indexes(service, workspace_copy):
    dims = {name: service.encoders.for_layer(name).dim for name in LAYER_NAMES}
    shutil.rmtree(workspace_copy / "index" / "bm25", ignore_errors=True)  # the copy may hold a load's indexes
    loads = []
    for _ in range(2):
        store = WorkspaceStore(workspace_copy)
        try:
            loads.append(Corpus.load(store, dims=dims))
        finally:
            store.close()
    first, second = loads
    assert (workspace_copy / "index" / "bm25" / "components").is_dir()
    for name in (*LAYER_NAMES, "entities"):
        a, b = first.layers[name].lexical, second.layers[name].lexical
        assert a.ids == b.ids and len(a.ids), name
        assert not _mapped(a) and _mapped(b), name
        for q in ("trees planted", "annual report revenue", "figure"):
            assert np.array_equal(a.scores(q), b.scores(q)), (name, q)


def test_a_save_cleans_what_a_crashed_save_left_and_spares_a_running_one(tmp_path: Path):
    import os
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    crashed = tmp_path / f".0123abcd.{int(dead.stdout)}.tmp"
    running = tmp_path / f".4567ef01.{os.getpid()}.tmp"
    for folder in (crashed, running):
        folder.mkdir()
        (folder / "data.csc.index.npy").write_bytes(b"half written")
    BM25Index.cached(IDS, TEXTS, tmp_path)
    assert not crashed.exists(), "the dead process's half-written index is removed"
    assert running.exists(), "a live process's save in progress is left alone"
    assert _mapped(BM25Index.cached(IDS, TEXTS, tmp_path))


def test_group_counts_count_the_rows_of_each_group_that_use_a_word_built_or_mapped(tmp_path: Path):
    """Rows a, b, c in group 0 and d (stop words only) in group 1, row e in no group: "revenu" is
    used by two rows of group 0 (a and c), "servic" by two, "dividend" by one. Read in blocks of
    one token, the counts are the same as in one block, and the same from the mapped file."""
    ids, texts = IDS + ["e"], TEXTS + ["Revenue revenue revenue, said no group."]
    groups = np.array([0, 0, 0, 1, -1])
    BM25Index.cached(ids, texts, tmp_path)
    for index in (BM25Index(ids, texts), BM25Index.cached(ids, texts, tmp_path)):
        for block in (1, 2048):
            words, spread, token, group, rows = index.group_counts(groups, 2, 1, block=block)
            found = {(words[t], g): r for t, g, r in zip(token.tolist(), group.tolist(), rows.tolist())}
            assert found[("revenu", 0)] == 2 and found[("servic", 0)] == 2 and found[("dividend", 0)] == 1
            assert not any(g == 1 for _w, g in found), "group 1's only row has no word of its own"
            assert spread[words.index("revenu")] == 1, "row e belongs to no group"
            _, _, token2, _, rows2 = index.group_counts(groups, 2, 2, block=block)
            assert sorted(words[t] for t in token2) == ["revenu", "servic"] and set(rows2.tolist()) == {2}
