"""The hf backend's Hub ids: read from the local Hugging Face cache (a temporary one, in the
library's own layout, holding the tiny model built by conftest), downloaded only when asked for
and HF_HUB_OFFLINE is not set, and a clear message otherwise. Nothing here touches the network:
the one test of the download path replaces snapshot_download with a local fake."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import huggingface_hub
import pytest
from huggingface_hub import constants
from huggingface_hub.errors import LocalEntryNotFoundError

from backend.config import LLMSettings
from backend.errors import ConfigError
from backend.llm import hf
from backend.llm.hf import HFBackend, LoadedModels, is_hub_id, locate_model

REPO_ID = "tiny-org/tiny-gpt2"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def put_in_cache(cache: Path, repo_id: str, model_dir: Path, files: list[str] | None = None) -> Path:
    """Store a saved model in huggingface_hub's cache layout (models--owner--name/refs/main ->
    snapshots/<commit>/...), as a finished snapshot_download leaves it."""
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    snapshot = repo / "snapshots" / COMMIT
    snapshot.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(COMMIT)
    for f in model_dir.iterdir():
        if files is None or f.name in files:
            shutil.copy(f, snapshot / f.name)
    return snapshot


@pytest.fixture()
def hub_cache(tmp_path, monkeypatch) -> Path:
    """An empty Hugging Face cache for this test; offline unless the test says otherwise."""
    cache = tmp_path / "hf-cache"
    cache.mkdir()
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return cache


@pytest.fixture()
def no_download(monkeypatch):
    def refuse(repo_id):
        raise AssertionError(f"download_snapshot({repo_id!r}) was called")

    monkeypatch.setattr(hf, "download_snapshot", refuse)


def test_hub_ids_and_paths_are_told_apart():
    for name in ("Qwen/Qwen2.5-0.5B-Instruct", "HuggingFaceTB/SmolLM2-1.7B-Instruct", "tiny-org/tiny_gpt2"):
        assert is_hub_id(name)
    for name in ("/models/qwen", "./models/qwen", "~/models/qwen", "a/b/c", "qwen", "", "Qwen/"):
        assert not is_hub_id(name)


def test_a_cached_hub_id_loads_from_the_cache_offline(hub_cache, tiny_lm_dir, no_download):
    snapshot = put_in_cache(hub_cache, REPO_ID, tiny_lm_dir)
    source = locate_model(REPO_ID)
    assert source.folder == snapshot and source.from_hub
    llm = HFBackend(LLMSettings(hf_model=REPO_ID, device="cpu", max_new_tokens=4))
    assert llm.name == "hf:tiny-gpt2"
    lm = llm.warm_up()
    assert Path(lm.path) == snapshot
    text, n_prompt, n_new = lm.generate("system", "How many trees were planted ?", 4)
    assert n_prompt > 0 and 1 <= n_new <= 4


def test_a_local_folder_is_used_as_it_is(hub_cache, tiny_lm_dir, no_download):
    source = locate_model(str(tiny_lm_dir))
    assert source.folder == tiny_lm_dir and not source.from_hub


@pytest.mark.parametrize("offline", [True, False])
def test_an_uncached_hub_id_is_not_downloaded_unless_asked(hub_cache, monkeypatch, no_download, offline):
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", offline)
    with pytest.raises(ConfigError) as err:
        locate_model("Qwen/Qwen2.5-0.5B-Instruct")
    message = str(err.value)
    assert "'Qwen/Qwen2.5-0.5B-Instruct' is not in the local Hugging Face cache" in message and str(hub_cache) in message
    assert "Download from the Hub" in message and "local model folder" in message
    assert ("HF_HUB_OFFLINE is set" in message) == offline
    # Building the backend loads nothing; its first task fails with the same message.
    with pytest.raises(ConfigError, match="not in the local Hugging Face cache"):
        HFBackend(LLMSettings(hf_model="Qwen/Qwen2.5-0.5B-Instruct", device="cpu")).warm_up()


def test_an_asked_for_download_is_refused_while_hf_hub_offline_is_set(hub_cache, no_download):
    with pytest.raises(ConfigError, match="HF_HUB_OFFLINE is set on this server, so it cannot be downloaded. Unset HF_HUB_OFFLINE"):
        locate_model("HuggingFaceTB/SmolLM2-1.7B-Instruct", allow_download=True)


def test_a_cache_entry_without_weights_counts_as_not_cached(hub_cache, tiny_lm_dir, no_download):
    put_in_cache(hub_cache, REPO_ID, tiny_lm_dir, files=["config.json"])
    with pytest.raises(ConfigError, match="not in the local Hugging Face cache"):
        locate_model(REPO_ID)


def test_an_asked_for_download_online_fetches_the_model_files_once(hub_cache, tiny_lm_dir, monkeypatch):
    """snapshot_download replaced by a fake that 'downloads' from the tiny model folder: the cache is
    read first, the download asks only for config, safetensors and tokenizer files, and the next
    look-up is a cache hit."""
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    calls = []

    def fake_snapshot_download(repo_id, local_files_only=False, allow_patterns=None, **kwargs):
        calls.append((repo_id, local_files_only, allow_patterns))
        repo = hub_cache / f"models--{repo_id.replace('/', '--')}"
        if local_files_only:
            if not repo.is_dir():
                raise LocalEntryNotFoundError("not cached")
            return str(repo / "snapshots" / COMMIT)
        return str(put_in_cache(hub_cache, repo_id, tiny_lm_dir))

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot_download)
    first = locate_model(REPO_ID, allow_download=True)
    assert first.from_hub and (first.folder / "model.safetensors").is_file()
    assert [c[:2] for c in calls] == [(REPO_ID, True), (REPO_ID, False)]
    assert "*.safetensors" in calls[1][2] and "*.bin" not in calls[1][2]
    again = locate_model(REPO_ID, allow_download=True)
    assert again.folder == first.folder and calls[2][:2] == (REPO_ID, True) and len(calls) == 3


def test_one_model_stays_loaded_and_concurrent_loads_happen_once(monkeypatch):
    built = []

    class SlowModel:
        def __init__(self, path, device):
            time.sleep(0.05)
            built.append(path)
            self.path = path

    monkeypatch.setattr(hf, "LocalCausalLM", SlowModel)
    models = LoadedModels(capacity=1)
    got = []
    threads = [threading.Thread(target=lambda: got.append(models.get("/m/a", "cpu"))) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert built == ["/m/a"] and all(g is got[0] for g in got)
    b = models.get("/m/b", "cpu")
    assert models.loaded() == ["/m/b"] and models.get("/m/b", "cpu") is b
    assert models.get("/m/a", "cpu") is not got[0]  # dropped to make room, so loaded again
    assert built == ["/m/a", "/m/b", "/m/a"]
