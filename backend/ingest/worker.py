"""Parse PDFs in a separate worker process with a wall-clock limit and an address-space limit.

A decompression bomb, a page-tree bomb or a MuPDF crash can only take the worker down: the
parent sees the file fail with a message, starts a fresh worker, and the batch goes on.
The worker imports only the parser (PyMuPDF, pysbd), never torch or faiss.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import subprocess
import threading
import sys
import time
from collections.abc import Callable
from pathlib import Path

from backend.config import IngestSettings
from backend.errors import BadPdfError
from backend.types import ParsedDocument

log = logging.getLogger(__name__)

ProgressFn = Callable[[str, int, int], None]
REPO_ROOT = Path(__file__).resolve().parents[2]


def _limit_memory(max_mb: int) -> None:
    try:
        import resource

        limit = max_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, ValueError, OSError) as exc:  # not on this OS: the timeout still applies
        log.warning("could not limit parse worker memory: %s", exc)


def _send(obj) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def worker_main() -> None:
    """Entry point of the worker process: one JSON request per stdin line, JSON replies on stdout."""
    settings = IngestSettings.model_validate_json(os.environ["STRATA_PARSE_SETTINGS"])
    _limit_memory(settings.parse_memory_mb)
    from backend.ingest.parser import parse_pdf

    for line in sys.stdin:
        if not line.strip():
            continue
        path, crops_root, display_name = json.loads(line)

        def progress(stage: str, done: int, total: int) -> None:
            _send(["progress", stage, done, total])

        try:
            parsed = parse_pdf(Path(path), settings, Path(crops_root) if crops_root else None, progress, display_name)
            sys.stdout.write('["ok", ' + parsed.model_dump_json() + "]\n")
            sys.stdout.flush()
        except BadPdfError as exc:
            _send(["error", exc.reason])
        except MemoryError:
            _send(["error", f"parsing needed more than the {settings.parse_memory_mb} MiB memory limit (STRATA_INGEST__PARSE_MEMORY_MB); the file may be a decompression bomb"])
        except Exception as exc:  # noqa: BLE001 - any parser failure is this file's failure, reported as data
            _send(["error", f"the parser failed: {type(exc).__name__}: {exc}"])


class ParseWorker:
    """One long-lived worker process (`python -m backend.ingest.worker`); restarted after a crash or a timeout."""

    def __init__(self, settings: IngestSettings) -> None:
        self._settings = settings
        self._proc: subprocess.Popen | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()

    @staticmethod
    def _pump(stream, lines: queue.Queue) -> None:
        """Move the worker's stdout lines into a queue (None at end of stream), so waiting on
        the queue with a timeout never misses a line already read into a buffer."""
        try:
            for line in stream:
                lines.put(line)
        except (OSError, ValueError):
            pass
        lines.put(None)

    def _start(self) -> None:
        env = dict(os.environ)
        env.update(
            STRATA_PARSE_SETTINGS=self._settings.model_dump_json(),
            OMP_THREAD_LIMIT="1",  # tesseract: fast single-threaded
            OPENBLAS_NUM_THREADS="1",
            PYTHONPATH=os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        )
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "backend.ingest.worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            env=env, cwd=str(REPO_ROOT), text=True, bufsize=1,
        )
        self._lines = queue.Queue()
        threading.Thread(target=self._pump, args=(self._proc.stdout, self._lines), daemon=True).start()

    def _kill(self) -> None:
        if self._proc is not None:
            if self._proc.poll() is None:
                self._proc.kill()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            for stream in (self._proc.stdin, self._proc.stdout):
                try:
                    stream.close()
                except (OSError, ValueError):
                    pass
        self._proc = None

    def close(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            try:
                self._proc.stdin.close()
                self._proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired, ValueError):
                pass
        self._kill()

    def __enter__(self) -> ParseWorker:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def parse(self, path: Path, crops_root: Path | None, display_name: str, progress: ProgressFn | None = None) -> ParsedDocument:
        """Parse one file in the worker; raises BadPdfError for any failure of that file."""
        if self._proc is None or self._proc.poll() is not None:
            self._kill()
            self._start()
        proc = self._proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps([str(path), str(crops_root) if crops_root else None, display_name]) + "\n")
            proc.stdin.flush()
        except (BrokenPipeError, OSError):
            code = proc.poll()
            self._kill()
            raise BadPdfError(display_name, _death_reason(code, self._settings)) from None
        deadline = time.monotonic() + self._settings.parse_timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self._kill()
                raise BadPdfError(
                    display_name,
                    f"parsing took longer than {self._settings.parse_timeout_s:g} s and was stopped (STRATA_INGEST__PARSE_TIMEOUT_S)",
                )
            try:
                line = self._lines.get(timeout=min(left, 1.0))
            except queue.Empty:
                continue
            if line is None or not line.endswith("\n"):
                try:
                    code = proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    code = None
                self._kill()
                raise BadPdfError(display_name, _death_reason(code, self._settings))
            msg = json.loads(line)
            if msg[0] == "progress":
                if progress is not None:
                    progress(msg[1], msg[2], msg[3])
            elif msg[0] == "ok":
                return ParsedDocument.model_validate(msg[1])
            else:
                raise BadPdfError(display_name, msg[1])


def _death_reason(code: int | None, settings: IngestSettings) -> str:
    return (
        f"the parser process died (exit code {code}) while reading this file; it probably exceeded the "
        f"{settings.parse_memory_mb} MiB memory limit (STRATA_INGEST__PARSE_MEMORY_MB) or hit a crash in the PDF library"
    )


if __name__ == "__main__":
    worker_main()
