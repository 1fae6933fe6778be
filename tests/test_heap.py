"""heap.trim hands freed memory back to the system, and the service trims after a corpus load
and after an ingest (a long-lived server otherwise stays at the size of its largest moment)."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from backend import heap

glibc = pytest.mark.skipif(heap._libc() is None, reason="malloc_trim is glibc's")


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@glibc
def test_freed_blocks_between_live_ones_go_back_to_the_system():
    # 2 KB blocks come from glibc's heap, not from mmap; keeping every 64th alive pins the heap's
    # top, so only an explicit trim can return the free pages between them.
    blocks = [bytes(2048) for _ in range(100_000)]  # ~200 MB
    kept = blocks[::64]
    del blocks
    before = _rss_mb()
    assert heap.trim()
    after = _rss_mb()
    assert before - after > 100, f"RSS {before:.0f} -> {after:.0f} MB"
    assert len(kept) == 1563


def test_the_service_trims_after_loading_a_corpus_and_after_an_ingest(service, sample_workspace, tmp_path, monkeypatch):
    import backend.service as service_module

    calls: list[str] = []
    # The service's own calls only (the corpus also trims between its layers, through the real module).
    monkeypatch.setattr(service_module, "heap", SimpleNamespace(trim=lambda: calls.append("trim") or True))
    workspace = tmp_path / "ws"
    shutil.copytree(sample_workspace, workspace)
    service.corpus(workspace)
    assert calls == ["trim"]
    service.corpus(workspace)
    assert calls == ["trim"], "a cached corpus is not loaded again"
    pdf = next(p for p in (Path(sample_workspace) / "files").iterdir() if p.suffix == ".pdf")
    service.ingest(tmp_path / "other", [pdf])
    assert calls == ["trim", "trim"]
