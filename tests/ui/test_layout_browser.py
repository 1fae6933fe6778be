"""The app at laptop and phone widths: every tab reachable, no page wider than the screen, and a
question answered with its citation at phone width. Screenshots go to test-artifacts/."""

from __future__ import annotations

import pytest

from tests.ui.helpers import BROWSER_MARKS, UI_TIMEOUT_MS, _shot, sync_api

pytestmark = BROWSER_MARKS
TABS = ["Library", "Parse", "Graph", "Ask", "Compare", "Evaluate", "Settings"]
QUESTION = "How many trees did the programme plant?"


def _go_to_tab(page, name: str) -> None:
    """Click a tab; on a narrow screen Gradio folds the last tabs into its "More tabs" menu."""
    tab = page.get_by_role("tab", name=name)
    if tab.count() and tab.first.is_visible():
        tab.first.click()
        return
    page.locator('button[aria-label="More tabs"]').click()
    page.locator(".overflow-dropdown button", has_text=name).first.click()


@pytest.mark.parametrize("width, height", [(1280, 800), (390, 844)])
def test_every_tab_fits_the_screen(browser, app_url, width, height):
    context = browser.new_context(viewport={"width": width, "height": height})
    context.set_default_timeout(UI_TIMEOUT_MS)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda err: errors.append(str(err)))
    try:
        page.goto(app_url)
        sync_api.expect(page.locator("#documents-table")).to_contain_text("policy_brief.pdf")
        for name in TABS:
            _go_to_tab(page, name)
            overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
            assert overflow <= 2, f"{name} tab is {overflow}px wider than a {width}px screen"
            _shot(page, f"layout_{width}_{name.lower()}")
        assert errors == []
    finally:
        context.close()


def test_ask_at_phone_width(browser, app_url):
    context = browser.new_context(viewport={"width": 390, "height": 844})
    context.set_default_timeout(UI_TIMEOUT_MS)
    page = context.new_page()
    try:
        page.goto(app_url)
        sync_api.expect(page.locator("#documents-table")).to_contain_text("policy_brief.pdf")
        _go_to_tab(page, "Ask")
        page.locator("#ask-question textarea").fill(QUESTION)
        page.locator("#ask-button").click()
        sync_api.expect(page.locator("#ask-answer .st-answer")).to_be_visible(timeout=120_000)
        image = page.locator("#ask-citation-image img")
        image.scroll_into_view_if_needed()  # below the answer on a phone; the browser loads it lazily
        sync_api.expect(image).to_be_visible()
        assert page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth") <= 2
        _shot(page, "layout_390_answer")
    finally:
        context.close()
