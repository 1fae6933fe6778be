"""The small print a new user meets, in a real browser against the shared app server
(tests/ui/conftest.py): no error in the browser console on load or through any tab, and no
traceback in the server log for a user's mistake; the Ask tab's controls fit a window 800 px
wide; the Parse tab's page is as wide as its column and zooms; the Evaluate tab starts on the
smallest collection and its table has the answers' EM and F1.
"""

from __future__ import annotations

import pytest

from tests.ui.helpers import BROWSER_MARKS, SHARED, UI_TIMEOUT_MS, _open_tab, _shot, sync_api

pytestmark = BROWSER_MARKS
expect = sync_api.expect if sync_api is not None else None

TABS = ["Library", "Parse", "Graph", "Ask", "Compare", "Evaluate", "Settings"]
# Elements of the Ask tab's controls (question, method, backend, sliders, stages, documents)
# whose right edge lies past the window, or that scroll sideways.
OVERFLOW_JS = """
(ids) => {
  const width = document.documentElement.clientWidth;
  const out = [];
  for (const id of ids) {
    const el = document.getElementById(id);
    if (!el) { out.push(id + ': missing'); continue; }
    const box = el.getBoundingClientRect();
    if (box.right > width + 0.5 || box.left < -0.5) { out.push(id + ': ' + Math.round(box.left) + '..' + Math.round(box.right)); }
    if (el.scrollWidth > el.clientWidth + 1) { out.push(id + ': scrolls ' + el.scrollWidth + ' > ' + el.clientWidth); }
  }
  if (document.documentElement.scrollWidth > width + 1) { out.push('page: ' + document.documentElement.scrollWidth + ' > ' + width); }
  return out;
}
"""
CATCH_WINDOW_ERRORS_JS = """
window.__strataErrors = [];
window.addEventListener('error', (e) => window.__strataErrors.push('error: ' + String(e.message)), true);
window.addEventListener('unhandledrejection', (e) => window.__strataErrors.push(
  'unhandled rejection: ' + String(e.reason && (e.reason.message || e.reason))));
"""


def _problems(page) -> list[str]:
    """What the console and the page reported, and what every frame's window caught."""
    caught = []
    for frame in page.frames:
        try:
            caught += frame.evaluate("() => window.__strataErrors || []")
        except Exception as exc:  # noqa: BLE001 (a frame gone while reading it has nothing to report)
            caught.append(f"unreadable frame: {exc}")
    return page.problems + caught


ASK_CONTROLS = ["ask-question", "ask-button", "ask-method", "ask-llm", "ask-top-k", "ask-budget", "ask-stages", "ask-docs"]


def _console_session(browser, url: str, width: int = 1280, height: int = 900):
    """A new session whose console errors, page errors and warnings about a page loop are recorded."""
    context = browser.new_context(viewport={"width": width, "height": height})
    context.set_default_timeout(UI_TIMEOUT_MS)
    page = context.new_page()
    page.problems = []

    def on_console(msg) -> None:
        if msg.type == "error" or "ResizeObserver" in msg.text or "not implemented" in msg.text.lower():
            page.problems.append(f"console {msg.type}: {msg.text[:300]}")

    # Errors the page reports on `window` without an Error object (a ResizeObserver loop) and
    # promises rejected unhandled ("Method not implemented"), in every frame.
    page.add_init_script(CATCH_WINDOW_ERRORS_JS)
    page.on("console", on_console)
    page.on("pageerror", lambda err: page.problems.append(f"page error: {str(err)[:300]}"))
    page.goto(url)
    expect(page.locator("#documents-table")).to_contain_text("policy_brief.pdf", timeout=UI_TIMEOUT_MS)
    return context, page


@pytest.fixture(scope="module")
def page(browser, app_url):
    """One session for the module's tests (each page load costs seconds); its problems are checked by each test."""
    context, page = _console_session(browser, app_url)
    yield page
    context.close()


