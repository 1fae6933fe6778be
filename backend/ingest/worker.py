"""Parse PDFs in a separate worker process inside one memory budget for the whole process tree.

The parent (the ingest CLI or the server) and its parse worker share `memory_budget_mb`: the
worker's share is what the parent leaves of the budget when the worker starts (at most
`parse_memory_mb`); while a file is parsed the parent watches the tree's resident memory and
stops the worker past its share or the tree past the budget, and the worker's address space is
limited to its share plus ADDRESS_SLACK_MB (mapped but unread libraries, malloc arenas), a hard
stop for an allocation too fast for the watch. A decompression bomb, a draw-count bomb or a
MuPDF crash can only take the worker down: the parent fails that file with a one-line reason,
starts a fresh worker, and the batch goes on. The worker imports only the parser (PyMuPDF,
pysbd), never torch or faiss.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from backend import heap
from backend.config import IngestSettings
from backend.errors import BadPdfError, clean_text, library_reason, log_name
from backend.logs import configure_logging
from backend.types import ParsedDocument

log = logging.getLogger(__name__)

ProgressFn = Callable[[str, int, int], None]
REPO_ROOT = Path(__file__).resolve().parents[2]
PARENT_HEADROOM_MB = 256  # the parent grows while it encodes and stores the file the worker returns
MIN_WORKER_MB = 512  # PyMuPDF alone maps 275 MiB; below this a worker cannot parse a small file
RESHARE_SLACK_MB = 64  # restart a worker whose limit is this much over the share the parent now leaves it
WATCH_INTERVAL_S = 0.2
# The share is resident memory (what the parent watches); the hard limit is on address space,
# which also counts libraries mapped but not read and malloc's reserved arenas. With
# MALLOC_ARENA_MAX=2 a worker OCR-ing a 72-page 10-Q maps ~250 MiB more than it holds (464 vs
# 216 MiB; 769 MiB with glibc's default arenas, past a 571 MiB share: valid reports failed).
ADDRESS_SLACK_MB = 384


def _rss_bytes(pid: int) -> int:
    """Resident memory of one process and all its descendants (psutil when installed, else /proc).
    A descendant forked without exec (a page helper, split.py: same command line as its parent)
    shares the pages it inherited, so it counts its private pages only (its unique set size);
    by RSS a helper would count the worker a second time."""
    try:
        import psutil
    except ImportError:
        return _proc_rss(pid)
    try:
        proc = psutil.Process(pid)
        total = proc.memory_info().rss
        for child in proc.children(recursive=True):
            try:
                forked = child.cmdline() == psutil.Process(child.ppid()).cmdline()
                total += child.memory_full_info().uss if forked else child.memory_info().rss
            except psutil.Error:
                pass
        return total
    except psutil.Error:
        return 0


def _proc_field_kb(path: Path, *names: str) -> int:
    total = 0
    for line in path.read_text().splitlines():
        key, _, value = line.partition(":")
        if key in names:
            total += int(value.split()[0])
    return total * 1024


def _proc_rss(pid: int, parent_cmdline: bytes | None = None) -> int:
    """_rss_bytes from /proc (Linux); 0 where /proc is not there."""
    root = Path(f"/proc/{pid}")
    try:
        cmdline = (root / "cmdline").read_bytes()
        if cmdline == parent_cmdline:  # forked without exec: its private pages
            total = _proc_field_kb(root / "smaps_rollup", "Private_Clean", "Private_Dirty")
        else:
            total = _proc_field_kb(root / "status", "VmRSS")
        children = [c for task in (root / "task").iterdir() for c in (task / "children").read_text().split()]
    except (OSError, ValueError):
        return 0
    return total + sum(_proc_rss(int(c), cmdline) for c in children)


def worker_share_mb(settings: IngestSettings, parent_rss: int) -> int:
    """The worker's memory limit: what the parent (with headroom) leaves of the budget, at most
    parse_memory_mb, at least MIN_WORKER_MB (a parent already over its budget still parses)."""
    left = settings.memory_budget_mb - parent_rss // 2**20 - PARENT_HEADROOM_MB
    return max(MIN_WORKER_MB, min(settings.parse_memory_mb, left))


def _limit_memory(max_mb: int) -> None:
    try:
        import resource

        limit = max_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, ValueError, OSError) as exc:  # not on this OS: the parent's watch still applies
        log.warning("could not limit parse worker memory: %s", exc)


_protocol = None  # the worker process's reply channel once worker_main set it up (stdout before)


def _reply_line(text: str) -> None:
    out = _protocol or sys.stdout
    out.write(text + "\n")
    out.flush()


def _send(obj) -> None:
    _reply_line(json.dumps(obj))


def _own_stdout() -> None:
    """Keep the reply channel for replies: anything else a library prints (PyMuPDF's layout
    recommendation goes to stdout, MuPDF writes from C) is moved to stderr, where it cannot
    break a JSON line."""
    global _protocol
    sys.stdout.flush()
    reply_fd = os.dup(1)
    os.dup2(2, 1)
    _protocol = os.fdopen(reply_fd, "w", buffering=1, encoding="utf-8")
    sys.stdout = sys.stderr


def _scrub(value):
    """Every string in a dumped model made valid Unicode (the net under clean_text at the source)."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {_scrub(k): _scrub(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub(v) for v in value]
    return value


