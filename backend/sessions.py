"""Session workspaces that cost nothing until they write.

Every session (a browser tab or a `gradio_client` client, treated alike) starts by reading the
shared sample workspace in place. Its first write (an ingest, a removal, an evaluation upload)
gives it a workspace of its own: a copy of the sample made then (copy-on-write at the level of
the workspace; the sample's PDF copies are hard-linked, since the store only ever replaces them
by rename). A session's workspace is removed after `idle_minutes` without a call, when the
session ends, and at shutdown; the number of such workspaces and the bytes of each are capped.

A browser keeps its session across reloads: it stores the session's token (`token_for`: the key
and an HMAC of it under a secret made at start, so no token can be made up or taken from a log,
where only keys appear) and hands it back when the page loads (`attach`), which gives it the same
workspace while that is alive. A session whose token a browser keeps is not released when its
page goes (the next page takes it up); it goes when idle, as every session does.

`SamplePreparation` is the progress of the sample workspace being built behind a running app,
so the Library can say "Preparing the sample corpus: k of 4" and questions wait for it; a first
write never waits for it (that session's workspace starts without the sample).

This module does not parse, index or answer anything, and it never writes into the sample
workspace: `workspace_for_write` refuses to hand it out.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
import shutil
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

from backend.config import SessionSettings
from backend.errors import StrataError, without_paths

log = logging.getLogger(__name__)

DB_NAME = "strata.sqlite"
HARD_LINKED = ("files",)  # folders whose files the store writes by os.replace only (never in place)
# Not copied: index caches go stale with the session's first write (its generation changes) and the
# sample's preparation marker means nothing in a session's copy.
SAMPLE_MARKER = "prepared.key"  # in the sample workspace: the sample key it was built for (Service.sample_key)
NOT_COPIED = ("index", SAMPLE_MARKER)
EXPIRED_REMEMBERED = 1000  # expired session keys kept to tell their owner once, oldest forgotten first


class SessionLimitError(StrataError):
    """A cap on session workspaces was reached (count or bytes)."""


class SessionExpiredError(StrataError):
    """The session's own workspace was removed after it sat idle."""


class SamplePreparingError(StrataError):
    """The sample workspace is still being built."""


class SamplePreparation:
    """Progress of building the shared sample workspace (thread-safe). Ready unless `start`ed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._ready.set()
        self.done = 0
        self.total = 0
        self.error: str | None = None

    def start(self, total: int = 0) -> None:
        """Not ready from now on: `total` files to prepare, or 0 while it is only being checked."""
        with self._lock:
            self.done, self.total, self.error = 0, total, None
            self._ready.clear()

    def advance(self, done: int) -> None:
        with self._lock:
            self.done = max(self.done, min(done, self.total))

    def finish(self, error: str | None = None) -> None:
        with self._lock:
            self.done = self.total if error is None else self.done
            self.error = error
        self._ready.set()

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    def describe(self) -> str:
        """One line for people: what the sample corpus is doing now ('' when it is ready and fine)."""
        with self._lock:
            if self.error:
                return f"The sample corpus could not be prepared: {self.error}"
            if not self._ready.is_set() and not self.total:
                return "Checking the sample corpus prepared by an earlier start"
            if not self._ready.is_set():
                return f"Preparing the sample corpus: {self.done} of {self.total} files"
            return ""

    def wait_quietly(self, timeout_s: float) -> bool:
        """Block until the sample is ready or `timeout_s` passed; True when it is ready."""
        return self._ready.wait(timeout_s)

    def wait(self, timeout_s: float) -> None:
        """Block until the sample is ready, or raise a message saying how far it got."""
        if not self._ready.wait(timeout_s):
            raise SamplePreparingError(f"{self.describe()}. It is still being built; try again in a minute.")


class NewSession:
    """The initial value of the workspace `gr.State`: Gradio deep-copies it once per session
    (browser tab or API client alike), and each copy is a new SessionHandle."""

    __slots__ = ("_manager",)

    def __init__(self, manager: SessionManager) -> None:
        self._manager = manager

    def __deepcopy__(self, memo: dict) -> SessionHandle | NewSession:
        return self._manager.new_handle()


class SessionHandle(os.PathLike):
    """What a session keeps in its `gr.State`: a key, and as a path the workspace it reads now
    (the sample until its first write, then its own). Deep copies are the same handle. `kept`:
    a browser holds its token (SessionManager.keep), so its page going does not release it."""

    __slots__ = ("key", "kept", "_manager")

    def __init__(self, key: str, manager: SessionManager) -> None:
        self.key = key
        self.kept = False
        self._manager = manager

    def __fspath__(self) -> str:
        return str(self._manager.workspace_for_read(self.key))

    def writable(self, incoming_bytes: int = 0) -> Path:
        return self._manager.workspace_for_write(self.key, incoming_bytes)

    def release(self) -> None:
        """Start over: the session's own workspace goes and it reads the shared sample again."""
        self._manager.release(self.key)

    def __deepcopy__(self, memo: dict) -> SessionHandle:
        return self

    def __repr__(self) -> str:
        return f"SessionHandle({self.key!r})"


