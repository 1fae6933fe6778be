"""Session workspaces: nothing on disk until a session writes, its own copy after, caps, idle
expiry, shutdown, and the shared sample workspace never written through a session; a browser's
kept token takes its workspace up again after a reload and never reaches another session's."""

from __future__ import annotations

import copy
import hashlib
import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from backend.config import SessionSettings
from backend.service import SAMPLE_DIR, Service
from backend.sessions import (
    SamplePreparation,
    SamplePreparingError,
    SessionExpiredError,
    SessionLimitError,
    Reattach,
    SessionManager,
    copy_workspace,
    folder_bytes,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def tree_digest(root: Path) -> dict[str, str]:
    """relative path -> sha256 of every file under root (what 'unchanged' means for a workspace)."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()
    }


@pytest.fixture()
def shared(sample_workspace, tmp_path) -> Path:
    """A sample workspace of this test's own (the session fixture's stays untouched)."""
    dst = tmp_path / "root" / "sample"
    shutil.copytree(sample_workspace, dst)
    return dst


def manager(service: Service, shared: Path | None, root: Path, clock=None, **limits) -> SessionManager:
    return SessionManager(
        SessionSettings(**limits), root, shared, service.remove_session_workspace, clock=clock or Clock()
    )


@pytest.fixture()
def root_service(service, tmp_path) -> Service:
    """The session service with its workspace_root pointed at this test's folder (sessions live under it)."""
    svc = Service(service.settings.model_copy(update={"workspace_root": tmp_path / "root"}))
    svc._encoders = service._encoders if service._encoders is not None else service.encoders
    return svc


def test_a_session_that_only_reads_creates_nothing(root_service, shared, tmp_path):
    m = manager(root_service, shared, tmp_path / "root")
    handle = m.new_handle()
    assert Path(handle) == shared.resolve()
    assert root_service.documents(Path(handle))  # reads the sample in place
    assert not (tmp_path / "root" / "sessions").exists()
    assert m.count() == 0


def test_first_write_gives_an_own_copy_and_reads_follow_it(root_service, shared, tmp_path):
    m = manager(root_service, shared, tmp_path / "root")
    handle = m.new_handle()
    own = handle.writable()
    assert own != shared.resolve() and own.parent == (tmp_path / "root" / "sessions").resolve()
    assert Path(handle) == own
    assert {d.id for d in root_service.documents(own)} == {d.id for d in root_service.documents(shared)}
    assert handle.writable() == own  # the second write reuses it
    assert copy.deepcopy(handle) is handle  # gr.State deep-copies values: still the same session


def test_two_sessions_never_see_each_others_writes(root_service, shared, tmp_path):
    m = manager(root_service, shared, tmp_path / "root")
    a, b = m.new_handle(), m.new_handle()
    doc = root_service.documents(a.writable())[0]
    root_service.remove_document(a.writable(), doc.id)
    assert doc.id not in {d.id for d in root_service.documents(Path(a))}
    assert doc.id in {d.id for d in root_service.documents(Path(b))}
    assert Path(b) == shared.resolve()


def test_no_session_write_changes_the_shared_sample(root_service, shared, tmp_path):
    before = tree_digest(shared)
    m = manager(root_service, shared, tmp_path / "root")
    handle = m.new_handle()
    own = handle.writable()
    docs = root_service.documents(own)
    for doc in docs:  # unlinks the hard-linked PDF copies in the session's folder
        root_service.remove_document(own, doc.id)
    report = root_service.ingest(own, [SAMPLE_DIR / "policy_brief.pdf"])
    assert report.ok
    root_service.ask(own, "How many trees were planted?", method="bm25", top_k=3)
    assert tree_digest(shared) == before
    assert all(m.workspace_for_write(k) != shared.resolve() for k in ("x", "y"))


def test_copy_links_pdf_copies_and_counts_them_once(shared, tmp_path):
    dest = tmp_path / "copy"
    copy_workspace(shared, dest)
    pdfs = list((dest / "files").iterdir())
    assert pdfs and all(os.stat(p).st_ino == os.stat(shared / "files" / p.name).st_ino for p in pdfs)
    assert folder_bytes(dest) <= folder_bytes(shared) + 4096