def _dump(parsed: ParsedDocument) -> str:
    try:
        return parsed.model_dump_json()
    except ValueError:  # PydanticSerializationError: a lone surrogate the parser did not clean
        return ParsedDocument.model_validate(_scrub(parsed.model_dump())).model_dump_json()


def _parse_one(request: str, settings: IngestSettings, memory_mb: int) -> None:
    from backend.ingest.extract import ocr_unusable
    from backend.ingest.parser import parse_pdf

    path, crops_root, display_name, *one_process = json.loads(request)  # [path, crops root, name(, one process)]
    if any(one_process):
        settings = settings.model_copy(update={"parse_processes": 1})

    def progress(stage: str, done: int, total: int) -> None:
        _send(["progress", stage, done, total])

    try:
        parsed = parse_pdf(
            Path(path), settings, Path(crops_root) if crops_root else None, progress, display_name, memory_mb,
            tell_processes=lambda n: _send(["processes", n]),
        )
        if ocr_unusable() is not None:
            _send(["recycle"])  # OCR is stuck in this process: the next file needs a fresh worker
        _reply_line('["ok", ' + _dump(parsed) + "]")
    except BadPdfError as exc:
        _send(["error", exc.reason])
    except MemoryError:
        _send(["error", _memory_reason(memory_mb, settings), "memory"])
    except Exception as exc:  # noqa: BLE001 - any parser failure is this file's failure, reported as data
        reason = f"the parser could not read it: {library_reason(exc)}"
        # One line for a refused file; the traceback (server source paths) only for who asks for DEBUG.
        log.warning("parsing %s failed: %s", log_name(display_name), reason)
        log.debug("parsing %s failed", log_name(display_name), exc_info=True)
        _send(["recycle"])  # whatever state the library was left in stays with this process
        _send(["error", reason])


def worker_main() -> None:
    """Entry point of the worker process: one JSON request per stdin line, JSON replies on stdout."""
    _own_stdout()
    configure_logging(os.environ.get("STRATA_PARSE_LOG_LEVEL", "WARNING"))  # to stderr, as the parent's, paths scrubbed
    settings = IngestSettings.model_validate_json(os.environ["STRATA_PARSE_SETTINGS"])
    memory_mb = int(os.environ.get("STRATA_PARSE_MEMORY_LIMIT_MB", settings.parse_memory_mb))
    if not settings.table_layout_model and "pymupdf" not in sys.modules:
        # `import pymupdf` loads pymupdf-layout's ONNX models when that package is installed:
        # 4 s, 55 MiB resident and 270 MiB of address space per worker, for a model only
        # table_layout_model uses. Without it the worker starts in 1 s inside a small limit.
        sys.modules["pymupdf.layout"] = None  # type: ignore[assignment]
    _limit_memory(memory_mb + ADDRESS_SLACK_MB)
    for line in sys.stdin:
        if line.strip():
            _parse_one(line, settings, memory_mb)
            _release()


