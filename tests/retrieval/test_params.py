"""Strategy parameters: one pydantic model per strategy (Retriever.Params) whose Settings-backed
defaults are read in one place; the UI sliders (Service.methods) and the trace read it; no
strategy reads Settings itself or keeps per-call state on the retriever."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from backend.config import Settings
from backend.retrieval.base import StrategyParams, get_retriever_class, method_names
from backend.service import Service
from backend.types import Trace

METHODS = method_names()
RETRIEVAL_DIR = Path(__file__).resolve().parents[2] / "backend" / "retrieval"


@pytest.mark.parametrize("method", METHODS)
def test_every_strategy_has_a_params_model_and_its_sliders_come_from_it(method):
    cls = get_retriever_class(method)
    assert issubclass(cls.Params, StrategyParams)
    defaults = cls.Params.defaults(Settings())
    for spec in cls.params:
        assert defaults[spec.name] == spec.default and spec.minimum <= spec.default <= spec.maximum, spec
        assert spec.description
    assert cls.Params.resolve(Settings(), {}) == cls.Params(**defaults)


def test_settings_backed_defaults_reach_the_sliders_and_the_retrieval(sample_corpus, service):
    settings = service.settings.model_copy(update={"retrieval": service.settings.retrieval.model_copy(update={"hikey_docs": 2})})
    hikey = next(m for m in Service(settings).methods() if m.name == "hikey")
    assert next(p for p in hikey.params if p.name == "docs").default == 2
    retriever = get_retriever_class("hikey")(sample_corpus, service.encoder, settings, sub_encoder=service.encoders.sub)
    trace = Trace(method="hikey")
    retriever.retrieve("canopy cover", 5, {}, trace)
    assert trace.params["docs"] == 2  # the Settings default
    trace = Trace(method="hikey")
    retriever.retrieve("canopy cover", 5, {"docs": 3.0}, trace)
    assert trace.params["docs"] == 3 and isinstance(trace.params["docs"], int)  # the call's value, as the field's type


def test_resolve_converts_values_and_ignores_other_methods_names():
    from backend.retrieval.lilac.retriever import LILaCParams

    p = LILaCParams.resolve(Settings(), {"beam": 12.0, "alpha": 1, "no_such": 5})
    assert (p.beam, p.alpha) == (12, 1.0) and isinstance(p.alpha, float)


def test_no_strategy_reads_settings_itself():
    """Parameters come from the params model; a strategy only hands Settings on to another one."""
    offenders = []
    for path in sorted(RETRIEVAL_DIR.rglob("*.py")):
        if path.name == "base.py":
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"settings\.(retrieval|reader|index|llm)\b", line):
                offenders.append(f"{path.relative_to(RETRIEVAL_DIR)}:{n}: {line.strip()}")
    assert offenders == []


@pytest.mark.parametrize("method", METHODS)
def test_a_retrieve_call_leaves_no_state_on_the_retriever(method, sample_corpus, service):
    retriever = service.retriever(method, sample_corpus)
    before = dict(vars(retriever))
    retriever.retrieve("How many street trees were planted?", 5, {}, Trace(method=method))
    assert dict(vars(retriever)) == before
