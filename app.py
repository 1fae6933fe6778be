"""Start Strata's web app: settings -> Service -> encoders -> sessions -> ui.build -> launch.

Serves on 127.0.0.1:7860 unless Gradio's own GRADIO_SERVER_NAME / GRADIO_SERVER_PORT say
otherwise (as on Hugging Face Spaces). What every call needs is ready before the page is served:
the libraries and the encoders (an upload's session workspace needs nothing more). The sample
workspace is reused when it was prepared by an earlier start with the same files, parser and
encoders, and otherwise built behind the running app in a niced child process
(backend/sample_build.py) while the page says how far it got; questions over it wait for it,
uploads never do. Session workspaces are removed at shutdown.
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
from backend.errors import without_paths  # noqa: E402
from backend.logs import configure_logging  # noqa: E402
from backend.sample_build import run_sample_build  # noqa: E402

log = logging.getLogger("strata.app")
# How long a thread holding the interpreter lock keeps it while another waits (Python's default: 5 ms).
# The web server's event loop waits up to that long at each of the many lock hand-overs one answer
# takes while questions compute in other threads; at 1 ms those waits are a fifth as long, and clients
# (gradio_client's requests time out after 5 s) keep getting answers under load.
SWITCH_INTERVAL_S = 0.001


def prepare_in_background(service) -> None:
    """Check the sample workspace and build it if it must be (its files, parser or encoders
    changed, or this is the first start), then load the encoders and the sample corpus so the
    first question does not pay for them. Runs after the page is served."""
    started = time.perf_counter()
    try:
        sample = None
        served = service.served_workspace()
        if served is not None:  # a library built beforehand (perhaps on a cluster): its index, loaded now
            service.corpus(served)
        elif service.settings.load_sample:
            sample = service.ensure_sample_workspace(run_sample_build)  # marks service.sample ready (or failed) itself
            service.corpus(sample)
        log.info("ready: encoders and sample corpus loaded in %.1f s", time.perf_counter() - started)
    except Exception as exc:  # noqa: BLE001 (a background thread must report every failure, then the page says so)
        if not service.sample.ready:
            service.sample.finish(error=without_paths(str(exc)))
        log.error("the sample corpus could not be prepared: %s", without_paths(str(exc)))


def load_before_serving(service) -> None:
    """The encoders (torch, the ONNX export on a first start) and the index libraries, loaded
    before the page is served: imported later, behind the served page, they hold the interpreter
    lock for seconds and the web server's event loop cannot answer the clients meanwhile."""
    started = time.perf_counter()
    service.encoder.encode(["warm-up"])
    service.encoders.sub.encode(["warm-up"])
    importlib.import_module("faiss")
    importlib.import_module("bm25s")
    log.info("encoders loaded in %.1f s", time.perf_counter() - started)


def main() -> None:
    started = time.perf_counter()
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    settings = Settings()
    configure_logging(settings.log_level.upper(), "%(asctime)s %(levelname)s %(name)s: %(message)s")
    log.info("starting Strata (workspaces under %s); loading the libraries", settings.workspace_root)
    # Imported here, after the first log line: gradio, PyMuPDF and torch take seconds to import on a busy CPU.
    import ui
    from backend.errors import StrataError
    from backend.service import Service

    service = Service(settings)
    load_before_serving(service)
    try:
        sample = service.served_workspace()  # read-only for every session, when set; else the sample corpus
    except StrataError as exc:
        log.error("%s", exc)
        sys.exit(2)
    if sample is None and settings.load_sample:
        sample = service.sample_workspace_path()
        # Checked (and built if it must be) behind the served page. Questions over it wait for it
        # meanwhile; uploads do not (a session that writes first starts without it).
        service.sample.start()
    sessions = service.session_manager(sample)
    sessions.start()
    # A stop by SIGTERM (a service manager, a test's terminate()) unwinds like Ctrl-C, so the finally runs.
    signal.signal(signal.SIGTERM, lambda _sig, _frame: sys.exit(0))
    demo = ui.build(service, sample_workspace=sample, sessions=sessions)
    try:
        demo.launch(prevent_thread_lock=True, **ui.launch_options(service))
        log.info("serving %s (%.1f s after start)", demo.local_url, time.perf_counter() - started)
        threading.Thread(target=prepare_in_background, args=(service,), name="strata-prepare", daemon=True).start()
        demo.block_thread()
    finally:
        sessions.close()


if __name__ == "__main__":
    main()
