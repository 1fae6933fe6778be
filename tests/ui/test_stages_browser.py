"""Strata's stages in a real browser (the shared `python app.py` server and chromium of
conftest.py). Ask: without stages the replay holds only the method's own steps; with the default
stages a stage that moved a unit is a step of its own after them, saying what it moved; with only
a ticked stage, only that one runs. Compare: one method with and without stages side by side,
named "X" and "X + stages". The stage controls fit an 800 px wide window. Screenshots go to
test-artifacts/.
"""

from __future__ import annotations

import pytest

from tests.ui.helpers import BROWSER_MARKS, UI_TIMEOUT_MS, _open_session, _open_tab, _select, _shot, call_and_wait, sync_api

pytestmark = BROWSER_MARKS

# A question over the sample corpus for which one of the default stages moves a unit of METHOD's
# ranking (found by asking through the service with stages "default" and reading the StageSteps).
METHOD = "hikey"
QUESTION = "How many trees did the programme plant?"
MOVING_STAGE = "spread"


@pytest.fixture(scope="module")
def ask_page(browser, app_url):
    context, page = _open_session(browser, app_url)
    _open_tab(page, "Ask")
    yield page
    context.close()


def _stages(page, elem_id: str, choice: str) -> None:
    page.locator(f"#{elem_id}").get_by_label(choice, exact=True).check()


def _ask(page, mode: str):
    """Ask METHOD with the stages menu at `mode`; returns the facts box of this run."""
    _select(page, "ask-method", METHOD)
    sync_api.expect(page.locator("#ask-params-panel")).to_contain_text(f"Method parameters: {METHOD}")
    _stages(page, "ask-stages", mode)
    page.locator("#ask-question textarea").fill(QUESTION)
    facts = page.locator("#ask-facts .st-facts")
    old = facts.get_attribute("data-run") if facts.count() else ""
    done = page.locator(f'#ask-facts .st-facts[data-method="{METHOD}"]:not([data-run="{old}"])')
    call_and_wait(page, page.locator("#ask-button").click, done, f"Ask with {METHOD} ({mode})")
    if not page.locator("#ask-trace .st-step").first.is_visible():
        page.locator("#ask-trace-panel").click()
    sync_api.expect(page.locator("#ask-trace .st-step")).to_be_visible()
    return done


def test_without_stages_the_replay_has_no_stage_step_and_with_them_it_does(ask_page):
    page = ask_page
    chips = page.locator("#ask-trace button.st-stepchip")
    stage_chips = page.locator('#ask-trace button.st-stepchip[data-kind="stage"]')

    facts = _ask(page, "Without (method as published)")
    sync_api.expect(facts).to_have_attribute("data-stages", "")
    sync_api.expect(facts).to_have_attribute("data-label", METHOD)
    sync_api.expect(page.locator("#ask-replay-head")).to_contain_text("none: the method as published")
    sync_api.expect(chips.first).to_be_visible()
    assert stage_chips.count() == 0
    plain_steps = chips.count()
    _shot(page, "stages_ask_without")

    facts = _ask(page, "With Strata's stages")
    sync_api.expect(facts).to_have_attribute("data-label", f"{METHOD} + stages")
    assert MOVING_STAGE in facts.get_attribute("data-stages").split(",")
    sync_api.expect(page.locator("#ask-trace-panel")).to_contain_text("from Strata's stages")
    assert stage_chips.count() >= 1
    # The method's own steps come first, the stages after them.
    kinds = [chips.nth(i).get_attribute("data-kind") for i in range(chips.count())]
    assert "stage" not in kinds[:plain_steps - 1] and kinds[-1] == "stage" and len(kinds) > plain_steps, kinds
    moving = page.locator('#ask-trace button.st-stepchip[data-kind="stage"]', has_text=MOVING_STAGE.replace("_", " "))
    moving.first.click()
    view = page.locator("#ask-trace .st-step")
    sync_api.expect(view).to_have_attribute("data-kind", "stage")
    sync_api.expect(view).to_contain_text(f"Strata stage {MOVING_STAGE}")
    sync_api.expect(view.locator(f'.st-stage-desc[data-stage="{MOVING_STAGE}"]')).to_be_visible()
    sync_api.expect(view).to_contain_text("What it moved")
    moves = view.locator("tr[data-move]")
    assert moves.count() >= 1
    sync_api.expect(moves.first.locator(".st-node-where")).to_contain_text(".pdf p.")  # a unit by its page, not a bare id
    # Measured against the results the run returns: the stage brought units into them.
    sync_api.expect(view.locator('[data-into]')).to_contain_text("The run returns the top 10")
    assert int(view.locator("[data-into]").get_attribute("data-into")) >= 1
    sync_api.expect(view.locator('tr[data-cut="in"]').first).to_contain_text("now in the top 10")
    view.scroll_into_view_if_needed()
    _shot(page, "stages_ask_with")
    assert page.page_errors == []


