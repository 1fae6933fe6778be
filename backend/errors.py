"""Error types. Every message says what failed, the value at fault and what to do."""

from __future__ import annotations

import re


class StrataError(Exception):
    """Base class for errors a user can act on; the UI shows the message as it is."""


class ConfigError(StrataError):
    """A setting has a value Strata cannot use."""


class BadPdfError(StrataError):
    """One input file cannot be ingested (not a PDF, encrypted, empty, too large, hostile)."""

    def __init__(self, file_name: str, reason: str) -> None:
        super().__init__(f"{file_name}: {reason}")
        self.file_name = file_name
        self.reason = reason


class WorkspaceError(StrataError):
    """The workspace folder is missing, unreadable or from an incompatible version."""


class UnknownMethodError(StrataError):
    """A retrieval method name that is not in the registry."""


class EmptyCorpusError(StrataError):
    """A question was asked of a workspace with no documents."""


class LLMError(StrataError):
    """The model server or local model failed (unreachable, timed out, refused the request)."""


class LLMOutputError(LLMError):
    """The model answered, but not with a JSON object of the task's schema."""


# ---------------------------------------------------------------- text that reaches people and logs

_CONTROL_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_SURROGATE_RE = re.compile("[\ud800-\udfff]")
# Bidirectional overrides and isolates reorder what follows them on a terminal or in a log viewer.
_BIDI_CONTROLS = set("\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u061c")


def clean_text(text: str) -> str:
    """The text with lone surrogates (from a non-UTF-8 file name decoded with surrogateescape,
    or from a PDF string that maps to U+D800..U+DFFF) replaced by U+FFFD: every string that
    leaves the parser must be valid Unicode, or JSON and pydantic serialisation fail."""
    return _SURROGATE_RE.sub("\ufffd", text)


def display_name(name: str) -> str:
    """A file name kept as the user gave it, as valid Unicode: a byte that is not UTF-8 (decoded
    by the file system as a lone surrogate, U+DC80..U+DCFF) is shown as `\\xNN` and any other lone
    surrogate as `\\uXXXX`, never replaced by U+FFFD, so two names that differ only in such bytes
    stay two names. Everything else is kept (log lines escape more: log_name)."""
    if not _SURROGATE_RE.search(name):
        return name
    return _SURROGATE_RE.sub(
        lambda m: f"\\x{ord(m.group()) - 0xDC00:02x}" if "\udc80" <= m.group() <= "\udcff" else f"\\u{ord(m.group()):04x}", name
    )


# An absolute POSIX path (not a URL's `//host/...`): the server's folders, a venv, an upload's temp file.
_ABSOLUTE_PATH_RE = re.compile(r"(?<![\w.:/~-])/(?:[^\s'\"/:,;()\[\]<>]+/)+([^\s'\"/:,;()\[\]<>]*)")


def without_paths(text: str) -> str:
    """The text with every absolute path cut to its last part (`.../name.pdf`), for a log line or a
    message on a shared server: MuPDF names the file it failed to open with its full path."""
    return _ABSOLUTE_PATH_RE.sub(lambda m: ".../" + m.group(1), text)


def log_name(name: str) -> str:
    """A file name as it may appear in a log or progress line: control characters (newline, tab),
    bidirectional overrides (U+202E) and undecodable bytes shown as escapes, so a name can neither
    split a line nor reorder it."""
    out = []
    for c in name:
        if c in _CONTROL_ESCAPES:
            out.append(_CONTROL_ESCAPES[c])
        elif "\udc80" <= c <= "\udcff":
            out.append(f"\\x{ord(c) - 0xDC00:02x}")
        elif c in _BIDI_CONTROLS or ord(c) < 32 or ord(c) == 127 or "\ud800" <= c <= "\udfff":
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
    return "".join(out)


# MuPDF's words in an exception message -> what they mean for the person who uploaded the file.
_LIBRARY_WORDS = (
    (("out of memory", "malloc", "cannot allocate", "bad_alloc"), "reading it needed more memory than the parser is allowed"),
    (("password", "encrypt"), "it is encrypted"),
    (("page tree", "number of pages", "page not in document"), "its page tree is damaged or claims more pages than it holds"),
    (("xref", "object", "trailer", "syntax", "token", "dictionary", "expected", "page tree", "startxref"),
     "part of the file's internal structure is damaged"),
    (("zlib", "flate", "lzw", "ccitt", "jbig2", "jpeg", "jpx", "dct", "image", "decode", "stream"),
     "a compressed stream or image in it is damaged"),
    (("font", "cmap", "glyph"), "a font in it is damaged"),
    (("limit", "too large", "too many", "overflow"), "it is larger than the PDF library accepts"),
)


def library_reason(exc: BaseException) -> str:
    """Plain words for an exception raised while reading a PDF, for a message a person reads: no
    exception class names, no MuPDF error codes (`code=7: ...`), no server paths. The raw
    exception belongs in the server log, not here."""
    if isinstance(exc, MemoryError):
        return "reading it needed more memory than the parser is allowed"
    if isinstance(exc, RecursionError):
        return "its structure is nested too deeply to read"
    text = str(exc).lower()
    for words, meaning in _LIBRARY_WORDS:
        if any(w in text for w in words):
            return meaning
    return "the PDF library could not read it"
