"""The "Only these documents" menus of the Ask and Compare tabs in a real browser (the shared app
server and chromium of conftest.py): each lists the session's documents when opened, a question
asked of one document gets results (and, in Ask, citations) from that document only, and
emptying the menu asks the whole workspace again. Pages of their own, so a choice never reaches
the other Ask and Compare tests.
"""

from __future__ import annotations

import pytest

from tests.ui.helpers import BROWSER_MARKS, _open_session, _open_tab, _shot, call_and_wait, result_docs, sync_api

pytestmark = BROWSER_MARKS

QUESTION = "How many trees did the programme plant?"
CHOSEN = "methods_appendix.pdf"


@pytest.fixture(scope="module")
def scope_page(browser, app_url):
    context, page = _open_session(browser, app_url)
    _open_tab(page, "Ask")
    yield page
    context.close()


def _ask(page) -> None:
    facts = page.locator("#ask-facts .st-facts")
    old_run = facts.get_attribute("data-run") if facts.count() else ""
    page.locator("#ask-question textarea").fill(QUESTION)
    done = page.locator(f'#ask-facts .st-facts:not([data-run="{old_run}"])')
    call_and_wait(page, page.locator("#ask-button").click, done, "Ask")


def test_a_question_asked_of_one_document_gets_results_from_it_alone(scope_page):
    page = scope_page
    _ask(page)
    everywhere = result_docs(page)
    assert len(everywhere) > 1, everywhere  # the sample corpus answers from several documents

    page.locator("#ask-docs input").click()  # opening the menu reads the workspace's documents
    option = page.get_by_role("option", name=CHOSEN, exact=True)
    sync_api.expect(option).to_be_visible()
    sync_api.expect(page.get_by_role("option", name="policy_brief.pdf", exact=True)).to_be_visible()
    option.click()
    page.keyboard.press("Escape")
    _ask(page)
    assert result_docs(page) == {CHOSEN}
    sync_api.expect(page.locator("#ask-citations")).not_to_contain_text("policy_brief.pdf")
    _shot(page, "ask_scope_one_document")

    # Emptying the menu asks the whole workspace again.
    page.locator("#ask-docs").get_by_role("button", name="Remove").first.click()
    _ask(page)
    assert len(result_docs(page)) > 1
    assert page.page_errors == []


@pytest.fixture(scope="module")
def compare_page(browser, app_url):
    context, page = _open_session(browser, app_url)
    _open_tab(page, "Compare")
    yield page
    context.close()


def _compare(page, done) -> dict[str, set[str]]:
    """Compare bm25 and strata on QUESTION, waiting for `done` (what this run changes on the
    page); the documents of each method's results."""
    page.locator("#compare-question textarea").fill(QUESTION)
    for name in ("bm25", "strata"):
        box = page.locator("#compare-methods").get_by_label(name, exact=True)
        if not box.is_checked():
            box.click()
    for name in ("hikey",):
        box = page.locator("#compare-methods").get_by_label(name, exact=True)
        if box.is_checked():
            box.click()
    call_and_wait(page, page.locator("#compare-button").click, done, "Compare")
    docs = {}
    for name in ("bm25", "strata"):
        where = page.locator(f'#compare-columns .st-cmp-col[data-method="{name}"] .st-cmp-where')
        docs[name] = {where.nth(i).inner_text().rsplit(" p.", 1)[0] for i in range(where.count())}
    return docs


def test_compare_asks_every_method_of_the_chosen_documents(compare_page):
    page = compare_page
    everywhere = _compare(page, page.locator("#compare-columns .st-cmp-col").first)  # no columns before the first run
    assert all(len(d) > 1 for d in everywhere.values()), everywhere

    page.locator("#compare-docs input").click()  # opening the menu reads the workspace's documents
    option = page.get_by_role("option", name=CHOSEN, exact=True)
    sync_api.expect(option).to_be_visible()
    option.click()
    page.keyboard.press("Escape")
    scoped = page.locator("#compare-settings-note").get_by_text(f"asked of 1 document(s): {CHOSEN}")
    assert _compare(page, scoped) == {"bm25": {CHOSEN}, "strata": {CHOSEN}}
    _shot(page, "compare_scope_one_document")

    page.locator("#compare-docs").get_by_role("button", name="Remove").first.click()
    sync_api.expect(scoped).to_be_visible()
    assert all(len(d) > 1 for d in _compare(page, page.locator("#compare-settings-note:not(:has-text('asked of'))")).values())
    assert page.page_errors == []
