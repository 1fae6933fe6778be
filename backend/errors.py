"""Error types. Every message says what failed, the value at fault and what to do."""

from __future__ import annotations


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