def test_no_console_errors_on_load_and_through_every_tab(page):
    for name in TABS:
        _open_tab(page, name)
        if name == "Graph":
            frame = page.locator("#graph-view iframe").element_handle().content_frame()
            frame.wait_for_selector("body[data-stable=true]", state="attached", timeout=UI_TIMEOUT_MS)
        if name == "Parse":
            expect(page.locator("#parse-page-image img")).to_be_visible()
        page.wait_for_timeout(600)  # late errors of the tab's first draw (resize loops fire after layout)
    _shot(page, "small_print_01_tabs")
    assert _problems(page) == []


def test_the_ask_tab_fits_a_window_800_px_wide(page):
    page.set_viewport_size({"width": 800, "height": 900})
    try:
        _open_tab(page, "Ask")
        expect(page.locator("#ask-question textarea")).to_be_visible()
        page.wait_for_timeout(300)  # the new width's layout
        assert page.evaluate(OVERFLOW_JS, ASK_CONTROLS) == []
        _shot(page, "small_print_02_ask_800")
    finally:
        page.set_viewport_size({"width": 1280, "height": 900})


def test_the_parse_page_fills_its_column_and_zooms(page):
    _open_tab(page, "Parse")
    img = page.locator("#parse-page-image img")
    expect(img).to_be_visible()
    page.wait_for_function("() => { const i = document.querySelector('#parse-page-image img'); return i && i.complete && i.naturalWidth > 0; }")
    column = page.locator("#parse-page-image").evaluate("(el) => el.getBoundingClientRect().width")
    fitted = img.evaluate("(i) => ({shown: i.getBoundingClientRect().width, natural: i.naturalWidth})")
    assert fitted["shown"] >= 0.95 * column - 4, (fitted, column)  # as wide as its column
    assert fitted["natural"] >= 0.9 * fitted["shown"]  # not blown up from a small render
    slider = page.locator("#parse-zoom input[type=number]")
    slider.fill("200")
    slider.press("Enter")
    page.wait_for_function(
        "(w) => document.querySelector('#parse-page-image img').getBoundingClientRect().width > 1.8 * w", arg=fitted["shown"]
    )
    scroller = page.locator("#parse-page-image .st-page-scroll")
    assert scroller.evaluate("(el) => el.scrollWidth > el.clientWidth")  # zoomed past the column, it scrolls
    _shot(page, "small_print_03_parse_zoom")
    assert _problems(page) == []


@pytest.mark.skipif(not (SHARED / "bench").is_dir(), reason="../shared/bench is not here")
def test_evaluate_starts_on_the_smallest_collection(page):
    from backend.eval.folders import list_benchmarks
    from ui.evaluate import smallest_bench

    smallest = smallest_bench(list_benchmarks(SHARED / "bench"))
    _open_tab(page, "Evaluate")
    expect(page.locator("#eval-bench input")).to_have_value(f"{smallest.name} ({sum(1 for _ in (smallest / 'corpus').glob('*.pdf'))} PDFs)")
    # The ingest note is about the picked collection (its EM and F1 columns: test_compare_eval_browser.py).
    expect(page.locator("#eval-ingest-note")).to_contain_text(smallest.name)
    assert _problems(page) == []


def test_a_users_mistake_leaves_no_traceback_in_the_server_log(page, app_log):
    """Last in the module: the error toast it makes is expected."""
    _open_tab(page, "Library")
    # Ingest with no file chosen: the toast says what to do; the server log has no traceback.
    log_before = app_log.read_text(encoding="utf-8", errors="replace")
    page.locator("#ingest-button").click()
    expect(page.locator(".toast-body.error").first).to_contain_text("Choose one or more PDF files first")
    page.wait_for_timeout(500)
    new_log = app_log.read_text(encoding="utf-8", errors="replace")[len(log_before):]
    assert "Traceback" not in new_log, new_log[-2000:]