def test_cap_on_workspaces_says_what_to_do(root_service, shared, tmp_path):
    m = manager(root_service, shared, tmp_path / "root", max_workspaces=2)
    m.new_handle().writable()
    m.new_handle().writable()
    reader = m.new_handle()
    with pytest.raises(SessionLimitError, match="limit.*ask questions about the sample"):
        reader.writable()
    assert Path(reader) == shared.resolve()  # reading still works


def test_cap_on_bytes_per_session(root_service, shared, tmp_path):
    copied = folder_bytes(shared) - folder_bytes(shared / "index")  # a session copies no index: it builds its own
    m = manager(root_service, shared, tmp_path / "root", max_workspace_mb=copied / 2**20 + 0.5)
    handle = m.new_handle()
    handle.writable()
    with pytest.raises(SessionLimitError, match="MiB"):
        handle.writable(incoming_bytes=2**20)


def test_idle_sessions_expire_and_are_told_once(root_service, shared, tmp_path):
    clock = Clock()
    m = manager(root_service, shared, tmp_path / "root", clock=clock, idle_minutes=1)
    idle, busy = m.new_handle(), m.new_handle()
    idle_path, busy_path = idle.writable(), busy.writable()
    old = os.path.getmtime(idle_path / "strata.sqlite") - 3600  # the database was not written lately either
    os.utime(idle_path / "strata.sqlite", (old, old))
    os.utime(busy_path / "strata.sqlite", (old, old))
    clock.now += 45
    Path(busy)  # a read counts as use
    clock.now += 30
    assert m.expire_idle() == [idle_path]
    assert not idle_path.exists() and busy_path.exists()
    with pytest.raises(SessionExpiredError, match="idle for more than 1 minutes"):
        Path(idle)
    assert Path(idle) == shared.resolve()  # told once, then it reads the sample again


def test_a_full_server_frees_idle_workspaces_first(root_service, shared, tmp_path):
    clock = Clock()
    m = manager(root_service, shared, tmp_path / "root", clock=clock, idle_minutes=1, max_workspaces=1)
    first = m.new_handle().writable()
    old = os.path.getmtime(first / "strata.sqlite") - 3600
    os.utime(first / "strata.sqlite", (old, old))
    clock.now += 120
    m.new_handle().writable()
    assert not first.exists() and m.count() == 1


def test_release_and_shutdown_remove_workspaces_and_start_clears_leftovers(root_service, shared, tmp_path):
    root = tmp_path / "root"
    leftover = root / "sessions" / "0123456789abcdef"
    leftover.mkdir(parents=True)
    m = manager(root_service, shared, root)
    m.start(sweep_s=3600)
    assert not leftover.exists()
    a, b = m.new_handle(), m.new_handle()
    pa, pb = a.writable(), b.writable()
    m.release(a.key)
    assert not pa.exists() and Path(a) == shared.resolve()
    m.close()
    assert not pb.exists() and m.count() == 0
    assert shared.exists()


def test_concurrent_first_writes_of_one_session_make_one_workspace(root_service, shared, tmp_path):
    m = manager(root_service, shared, tmp_path / "root")
    handle = m.new_handle()
    paths: list[Path] = []
    threads = [threading.Thread(target=lambda: paths.append(handle.writable())) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(paths)) == 1 and len(list((tmp_path / "root" / "sessions").iterdir())) == 1


def test_without_a_sample_sessions_start_empty(root_service, tmp_path):
    m = manager(root_service, None, tmp_path / "root")
    handle = m.new_handle()
    assert root_service.documents(Path(handle)) == []
    assert not Path(handle).exists()
    assert (handle.writable() / "strata.sqlite").exists() is False  # an empty folder until its first ingest


def test_a_write_while_the_sample_is_prepared_never_waits_and_starts_empty(root_service, shared, tmp_path):
    prep = SamplePreparation()
    prep.start(4)
    prep.advance(1)
    m = SessionManager(SessionSettings(sample_wait_s=30), tmp_path / "root", shared, root_service.remove_session_workspace, prep)
    started = time.monotonic()
    early = m.new_handle().writable()
    assert time.monotonic() - started < 5, "an upload does not wait for the sample"
    assert early.is_dir() and not (early / "strata.sqlite").exists()  # its own uploads only
    prep.finish()
    later = m.new_handle().writable()
    assert (later / "strata.sqlite").exists(), "once the sample is ready a first write copies it"


