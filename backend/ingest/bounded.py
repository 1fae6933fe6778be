"""One parse job of a cluster task, run in a child process inside the parse worker's limits.

A cluster task (cluster.py) reads a range of a long file's pages, or parses a whole document from
pages read by such tasks (or by itself, for a short file). It does so in a fresh child process
(`python -m backend.ingest.bounded`) with today's bounds: the address space of the worker's share
plus ADDRESS_SLACK_MB, the resident memory watched against the share, and the parse timeout. A
bomb or a MuPDF crash ends the child only; the task gets BadPdfError with the reason the parse
worker gives (worker.py). It does not keep a child between jobs: a task is one job.
"""

from __future__ import annotations

import logging
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from backend.config import IngestSettings
from backend.errors import BadPdfError, library_reason, log_name
from backend.ingest.worker import ADDRESS_SLACK_MB, WATCH_INTERVAL_S, _death_reason, _memory_reason, _rss_bytes, worker_share_mb

log = logging.getLogger(__name__)

PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the folder holding `backend` (a Ray node's copy of it, too)


@dataclass(frozen=True, slots=True)
class ParseJob:
    """pdf: the file on this node; pages: (first, stop) to read those pages only (a list of page
    reads comes back), None for the whole document (a ParsedDocument comes back); page_reads:
    the pages read already by range jobs, in order; crops_root: where figure crops go."""

    pdf: Path
    name: str
    pages: tuple[int, int] | None = None
    page_reads: list | None = None
    crops_root: Path | None = None


def _child_env(settings: IngestSettings, share_mb: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        STRATA_PARSE_SETTINGS=settings.model_dump_json(),
        STRATA_PARSE_MEMORY_LIMIT_MB=str(share_mb),
        PYMUPDF_SUGGEST_LAYOUT_ANALYZER="0",
        OMP_THREAD_LIMIT="1",
        MALLOC_ARENA_MAX="2",
        OPENBLAS_NUM_THREADS="1",
        PYTHONPATH=os.pathsep.join([str(PACKAGE_ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    )
    return env


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the child and any page helper it forked
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.wait()


def run_job(job: ParseJob, settings: IngestSettings):
    """The job's result (a list of page reads, or a ParsedDocument), parsed in a bounded child;
    raises BadPdfError with one plain line when the file fails."""
    share = worker_share_mb(settings, _rss_bytes(os.getpid()))
    proc = subprocess.Popen(
        [sys.executable, "-m", "backend.ingest.bounded"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        env=_child_env(settings, share), cwd=str(PACKAGE_ROOT), start_new_session=True,
    )
    reply: list[bytes] = []
    reader = threading.Thread(target=lambda: reply.append(proc.stdout.read()), daemon=True)
    reader.start()
    try:
        proc.stdin.write(pickle.dumps(job))
        proc.stdin.close()
    except (BrokenPipeError, OSError):
        pass  # the child died at start: its exit code says why below
    deadline = time.monotonic() + settings.parse_timeout_s
    while proc.poll() is None:
        if time.monotonic() > deadline:
            _kill(proc)
            raise BadPdfError(job.name, f"parsing took longer than {settings.parse_timeout_s:g} s and was stopped (STRATA_INGEST__PARSE_TIMEOUT_S)")
        if _rss_bytes(proc.pid) > share * 2**20:
            _kill(proc)
            log.warning("stopped the parse of %s: past its memory share", log_name(job.name))
            raise BadPdfError(job.name, "the parser was stopped: " + _memory_reason(share, settings))
        time.sleep(WATCH_INTERVAL_S)
    reader.join(timeout=30)
    if proc.returncode != 0 or not reply or not reply[0]:
        raise BadPdfError(job.name, _death_reason(proc.returncode, share, settings))
    status, value = pickle.loads(reply[0])  # noqa: S301 - written by our own child from our own types
    if status == "error":
        raise BadPdfError(job.name, value)
    return value


def _run(job: ParseJob, settings: IngestSettings, memory_mb: int):
    from backend.ingest.parser import parse_pdf, read_page_range

    if job.pages is not None:
        return read_page_range(job.pdf, settings, memory_mb, job.pages[0], job.pages[1], job.name)
    return parse_pdf(job.pdf, settings, job.crops_root, None, job.name, memory_mb, page_reads=job.page_reads)


def child_main() -> None:
    """Entry point of the child: one pickled ParseJob on stdin, one pickled (status, value) on stdout."""
    reply = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # what a library prints goes to stderr, never into the reply
    settings = IngestSettings.model_validate_json(os.environ["STRATA_PARSE_SETTINGS"])
    memory_mb = int(os.environ["STRATA_PARSE_MEMORY_LIMIT_MB"])
    if not settings.table_layout_model:
        sys.modules["pymupdf.layout"] = None  # type: ignore[assignment]  # as worker.py: no ONNX layout models
    from backend.ingest.worker import _limit_memory

    _limit_memory(memory_mb + ADDRESS_SLACK_MB)
    job: ParseJob = pickle.loads(sys.stdin.buffer.read())  # noqa: S301 - sent by the task that started this process
    try:
        out = ("ok", _run(job, settings, memory_mb))
    except BadPdfError as exc:
        out = ("error", exc.reason)
    except MemoryError:
        out = ("error", _memory_reason(memory_mb, settings))
    except Exception as exc:  # noqa: BLE001 - any parser failure is this file's failure, reported as data
        log.warning("parsing %s failed", log_name(job.name), exc_info=True)
        out = ("error", f"the parser could not read it: {library_reason(exc)}")
    reply.write(pickle.dumps(out))
    reply.close()


if __name__ == "__main__":
    child_main()
