"""HFBackend with a tiny random-weight GPT-2 built in the test (conftest.build_tiny_causal_lm).

Its output is noise, so these tests check the plumbing: it loads offline, generates greedily,
counts calls and tokens from the tensors, and the guard answers with rules and counts a fallback.
"""

from __future__ import annotations

import pytest

from backend.config import LLMSettings, Settings
from backend.errors import ConfigError, LLMOutputError
from backend.llm.factory import build_llm
from backend.llm.guard import system_message
from backend.llm.hf import HFBackend, load_local_lm, resolve_device
from backend.llm.rules import RulesBackend

PAYLOAD = {
    "question": "How many trees were planted?",
    "evidence": [{"id": "u1", "kind": "sentence", "text": "1200 trees were planted in 2023 .", "score": 0.9, "cosine": 0.9,
                  "coverage": 0.7, "role": "anchor"}],
    "threshold": 0.35,
}
PROMPT = "[Context] 1200 trees were planted in 2023 . [Question] How many trees were planted ?"


def hf_settings(folder, **overrides) -> LLMSettings:
    return LLMSettings(**{"hf_model": str(folder), "device": "cpu", "max_new_tokens": 6, **overrides})


def test_generates_and_counts_tokens(tiny_lm_dir):
    llm = HFBackend(hf_settings(tiny_lm_dir))
    assert llm.name == "hf:tiny-gpt2"
    with pytest.raises(LLMOutputError):
        llm.complete_json("answer", PROMPT, PAYLOAD)
    lm = llm.warm_up()
    n_prompt = lm.prompt_ids(system_message(None), PROMPT).shape[1]
    assert llm.usage.calls == 1 and llm.usage.tasks == {"answer": 1}
    assert llm.usage.prompt_tokens == n_prompt
    assert 1 <= llm.usage.completion_tokens <= 6  # greedy, at most max_new_tokens (fewer when it emits EOS)
    assert llm.usage.seconds > 0


def test_greedy_decoding_is_repeatable(tiny_lm_dir):
    lm = HFBackend(hf_settings(tiny_lm_dir)).warm_up()
    assert lm.generate("system", PROMPT, 6) == lm.generate("system", PROMPT, 6)


def test_guard_falls_back_to_rules(tiny_lm_dir):
    llm = build_llm(Settings(reader={"llm_backend": "hf"}, llm={"hf_model": str(tiny_lm_dir), "device": "cpu", "max_new_tokens": 6}))
    out = llm.complete_json("answer", PROMPT, PAYLOAD)
    assert out == RulesBackend().complete_json("answer", PROMPT, PAYLOAD)
    assert (llm.usage.calls, llm.usage.fallbacks) == (1, 1)
    assert llm.usage.tokens > 0
    assert "answer: invalid model output" in llm.usage.notes[0]


def test_chat_template_is_used_when_present(tiny_chat_lm_dir):
    llm = HFBackend(hf_settings(tiny_chat_lm_dir))
    lm = llm.warm_up()
    ids = lm.prompt_ids("SYSTEM-TEXT", "USER-TEXT")
    text = lm.tokenizer.decode(ids[0])
    # The template's role words (in the tiny vocabulary; the test's own words decode as [UNK]).
    assert text.split()[:3] == ["<", "system", ">"] and text.split()[-3:] == ["<", "assistant", ">"]
    with pytest.raises(LLMOutputError):
        llm.complete_json("answer", PROMPT, PAYLOAD)
    assert llm.usage.calls == 1 and llm.usage.prompt_tokens == lm.prompt_ids(system_message(None), PROMPT).shape[1]


def test_a_prompt_longer_than_the_context_is_cut_from_the_left(tiny_lm_dir):
    llm = HFBackend(hf_settings(tiny_lm_dir))
    with pytest.raises(LLMOutputError):
        llm.complete_json("answer", PROMPT * 20, PAYLOAD)  # ~400 tokens into a 64-position model
    assert llm.usage.prompt_tokens == 64 - 6


def test_weights_load_once_per_process(tiny_lm_dir):
    a, b = HFBackend(hf_settings(tiny_lm_dir)), HFBackend(hf_settings(tiny_lm_dir))
    assert a.warm_up() is b.warm_up() is load_local_lm(str(tiny_lm_dir), "cpu")


def test_a_folder_without_a_model_names_the_setting(tmp_path):
    with pytest.raises(ConfigError, match="STRATA_LLM__HF_MODEL"):
        HFBackend(hf_settings(tmp_path / "missing")).warm_up()


def test_device_setting():
    import torch

    assert resolve_device("cpu") == "cpu"
    assert resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(ConfigError, match="auto, cpu or cuda"):
        resolve_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(ConfigError, match="sees no GPU"):
            resolve_device("cuda")
