"""The parse worker inside the tree's memory budget: its limit is what the parent leaves, a
worker that dies or is stopped fails that one file with a one-line reason, and the next file
gets a fresh worker."""

from __future__ import annotations

import os
import signal
import time

import pytest

from backend.config import IngestSettings
from backend.errors import BadPdfError
from backend.ingest import worker as worker_mod
from backend.ingest.worker import ParseWorker, worker_share_mb
from tests.fixtures import hostile_pdfs as hostile


def test_the_worker_gets_what_the_parent_leaves_of_the_budget():
    settings = IngestSettings(memory_budget_mb=2048, parse_memory_mb=3072)
    parent = 900 * 2**20
    assert worker_share_mb(settings, parent) == 2048 - 900 - worker_mod.PARENT_HEADROOM_MB
    assert worker_share_mb(settings.model_copy(update={"parse_memory_mb": 600}), parent) == 600
    assert worker_share_mb(settings, 4096 * 2**20) == worker_mod.MIN_WORKER_MB


# Long enough that the worker is still reading when its first progress message has it killed
# (pages are reported from the first one on); a longer file only makes the re-read slower.
LONG_PAGES = 60


def test_a_worker_killed_mid_file_fails_that_file_and_the_next_one_parses(tmp_path):
    slow = hostile.text_pdf(tmp_path / "long.pdf", pages=LONG_PAGES, lines=30)
    good = hostile.text_pdf(tmp_path / "good.pdf")
    with ParseWorker(IngestSettings(parse_processes=1)) as worker:
        first_pid: list[int] = []

        def kill_on_first_progress(stage: str, done: int, total: int) -> None:
            if not first_pid:
                first_pid.append(worker._proc.pid)
                os.kill(worker._proc.pid, signal.SIGKILL)

        with pytest.raises(BadPdfError) as failed:
            worker.parse(slow, None, "long.pdf", kill_on_first_progress)
        reason = failed.value.reason
        assert "killed" in reason and "SIGKILL" in reason and "\n" not in reason, reason
        parsed = worker.parse(good, None, "good.pdf")
        assert parsed.document.file_name == "good.pdf"
        assert worker._proc.pid != first_pid[0], "the next file gets a fresh worker"


def _group_alive(pgid: int, wait_s: float = 10.0) -> bool:
    """Whether the process group still has a member after up to `wait_s` seconds: a page helper
    notices its worker's death when its pipe closes, a moment after the kill, not at once."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        if time.monotonic() > deadline:
            return True
        time.sleep(0.1)


def test_a_file_read_in_two_processes_is_read_again_in_one_when_the_worker_is_killed(tmp_path):
    """SIGKILL is what the kernel's OOM killer sends: two processes side by side may not fit
    where one does, so the file is read again in one process before it fails; the killed
    worker's page helper dies with it."""
    slow = hostile.text_pdf(tmp_path / "long.pdf", pages=LONG_PAGES, lines=30)
    with ParseWorker(IngestSettings(parse_processes=2)) as worker:
        killed: list[int] = []
        stages: list[tuple[str, int]] = []

        def kill_on_first_progress(stage: str, done: int, total: int) -> None:
            stages.append((stage, done))
            if not killed:
                killed.append(worker._proc.pid)
                os.kill(worker._proc.pid, signal.SIGKILL)

        parsed = worker.parse(slow, None, "long.pdf", kill_on_first_progress)
        assert parsed.document.pages == LONG_PAGES and worker._proc.pid != killed[0]
        assert not _group_alive(killed[0]), "the first worker's helper is gone with it"
        assert stages.count(("extract", 1)) == 2, "extraction started over in the fresh worker"


def test_a_file_killed_in_one_process_too_fails_once_read_again(tmp_path):
    slow = hostile.text_pdf(tmp_path / "long.pdf", pages=LONG_PAGES, lines=30)
    with ParseWorker(IngestSettings(parse_processes=2)) as worker:
        pids: list[int] = []

        def kill_every_worker(stage: str, done: int, total: int) -> None:
            if worker._proc.pid not in pids:
                pids.append(worker._proc.pid)
                os.kill(worker._proc.pid, signal.SIGKILL)

        with pytest.raises(BadPdfError) as failed:
            worker.parse(slow, None, "long.pdf", kill_every_worker)
        assert "SIGKILL" in failed.value.reason and len(pids) == 2, "read twice (two processes, then one), then failed"


