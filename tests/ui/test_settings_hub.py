"""The Settings tab's Hub model choice, through its Apply callback as a plain function (on_apply)
and the service: a Hub id is accepted when it is in the server's Hugging Face cache, refused with
what to do when it is not, downloaded only when the box is ticked and HF_HUB_OFFLINE is not set,
and the box is unticked after every Apply. The cache is a temporary one in huggingface_hub's own
layout; the download is a local fake, so nothing here touches the network."""

from __future__ import annotations

from pathlib import Path

import gradio as gr
import pytest
from huggingface_hub import constants

from backend.config import Settings
from backend.llm import hf
from backend.service import Service
from ui import settings as settings_tab

REPO_ID = "tiny-org/tiny-gpt2"
COMMIT = "89abcdef0123456789abcdef0123456789abcdef"


def cache_snapshot(cache: Path, repo_id: str) -> Path:
    """A finished snapshot in the cache layout: refs/main -> snapshots/<commit>/ with a config and weights."""
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    snapshot = repo / "snapshots" / COMMIT
    snapshot.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(COMMIT)
    (snapshot / "config.json").write_text('{"model_type": "gpt2"}')
    (snapshot / "model.safetensors").write_bytes(b"\0" * 16)
    return snapshot


@pytest.fixture()
def hub_cache(tmp_path, monkeypatch) -> Path:
    cache = tmp_path / "hf-cache"
    cache.mkdir()
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return cache


@pytest.fixture()
def downloads(hub_cache, monkeypatch) -> list[str]:
    """The repo ids 'downloaded': a fake download_snapshot that writes the snapshot into the cache."""
    fetched: list[str] = []

    def fake(repo_id: str) -> Path:
        fetched.append(repo_id)
        return cache_snapshot(hub_cache, repo_id)

    monkeypatch.setattr(hf, "download_snapshot", fake)
    return fetched


def apply(current, server, hf_model, download=False):
    """on_apply with the hf backend chosen and the other fields as a person leaves them."""
    return settings_tab.on_apply(current, server, "hf", "", "", False, "", hf_model, download, 7, 1024, 5)


def _value(update) -> object:
    return update["value"] if isinstance(update, dict) else update


@pytest.fixture()
def server() -> Settings:
    return Settings(load_sample=False)


def test_an_uncached_hub_id_is_refused_with_what_to_do(server, downloads):
    start = settings_tab.default_session_settings(server)
    state, key_box, forget_box, download_box, status = apply(start, server, "Qwen/Qwen2.5-0.5B-Instruct")
    assert state is start  # nothing changed
    assert "not in the local Hugging Face cache" in status and "Download from the Hub" in status
    assert "local model folder" in status and "HF_HUB_OFFLINE is set" in status
    assert (_value(key_box), _value(forget_box), _value(download_box)) == ("", False, False)
    assert downloads == []


def test_a_ticked_download_is_refused_while_hf_hub_offline_is_set(server, downloads):
    start = settings_tab.default_session_settings(server)
    state, *_boxes, status = apply(start, server, "HuggingFaceTB/SmolLM2-1.7B-Instruct", download=True)
    assert state is start and downloads == []
    assert "cannot be downloaded. Unset HF_HUB_OFFLINE" in status


def test_a_cached_hub_id_is_accepted_and_the_service_builds_it(server, hub_cache, downloads):
    snapshot = cache_snapshot(hub_cache, REPO_ID)
    start = settings_tab.default_session_settings(server)
    state, *_boxes, download_box, status = apply(start, server, REPO_ID)
    assert (state.llm_backend, state.llm.hf_model, state.hf_from_hub) == ("hf", REPO_ID, True)
    assert f"hf: Hub model {REPO_ID}" in status and _value(download_box) is False
    assert downloads == []
    # What the Ask, Compare and Evaluate tabs do with the session settings: the service's backend.
    llm = Service(server).llm(state.llm_backend, state.llm)
    assert llm.name == "hf:tiny-gpt2" and llm.usage.calls == 0  # built, nothing loaded yet
    assert Service.locate_hf_model(state.llm.hf_model).folder == snapshot


def test_a_download_happens_only_when_ticked_and_online(server, monkeypatch, downloads):
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    start = settings_tab.default_session_settings(server)
    refused, *_ = apply(start, server, REPO_ID)
    assert refused is start and downloads == []
    fetched, *_boxes, download_box, status = apply(start, server, REPO_ID, download=True)
    assert downloads == [REPO_ID] and fetched.hf_from_hub and _value(download_box) is False
    assert "Hub model" in status
    again, *_ = apply(fetched, server, REPO_ID, download=True)  # cached now: no second download
    assert downloads == [REPO_ID] and again.hf_from_hub


def test_a_local_folder_keeps_working_and_is_not_called_a_hub_model(server, tmp_path, downloads):
    start = settings_tab.default_session_settings(server)
    state, *_, status = apply(start, server, str(tmp_path))
    assert state.llm.hf_model == str(tmp_path) and not state.hf_from_hub and "hf: local model" in status


def test_the_download_box_is_in_the_tab_and_off(service):
    with gr.Blocks():
        state = settings_tab.new_state(service)
        settings_tab.build(service, state)
        boxes = [b for b in gr.context.Context.root_block.blocks.values() if getattr(b, "elem_id", None) == "settings-hf-download"]
    assert len(boxes) == 1 and boxes[0].value is False and "Download from the Hub" in boxes[0].label
