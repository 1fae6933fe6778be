"""A first start in a real browser: the page is served before the sample corpus is ready and
says how far its preparation got; the documents appear once it is done; a browser session that
only looks creates no workspace folder, and "Start over" after a removal gives the sample back.

Starts its own `python app.py` with an empty workspace root (a cold start), so it takes the
time of ingesting the four sample PDFs.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from tests.ui.helpers import BROWSER_MARKS, REPO, SERVER_START_TIMEOUT_S, _free_port, _log_tail, _shot, sync_api

pytestmark = BROWSER_MARKS

SAMPLE_READY_MS = SERVER_START_TIMEOUT_S * 1000


@pytest.fixture(scope="module")
def cold_app(tmp_path_factory):
    root = tmp_path_factory.mktemp("cold_app")
    port = _free_port()
    env = dict(
        os.environ, GRADIO_SERVER_PORT=str(port), GRADIO_SERVER_NAME="127.0.0.1", GRADIO_ANALYTICS_ENABLED="False",
        STRATA_WORKSPACE_ROOT=str(root / "workspaces"), GRADIO_TEMP_DIR=str(root / "gradio_tmp"), PYTHONUNBUFFERED="1",
    )
    log_path = root / "app.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen([sys.executable, "app.py"], cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}/"
        try:
            deadline = time.monotonic() + SERVER_START_TIMEOUT_S
            while True:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"app.py did not serve:\n{_log_tail(log_path)}")
                try:
                    with urllib.request.urlopen(url, timeout=2) as resp:
                        if resp.status == 200:
                            break
                except (urllib.error.URLError, OSError):
                    time.sleep(0.3)
            yield url, root / "workspaces"
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def test_first_start_serves_at_once_and_shows_the_preparation(cold_app, browser):
    """Uses the suite's one chromium (conftest.py): a second sync Playwright in the same process fails."""
    url, workspaces = cold_app
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        page.goto(url)
        status = page.locator("#sample-status")
        sync_api.expect(status).to_contain_text("sample corpus")  # checking, then "Preparing ...: k of 4 files"
        sync_api.expect(status).to_contain_text(" of 4 files")
        _shot(page, "sample_preparing")
        sync_api.expect(page.locator("#documents-table")).to_contain_text("policy_brief.pdf", timeout=SAMPLE_READY_MS)
        sync_api.expect(status).to_have_count(0, timeout=10_000)  # the banner goes once the sample is ready
        assert not (workspaces / "sessions").exists() or not any((workspaces / "sessions").iterdir())

        page.locator("#remove-choice input").click()
        page.get_by_role("option", name="policy_brief.pdf").first.click()
        page.locator("#remove-button").click()
        sync_api.expect(page.locator("#documents-table")).not_to_contain_text("policy_brief.pdf")
        assert len(list((workspaces / "sessions").iterdir())) == 1  # the removal gave it a workspace of its own
        page.locator("#reset-button").click()
        sync_api.expect(page.locator("#documents-table")).to_contain_text("policy_brief.pdf")
        assert list((workspaces / "sessions").iterdir()) == []
    finally:
        context.close()
