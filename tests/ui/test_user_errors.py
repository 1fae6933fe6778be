"""ui/common.user_errors: a message to the user (a StrataError, or a gr.Error a callback raises
for a user's mistake) reaches the user as a toast and never prints a traceback in the server log."""

from __future__ import annotations

import gradio as gr
import pytest

from backend.errors import StrataError
from ui.common import user_errors


@user_errors
def _plain(kind: str):
    if kind == "user":
        raise gr.Error("Choose one or more PDF files first (drop them on the upload box), then press Ingest.")
    raise StrataError("No workspace at 'x'. Ingest a PDF first.")


@user_errors
def _stream(kind: str):
    yield "started"
    _plain(kind)


@pytest.mark.parametrize("kind", ["user", "strata"])
def test_a_user_message_prints_no_traceback(kind):
    with pytest.raises(gr.Error) as plain:
        _plain(kind)
    assert plain.value.print_exception is False  # gradio's queue prints a traceback only when this is true
    with pytest.raises(gr.Error) as streamed:
        list(_stream(kind))
    assert streamed.value.print_exception is False
    assert ("Choose one or more PDF files" if kind == "user" else "No workspace at 'x'") in str(plain.value)


def test_other_failures_still_raise_as_they_are():
    @user_errors
    def broken():
        raise ValueError("a bug")

    with pytest.raises(ValueError, match="a bug"):
        broken()
