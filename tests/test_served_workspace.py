"""A workspace built beforehand (e.g. on a cluster) served by the app, read-only, to every session
(settings.serve_workspace): sessions read it, never write it or copy it, and a missing one is
refused at start with the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from backend.config import Settings
from backend.errors import WorkspaceError
from backend.graph.store import WorkspaceStore
from backend.service import Service
from backend.sessions import SessionLimitError


def _service(tmp_path: Path, served: Path | None) -> Service:
    return Service(Settings(workspace_root=tmp_path / "root", load_sample=False, serve_workspace=served))


def test_without_the_setting_nothing_is_served(tmp_path):
    service = _service(tmp_path, None)
    assert service.served_workspace() is None
    assert service.session_manager(None).read_only is False


def test_a_missing_served_workspace_is_refused_with_the_fix(tmp_path):
    with pytest.raises(WorkspaceError, match="STRATA_SERVE_WORKSPACE.*python -m backend ingest"):
        _service(tmp_path, tmp_path / "nowhere").served_workspace()


def test_sessions_read_the_served_workspace_and_never_write_or_copy_it(tmp_path):
    library = tmp_path / "library"
    WorkspaceStore(library).close()
    service = _service(tmp_path, library)
    served = service.served_workspace()
    assert served == library.resolve()
    sessions = service.session_manager(served)
    handle = sessions.new_handle()
    assert Path(handle) == served
    with pytest.raises(SessionLimitError, match="read-only.*STRATA_SERVE_WORKSPACE"):
        handle.writable(1000)
    assert not (tmp_path / "root" / "sessions").exists() or not any((tmp_path / "root" / "sessions").iterdir())
    assert Path(handle) == served  # still reading the library
