"""The Ask tab in a real browser (the shared `python app.py` server and chromium of conftest.py):
ask with every registered method and step through its replay with the slider, the step chips and
the play button; method parameters and the LLM backend reach the run; a citation chip shows its
page with the cited box highlighted; the budget slider re-packs; a run exported as JSON loads
back into the replay of another session, and a bad file gives a message, not a stack trace.
Screenshots go to test-artifacts/.
"""

from __future__ import annotations

import io
import json

import pytest
from PIL import Image

from backend.retrieval.base import method_names
from backend.types import AskResult
from tests.ui.helpers import (
    BROWSER_MARKS, _open_session, _open_tab, _select, _shot, call_and_wait, choose_method, run_done, sync_api,
)

pytestmark = BROWSER_MARKS

QUESTION = "How many trees did the programme plant?"
TWO_CITATIONS = "How many heat-related ambulance call-outs were there in summer 2022?"
# The step views each method must show somewhere in its replay (data-kind of the step view).
EXPECTED_VIEWS = {
    "bm25": {"rank"}, "dense": {"rank"}, "hybrid": {"rank"},
    "hikey": {"route_docs", "rank_sections"},
    "lilac": {"decompose", "rank", "beam"},
    "fif": {"decompose", "agent"},
    "mirag": {"iteration"},
    "mmgraph": {"entities"},
    "strata": {"route_docs", "fuse"},
}
HIGHLIGHT_RGB = (255, 45, 85)  # ui/ask.py SELECTED_COLOR, the outline of the chosen citation's box


@pytest.fixture(scope="module")
def ask_page(browser, app_url):
    context, page = _open_session(browser, app_url)
    _open_tab(page, "Ask")
    yield page
    context.close()


def _open_panel(page, elem_id: str, inside: str) -> None:
    """Open an accordion unless what is inside it is already visible."""
    if not page.locator(inside).first.is_visible():
        page.locator(f"#{elem_id}").click()
    sync_api.expect(page.locator(inside).first).to_be_visible()


def _ask(page, method: str, question: str = QUESTION) -> int:
    """Ask with a method; returns the number of steps of its replay. Waits on the app's signal
    that this call finished (a new run id on the facts box), not on a fixed window."""
    choose_method(page, method)
    page.locator("#ask-question textarea").fill(question)
    call_and_wait(page, page.locator("#ask-button").click, run_done(page, method), f"Ask with {method}")
    # The facts, the answer and the replay header come from the same event: once the facts carry
    # this run's id, the header's step count is this run's, not a previous run's.
    sync_api.expect(page.locator("#ask-answer .st-answer")).to_be_visible()
    label = page.locator("#ask-trace-panel").get_by_text(f"Traversal replay: {method},")
    sync_api.expect(label).to_be_visible()
    return int(label.inner_text().split(",")[1].split("step")[0])


def _step_view(page):
    return page.locator("#ask-trace .st-step")


@pytest.mark.parametrize("method", method_names())
def test_ask_and_step_through_the_replay(ask_page, method):
    page = ask_page
    n = _ask(page, method)
    assert n >= 1
    sync_api.expect(page.locator("#ask-facts")).to_contain_text(f"Method {method}")
    _open_panel(page, "ask-trace-panel", "#ask-trace .st-step")
    sync_api.expect(page.locator("#ask-replay-head")).to_contain_text(f"Method {method}")
    sync_api.expect(page.locator("#ask-replay-head")).to_contain_text("LLM rules")
    view = _step_view(page)
    sync_api.expect(view).to_have_attribute("data-step", "1")
    sync_api.expect(page.locator("#ask-trace .st-stepchip")).to_have_count(n)
    kinds = {view.get_attribute("data-kind")}
    node_refs = page.locator("#ask-trace .st-node .st-node-where").count()
    slider = page.locator("#ask-replay-step input[type=range]")
    for step in range(2, n + 1):  # the slider, moved with the keyboard as a person might
        slider.focus()
        page.keyboard.press("ArrowRight")
        sync_api.expect(view).to_have_attribute("data-step", str(step))
        sync_api.expect(view).to_contain_text(f"Step {step} of {n}")
        kinds.add(view.get_attribute("data-kind"))
        node_refs += page.locator("#ask-trace .st-node .st-node-where").count()
    assert EXPECTED_VIEWS.get(method, set()) <= kinds, f"{method} replay showed {kinds}"
    # Node ids are shown with their document and page, not as bare ids.
    assert node_refs > 0
    if n > 1:  # a step chip jumps back to the first step
        page.locator('#ask-trace button.st-stepchip[data-step="1"]').click()
        sync_api.expect(view).to_have_attribute("data-step", "1")
    page.locator("#ask-trace-panel").scroll_into_view_if_needed()
    _shot(page, f"ask_replay_{method}")
    assert page.page_errors == []


