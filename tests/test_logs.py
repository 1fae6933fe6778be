"""backend.logs: the entry points' logging set-up holds the noisy libraries back, in process and in
the CLI end to end (bm25s resets its own logger to DEBUG when imported, after start-up)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from backend.errors import ConfigError
from backend.logs import configure_logging

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture()
def restore_root_logging():
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    levels = {n: logging.getLogger(n).level for n in ("bm25s", "transformers.tokenization_utils_base", "strata.test")}
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    for name, lvl in levels.items():
        logging.getLogger(name).setLevel(lvl)


def test_library_debug_lines_are_dropped_even_after_the_library_resets_its_level(capsys, restore_root_logging):
    configure_logging("info")
    logging.getLogger("bm25s").setLevel(logging.DEBUG)  # what `import bm25s` does
    logging.getLogger("bm25s").debug("Building index from IDs objects")
    logging.getLogger("bm25s").warning("bm25s warning kept")
    logging.getLogger("transformers.tokenization_utils_base").warning("Token indices sequence length is longer than ...")
    logging.getLogger("strata.test").info("stage boundary")
    logging.getLogger("strata.test").debug("per node detail")
    err = capsys.readouterr().err
    assert "Building index" not in err and "Token indices" not in err and "per node detail" not in err
    assert "bm25s warning kept" in err and "INFO strata.test: stage boundary" in err


def test_an_unknown_level_names_the_setting(restore_root_logging):
    with pytest.raises(ConfigError, match="STRATA_LOG_LEVEL"):
        configure_logging("chatty")


@pytest.mark.integration
def test_the_cli_at_info_logs_no_bm25s_debug_lines(tmp_path):
    import pymupdf as fitz

    pdf = tmp_path / "tiny.pdf"
    doc = fitz.open()
    page = doc.new_page()
    page.insert_text((72, 72), "1 Trees", fontsize=16)
    page.insert_text((72, 110), "The programme planted 1200 trees in 2023 across four districts.", fontsize=11)
    doc.save(pdf)
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
               PYTHONPATH=str(REPO_ROOT), STRATA_LOG_LEVEL="INFO")
    ws = tmp_path / "ws"
    for args in (["ingest", "--workspace", str(ws), str(pdf)], ["ask", "--workspace", str(ws), "--method", "bm25", "How many trees?"]):
        proc = subprocess.run([sys.executable, "-m", "backend", *args], cwd=REPO_ROOT, env=env, capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        noisy = [line for line in proc.stderr.splitlines() if line.startswith("DEBUG") or "bm25s" in line]
        assert noisy == [], f"{args[0]} logged library noise at INFO:\n" + "\n".join(noisy)
    assert "1200" in proc.stdout