class Reattach(str, Enum):
    """What `SessionManager.attach` made of a token a browser handed back."""

    NONE = "none"  # no token: a new session
    RESTORED = "restored"  # the session's own workspace is alive: the page takes it up again
    EMPTY = "empty"  # a valid token of a session that holds no workspace of its own (it only read, or started over)
    EXPIRED = "expired"  # its workspace was removed after sitting idle
    UNKNOWN = "unknown"  # not a token of this server run (made up, altered, or from before a restart)


@dataclass(slots=True)
class _Own:
    path: Path
    last_used: float


class SessionManager:
    """Session keys -> their own workspaces, created on first write, removed when idle or at shutdown.

    `shared` is the sample workspace every session reads until it writes (None = sessions start
    empty; read_only: they never write); `remove` deletes one session workspace folder (Service.remove_session_workspace, which
    also drops its cached corpus and waits for a running ingest into it)."""

    def __init__(
        self,
        settings: SessionSettings,
        root: Path,
        shared: Path | None,
        remove: Callable[[Path], None],
        sample: SamplePreparation | None = None,
        clock: Callable[[], float] = time.monotonic,
        read_only: bool = False,
    ) -> None:
        self.settings = settings
        self.read_only = read_only  # sessions read `shared` and never write (a served library: settings.serve_workspace)
        self.root = Path(root).resolve()
        self.shared = Path(shared).resolve() if shared is not None else None
        self.sample = sample or SamplePreparation()
        self._remove = remove
        self._clock = clock
        self._lock = threading.RLock()
        self._own: dict[str, _Own] = {}
        self._key_locks: dict[str, threading.Lock] = {}  # one per session writing now: its first write copies once
        self._pending = 0  # workspaces being copied, counted against max_workspaces
        self._expired: OrderedDict[str, None] = OrderedDict()
        self._stop = threading.Event()
        self._sweeper: threading.Thread | None = None
        self._secret = secrets.token_bytes(32)  # signs the tokens browsers keep; new at every start

    # ---------------------------------------------------------------- sessions

    def new_handle(self) -> SessionHandle:
        """A new session: costs nothing (no folder) until it writes."""
        return SessionHandle(secrets.token_hex(8), self)

    def token_for(self, handle: SessionHandle) -> str:
        """What a browser stores to come back to this session: its key and the key's HMAC."""
        return f"{handle.key}.{self._signature(handle.key)}"

    def keep(self, handle: SessionHandle) -> str:
        """A browser stores the session's token: from now on its page going does not release it."""
        handle.kept = True
        return self.token_for(handle)

    def attach(self, token: object) -> tuple[SessionHandle | None, Reattach]:
        """The session a browser's stored token names, and what became of it. A handle comes back
        for a valid token (its workspace, when alive, is the page's again); None for no token or a
        token this server run did not make. Idle sessions are expired first, so a session past its
        idle time is never taken up again; an expired one is reported once, as a read would."""
        if not token:
            return None, Reattach.NONE
        key, _, signature = str(token).partition(".")
        if not key or not hmac.compare_digest(signature.encode(), self._signature(key).encode()):
            return None, Reattach.UNKNOWN
        self.expire_idle()
        with self._lock:
            if key in self._expired:
                self._expired.pop(key)
                state = Reattach.EXPIRED
            elif key in self._own:
                self._own[key].last_used = self._clock()
                state = Reattach.RESTORED
            else:
                state = Reattach.EMPTY
        handle = SessionHandle(key, self)
        handle.kept = True
        return handle, state

    def _signature(self, key: str) -> str:
        return hmac.new(self._secret, key.encode(), hashlib.sha256).hexdigest()[:32]

    def state_value(self) -> NewSession:
        """The initial value of the UI's workspace `gr.State` (a new session per deep copy)."""
        return NewSession(self)

    def release_value(self, value: object) -> None:
        """The `gr.State` delete callback: release the session a handle names, unless a browser keeps
        its token (a reload takes it up again; it goes when idle). Other values: nothing to do."""
        if isinstance(value, SessionHandle) and not value.kept:
            self.release(value.key)

    @property
    def empty_workspace(self) -> Path:
        """What a session reads when there is no sample: a folder that is never created."""
        return self.root / "empty"

    def workspace_for_read(self, key: str) -> Path:
        with self._lock:
            own = self._own.get(key)
            if own is not None:
                own.last_used = self._clock()
                return own.path
            if key in self._expired:
                self._expired.pop(key)
                raise SessionExpiredError(
                    f"This session sat idle for more than {self.settings.idle_minutes:g} minutes, so the files it uploaded "
                    "were removed from the server. It shows the sample corpus again; upload your files again to use them."
                )
        return self.shared if self.shared is not None else self.empty_workspace

    def workspace_for_write(self, key: str, incoming_bytes: int = 0) -> Path:
        """The session's own workspace (made now from the sample on its first write), checked
        against the caps. Never the shared sample workspace. The copy is made outside the
        manager's lock (other sessions keep reading meanwhile), under a lock of this session.
        A first write while the sample is still being prepared never waits for it: that
        session's workspace starts empty (its uploads only; starting over later brings the sample).
        A read-only manager refuses: its shared workspace is a library too large to copy."""
        if self.read_only:
            raise SessionLimitError(
                f"This server serves one library to every session, read-only (STRATA_SERVE_WORKSPACE is set): "
                "uploads and removals are off. Add files with `python -m backend ingest --workspace` on that folder, "
                "or unset STRATA_SERVE_WORKSPACE to work on a copy of the sample."
            )
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            with self._lock:
                self._expired.pop(key, None)
                own = self._own.get(key)
                if own is None:
                    self._make_room()
                    self._pending += 1
            if own is None:
                try:
                    path = self._create(key)
                finally:
                    with self._lock:
                        self._pending -= 1
                with self._lock:
                    own = self._own[key] = _Own(path, self._clock())
            own.last_used = self._clock()
            self._check_bytes(own.path, incoming_bytes)
            if self.shared is not None and own.path.resolve() == self.shared:
                raise StrataError("Refused to write into the shared sample workspace; start over to get a workspace of your own.")
            return own.path

    def release(self, key: str) -> None:
        """The session ended or started over: remove its own workspace (if any)."""
        with self._lock:
            own = self._own.pop(key, None)
            self._key_locks.pop(key, None)
        if own is not None:
            self._delete(own.path)

    def count(self) -> int:
        with self._lock:
            return len(self._own)

    def own_workspace(self, key: str) -> Path | None:
        with self._lock:
            own = self._own.get(key)
            return own.path if own is not None else None

    # ---------------------------------------------------------------- caps and expiry

    def _make_room(self) -> None:
        if len(self._own) + self._pending < self.settings.max_workspaces:
            return
        self.expire_idle()
        if len(self._own) + self._pending >= self.settings.max_workspaces:
            raise SessionLimitError(
                f"The server already holds {len(self._own)} private workspaces, its limit (sessions.max_workspaces). "
                "You can still ask questions about the sample corpus; try uploading again in a few minutes."
            )

    def _check_bytes(self, path: Path, incoming_bytes: int) -> None:
        limit = int(self.settings.max_workspace_mb * 1024 * 1024)
        used = folder_bytes(path)
        if used + incoming_bytes > limit:
            raise SessionLimitError(
                f"This session's workspace holds {used / 2**20:.1f} MiB and the upload adds {incoming_bytes / 2**20:.1f} MiB, over "
                f"the {self.settings.max_workspace_mb:g} MiB a session may use. Remove documents or start over, then upload again."
            )

    def _last_activity(self, own: _Own) -> float:
        """Last call, or the last write to its database (an ingest longer than the idle time is not idle)."""
        try:
            age_s = time.time() - (own.path / DB_NAME).stat().st_mtime
        except OSError:
            return own.last_used
        return max(own.last_used, self._clock() - age_s)

    def expire_idle(self) -> list[Path]:
        """Remove the workspaces of sessions idle longer than idle_minutes; their keys are remembered
        so their owner is told once."""
        cutoff = self._clock() - self.settings.idle_minutes * 60
        with self._lock:
            idle = [k for k, own in self._own.items() if self._last_activity(own) < cutoff]
            gone = [self._own.pop(k) for k in idle]
            for key in idle:
                self._expired[key] = None
                self._key_locks.pop(key, None)
            while len(self._expired) > EXPIRED_REMEMBERED:
                self._expired.popitem(last=False)
        for own in gone:
            self._delete(own.path)
        if gone:
            log.info("removed %d idle session workspace(s); %d remain", len(gone), self.count())
        return [own.path for own in gone]

    # ---------------------------------------------------------------- lifetime

    def start(self, sweep_s: float = 60.0) -> None:
        """Remove session folders a previous run left behind, then sweep idle sessions every `sweep_s`."""
        sessions = self.root / "sessions"
        if sessions.is_dir():
            stale = [p for p in sessions.iterdir() if p.is_dir()]
            for path in stale:
                self._delete(path)
            if stale:
                log.info("removed %d session workspace(s) left by an earlier run", len(stale))
        self._sweeper = threading.Thread(target=self._sweep, args=(sweep_s,), name="strata-sessions", daemon=True)
        self._sweeper.start()

    def _sweep(self, sweep_s: float) -> None:
        while not self._stop.wait(sweep_s):
            try:
                self.expire_idle()
            except (OSError, StrataError) as exc:
                log.warning("session sweep failed: %s", exc)

    def close(self) -> None:
        """Shutdown: stop sweeping and remove every session workspace."""
        self._stop.set()
        with self._lock:
            gone = list(self._own.values())
            self._own.clear()
        for own in gone:
            self._delete(own.path)
        if gone:
            log.info("removed %d session workspace(s) at shutdown", len(gone))

    # ---------------------------------------------------------------- folders

    def _create(self, key: str) -> Path:
        path = self.root / "sessions" / key
        try:
            if self.shared is not None and self.sample.ready and (self.shared / DB_NAME).exists():
                copy_workspace(self.shared, path)
            else:
                if self.shared is not None and not self.sample.ready:
                    log.info("session %s writes before the sample corpus is prepared: its workspace starts empty", key)
                path.mkdir(parents=True, exist_ok=True)
        except (OSError, sqlite3.Error) as exc:
            shutil.rmtree(path.with_name(path.name + ".tmp"), ignore_errors=True)
            log.warning("could not make the workspace of session %s: %s", key, without_paths(str(exc)))
            raise StrataError(
                f"Could not make this session's own workspace ({getattr(exc, 'strerror', None) or 'storage error'}); "
                "the server's disk may be full. "
                "Questions about the sample corpus still work; try the upload again later."
            ) from exc
        log.info("session %s got its own workspace (%d in all)", key, len(self._own) + self._pending)
        return path

    def _delete(self, path: Path) -> None:
        try:
            self._remove(path)
        except (OSError, StrataError) as exc:
            log.warning("could not remove session workspace %s: %s", path.name, exc)


