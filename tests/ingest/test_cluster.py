"""Ingest on a real Ray cluster (backend/ingest/cluster.py) against the local path.

A cluster of a head (no CPU) and two worker nodes of one CPU each, every node with its own raylet
(ray.cluster_utils.Cluster), runs on this machine for the module and is stopped after it. Checked:
- the sample corpus ingested on the two nodes, its long files cut into page ranges, equals the
  local workspace: the same node ids, texts and edges, vectors within 1e-5;
- two hostile files fail alone, in their tasks, with the local path's reasons;
- a worker node killed mid-batch: its tasks run again on the other, nothing lost or doubled
  (a separate batch: a node killed before it finished a task never shows in the progress's nodes);
- a driver killed mid-batch leaves whole files only, and a rerun on a throwaway local cluster
  (`python -m backend ingest --ray local`, the README's command) continues it to the local workspace.
The module is skipped where ray is not installed (requirements-cluster.txt; scripts/run_tests.sh installs it).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from backend.config import Settings
from backend.graph.store import WorkspaceStore
from backend.service import Service
from backend.types import EDGE_JSON, NODE_JSON, SECTION_JSON
from tests.fixtures import hostile_pdfs as hostile

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLE_PDFS = sorted((REPO_ROOT / "sample_corpus").glob("*.pdf"))
NODE_ARGS = {"num_cpus": 1, "object_store_memory": 80 * 2**20}
CLI_TIMEOUT_S = 420
ENV = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false", RAY_AUTH_MODE="disabled")


@pytest.fixture(scope="module")
def cluster():
    """Head without CPUs (it schedules, it does not parse) and two worker nodes; stopped after the module."""
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "object_store_memory": 80 * 2**20, "include_dashboard": False})
    try:
        for _ in range(2):
            c.add_node(**NODE_ARGS)
        c.wait_for_nodes()
        yield c
    finally:
        if ray.is_initialized():
            ray.shutdown()
        c.shutdown()


def _two_workers(cluster) -> list:
    """The live worker nodes, two of them (one is added back after a test killed one)."""
    workers = [n for n in cluster.worker_nodes]
    while len(workers) < 2:
        workers.append(cluster.add_node(**NODE_ARGS))
    cluster.wait_for_nodes()
    return workers


def _settings(base: Settings, address: str, pages_per_task: int = 2) -> Settings:
    ingest = base.ingest.model_copy(update={"ray_address": address, "ray_pages_per_task": pages_per_task})
    return base.model_copy(update={"ingest": ingest})


def snapshot(workspace: Path) -> dict:
    """What two builds of one corpus must share: documents, sections, nodes (ids, texts, every
    field), edges, layout blocks, and vectors (compared with a tolerance)."""
    store = WorkspaceStore(workspace, create=False)
    try:
        docs = {d.id: d.model_dump() for d in store.documents()}
        nodes, vectors = store.all_nodes()
        return {
            "documents": docs,
            "sections": sorted(SECTION_JSON.dump_json(s).decode() for s in store.all_sections()),
            "nodes": {n.id: NODE_JSON.dump_json(n).decode() for n in nodes},
            "node_rows": len(nodes),
            "edges": sorted(EDGE_JSON.dump_json(e).decode() for e in store.all_edges()),
            "blocks": {d: [b.model_dump_json() for b in store.blocks(d)] for d in docs},
            "vectors": {k: np.array(vectors[k], dtype=np.float32) for k in vectors},
        }
    finally:
        store.close()


def assert_same_workspace(built: Path, reference: Path, only_docs: set[str] | None = None) -> None:
    got, want = snapshot(built), snapshot(reference)
    if only_docs is not None:  # the reference restricted to some documents
        want["documents"] = {k: v for k, v in want["documents"].items() if k in only_docs}
        want["nodes"] = {k: v for k, v in want["nodes"].items() if any(k.startswith(d) for d in only_docs)}
    assert set(got["documents"]) == set(want["documents"])
    assert got["documents"] == want["documents"]
    assert got["nodes"].keys() == want["nodes"].keys()
    differing = [k for k in got["nodes"] if got["nodes"][k] != want["nodes"][k]]
    assert not differing, f"{len(differing)} nodes differ, e.g. {differing[:3]}"
    assert got["node_rows"] == len(got["nodes"])  # no node stored twice
    if only_docs is None:
        assert got["sections"] == want["sections"]
        assert got["edges"] == want["edges"]
        assert got["blocks"] == want["blocks"]
    vec_ids = [k for k in want["vectors"] if only_docs is None or any(k.startswith(d) for d in only_docs)]
    assert sorted(got["vectors"]) == sorted(vec_ids)
    worst = max(float(np.max(np.abs(got["vectors"][k] - want["vectors"][k]))) for k in vec_ids)
    assert worst <= 1e-5, f"vectors differ by up to {worst}"


def test_two_worker_nodes_build_the_local_workspace_and_hostile_files_fail_alone(cluster, service, strata_settings, sample_workspace, tmp_path):
    _two_workers(cluster)
    bomb = hostile.flate_bomb(tmp_path / "bomb.pdf")
    flipped = hostile.bit_flips(tmp_path / "flipped.pdf")
    local = service.ingest(tmp_path / "local-hostile", [bomb, flipped])  # the local path's reasons for the same files
    events = []
    clustered = Service(_settings(strata_settings, cluster.address))
    report = clustered.ingest(tmp_path / "ws", [*SAMPLE_PDFS, bomb, flipped], events.append)

    assert [f.status for f in report.files] == ["ingested"] * 4 + ["failed", "failed"], report
    for mine, theirs in zip(report.files[4:], local.files):
        assert theirs.status == "failed" and "\n" not in mine.reason
        # the same reason, but for the memory share in MiB (it depends on the process that parses)
        assert [w for w in mine.reason.split() if not w.isdigit()] == [w for w in theirs.reason.split() if not w.isdigit()]
    assert "decompression bomb" in report.files[4].reason
    assert_same_workspace(tmp_path / "ws", sample_workspace)
    # progress per file and stage, with the cluster's tasks and nodes
    stages = {(e.doc, e.stage) for e in events}
    assert {("cool_streets_report.pdf", s) for s in ("open", "extract", "encode", "store", "done")} <= stages
    assert ("bomb.pdf", "failed") in stages
    assert any(e.cluster is not None and e.cluster.nodes == 2 for e in events), events[-1]

    again = clustered.ingest(tmp_path / "ws", SAMPLE_PDFS)  # unchanged files are skipped before any task
    assert [f.status for f in again.files] == ["unchanged"] * 4


def test_a_worker_node_killed_mid_batch_loses_and_doubles_nothing(cluster, strata_settings, sample_workspace, tmp_path):
    workers = _two_workers(cluster)
    killed = threading.Event()
    running_at_kill = []

    def kill_on_first_encode(ev) -> None:
        if ev.stage == "encode" and not killed.is_set():
            killed.set()
            running_at_kill.append(ev.cluster.running)
            driver_node = ray.get_runtime_context().get_node_id()  # this process is the driver: never its node
            victim = next(w for w in workers if w.node_id != driver_node)
            cluster.remove_node(victim, allow_graceful=False)  # raylet, workers and the node's encoder actor

    report = Service(_settings(strata_settings, cluster.address)).ingest(tmp_path / "ws", SAMPLE_PDFS, kill_on_first_encode)
    assert killed.is_set() and running_at_kill[0] >= 3  # both nodes were busy, with more queued
    assert [f.status for f in report.files] == ["ingested"] * 4, report
    assert_same_workspace(tmp_path / "ws", sample_workspace)


def _cli(*args: str, workspace: Path) -> list[str]:
    return [sys.executable, "-m", "backend", "ingest", "--workspace", str(workspace), *args]


def test_a_driver_killed_mid_batch_leaves_whole_files_and_a_rerun_continues(cluster, strata_settings, sample_workspace, tmp_path):
    _two_workers(cluster)
    ws = tmp_path / "ws"
    env = dict(ENV, STRATA_WORKSPACE_ROOT=str(strata_settings.workspace_root), STRATA_LOAD_SAMPLE="false",
               STRATA_INGEST__RAY_PAGES_PER_TASK="2")
    cmd = _cli("--ray", cluster.address, *map(str, SAMPLE_PDFS), workspace=ws)
    proc = subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    deadline = time.monotonic() + CLI_TIMEOUT_S
    for line in proc.stderr:  # the first file stored: kill the driver
        if ": done " in line or time.monotonic() > deadline:
            break
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)

    stored = set(snapshot(ws)["documents"])
    assert 1 <= len(stored) < 4, stored
    assert_same_workspace(ws, sample_workspace, only_docs=stored)  # the stored files whole, no other file in part

    # The rerun is the README's command on a throwaway one-machine cluster (`--ray local`).
    rerun = subprocess.run(_cli("--ray", "local", "--json", *map(str, SAMPLE_PDFS), workspace=ws), cwd=REPO_ROOT, env=env,
                           capture_output=True, text=True, timeout=CLI_TIMEOUT_S)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert rerun.stdout.count("\n") == 1  # stdout is the report alone
    assert rerun.stdout.count('"status": "unchanged"') == len(stored)
    assert rerun.stdout.count('"status": "ingested"') == 4 - len(stored)
    assert "encode" in rerun.stderr and "nodes in use" in rerun.stderr  # progress per stage on stderr
    assert_same_workspace(ws, sample_workspace)