def test_play_button_runs_the_replay_to_the_end(ask_page):
    page = ask_page
    method = "fif" if "fif" in method_names() else "lilac"
    n = _ask(page, method)
    assert n >= 3
    _open_panel(page, "ask-trace-panel", "#ask-trace .st-step")
    view, play = _step_view(page), page.locator("#ask-replay-play")
    sync_api.expect(view).to_have_attribute("data-step", "1")
    play.click()
    sync_api.expect(play).to_have_text("⏸ Pause")
    sync_api.expect(view).to_have_attribute("data-step", "2", timeout=10_000)
    sync_api.expect(view).to_have_attribute("data-step", str(n), timeout=5_000 * n)
    sync_api.expect(play).to_have_text("▶ Play")  # it stops by itself on the last step
    _shot(page, "ask_replay_played")
    play.click()  # playing again from the last step starts over
    sync_api.expect(view).to_have_attribute("data-step", "2", timeout=10_000)
    play.click()  # pause
    sync_api.expect(play).to_have_text("▶ Play")
    page.wait_for_timeout(1_500)  # a tick already on its way may still land
    paused_at = view.get_attribute("data-step")
    page.wait_for_timeout(3_000)
    assert view.get_attribute("data-step") == paused_at


def test_method_parameters_and_llm_backend_reach_the_run(ask_page):
    page = ask_page
    choose_method(page, "lilac")
    _open_panel(page, "ask-params-panel", "#ask-param-0")
    sync_api.expect(page.locator("#ask-params-panel")).to_contain_text("Method parameters: lilac")
    iterations = page.locator("#ask-param-1")
    sync_api.expect(iterations).to_contain_text("iterations")
    iterations.locator("input[type=number]").fill("2")
    iterations.locator("input[type=number]").press("Enter")
    _shot(page, "ask_params")
    n = _ask(page, "lilac")
    sync_api.expect(page.locator("#ask-facts")).to_contain_text("iterations=2")
    _open_panel(page, "ask-trace-panel", "#ask-trace .st-step")
    sync_api.expect(page.locator("#ask-trace .st-stepchip").filter(has_text="beam 2")).to_have_count(1)
    assert n >= 4
    # Another method shows its own parameters, with their defaults.
    choose_method(page, "hikey")
    sync_api.expect(page.locator("#ask-params-panel")).to_contain_text("Method parameters: hikey")
    sync_api.expect(page.locator("#ask-param-0")).to_contain_text("docs")
    # The LLM backend menu: asking with openai (no server in the tests: the rules answer for it).
    _select(page, "ask-llm", "openai (OpenAI-compatible server)")
    _ask(page, "bm25")
    sync_api.expect(page.locator("#ask-facts")).to_contain_text("LLM openai:")
    _select(page, "ask-llm", "rules (offline heuristics)")


def _image_bytes(page) -> tuple[str, bytes]:
    img = page.locator("#ask-citation-image img")
    sync_api.expect(img).to_be_visible()
    src = img.get_attribute("src")
    return src, page.request.get(src).body()


def _highlight_pixels(png: bytes) -> int:
    image = Image.open(io.BytesIO(png)).convert("RGB")
    return sum(1 for px in image.getdata() if px == HIGHLIGHT_RGB)


def test_citation_chip_opens_the_page_with_the_box(ask_page):
    page = ask_page
    _ask(page, "hikey", TWO_CITATIONS)
    chips = page.locator("#ask-answer .st-cite-chip")
    sync_api.expect(chips).to_have_count(2)
    sync_api.expect(page.locator("#ask-citations .st-citation-selected")).to_have_attribute("data-n", "1")
    first_src, first_png = _image_bytes(page)
    chips.nth(1).click()
    sync_api.expect(page.locator("#ask-citations .st-citation-selected")).to_have_attribute("data-n", "2")
    sync_api.expect(page.locator("#ask-citation-image img")).not_to_have_attribute("src", first_src)
    _, second_png = _image_bytes(page)
    assert second_png != first_png  # citation 2 is on another page
    assert _highlight_pixels(second_png) > 100  # the cited box is outlined in the highlight colour
    _shot(page, "ask_citation_chip")
    page.locator('#ask-citations .st-citation[data-n="1"]').click()  # the citation card works too
    sync_api.expect(page.locator("#ask-citations .st-citation-selected")).to_have_attribute("data-n", "1")


