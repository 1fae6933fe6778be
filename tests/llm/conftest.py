"""Fixtures of the LLM backend tests: loopback chat servers and a tiny local causal LM."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from chat_server import ChatServer, Reply, Request


@pytest.fixture()
def chat_server() -> Iterator[Callable[[Callable[[Request], Reply]], ChatServer]]:
    """Factory: chat_server(reply_fn) starts a loopback server; all are shut down after the test."""
    servers: list[ChatServer] = []

    def start(reply: Callable[[Request], Reply]) -> ChatServer:
        srv = ChatServer(reply)
        servers.append(srv)
        return srv

    yield start
    for srv in servers:
        srv.close()


TINY_TEXTS = [
    "Reply with one JSON object and nothing else",
    '{ "answer" : "42" , "citations" : [ ] , "abstain" : false }',
    "How many trees were planted in the city ? 1200 trees were planted in 2023 .",
    "[Context] [Question] not enough evidence",
    "<system> <user> <assistant>",
]


def build_tiny_causal_lm(folder: Path, chat_template: str | None = None) -> Path:
    """A GPT-2 shaped model with random weights (1 layer, 16 dims) and a word-level tokenizer
    trained on a few strings, saved like a hub checkout. Built offline in well under a second."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(TINY_TEXTS, trainers.WordLevelTrainer(special_tokens=["[UNK]", "[PAD]", "[EOS]"]))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", eos_token="[EOS]")
    if chat_template:
        fast.chat_template = chat_template
    config = GPT2Config(
        vocab_size=fast.vocab_size, n_positions=64, n_embd=16, n_layer=1, n_head=2,
        bos_token_id=fast.eos_token_id, eos_token_id=fast.eos_token_id, pad_token_id=fast.pad_token_id,
    )
    model = GPT2LMHeadModel(config)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    fast.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_lm_dir(tmp_path_factory) -> Path:
    return build_tiny_causal_lm(tmp_path_factory.mktemp("tiny_lm") / "tiny-gpt2")


@pytest.fixture(scope="session")
def tiny_chat_lm_dir(tmp_path_factory) -> Path:
    template = "{% for m in messages %}<{{ m['role'] }}> {{ m['content'] }}\n{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}"
    return build_tiny_causal_lm(tmp_path_factory.mktemp("tiny_chat_lm") / "tiny-chat", chat_template=template)
