"""The Settings tab's Hub model choice in a real browser (the shared `python app.py` server of
conftest.py, which runs with HF_HUB_OFFLINE=1): the download box is there and off, an uncached Hub
id is refused with what to do, a ticked download is refused while HF_HUB_OFFLINE is set, and the
box is unticked after each Apply. Nothing is downloaded: the test refuses to run without
HF_HUB_OFFLINE, since the server inherits this process's environment."""

from __future__ import annotations

import os

import pytest

from tests.ui.helpers import BROWSER_MARKS, _open_session, _open_tab, _shot, sync_api

pytestmark = BROWSER_MARKS

HUB_ID = "Qwen/Qwen2.5-0.5B-Instruct"


@pytest.mark.skipif(
    os.environ.get("HF_HUB_OFFLINE", "").upper() not in {"1", "ON", "YES", "TRUE"},
    reason="needs HF_HUB_OFFLINE=1 so that the server cannot download the model this test names",
)
def test_an_uncached_hub_id_is_refused_with_what_to_do(browser, app_url):
    context, page = _open_session(browser, app_url)
    try:
        _open_tab(page, "Settings")
        page.locator("#settings-backend").get_by_text("Local Hugging Face model").click()
        download = page.locator("#settings-hf-download input[type=checkbox]")
        sync_api.expect(download).to_be_visible()
        sync_api.expect(download).not_to_be_checked()
        page.locator("#settings-hf-model textarea, #settings-hf-model input").first.fill(HUB_ID)
        page.locator("#settings-apply").click()
        error = page.locator("#settings-status .st-error")
        sync_api.expect(error).to_contain_text(f"'{HUB_ID}' is not in the local Hugging Face cache")
        sync_api.expect(error).to_contain_text("Download from the Hub")
        sync_api.expect(page.locator('#settings-status [data-field="backend"]')).to_contain_text("rules")

        download.check()
        page.locator("#settings-apply").click()
        sync_api.expect(error).to_contain_text("cannot be downloaded. Unset HF_HUB_OFFLINE")
        sync_api.expect(download).not_to_be_checked()
        _shot(page, "settings_hub_offline")
        assert page.page_errors == []
    finally:
        context.close()
