"""bench/scale.py's variants: a method timed with parameters beside its default, in one run."""

from __future__ import annotations

from tests.bench.conftest import load_bench_module


def test_a_method_spec_carries_its_parameters_and_the_bridge_questions_split():
    scale = load_bench_module("scale")
    assert scale.method_spec("strata") == ("strata", {})
    assert scale.method_spec('strata:{"compose": 0, "chain": 1}') == ("strata", {"compose": 0, "chain": 1})
    from backend.retrieval.decompose.rules import decompose

    for question in scale.BRIDGE_QUESTIONS:  # each runs a dependent hop, or --bridge times nothing new
        assert any(s["depends_on"] for s in decompose(question)), question
