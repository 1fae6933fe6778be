"""Session fixtures of the browser tests: one `python app.py` server and one chromium for all
browser test modules (starting the app builds the sample workspace, which takes a minute)."""

from __future__ import annotations

import pytest

from tests.ui.helpers import CHROMIUM, CHROMIUM_ARGS, AppStartError, running_app, sync_api



@pytest.fixture(scope="session")
def app_url(app_server):
    return app_server[0]


@pytest.fixture(scope="session")
def app_log(app_server):
    """The running app's combined stdout/stderr log file (what a person running app.py reads)."""
    return app_server[1]


@pytest.fixture(scope="session")
def app_server(tmp_path_factory):
    try:
        with running_app(tmp_path_factory.mktemp("strata_app")) as (url, log_path):
            yield url, log_path
    except AppStartError as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="session")
def browser():
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()
