"""A browser keeps its session across reloads (issue 48 item 4): the token it stores gives the
page the same workspace back while it is alive, says so once when it idled out, and never
reaches another session's workspace (made up, altered or foreign tokens are refused)."""

from __future__ import annotations

import os
from pathlib import Path

from backend.sessions import Reattach, SessionManager
from tests.test_sessions import Clock, manager, root_service, shared  # noqa: F401 (fixtures)


def test_a_kept_token_gives_the_same_workspace_back_after_the_page_went(root_service, shared, tmp_path):
    m = manager(root_service, shared, tmp_path / "root")
    first = m.new_handle()
    token = m.keep(first)
    own = first.writable()
    m.release_value(first)  # the page was reloaded: Gradio drops its state
    assert own.exists()  # a kept session is not released with its page
    again, state = m.attach(token)
    assert state is Reattach.RESTORED and again.key == first.key and Path(again) == own and again.kept


def test_a_session_not_kept_by_a_browser_is_released_with_its_page(root_service, shared, tmp_path):
    m = manager(root_service, shared, tmp_path / "root")
    client = m.new_handle()  # an API client: it never stores a token
    own = client.writable()
    m.release_value(client)
    assert not own.exists() and m.count() == 0


def test_tokens_are_unguessable_and_never_reach_another_session(root_service, shared, tmp_path):
    m = manager(root_service, shared, tmp_path / "root")
    a, b = m.new_handle(), m.new_handle()
    token_a, token_b = m.keep(a), m.keep(b)
    own_a = a.writable()
    assert token_a != token_b and len(token_a.split(".")[1]) == 32
    assert a.key not in m.token_for(b)
    back_b, state = m.attach(token_b)
    assert state is Reattach.EMPTY and Path(back_b) == shared.resolve()  # b never wrote: it reads the sample, not a's files
    forged = [a.key, f"{a.key}.", f"{a.key}.{'0' * 32}", f"{b.key}.{token_a.split('.')[1]}", token_a[:-1] + "x", "x" * 500]
    for token in forged:
        assert m.attach(token) == (None, Reattach.UNKNOWN), token
    other_run = manager(root_service, shared, tmp_path / "root")  # a restarted server has another secret
    assert other_run.attach(token_a) == (None, Reattach.UNKNOWN)
    assert m.attach("") == (None, Reattach.NONE) and m.attach(None) == (None, Reattach.NONE)
    assert Path(m.attach(token_a)[0]) == own_a


def test_an_idle_session_is_not_taken_up_again_and_is_reported_once(root_service, shared, tmp_path):
    clock = Clock()
    m: SessionManager = manager(root_service, shared, tmp_path / "root", clock=clock, idle_minutes=1)
    handle = m.new_handle()
    token = m.keep(handle)
    own = handle.writable()
    old = os.path.getmtime(own / "strata.sqlite") - 3600
    os.utime(own / "strata.sqlite", (old, old))
    clock.now += 90  # no sweep ran yet: attach expires it itself
    back, state = m.attach(token)
    assert state is Reattach.EXPIRED and not own.exists() and Path(back) == shared.resolve()
    assert m.attach(token)[1] is Reattach.EMPTY  # told once
