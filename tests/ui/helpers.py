"""Shared pieces of the browser tests: paths, chromium flags, timeouts, screenshots, sessions.
The app server and the browser are session fixtures in conftest.py, started once for every
browser test module."""


from __future__ import annotations

import shutil
import socket
from pathlib import Path

import pytest

try:
    from playwright import sync_api
except ImportError:  # the browser tests skip; the rest of the suite still runs
    sync_api = None

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
ARTIFACTS = REPO / "test-artifacts"
SAMPLE_BRIEF = REPO / "sample_corpus" / "policy_brief.pdf"
BENCH_CORPUS = SHARED / "bench" / "dev-tatqa-pdf" / "corpus"
CHROMIUM = shutil.which("chromium")
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
    "--disable-component-update",
]
SERVER_START_TIMEOUT_S = 240  # encoder load + building the sample workspace from 4 PDFs
INGEST_TIMEOUT_MS = 120_000
UI_TIMEOUT_MS = 30_000
CALL_GUARD_MS = 900_000  # wait_for_call: only a hung server takes this long; the app's signal ends the wait
SCRIPT_PAYLOAD = "<script>window.__xss=1</script>"
IMG_PAYLOAD = '<img src=x onerror="window.__xss=2">'
FILLER = (
    "Field teams measured shade, surface temperature and soil moisture on each street twice a month. "
    "The readings were checked against the city weather station and corrected for drift. "
)

if sync_api is not None:
    sync_api.expect.set_options(timeout=UI_TIMEOUT_MS)
BROWSER_MARKS = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium is not installed (apt-get install chromium)"),
    pytest.mark.skipif(sync_api is None, reason="playwright is not installed (pip install -r requirements-test.txt)"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _log_tail(path: Path, chars: int = 4000) -> str:
    return path.read_text(errors="replace")[-chars:] if path.exists() else ""


def _shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"ui_{name}.png"), full_page=True)




def call_and_wait(page, act, done, what: str) -> None:
    """Do `act()` (a click, a file set) and wait for the app's own signal that the call it starts
    finished: `done` (a locator for what the callback sets when it returns, e.g. a new data-run
    id) shows, or a new error toast does, and then fail with the app's message. The bound is a
    guard against a hung server, not a guess at how long a call takes under load: however slow
    the call, its own signal ends the wait."""
    errors = page.locator(".toast-body.error")
    seen = errors.count()  # toasts of earlier calls may still be on screen
    act()
    sync_api.expect(done.or_(errors.nth(seen)).first).to_be_visible(timeout=CALL_GUARD_MS)
    if not done.count():
        pytest.fail(f"{what}: the app showed an error: {errors.nth(seen).inner_text()!r}")


def _open_session(browser, url: str):
    """A fresh browser context (= a new Strata session) with the library loaded."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(UI_TIMEOUT_MS)
    page = context.new_page()
    page.page_errors = []  # uncaught JS errors of the page
    page.on("pageerror", lambda err: page.page_errors.append(str(err)))
    page.goto(url)
    # The session workspace is a copy of the sample workspace: its documents are listed once loaded.
    sync_api.expect(page.locator("#documents-table")).to_contain_text("policy_brief.pdf", timeout=UI_TIMEOUT_MS)
    return context, page


def _select(page, elem_id: str, option: str) -> None:
    """Pick `option` in the Gradio dropdown whose elem_id is `elem_id`."""
    page.locator(f"#{elem_id} input").click()
    page.get_by_role("option", name=option, exact=True).first.click()


def _open_tab(page, name: str) -> None:
    page.get_by_role("tab", name=name).click()


def result_docs(page) -> set[str]:
    """The Doc column of the Ask tab's ranked results table (its accessible rows: the grid keeps
    hidden copies), the results panel opened first when it is closed."""
    cells = page.locator("#ask-results").get_by_role("gridcell")
    if not cells.first.is_visible():
        page.locator("#ask-results-panel").click()
    sync_api.expect(cells.first).to_be_visible()
    rows = page.locator("#ask-results").get_by_role("row").filter(has=page.get_by_role("gridcell"))
    return {rows.nth(i).get_by_role("gridcell").nth(1).inner_text().strip() for i in range(rows.count())}
