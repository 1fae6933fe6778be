"""Logging set-up for the entry points (the CLI, the web app): one handler on stderr at the chosen
level, with the chatty libraries held back so that INFO reads as Strata's own stage boundaries.

It configures the process once at start-up; library code only calls `logging.getLogger(__name__)`.
Every line it writes has its absolute paths cut to their last part (PathScrubFilter): the log of
a shared server names no server folder, venv or upload path.
It does not decide the level (settings.log_level does) and writes nothing to stdout, where the
CLI's machine-readable output goes.
"""

from __future__ import annotations

import logging
import sys

from backend.errors import ConfigError, without_paths

# Libraries that log below WARNING on their own: bm25s sets its logger to DEBUG when it is
# imported (one line per index build), so a level set before that import is undone; transformers
# warns "Token indices sequence length is longer than ..." whenever the packer counts the tokens of
# a unit longer than the encoder's window, and counting is all it does there (the encoder itself
# truncates). faiss, sentence-transformers and httpx report routine loading and requests at INFO.
NOISY_LOGGERS: dict[str, int] = {
    "bm25s": logging.WARNING,
    "transformers.tokenization_utils_base": logging.ERROR,
    "faiss.loader": logging.WARNING,
    "sentence_transformers": logging.WARNING,
    "httpx": logging.WARNING,
}
DEFAULT_FORMAT = "%(levelname)s %(name)s: %(message)s"


class LibraryLevelFilter(logging.Filter):
    """Drops a record of a noisy library below that library's level, whatever level the library
    set on its own logger (bm25s resets its own at import, after start-up has run)."""

    def filter(self, record: logging.LogRecord) -> bool:
        name = record.name
        for prefix, level in NOISY_LOGGERS.items():
            if name == prefix or name.startswith(prefix + "."):
                return record.levelno >= level
        return True


class PathScrubFilter(logging.Filter):
    """Cuts every absolute path in a record to its last part (errors.without_paths), the message
    and its traceback alike, so a log shared with a server's users names no server folder, venv
    or upload path. Records of Strata's own modules already leave paths out; this is the net for
    libraries and exception texts."""

    _formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        scrubbed = without_paths(message)
        if scrubbed != message:
            record.msg, record.args = scrubbed, None
        if record.exc_info and not record.exc_text:
            record.exc_text = without_paths(self._formatter.formatException(record.exc_info))
        elif record.exc_text:
            record.exc_text = without_paths(record.exc_text)
        if record.stack_info:
            record.stack_info = without_paths(record.stack_info)
        return True


def quiet_library_loggers() -> None:
    """Hold the noisy libraries at the levels above: on their loggers (for those that keep their own
    handlers, like transformers) and as a filter on the root handlers (for those that reset their
    level later). Idempotent; call after the root handlers exist."""
    for name, level in NOISY_LOGGERS.items():
        logging.getLogger(name).setLevel(level)
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, LibraryLevelFilter) for f in handler.filters):
            handler.addFilter(LibraryLevelFilter())
        if not any(isinstance(f, PathScrubFilter) for f in handler.filters):
            handler.addFilter(PathScrubFilter())


def configure_logging(level: str | int, fmt: str = DEFAULT_FORMAT) -> None:
    """Log to stderr at `level` (a name like "INFO" or a number) and quiet the noisy libraries.
    Replaces any handlers set before (force=True), so calling it twice does not double the lines."""
    if isinstance(level, str):
        name = level.upper()
        if not isinstance(logging.getLevelName(name), int):
            raise ConfigError(f"Unknown log level '{level}'. Set STRATA_LOG_LEVEL to DEBUG, INFO, WARNING or ERROR.")
        level = name
    logging.basicConfig(level=level, stream=sys.stderr, format=fmt, force=True)
    logging.captureWarnings(True)  # a library's warning names its source file: through the handlers, paths cut
    quiet_library_loggers()