def _release() -> None:
    """Hand back what a parse left behind: MuPDF's resource store (decoded images and fonts of
    files already closed) and glibc's free heap. Without it the worker's idle memory grows file by
    file over a batch of long PDFs, until a valid file late in the batch is stopped for memory
    (bench/RESULTS.md#reliability)."""
    import gc

    import pymupdf

    gc.collect()
    pymupdf.TOOLS.store_shrink(100)
    heap.trim()


def _memory_reason(share_mb: int, settings: IngestSettings) -> str:
    said = (f"parsing needed more than the parser's {share_mb} MiB share of the {settings.memory_budget_mb} MiB memory budget "
            "(STRATA_INGEST__MEMORY_BUDGET_MB, at most STRATA_INGEST__PARSE_MEMORY_MB)")
    if share_mb <= MIN_WORKER_MB < settings.parse_memory_mb:
        # The rest of the process held the budget (a GPU runtime holds ~1.4 GB, bench/RESULTS.md):
        # the file was given the floor, not its share, so it is no evidence of a bomb.
        return (said + "; the rest of the server held most of the budget and left the parser only its floor: "
                "raise STRATA_INGEST__MEMORY_BUDGET_MB and add the file again")
    return said + "; the file may be a decompression or drawing bomb"


def _death_reason(code: int | None, share_mb: int, settings: IngestSettings) -> str:
    """One line a person can read for a worker that ended without an answer."""
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        if -code == signal.SIGKILL:
            return f"the parser process was killed while reading this file ({name}), most likely for memory: " + _memory_reason(share_mb, settings)
        return f"the PDF library crashed while reading this file ({name}); the file is probably damaged or hostile"
    return f"the parser process stopped while reading this file (exit code {code}); " + _memory_reason(share_mb, settings)


class _SplitStopped(BadPdfError):
    """A file read in several processes (split.py) stopped for memory or died: it is read again
    in one process, where it may fit (ParseWorker.parse)."""


