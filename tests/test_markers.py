"""The markers tests/conftest.py adds, checked on a real collection: browser modules and tests
that need a workspace ingested from real PDFs leave the quick unit run
(`-m "not browser and not integration"`), and a plain run still collects them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # two collections in subprocesses

REPO = Path(__file__).resolve().parents[1]
FILES = ["tests/ui/test_api_client.py", "tests/test_cli.py", "tests/test_service_query.py", "tests/test_import_cycles.py"]


def collect(*args: str) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", *args, *FILES], cwd=REPO, capture_output=True, text=True,
        timeout=300, env=dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1"),
    )
    assert proc.returncode in (0, 5), proc.stdout[-2000:] + proc.stderr[-2000:]  # 5: nothing selected
    return [line for line in proc.stdout.splitlines() if "::" in line]


def test_the_quick_run_leaves_out_browser_and_integration_tests_and_a_plain_run_keeps_them():
    everything = collect()
    quick = set(collect("-m", "not browser and not integration"))
    assert {t.split("::")[0] for t in everything} == set(FILES)
    left_out = {t for t in everything if t not in quick}
    assert {t for t in everything if t.startswith(("tests/ui/test_api_client.py::", "tests/test_cli.py::"))} <= left_out
    # needs the ingested sample workspace -> integration; checks bounds before any workspace -> unit
    assert "tests/test_service_query.py::test_repack_at_the_same_budget_gives_the_same_pack_and_answer" in left_out
    assert any(t.startswith("tests/test_service_query.py::test_top_k_outside_its_range_is_refused") for t in quick)
    assert {t for t in everything if t.startswith("tests/test_import_cycles.py::")} <= quick


def test_marks_by_path_and_by_ingest_fixture():
    from tests.conftest import _marks_for

    assert _marks_for("ui/test_ask_browser.py", {"app_url", "browser"}) == ["browser"]
    assert _marks_for("ui/test_api_client.py", {"app_url"}) == ["browser"]
    assert _marks_for("ui/test_render.py", set()) == []
    assert _marks_for("test_cli.py", set()) == ["integration"]
    assert _marks_for("graph/test_graph.py", {"service", "sample_workspace", "sample_corpus"}) == ["integration"]
    assert _marks_for("graph/test_graph.py", {"service"}) == []
