"""bench/ is a folder of scripts, not a package: its modules are loaded by path here."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
SCORE_SCRIPT = Path(__file__).resolve().parents[3] / "shared" / "bench" / "score.py"


def load_bench_module(name: str):
    """bench/<name>.py as a module (bench/ goes on sys.path, as when the script runs)."""
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def split_mod():
    return load_bench_module("split")


@pytest.fixture(scope="session")
def score_script() -> Path:
    if not SCORE_SCRIPT.is_file():
        pytest.skip(f"no score.py at {SCORE_SCRIPT} (the shared bench folder is not here)")
    return SCORE_SCRIPT


@pytest.fixture(scope="session")
def page_baselines_mod():
    return load_bench_module("page_baselines")


@pytest.fixture(scope="session")
def diagnose_mod():
    return load_bench_module("diagnose")


@pytest.fixture(scope="session")
def phrasing_probe_mod():
    return load_bench_module("phrasing_probe")
