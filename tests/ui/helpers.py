"""Shared pieces of the browser tests: paths, chromium flags, timeouts, screenshots, sessions,
starting `python app.py`, uploading and ingesting in the Library tab, asking in the Ask tab. The
app server and the browser are session fixtures in conftest.py, started once for every browser
test module; bench/manual_browser.py starts its own app with `running_app` and drives it with the
same helpers."""


from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
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


class AppStartError(RuntimeError):
    """app.py exited, or did not serve and get ready within its time; the message holds its log's tail."""


def app_env(root: Path, port: int, **extra: str) -> dict[str, str]:
    """The environment of an app.py on `port` whose workspaces and Gradio uploads live under `root`."""
    return dict(
        os.environ,
        GRADIO_SERVER_PORT=str(port),
        GRADIO_SERVER_NAME="127.0.0.1",
        GRADIO_ANALYTICS_ENABLED="False",
        STRATA_WORKSPACE_ROOT=str(root / "workspaces"),
        GRADIO_TEMP_DIR=str(root / "gradio_tmp"),
        PYTHONUNBUFFERED="1",
        **extra,
    )


def _wait_ready(proc: subprocess.Popen, url: str, log_path: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            raise AppStartError(f"app.py exited with code {proc.returncode} before serving:\n{_log_tail(log_path)}")
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    break
        except (urllib.error.URLError, OSError):
            pass  # not listening yet
        if time.monotonic() > deadline:
            raise AppStartError(f"app.py did not answer on {url} within {timeout_s:g} s:\n{_log_tail(log_path)}")
        time.sleep(0.5)
    # The app serves before its sample corpus is ready (built behind it on a first start).
    while "ready: encoders and sample corpus loaded" not in log_path.read_text(encoding="utf-8", errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AppStartError(f"app.py served but its sample corpus was not ready within {timeout_s:g} s:\n{_log_tail(log_path)}")
        time.sleep(0.5)


@contextlib.contextmanager
def running_app(root: Path, timeout_s: float = SERVER_START_TIMEOUT_S, **extra_env: str) -> Iterator[tuple[str, Path]]:
    """`python app.py` on a free port with its workspaces under `root` (extra settings as
    STRATA_* environment variables), yielded once it serves and its sample corpus is loaded as
    (url, log path); stopped on exit. Raises AppStartError when it does not get ready."""
    root.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    log_path = root / "app.log"
    url = f"http://127.0.0.1:{port}/"
    with log_path.open("wb") as log:
        proc = subprocess.Popen([sys.executable, "app.py"], cwd=REPO, env=app_env(root, port, **extra_env),
                                stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait_ready(proc, url, log_path, timeout_s)
            yield url, log_path
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


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


def ingest_files(page, files: list[Path], timeout_ms: int = INGEST_TIMEOUT_MS) -> None:
    """Upload `files` in the Library tab, press Ingest, and wait until the progress board says the
    run ended and the report has a card per file."""
    page.locator("#upload-files input[type=file]").set_input_files([str(f) for f in files])
    for f in files:
        sync_api.expect(page.locator(f'#upload-files a[href$="/{f.name}"]')).to_have_count(1)
    page.locator("#ingest-button").click()
    sync_api.expect(page.locator('#ingest-progress [data-running="false"]')).to_be_visible(timeout=timeout_ms)
    sync_api.expect(page.locator("#ingest-report .st-card")).to_have_count(len(files))


def choose_method(page, method: str) -> None:
    """Pick a method and wait for the app's sign that its parameter sliders were swapped in (the
    panel's title names it): asking before that sends the previous method's slider values, which
    the new bounds refuse ("Value 20 is greater than maximum value 1"), a race seen under load."""
    _select(page, "ask-method", method)
    sync_api.expect(page.locator("#ask-params-panel")).to_contain_text(f"Method parameters: {method}")


def run_done(page, method: str | None = None):
    """The facts box of a run newer than the one shown now (ui/render.py sets data-run per call)."""
    facts = page.locator("#ask-facts .st-facts")
    old_run = facts.get_attribute("data-run") if facts.count() else ""
    method_attr = f'[data-method="{method}"]' if method else ""
    return page.locator(f'#ask-facts .st-facts{method_attr}:not([data-run="{old_run}"])')