def test_the_parent_stops_a_worker_past_the_budget(tmp_path, monkeypatch):
    good = hostile.text_pdf(tmp_path / "good.pdf")
    real = worker_mod._rss_bytes
    budget = real(os.getpid()) // 2**20 + 1024  # room for a worker beside this test process, whatever it holds
    with ParseWorker(IngestSettings(memory_budget_mb=budget)) as worker:
        worker.parse(good, None, "warm.pdf")  # a worker is running
        pid = worker._proc.pid
        # The tree as the watch sees it while the next file parses: the worker has grown by 3 GiB.
        monkeypatch.setattr(worker_mod, "_rss_bytes", lambda p: real(p) + 3 * 2**30)
        with pytest.raises(BadPdfError) as stopped:
            worker.parse(good, None, "big.pdf")
        assert "stopped" in stopped.value.reason and f"{budget} MiB memory budget" in stopped.value.reason
        assert worker.peak_tree_rss > 3 * 2**30
        monkeypatch.setattr(worker_mod, "_rss_bytes", real)
        assert worker.parse(good, None, "after.pdf").document.file_name == "after.pdf"
        assert worker._proc.pid != pid


def test_a_parent_over_the_budget_by_itself_still_parses(tmp_path, monkeypatch):
    """A server that holds more than the budget (many corpora loaded) gives the worker its
    minimum share; a worker that stays small is not stopped for the parent's memory."""
    good = hostile.text_pdf(tmp_path / "good.pdf")
    real = worker_mod._rss_bytes
    monkeypatch.setattr(worker_mod, "_rss_bytes", lambda p: real(p) + (3 * 2**30 if p == os.getpid() else 0))
    with ParseWorker(IngestSettings(memory_budget_mb=2048)) as worker:
        assert worker.parse(good, None, "good.pdf").document.file_name == "good.pdf"
        assert worker.share_mb == worker_mod.MIN_WORKER_MB


def test_a_file_stopped_at_the_floor_share_is_told_to_raise_the_budget_not_called_a_bomb():
    """On the lent GPU machine the CUDA runtime held the budget and a 40-page manual was stopped
    at the parser's 512 MiB floor with "the file may be a decompression or drawing bomb"."""
    settings = IngestSettings(memory_budget_mb=2048)
    floor = worker_mod._memory_reason(worker_mod.MIN_WORKER_MB, settings)
    assert "raise STRATA_INGEST__MEMORY_BUDGET_MB" in floor and "bomb" not in floor
    full = worker_mod._memory_reason(settings.parse_memory_mb, settings)
    assert "bomb" in full and "raise" not in full


def test_a_parent_that_grows_during_a_batch_stops_only_a_worker_past_what_it_leaves(tmp_path, monkeypatch):
    """Mid-batch the parent grows (encodes, stores); the tree then passes the budget. A worker
    that holds 300 MiB is not the file's fault and keeps parsing; one that holds more than the
    parent now leaves it is stopped."""
    good = hostile.text_pdf(tmp_path / "good.pdf")
    real = worker_mod._rss_bytes
    with ParseWorker(IngestSettings(memory_budget_mb=2048)) as worker:
        worker.parse(good, None, "warm.pdf")

        def grown(parent_extra: int, worker_to: int):
            def rss(pid: int) -> int:
                worker_pid = worker._proc.pid  # the running worker, whichever it is now
                if pid == worker_pid:
                    return worker_to
                return real(pid) - real(worker_pid) + worker_to + parent_extra if pid == os.getpid() else real(pid)
            return rss

        parent_now = real(os.getpid()) - real(worker._proc.pid)
        monkeypatch.setattr(worker_mod, "_rss_bytes", grown(2048 * 2**20 - parent_now - 100 * 2**20, 300 * 2**20))
        worker.share_mb = 1024  # the share it started with, before the parent grew
        assert not worker._over_budget(), "a 300 MiB worker beside a parent near the budget keeps parsing"
        assert worker.parse(good, None, "next.pdf").document.file_name == "next.pdf"
        monkeypatch.setattr(worker_mod, "_rss_bytes", grown(1200 * 2**20 - parent_now, 900 * 2**20))
        worker.share_mb = 1024
        assert worker._over_budget(), "900 MiB beside a 1.2 GiB parent passes the 2 GiB budget: the worker is stopped"
        monkeypatch.setattr(worker_mod, "_rss_bytes", real)


