"""Session fixtures of the browser tests: one `python app.py` server and one chromium for all
browser test modules (starting the app builds the sample workspace, which takes a minute)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from tests.ui.helpers import CHROMIUM, CHROMIUM_ARGS, REPO, SERVER_START_TIMEOUT_S, _free_port, _log_tail, sync_api



@pytest.fixture(scope="session")
def app_url(app_server):
    return app_server[0]


@pytest.fixture(scope="session")
def app_log(app_server):
    """The running app's combined stdout/stderr log file (what a person running app.py reads)."""
    return app_server[1]


@pytest.fixture(scope="session")
def app_server(tmp_path_factory):
    root = tmp_path_factory.mktemp("strata_app")
    port = _free_port()
    env = dict(
        os.environ,
        GRADIO_SERVER_PORT=str(port),
        GRADIO_SERVER_NAME="127.0.0.1",
        GRADIO_ANALYTICS_ENABLED="False",
        STRATA_WORKSPACE_ROOT=str(root / "workspaces"),
        GRADIO_TEMP_DIR=str(root / "gradio_tmp"),
        PYTHONUNBUFFERED="1",
    )
    log_path = root / "app.log"
    log = log_path.open("wb")
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"app.py exited with code {proc.returncode} before serving:\n{_log_tail(log_path)}")
            try:
                with urllib.request.urlopen(url, timeout=2) as resp:
                    if resp.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass  # not listening yet
            if time.monotonic() > deadline:
                pytest.fail(f"app.py did not answer on {url} within {SERVER_START_TIMEOUT_S} s:\n{_log_tail(log_path)}")
            time.sleep(0.5)
        # The app serves before its sample corpus is ready (built behind it on a first start); the tests expect it.
        while "ready: encoders and sample corpus loaded" not in log_path.read_text(encoding="utf-8", errors="replace"):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"app.py served but its sample corpus was not ready within {SERVER_START_TIMEOUT_S} s:\n{_log_tail(log_path)}")
            time.sleep(0.5)
        yield url, log_path
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        log.close()


@pytest.fixture(scope="session")
def browser():
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()
