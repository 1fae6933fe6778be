"""The sample workspace built in a child process at a lower CPU priority, while the app serves.

Building it is minutes of CPU on a small server (parse, encode, entities, indexes); in the app's
own process its Python work would hold the interpreter lock that the web server's event loop
needs to answer every client, and at the same priority it would take the cores that questions
and uploads need. In a child (`python -m backend.sample_build`, niced by CHILD_NICE) the event
loop stays responsive and the operating system gives the cores to the app first. The child
reports each prepared file on stdout (`["advance", k]`), the parent moves its SamplePreparation
on, then loads the finished workspace itself. It does not decide whether the sample must be
built (Service.ensure_sample_workspace does) and does not serve anything.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

from backend.config import Settings, cache_folder
from backend.errors import StrataError, without_paths
from backend.sessions import SamplePreparation

log = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[1]
# The app's own calls come first when the cores are short. Mild: at nice 5 the child keeps about a third of
# a normal process's share of a busy machine (at 10, a tenth), and the questions waiting for the sample wait on it.
CHILD_NICE = 5
SETTINGS_ENV = "STRATA_SAMPLE_BUILD_SETTINGS"


def child_settings_json(settings: Settings) -> str:
    """The app's settings for the child, as they are (the LLM key included: entity extraction may
    call the model; it travels in the child's environment only, never to disk), with the cache
    folder written out so the child resolves it as the app did."""
    data = settings.model_dump(mode="json")
    if settings.llm.api_key is not None:
        data["llm"]["api_key"] = settings.llm.api_key.get_secret_value()
    data["cache_dir"] = str(cache_folder(settings))
    return json.dumps(data)


def _lower_priority() -> None:
    try:
        os.nice(CHILD_NICE)
    except OSError:  # not allowed here: the child still runs, at the app's priority
        pass


def run_sample_build(settings: Settings, sample: SamplePreparation) -> None:
    """Build the sample workspace in a niced child process, moving `sample` on as each file is
    prepared; raises StrataError (one plain line) when the child fails."""
    env = dict(os.environ, **{SETTINGS_ENV: child_settings_json(settings)})
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    proc = subprocess.Popen(
        [sys.executable, "-m", "backend.sample_build"], stdout=subprocess.PIPE, env=env, cwd=os.getcwd(), text=True,
        preexec_fn=_lower_priority if hasattr(os, "nice") else None,
    )
    error = None
    assert proc.stdout is not None
    for line in proc.stdout:
        try:
            kind, value = json.loads(line)
        except (ValueError, TypeError):
            continue  # a library printed something: not a report
        if kind == "advance":
            sample.advance(int(value))
        elif kind == "error":
            error = str(value)
    code = proc.wait()
    if error is not None or code != 0:
        raise StrataError(error or f"the process preparing it stopped (exit code {code})")


def _report(kind: str, value) -> None:
    print(json.dumps([kind, value]), flush=True)


def main() -> int:
    from backend.logs import configure_logging
    from backend.service import SAMPLE_DIR, Service

    settings = Settings.model_validate(json.loads(os.environ[SETTINGS_ENV]))
    configure_logging(settings.log_level.upper(), "%(asctime)s %(levelname)s %(name)s (sample): %(message)s")
    service = Service(settings)
    try:
        service.build_sample(service.sample_workspace_path(), sorted(SAMPLE_DIR.glob("*.pdf")), lambda k: _report("advance", k))
    except (StrataError, OSError, RuntimeError, ValueError) as exc:
        log.warning("the sample corpus could not be prepared: %s", without_paths(str(exc)))
        _report("error", without_paths(str(exc)))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