def test_the_worker_limit_follows_the_parent(tmp_path, monkeypatch):
    """A parent that has grown (encoders loaded) restarts the worker with a smaller limit."""
    good = hostile.text_pdf(tmp_path / "good.pdf")
    real = worker_mod._rss_bytes
    budget = real(os.getpid()) // 2**20 + 2048  # whatever this test process holds, 2 GiB are left for the worker
    with ParseWorker(IngestSettings(memory_budget_mb=budget, parse_memory_mb=8192)) as worker:
        worker.parse(good, None, "a.pdf")
        first_share, pid = worker.share_mb, worker._proc.pid
        monkeypatch.setattr(worker_mod, "_rss_bytes", lambda p: real(p) + (600 * 2**20 if p == os.getpid() else 0))
        worker.parse(good, None, "b.pdf")
        assert worker.share_mb <= first_share - 500 and worker._proc.pid != pid


def test_rss_from_proc_matches_psutil():
    psutil = pytest.importorskip("psutil")
    ours, theirs = worker_mod._proc_rss(os.getpid()), psutil.Process().memory_info().rss
    assert abs(ours - theirs) < 0.1 * theirs


def test_a_forked_helper_counts_its_own_pages_not_the_ones_it_shares():
    """A page helper forked from the worker shares the worker's pages; by RSS the tree would hold
    them twice and a 200 MiB worker with a helper would look like 400 MiB."""
    psutil = pytest.importorskip("psutil")
    held = b"\x01" * (200 * 2**20)  # resident in this process, shared with the child after fork
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the helper: 64 MiB of its own
        own = b"\x02" * (64 * 2**20)
        os.write(ready_w, b"x")
        time.sleep(60 + len(own) * 0)
        os._exit(0)
    try:
        os.read(ready_r, 1)
        for measure in (worker_mod._rss_bytes, worker_mod._proc_rss):
            alone = psutil.Process().memory_info().rss
            extra = measure(os.getpid()) - alone
            assert 48 * 2**20 < extra < 150 * 2**20, (measure.__name__, extra >> 20)
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        del held


def _image_pages_pdf(path, pages: int = 6):
    """Pages of large photos (noise: no compression helps), which MuPDF decodes into its store."""
    import numpy as np
    import pymupdf

    rng = np.random.default_rng(7)
    doc = pymupdf.open()
    for _ in range(pages):
        page = doc.new_page(width=612, height=792)
        pix = pymupdf.Pixmap(pymupdf.csRGB, 900, 900, rng.integers(0, 256, 900 * 900 * 3, dtype=np.uint8).tobytes(), False)
        page.insert_image(pymupdf.Rect(36, 36, 576, 576), pixmap=pix)
        page.insert_text((40, 620), "A caption under the photo of the harbour.", fontsize=11)
    doc.save(path)
    doc.close()
    return path


def test_the_worker_hands_back_what_a_parse_left_behind(tmp_path):
    """Idle memory after each file stays where the first file left it: MuPDF's store and glibc's
    free heap are released after each parse, so a long batch does not push a late valid file over
    its share (without the release: +28 MiB per file here, 142 -> 436 MiB over dev-mmlongbench).
    The first parse may keep what is loaded once (seen: +34 MiB on one run, +0 on others)."""
    files = [_image_pages_pdf(tmp_path / f"photos{i}.pdf") for i in range(5)]
    idle = []
    with ParseWorker(IngestSettings(parse_processes=1, ocr="none")) as w:
        for f in files:
            w.parse(f, tmp_path / "crops", f.name)  # the figure crops decode the photos
            idle.append(worker_mod._rss_bytes(w._proc.pid) / 2**20)
    assert idle[-1] - idle[1] < 15, f"idle MiB after each file: {[round(m) for m in idle]}"
    assert idle[1] - idle[0] < 60, f"idle MiB after each file: {[round(m) for m in idle]}"