class ParseWorker:
    """One long-lived worker process (`python -m backend.ingest.worker`); restarted after a crash,
    a timeout, a kill for memory, or when the parent has grown into the worker's share."""

    def __init__(self, settings: IngestSettings) -> None:
        self._settings = settings
        self._proc: subprocess.Popen | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self.share_mb = 0  # the running worker's memory limit
        self.peak_tree_rss = 0  # bytes, parent + worker, the most seen while watching
        self._recycle = False  # the worker asked to be replaced after its current file
        self._split = False  # the file being parsed is read in several processes

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

    def _start(self, share_mb: int) -> None:
        env = dict(os.environ)
        env.update(
            STRATA_PARSE_SETTINGS=self._settings.model_dump_json(),
            STRATA_PARSE_MEMORY_LIMIT_MB=str(share_mb),
            STRATA_PARSE_LOG_LEVEL=logging.getLevelName(logging.getLogger().getEffectiveLevel()),
            PYMUPDF_SUGGEST_LAYOUT_ANALYZER="0",  # the worker leaves pymupdf-layout out on purpose
            OMP_THREAD_LIMIT="1",  # tesseract: fast single-threaded
            MALLOC_ARENA_MAX="2",  # glibc reserves 64 MiB of address space per thread arena otherwise
            OPENBLAS_NUM_THREADS="1",
            PYTHONPATH=os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        )
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "backend.ingest.worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            env=env, cwd=str(REPO_ROOT), text=True, bufsize=1,
            start_new_session=True,  # its own process group: a kill ends its page helpers with it
        )
        self.share_mb = share_mb
        self._lines = queue.Queue()
        threading.Thread(target=self._pump, args=(self._proc.stdout, self._lines), daemon=True).start()

    def _kill(self) -> None:
        if self._proc is not None:
            try:
                os.killpg(self._proc.pid, signal.SIGKILL)  # the worker and its page helpers
            except (AttributeError, ProcessLookupError, PermissionError):
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

    def _ready(self) -> subprocess.Popen:
        """A running worker whose limit fits what the parent leaves of the budget now."""
        share = worker_share_mb(self._settings, _rss_bytes(os.getpid()) - self._worker_rss())
        if self._recycle or self._proc is None or self._proc.poll() is not None or self.share_mb > share + RESHARE_SLACK_MB:
            self._recycle = False
            self._kill()
            self._start(share)
        assert self._proc is not None
        return self._proc

    def _worker_rss(self) -> int:
        return _rss_bytes(self._proc.pid) if self._proc is not None and self._proc.poll() is None else 0

    def _over_budget(self) -> bool:
        """Whether the worker (with its children) is past its share, or the whole tree is past
        the budget with the worker holding more than the parent now leaves it (never less than
        MIN_WORKER_MB). The parent's own growth during a long batch is not the file's doing: a
        parent near the budget by itself does not fail files whose parse stays small (an OCR deck
        of a few hundred MiB late in a batch of long files); its next worker starts with the
        smaller share the parent leaves."""
        tree = _rss_bytes(os.getpid())
        worker = self._worker_rss()
        self.peak_tree_rss = max(self.peak_tree_rss, tree)
        if worker > self.share_mb * 2**20:
            return True
        left = max(MIN_WORKER_MB * 2**20, self._settings.memory_budget_mb * 2**20 - (tree - worker))
        return tree > self._settings.memory_budget_mb * 2**20 and worker > left

    def parse(self, path: Path, crops_root: Path | None, display_name: str, progress: ProgressFn | None = None) -> ParsedDocument:
        """Parse one file in the worker; raises BadPdfError (one plain line) for any failure of that file.
        A file whose pages were read in several processes and that stopped for memory, or killed
        the worker, is read again in one process before it fails."""
        try:
            return self._parse(path, crops_root, display_name, progress, one_process=False)
        except _SplitStopped as exc:
            log.warning("%s stopped while read in several processes (%s); reading it in one", log_name(display_name), exc.reason)
            return self._parse(path, crops_root, display_name, progress, one_process=True)

    def _parse(self, path: Path, crops_root: Path | None, display_name: str, progress: ProgressFn | None, one_process: bool) -> ParsedDocument:
        proc = self._ready()
        assert proc.stdin is not None
        self._split = False
        try:
            proc.stdin.write(json.dumps([str(path), str(crops_root) if crops_root else None, display_name, one_process]) + "\n")
            proc.stdin.flush()
        except (BrokenPipeError, OSError):
            code = proc.poll()
            self._kill()
            raise BadPdfError(display_name, _death_reason(code, self.share_mb, self._settings)) from None
        return self._reply(proc, display_name, progress)

    def _reply(self, proc: subprocess.Popen, display_name: str, progress: ProgressFn | None) -> ParsedDocument:
        deadline = time.monotonic() + self._settings.parse_timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self._kill()
                raise BadPdfError(
                    display_name,
                    f"parsing took longer than {self._settings.parse_timeout_s:g} s and was stopped (STRATA_INGEST__PARSE_TIMEOUT_S)",
                )
            if self._over_budget():
                share = self.share_mb
                self._kill()
                log.warning("stopped the parse worker on %s: the process tree passed the memory budget", log_name(display_name))
                raise self._failure(display_name, "the parser was stopped: " + _memory_reason(share, self._settings), memory=True)
            try:
                line = self._lines.get(timeout=min(left, WATCH_INTERVAL_S))
            except queue.Empty:
                continue
            if line is None or not line.endswith("\n"):
                try:
                    code = proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    code = None
                share = self.share_mb
                self._kill()
                raise self._failure(display_name, _death_reason(code, share, self._settings), memory=True)
            try:
                msg = json.loads(line)
            except json.JSONDecodeError:  # not a reply: something printed past the channel
                log.debug("parse worker printed: %s", line.rstrip()[:200])
                continue
            if msg[0] == "progress":
                if progress is not None:
                    progress(msg[1], msg[2], msg[3])
            elif msg[0] == "processes":
                self._split = msg[1] > 1
            elif msg[0] == "recycle":
                self._recycle = True
            elif msg[0] == "ok":
                return ParsedDocument.model_validate(msg[1])
            else:
                raise self._failure(display_name, msg[1], memory=msg[2:] == ["memory"])

    def _failure(self, display_name: str, reason: str, memory: bool) -> BadPdfError:
        """The error for a file that failed: one to read again in one process when it was read in
        several and stopped for memory (or the worker died), else the file's failure."""
        return (_SplitStopped if memory and self._split else BadPdfError)(display_name, reason)


if __name__ == "__main__":
    worker_main()