def test_questions_over_the_sample_wait_while_it_is_prepared(root_service, shared):
    root_service.settings = root_service.settings.model_copy(update={"sessions": SessionSettings(sample_wait_s=0.05)})
    root_service.sample.start(4)
    try:
        with pytest.raises(SamplePreparingError, match="0 of 4"):
            root_service.corpus(shared)
    finally:
        root_service.sample.finish()
    assert root_service.corpus(shared).documents


def test_sample_key_changes_with_the_parser_version(root_service, monkeypatch):
    import backend.service as service_module

    key = root_service.sample_key()
    assert key == root_service.sample_key()
    monkeypatch.setattr(service_module, "PARSER_VERSION", "another-parser")
    assert root_service.sample_key() != key


def test_a_failed_copy_says_so_and_leaves_nothing(root_service, shared, tmp_path, monkeypatch):
    import backend.sessions as sessions_module

    def full_disk(src, dst, *args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(sessions_module.shutil, "copytree", full_disk)
    m = manager(root_service, shared, tmp_path / "root")
    with pytest.raises(sessions_module.StrataError, match="disk may be full"):
        m.new_handle().writable()
    assert m.count() == 0 and list((tmp_path / "root" / "sessions").iterdir()) == []


# ---------------------------------------------------------------- tokens a browser keeps (reloads)


def test_a_kept_token_gives_the_same_workspace_back_after_the_page_went(root_service, shared, tmp_path):
    m = manager(root_service, shared, tmp_path / "root")
    first = m.new_handle()
    token = m.keep(first)
    own = first.writable()
    m.release_value(first)  # the page was reloaded: Gradio drops its state
    assert own.exists()  # a kept session is not released with its page
    again, state = m.attach(token)
    assert state is Reattach.RESTORED and again.key == first.key and Path(again) == own and again.kept


def test_a_session_not_kept_by_a_browser_is_released_with_its_page(root_service, shared, tmp_path):
    m = manager(root_service, shared, tmp_path / "root")
    client = m.new_handle()  # an API client: it never stores a token
    own = client.writable()
    m.release_value(client)
    assert not own.exists() and m.count() == 0


def test_tokens_are_unguessable_and_never_reach_another_session(root_service, shared, tmp_path):
    m = manager(root_service, shared, tmp_path / "root")
    a, b = m.new_handle(), m.new_handle()
    token_a, token_b = m.keep(a), m.keep(b)
    own_a = a.writable()
    assert token_a != token_b and len(token_a.split(".")[1]) == 32
    assert a.key not in m.token_for(b)
    back_b, state = m.attach(token_b)
    assert state is Reattach.EMPTY and Path(back_b) == shared.resolve()  # b never wrote: it reads the sample, not a's files
    forged = [a.key, f"{a.key}.", f"{a.key}.{'0' * 32}", f"{b.key}.{token_a.split('.')[1]}", token_a[:-1] + "x", "x" * 500]
    for token in forged:
        assert m.attach(token) == (None, Reattach.UNKNOWN), token
    other_run = manager(root_service, shared, tmp_path / "root")  # a restarted server has another secret
    assert other_run.attach(token_a) == (None, Reattach.UNKNOWN)
    assert m.attach("") == (None, Reattach.NONE) and m.attach(None) == (None, Reattach.NONE)
    assert Path(m.attach(token_a)[0]) == own_a


def test_an_idle_session_is_not_taken_up_again_and_is_reported_once(root_service, shared, tmp_path):
    clock = Clock()
    m: SessionManager = manager(root_service, shared, tmp_path / "root", clock=clock, idle_minutes=1)
    handle = m.new_handle()
    token = m.keep(handle)
    own = handle.writable()
    old = os.path.getmtime(own / "strata.sqlite") - 3600
    os.utime(own / "strata.sqlite", (old, old))
    clock.now += 90  # no sweep ran yet: attach expires it itself
    back, state = m.attach(token)
    assert state is Reattach.EXPIRED and not own.exists() and Path(back) == shared.resolve()
    assert m.attach(token)[1] is Reattach.EMPTY  # told once