def test_budget_slider_repacks_the_evidence(ask_page):
    page = ask_page
    _ask(page, "hybrid")
    _open_panel(page, "ask-pack-panel", "#ask-pack .st-budget")
    bar = page.locator("#ask-pack .st-budget")
    sync_api.expect(bar).to_have_attribute("data-budget", "2048")
    before = int(bar.get_attribute("data-tokens"))
    units_before = page.locator("#ask-pack .st-ptree-anchor").count()
    sync_api.expect(page.locator("#ask-pack .st-ptree-section").first).to_be_visible()
    _shot(page, "ask_pack_before")
    track = page.locator("#ask-repack-budget input[type=range]")
    track.scroll_into_view_if_needed()
    box = track.bounding_box()
    low_end = (box["x"] + box["width"] * 0.03, box["y"] + box["height"] / 2)
    call_and_wait(page, lambda: page.mouse.click(*low_end), run_done(page), "Repack")
    sync_api.expect(bar).not_to_have_attribute("data-budget", "2048")
    budget, after = int(bar.get_attribute("data-budget")), int(bar.get_attribute("data-tokens"))
    assert budget < 1024 and after <= budget and after < before
    assert page.locator("#ask-pack .st-ptree-anchor").count() <= units_before
    sync_api.expect(bar).to_contain_text(f"{after} of {budget} tokens used")
    _shot(page, "ask_pack_repacked")


def test_export_and_reimport_a_run(ask_page, browser, app_url, tmp_path):
    page = ask_page
    n = _ask(page, "lilac")
    _open_panel(page, "ask-run-panel", "#ask-export")
    with page.expect_download() as download:
        page.locator("#ask-export").click()
    path = tmp_path / "run.json"
    download.value.save_as(path)
    run = AskResult.model_validate_json(path.read_text(encoding="utf-8"))
    assert (run.method, run.question, len(run.trace.steps)) == ("lilac", QUESTION, n)

    context, other = _open_session(browser, app_url)  # a fresh session that never asked
    try:
        _open_tab(other, "Ask")
        _open_panel(other, "ask-run-panel", "#ask-import")
        call_and_wait(
            other, lambda: other.locator("#ask-import input[type=file]").set_input_files(str(path)), run_done(other, "lilac"),
            "Import a run",
        )
        sync_api.expect(other.locator("#ask-trace-panel").get_by_text(f"Traversal replay: lilac, {n} step(s)")).to_be_visible()
        sync_api.expect(other.locator("#ask-answer .st-answer")).to_contain_text("4,820")
        sync_api.expect(other.locator("#ask-citation-image img")).to_be_visible()
        _open_panel(other, "ask-trace-panel", "#ask-trace .st-step")
        sync_api.expect(other.locator("#ask-replay-head")).to_contain_text(QUESTION)
        other.locator(f'#ask-trace button.st-stepchip[data-step="{n}"]').click()
        sync_api.expect(_step_view(other)).to_have_attribute("data-kind", run.trace.steps[-1].kind)
        _shot(other, "ask_run_imported")

        bad = tmp_path / "not_a_run.json"
        bad.write_text(json.dumps({"question": "q", "answer": 42}), encoding="utf-8")
        other.locator("#ask-import input[type=file]").set_input_files(str(bad))
        sync_api.expect(other.get_by_text("'not_a_run.json' is not a Strata run").first).to_be_visible()
        assert other.get_by_text("Traceback").count() == 0
        _shot(other, "ask_run_bad_file")
        assert other.page_errors == []
    finally:
        context.close()


CANOPY = "Which district had the largest canopy gain?"


def test_a_second_method_says_what_it_found_that_the_first_did_not(ask_page):
    """The contribution line (ui/ask.py render_contribution): absent on a question's first ask, then
    naming the earlier method, the units only this one found and their pages, or 'same answer as'."""
    page = ask_page
    line = page.locator("#ask-contribution .st-ask-contribution")
    _ask(page, "bm25", CANOPY)
    sync_api.expect(line).to_have_count(0)
    _ask(page, "dense", CANOPY)
    sync_api.expect(line).to_contain_text("Compared with bm25, asked earlier in this session.")
    text, only = line.inner_text(), int(line.get_attribute("data-only-count"))
    if line.get_attribute("data-same-as"):
        assert text.startswith("Same answer as bm25; " + ("different evidence: " if only else "same evidence: ")), text
    else:
        assert text.startswith("Found only by dense: " + (f"{only} unit(s) on " if only else "nothing")), text
    if only:
        assert ".pdf p." in text
    line.scroll_into_view_if_needed()
    _shot(page, "ask_contribution")
    assert page.page_errors == []


def test_an_overlong_question_is_refused_with_a_message_and_the_page_keeps_its_height(ask_page):
    """A 20,000-character question used to be answered, and its replay header made the page
    7,900 px tall; now the service refuses it before any work, and the UI shows that message."""
    page = ask_page
    choose_method(page, "bm25")
    errors = page.locator(".toast-body.error")
    seen = errors.count()
    page.locator("#ask-question textarea").fill("How many trees? " * 1250)  # 20,000 characters
    page.locator("#ask-button").click()
    sync_api.expect(errors.nth(seen)).to_contain_text("characters long")
    sync_api.expect(errors.nth(seen)).to_contain_text("at most 2,000")
    height = page.evaluate("document.documentElement.scrollHeight")
    _shot(page, "ask_overlong_question")
    assert height < 4000, f"the page grew to {height} px"
    page.locator("#ask-question textarea").fill(QUESTION)
