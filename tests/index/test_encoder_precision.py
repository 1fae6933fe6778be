"""A workspace keeps the precision of the text encoder it was built with: changing
index.text_runtime (or its default) chooses for new workspaces and never locks a user out of an
existing one (encoders.runtime_for, Service.encoders_for)."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest

from backend.config import IndexSettings, Settings
from backend.graph.store import WorkspaceStore
from backend.index.encoders import runtime_for
from backend.service import Service

pytest.importorskip("onnx", reason="the ONNX export needs the onnx package (requirements.txt)")

FP32 = "text=all-MiniLM-L6-v2@cpu;sub=wordllama-256"
INT8 = "text=all-MiniLM-L6-v2-int8@cpu;sub=wordllama-256"


@pytest.mark.parametrize(
    ("signature", "setting", "runtime"),
    [
        (None, "onnx-int8", "onnx-int8"),  # a new workspace takes the setting
        (None, "onnx", "onnx"),
        (FP32, "onnx-int8", "onnx"),  # built in fp32 (ONNX or torch): stays fp32
        (FP32, "onnx", "onnx"),
        (FP32, "torch", "torch"),
        (INT8, "onnx", "onnx-int8"),  # built in int8: stays int8
        (INT8, "torch", "onnx-int8"),
        ("text=all-MiniLM-L6-v2@cuda;sub=wordllama-256", "onnx-int8", "onnx"),  # built in fp32 on a GPU: fp32 here
        ("text=all-MiniLM-L6-v2@cuda;sub=wordllama-256", "onnx", "onnx"),
        ("text=bge-small@cpu;sub=wordllama-256", "onnx", "onnx"),  # another model: likewise
    ],
)
def test_the_runtime_reproduces_the_recorded_vectors(signature, setting, runtime):
    assert runtime_for(signature, IndexSettings(text_runtime=setting)) == runtime


def _pdf(path: Path, lines: list[str]) -> Path:
    doc = pymupdf.open()
    page = doc.new_page()
    for i, line in enumerate(lines):
        page.insert_text((72, 72 + 20 * i), line, fontsize=11)
    doc.save(path)
    return path


def _signature(workspace: Path) -> str | None:
    store = WorkspaceStore(workspace)
    try:
        return store.encoder_signature
    finally:
        store.close()


def test_a_workspace_keeps_the_precision_it_was_built_with(tmp_path):
    harbour = _pdf(tmp_path / "harbour.pdf", ["Harbour report", "The north quay handled 4,200 ships in 2021."])
    orchard = _pdf(tmp_path / "orchard.pdf", ["Orchard notes", "The pear trees were pruned by the volunteers in March."])

    def service(runtime: str) -> Service:
        return Service(Settings(workspace_root=tmp_path / "root", load_sample=False, index=IndexSettings(text_runtime=runtime)))

    fp32, int8 = service("onnx"), service("onnx-int8")
    old = tmp_path / "old"
    assert not fp32.ingest(old, [harbour]).failed
    assert _signature(old) == FP32

    # The default moved to int8: the old workspace still takes files and answers, in fp32.
    report = int8.ingest(old, [orchard])
    assert not report.failed and [f.status for f in report.files] == ["ingested"]
    assert _signature(old) == FP32
    result = int8.ask(old, "Who pruned the pear trees?", method="hybrid")
    assert result.results and "pear" in result.results[0].text
    assert int8.encoders_for(_signature(old)).text.name == "all-MiniLM-L6-v2@cpu"

    # A new workspace is built in int8, and keeps it under the fp32 setting.
    new = tmp_path / "new"
    assert not int8.ingest(new, [harbour]).failed
    assert _signature(new) == INT8
    assert not fp32.ingest(new, [orchard]).failed
    assert _signature(new) == INT8
    assert "pear" in fp32.ask(new, "Who pruned the pear trees?", method="dense").results[0].text


def test_a_workspace_built_on_a_gpu_takes_files_on_a_cpu_and_not_another_model(tmp_path):
    """torch on a GPU and ONNX on a CPU compute the same fp32 MiniLM vectors: a workspace made on a
    GPU machine (a Space with a GPU) keeps working on a laptop. Another model is still refused."""
    from backend.errors import WorkspaceError

    for recorded, refused in (("text=all-MiniLM-L6-v2@cuda;sub=wordllama-256", False), ("text=bge-small@cuda;sub=wordllama-256", True)):
        workspace = tmp_path / recorded.split("@")[0].removeprefix("text=")
        store = WorkspaceStore(workspace, create=True)
        store.check_encoders(recorded)  # as the GPU machine left it
        store.close()
        cpu = Service(Settings(workspace_root=tmp_path / "root", load_sample=False, index=IndexSettings(device="cpu")))
        doc = _pdf(tmp_path / "quay.pdf", ["Quay report", "The north quay handled 4,200 ships in 2021."])
        if refused:
            with pytest.raises(WorkspaceError, match="other encoders"):
                cpu.ingest(workspace, [doc])
            continue
        report = cpu.ingest(workspace, [doc])
        assert [f.status for f in report.files] == ["ingested"]
        assert _signature(workspace) == recorded
        assert "4,200" in cpu.ask(workspace, "How many ships did the north quay handle?", method="dense").results[0].text
