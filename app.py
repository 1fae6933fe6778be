"""Start Strata's web app: settings -> Service -> ui.build(service) -> launch.

Serves on 127.0.0.1:7860 unless Gradio's own GRADIO_SERVER_NAME / GRADIO_SERVER_PORT say
otherwise (as on Hugging Face Spaces). Nothing else happens here: no parsing, no rendering.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging

# Hugging Face ZeroGPU: `spaces` patches torch and must be imported before anything touches CUDA
# (the sample workspace below loads the encoder); ui/spaces_gpu.py then wraps the GPU callbacks.
if importlib.util.find_spec("spaces") is not None:
    importlib.import_module("spaces")

import ui  # noqa: E402
from backend.config import Settings  # noqa: E402
from backend.service import Service  # noqa: E402
from ui.common import quiet_library_loggers  # noqa: E402

log = logging.getLogger("strata.app")


def main() -> None:
    settings = Settings()
    logging.basicConfig(
        level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s", force=True
    )
    quiet_library_loggers()
    service = Service(settings)
    sample = None
    if settings.load_sample:
        log.info("preparing the sample workspace")
        sample = service.ensure_sample_workspace()
    demo = ui.build(service, sample_workspace=sample)
    demo.launch(**ui.launch_options(service))


if __name__ == "__main__":
    main()