def copy_workspace(src: Path, dest: Path) -> None:
    """A private copy of a workspace: the database through SQLite's backup (a consistent copy
    even if it is being read), PDF copies hard-linked (the store replaces them by rename, so a
    link is never written through), index caches left out (stale after the first write),
    everything else copied. Built beside `dest`, then renamed."""
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for item in src.iterdir():
        if item.name == DB_NAME or item.name.startswith(DB_NAME + "-") or item.name in NOT_COPIED:
            continue
        if item.is_dir() and item.name in HARD_LINKED:
            shutil.copytree(item, tmp / item.name, copy_function=_link_or_copy)
        elif item.is_dir():
            shutil.copytree(item, tmp / item.name)
        else:
            shutil.copy2(item, tmp / item.name)
    source = sqlite3.connect(f"file:{src / DB_NAME}?mode=ro", uri=True)
    target = sqlite3.connect(tmp / DB_NAME)
    try:
        source.backup(target)
    finally:
        target.close()
        source.close()
    os.replace(tmp, dest)


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:  # another file system, or links not allowed
        shutil.copy2(src, dst)


def folder_bytes(path: Path) -> int:
    """Bytes of the files under `path`, hard-linked files counted once per folder (0 when missing)."""
    total, seen = 0, set()
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            try:
                st = os.stat(os.path.join(dirpath, name))
            except OSError:
                continue
            if st.st_nlink > 1:
                if (st.st_dev, st.st_ino) in seen:
                    continue
                seen.add((st.st_dev, st.st_ino))
            total += st.st_size
    return total
