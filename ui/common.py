"""Helpers every tab uses: turning a `StrataError` into a message the user sees, and reading the
session's workspace path out of its `gr.State`. No rendering and no service calls here.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from pathlib import Path

import gradio as gr

from backend import logs
from backend.errors import StrataError

# Keyword arguments for every UI event listener: UI plumbing is not part of the app's API. Only
# /ingest and /ask (ui/api.py) are public, so gradio_client's view_api() and /info list just those.
PRIVATE = {"api_visibility": "private"}

def quiet_library_loggers() -> None:
    """Hold the chatty libraries' loggers back (backend.logs). Call once, after logging is configured;
    kept here for app.py, which calls it after its own basicConfig."""
    logs.quiet_library_loggers()


def user_errors(fn: Callable) -> Callable:
    """Show a `StrataError` as a Gradio error toast with its message, and keep a `gr.Error` the
    callback raises for a user's mistake ("Choose one or more PDF files first") out of the server
    log: both are messages to the user, not failures of the server, so neither prints a traceback.

    Works for plain callbacks and for generator callbacks that stream updates.
    """
    if inspect.isgeneratorfunction(fn):

        @functools.wraps(fn)
        def stream(*args, **kwargs):
            try:
                yield from fn(*args, **kwargs)
            except StrataError as exc:
                raise gr.Error(str(exc), print_exception=False) from None
            except gr.Error as exc:
                exc.print_exception = False
                raise

        return stream

    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except StrataError as exc:
            raise gr.Error(str(exc), print_exception=False) from None
        except gr.Error as exc:
            exc.print_exception = False
            raise

    return call


def session_workspace(value) -> Path:
    """The workspace a session reads now, from its `gr.State` (a SessionHandle: the shared sample
    until the session's first write; or a path string)."""
    if not value:
        raise StrataError("This browser session has no workspace yet. Reload the page to start a new session.")
    return Path(value)


def writable_workspace(value, incoming_bytes: int = 0) -> Path:
    """The session's own workspace, made on its first write (never the shared sample); every
    callback that ingests, removes or stores files in the workspace asks for it here."""
    if hasattr(value, "writable"):
        return value.writable(incoming_bytes)
    return session_workspace(value)
