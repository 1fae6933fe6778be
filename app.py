"""Start Strata's web app: settings -> Service -> sessions -> ui.build -> launch.

Serves on 127.0.0.1:7860 unless Gradio's own GRADIO_SERVER_NAME / GRADIO_SERVER_PORT say
otherwise (as on Hugging Face Spaces). The page is served first: the sample workspace is reused
when it was prepared by an earlier start with the same files, parser and encoders, and otherwise
built behind the running app while the page says how far it got. Session workspaces are removed
at shutdown.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import signal
import sys
import threading
import time

# Hugging Face ZeroGPU: `spaces` patches torch and must be imported before anything touches CUDA
# (the sample workspace below loads the encoder); ui/spaces_gpu.py then wraps the GPU callbacks.
if importlib.util.find_spec("spaces") is not None:
    importlib.import_module("spaces")

from backend.config import Settings  # noqa: E402
from backend.errors import StrataError  # noqa: E402

log = logging.getLogger("strata.app")


def prepare_in_background(service, build_sample: bool) -> None:
    """Build the sample workspace if it must be, then load the encoders and the sample corpus so
    the first question does not pay for them. Runs after the page is served."""
    started = time.perf_counter()
    try:
        if build_sample:
            sample = service.ensure_sample_workspace()
        else:
            sample = service.sample_workspace_path() if service.settings.load_sample else None
        if sample is not None:
            service.corpus(sample)
        service.encoder.encode(["warm-up"])
        log.info("ready: encoders and sample corpus loaded in %.1f s", time.perf_counter() - started)
    except (OSError, StrataError) as exc:
        log.error("the sample corpus could not be prepared: %s", exc)


def main() -> None:
    started = time.perf_counter()
    settings = Settings()
    logging.basicConfig(
        level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s", force=True
    )
    log.info("starting Strata (workspaces under %s); loading the libraries", settings.workspace_root.resolve())
    # Imported here, after the first log line: gradio, PyMuPDF and torch take seconds to import on a busy CPU.
    import ui
    from backend.service import SAMPLE_DIR, Service

    service = Service(settings)
    sample = None
    build_sample = False
    if settings.load_sample:
        sample = service.sample_workspace_path()
        build_sample = not service.sample_prepared()
        if build_sample:
            # Marked before the page is built, so the first page already says so.
            service.sample.start(len(list(SAMPLE_DIR.glob("*.pdf"))))
            log.info("the sample workspace must be prepared (first start, or its files, parser or encoders changed); "
                     "it is built behind the running app")
        else:
            log.info("reusing the prepared sample workspace %s", sample)
    sessions = ui.session_manager(service, sample)
    sessions.start()
    # A stop by SIGTERM (a service manager, a test's terminate()) unwinds like Ctrl-C, so the finally runs.
    signal.signal(signal.SIGTERM, lambda _sig, _frame: sys.exit(0))
    demo = ui.build(service, sample_workspace=sample, sessions=sessions)
    try:
        demo.launch(prevent_thread_lock=True, **ui.launch_options(service))
        log.info("serving %s (%.1f s after start)", demo.local_url, time.perf_counter() - started)
        threading.Thread(target=prepare_in_background, args=(service, build_sample), name="strata-prepare", daemon=True).start()
        demo.block_thread()
    finally:
        sessions.close()


if __name__ == "__main__":
    main()
