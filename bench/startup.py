"""Time from `python app.py` to its first page, cold (no prepared sample workspace) and warm
(the sample prepared by an earlier start), as a user would see it.

Starts the real app as a subprocess on a free loopback port with its own workspace root, polls
the HTTP root until it answers 200 (time to first page), then waits for the log line that says
the encoders and the sample corpus are loaded (time to ready: before this round the app served
nothing until then, so the cold "ready" figure is also the old time to first page, the
baseline of the same run). Every start is bounded by --timeout and stopped with SIGTERM.

Usage: python bench/startup.py [--root DIR] [--warm-runs N] [--timeout S]
Prints the command, the machine's load and a markdown table on stdout; the app's logs go to
DIR/app-*.log.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
READY_LINE = "ready: encoders and sample corpus loaded"
POLL_S = 0.25


@dataclass(frozen=True, slots=True)
class StartTimes:
    label: str
    first_page_s: float
    ready_s: float | None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def app_env(root: Path, port: int) -> dict[str, str]:
    return dict(
        os.environ,
        GRADIO_SERVER_PORT=str(port),
        GRADIO_SERVER_NAME="127.0.0.1",
        GRADIO_ANALYTICS_ENABLED="False",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
        STRATA_WORKSPACE_ROOT=str(root / "workspaces"),
        GRADIO_TEMP_DIR=str(root / "gradio_tmp"),
        PYTHONUNBUFFERED="1",
    )


class AppProcess:
    """`python app.py` on a loopback port; a context manager that always stops it."""

    def __init__(self, root: Path, log_name: str, extra_env: dict[str, str] | None = None) -> None:
        self.root = root
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.log_path = root / log_name
        env = app_env(root, self.port) | (extra_env or {})
        self._log = self.log_path.open("wb")
        self.started = time.perf_counter()
        self.proc = subprocess.Popen([sys.executable, "app.py"], cwd=REPO, env=env, stdout=self._log, stderr=subprocess.STDOUT)

    def wait_first_page(self, timeout_s: float) -> float:
        deadline = self.started + timeout_s
        while time.perf_counter() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"app.py exited with code {self.proc.returncode}; see {self.log_path}")
            try:
                with urllib.request.urlopen(self.url, timeout=2) as resp:
                    if resp.status == 200:
                        return time.perf_counter() - self.started
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(POLL_S)
        raise TimeoutError(f"app.py served nothing on {self.url} within {timeout_s:.0f} s; see {self.log_path}")

    def wait_log(self, line: str, timeout_s: float) -> float | None:
        deadline = self.started + timeout_s
        while time.perf_counter() < deadline and self.proc.poll() is None:
            if line in self.log_path.read_text(encoding="utf-8", errors="replace"):
                return time.perf_counter() - self.started
            time.sleep(POLL_S)
        return None

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self._log.close()
        return self.proc.returncode

    def __enter__(self) -> AppProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def time_start(root: Path, label: str, timeout_s: float) -> StartTimes:
    with AppProcess(root, f"app-{label}.log") as app:
        first = app.wait_first_page(timeout_s)
        ready = app.wait_log(READY_LINE, timeout_s)
    return StartTimes(label, first, ready)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=None, help="scratch folder (default: a new temp folder)")
    ap.add_argument("--warm-runs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=400.0, help="seconds allowed per start")
    args = ap.parse_args()
    root = args.root or Path(tempfile.mkdtemp(prefix="strata-startup-"))
    shutil.rmtree(root / "workspaces", ignore_errors=True)  # cold: no prepared sample
    root.mkdir(parents=True, exist_ok=True)
    print(f"$ python bench/startup.py {' '.join(sys.argv[1:])}")
    print(f"load average before: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} on {os.cpu_count()} CPUs\n")
    runs = [time_start(root, "cold", args.timeout)]
    runs += [time_start(root, f"warm{i + 1}", args.timeout) for i in range(args.warm_runs)]
    print("| start | first page (s) | encoders + sample ready (s) |")
    print("| --- | ---: | ---: |")
    for r in runs:
        ready = f"{r.ready_s:.1f}" if r.ready_s is not None else "not within the timeout"
        print(f"| {r.label} | {r.first_page_s:.1f} | {ready} |")
    print("\nBaseline (same run): before this round the app served its first page only when the sample was ready,")
    print(f"i.e. at the cold 'ready' time ({runs[0].ready_s or float('nan'):.1f} s) on a first start.")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    leftovers = list((root / "workspaces" / "sessions").glob("*")) if (root / "workspaces" / "sessions").exists() else []
    print(f"session workspaces left after the last stop: {len(leftovers)}")


if __name__ == "__main__":
    main()
