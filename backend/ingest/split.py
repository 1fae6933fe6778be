"""The pages of one file read by more than one process: the parse worker and helpers forked from it.

Extracting a page (text, drawings, `find_tables`, OCR of a scanned page) and OCR-ing a figure are
independent per page and take most of a parse (most of all on manuals whose figures are
screenshots and on scanned slides), while one process uses one core. So
`split_map` deals the items out round-robin: the worker keeps every n-th, each helper gets its
own share and its own handle on the file (a forked MuPDF handle would share the file offset),
and results come back in item order. What a helper did not send (it crashed, or ran out of its
inherited address-space limit) the worker does itself, so the result is the one-process result
either way. The helpers are in the worker's process group: the parent's watch counts their
memory and a kill of the worker's group ends them.
"""

from __future__ import annotations

import ctypes
import logging
import multiprocessing
import multiprocessing.connection
import os
import signal
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pymupdf

from backend.ingest.extract import adopt_ocr_failure, ocr_unusable

log = logging.getLogger(__name__)

Work = Callable[[pymupdf.Document, Any], Any]
Opener = Callable[[Path], pymupdf.Document]
PR_SET_PDEATHSIG = 1  # prctl option: the signal a process gets when its parent dies
MAX_FD = 65536


def resident_mb() -> int:
    """This process's resident memory in MiB (0 where /proc is not there)."""
    try:
        return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 2**20
    except (OSError, ValueError, IndexError):
        return 0


def _bound_to(parent: int, keep: int) -> None:
    """Make a fresh helper die with the process that forked it (the kernel's OOM killer or the
    parent's watch may kill that one alone) and hold none of its descriptors but `keep`: an
    inherited copy of the worker's reply pipe would keep the parent waiting for an end of file."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the kill of the worker's process group still ends it
        pass
    if os.getppid() != parent:  # the worker died before the line above
        os._exit(1)
    os.closerange(3, keep)
    os.closerange(keep + 1, MAX_FD)


def _helper(path: Path, opener: Opener, share: list[tuple[int, Any]], work: Work, conn, parent: int) -> None:
    """A helper's body: its share of the items on its own handle, one message per item."""
    _bound_to(parent, conn.fileno())
    try:
        pdf = opener(path)
        try:
            for index, item in share:
                conn.send((index, work(pdf, item), ocr_unusable()))
        finally:
            pdf.close()
    except Exception:  # noqa: BLE001 - whatever a helper could not do, the worker does itself
        log.warning("a page helper stopped; the parse worker reads the rest of its pages", exc_info=True)
    finally:
        conn.close()


class _Helpers:
    """The running helpers (os.fork: a helper holds only its end of its own pipe) and the results
    they have sent so far."""

    def __init__(self, path: Path, opener: Opener, items: Sequence, work: Work, processes: int) -> None:
        self.results: dict[int, Any] = {}
        self._running: list[tuple[int, Any]] = []  # (pid, receiving end)
        indexed = list(enumerate(items))
        parent = os.getpid()
        for k in range(1, processes):
            receive, send = multiprocessing.Pipe(duplex=False)
            pid = os.fork()
            if pid == 0:  # the helper: never returns into the worker's code
                code = 1
                try:
                    _helper(path, opener, indexed[k::processes], work, send, parent)
                    code = 0
                finally:
                    os._exit(code)
            send.close()
            self._running.append((pid, receive))

    def _take(self, conn) -> bool:
        """Read one message from a helper; False at its end."""
        try:
            index, result, ocr_broken = conn.recv()
        except (EOFError, OSError):
            return False
        self.results[index] = result
        if ocr_broken is not None:
            adopt_ocr_failure(ocr_broken)  # the one-process rule: after the first OCR failure, no more OCR
        return True

    def drain(self) -> None:
        """Take what the helpers have sent so far, without waiting."""
        for pid, conn in list(self._running):
            while conn.poll():
                if not self._take(conn):
                    self._finish(pid, conn)
                    break

    def wait_one(self) -> bool:
        """Wait for the next message of any helper; False once every helper has ended."""
        if not self._running:
            return False
        ready = multiprocessing.connection.wait([conn for _, conn in self._running])
        for pid, conn in list(self._running):
            if conn in ready and not self._take(conn):
                self._finish(pid, conn)
        return True

    def _finish(self, pid: int, conn, kill: bool = False) -> None:
        self._running.remove((pid, conn))
        conn.close()
        if kill:
            os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)  # it has closed its pipe: it is exiting
        code = os.waitstatus_to_exitcode(status)
        if code and not kill:
            log.warning("a page helper ended with exit code %s; the parse worker read its remaining pages", code)

    def close(self) -> None:
        for pid, conn in list(self._running):
            self._finish(pid, conn, kill=True)


def split_map(
    pdf: pymupdf.Document,
    path: Path,
    items: Sequence,
    work: Work,
    *,
    processes: int,
    opener: Opener,
    report: Callable[[int, int], None] | None = None,
) -> list:
    """[work(pdf, item) for item in items], shared among `processes` processes (this one and
    processes - 1 helpers forked from it, each opening `path` with `opener`). report(done, total)
    is called as results arrive. One process, or fewer than two items: no helper is started."""
    total = len(items)
    tell = report or (lambda done, total: None)
    if processes < 2 or total < 2:
        out = []
        for item in items:
            out.append(work(pdf, item))
            tell(len(out), total)
        return out
    helpers = _Helpers(path, opener, items, work, min(processes, total))
    try:
        for index in range(0, total, min(processes, total)):
            helpers.results[index] = work(pdf, items[index])
            helpers.drain()
            tell(len(helpers.results), total)
        while helpers.wait_one():
            tell(len(helpers.results), total)
    finally:
        helpers.close()
    for index in range(total):  # what a helper did not send
        if index not in helpers.results:
            helpers.results[index] = work(pdf, items[index])
            tell(len(helpers.results), total)
    return [helpers.results[i] for i in range(total)]