def test_only_the_ticked_stage_runs(ask_page):
    page = ask_page
    _stages(page, "ask-stages", "Only the ticked stages")
    boxes = page.locator("#ask-stage-names")
    sync_api.expect(boxes).to_be_visible()
    for i in range(boxes.locator("input[type=checkbox]").count()):
        box = boxes.locator("input[type=checkbox]").nth(i)
        if box.is_checked():
            box.uncheck()
    boxes.get_by_label(MOVING_STAGE, exact=False).first.check()
    facts = _ask(page, "Only the ticked stages")
    sync_api.expect(facts).to_have_attribute("data-stages", MOVING_STAGE)
    sync_api.expect(facts).to_have_attribute("data-label", f"{METHOD} + stages({MOVING_STAGE})")
    stage_chips = page.locator('#ask-trace button.st-stepchip[data-kind="stage"]')
    assert stage_chips.count() == 1
    sync_api.expect(stage_chips.first).to_contain_text(MOVING_STAGE.replace("_", " "))
    # No stage ticked: a message, not a run.
    boxes.get_by_label(MOVING_STAGE, exact=False).first.uncheck()
    page.locator("#ask-button").click()
    sync_api.expect(page.get_by_text("No stage is ticked").first).to_be_visible()
    _stages(page, "ask-stages", "With Strata's stages")
    sync_api.expect(boxes).to_be_hidden()


def test_compare_shows_a_method_with_and_without_stages_side_by_side(browser, app_url):
    context, page = _open_session(browser, app_url)
    try:
        _open_tab(page, "Compare")
        page.locator("#compare-question textarea").fill(QUESTION)
        methods = page.locator("#compare-methods")
        for i in range(methods.locator("input[type=checkbox]").count()):
            box = methods.locator("input[type=checkbox]").nth(i)
            if box.is_checked():
                box.uncheck()
        methods.get_by_label(METHOD, exact=True).check()
        _stages(page, "compare-stages", "Both, side by side (X and X + stages)")
        columns = page.locator("#compare-columns .st-cmp-col")
        call_and_wait(page, page.locator("#compare-button").click, columns.first, "Compare with and without stages")
        sync_api.expect(columns).to_have_count(2)
        assert [columns.nth(i).get_attribute("data-label") for i in range(2)] == [METHOD, f"{METHOD} + stages"]
        assert [columns.nth(i).locator("h3").inner_text() for i in range(2)] == [METHOD, f"{METHOD} + stages"]
        sync_api.expect(columns.nth(0).locator(".st-cmp-stages")).to_contain_text("Without stages")
        staged_line = columns.nth(1).locator(".st-cmp-stages")
        sync_api.expect(staged_line).to_contain_text(f"{MOVING_STAGE} (")
        # Side by side: the two columns share a row.
        a, b = columns.nth(0).bounding_box(), columns.nth(1).bounding_box()
        assert abs(a["y"] - b["y"]) < 2 and b["x"] > a["x"] + a["width"] - 2
        rows = page.locator("#compare-summary tbody tr")
        assert [rows.nth(i).get_attribute("data-label") for i in range(2)] == [METHOD, f"{METHOD} + stages"]
        sync_api.expect(page.locator(f'#compare-overlap td[data-a="{METHOD}"][data-b="{METHOD} + stages"]')).to_have_count(1)
        sync_api.expect(page.locator("#compare-settings-note")).to_contain_text("stages: Both, side by side")
        _shot(page, "stages_compare_both")
        # Three methods doubled would be six columns: refused with a message.
        for name in ("bm25", "dense", "hikey"):
            methods.get_by_label(name, exact=True).check()
        page.locator("#compare-button").click()
        sync_api.expect(page.get_by_text("Tick 1 to 2 methods to compare each with and without stages").first).to_be_visible()
        assert page.page_errors == []
    finally:
        context.close()


@pytest.mark.parametrize("tab, elem_id", [("Ask", "ask-stages"), ("Compare", "compare-stages")])
def test_the_stage_controls_fit_800_px(browser, app_url, tab, elem_id):
    context = browser.new_context(viewport={"width": 800, "height": 900})
    context.set_default_timeout(UI_TIMEOUT_MS)
    page = context.new_page()
    try:
        page.goto(app_url)
        sync_api.expect(page.locator("#documents-table")).to_contain_text("policy_brief.pdf")
        _open_tab(page, tab)
        control = page.locator(f"#{elem_id}")
        sync_api.expect(control).to_be_visible()
        if tab == "Ask":
            _stages(page, elem_id, "Only the ticked stages")
            sync_api.expect(page.locator("#ask-stage-names")).to_be_visible()
        for box in (control.bounding_box(), *([page.locator("#ask-stage-names").bounding_box()] if tab == "Ask" else [])):
            assert box["x"] >= 0 and box["x"] + box["width"] <= 800, box
        assert page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth") <= 2
        _shot(page, f"stages_800_{tab.lower()}")
    finally:
        context.close()
