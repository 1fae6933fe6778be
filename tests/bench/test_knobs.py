"""bench/knobs.py lists every parameter of every method, read from the parameter models."""

from __future__ import annotations

from tests.bench.conftest import load_bench_module

from backend.retrieval.base import get_retriever_class, method_names


def test_every_parameter_of_every_method_has_a_row_with_its_default_and_switches():
    knobs = load_bench_module("knobs")
    rows = knobs.rows()
    expected = {(m, f) for m in method_names() for f in get_retriever_class(m).Params.model_fields}
    assert {(r[0], r[1]) for r in rows} == expected and len(rows) == len(expected)
    by_key = {(r[0], r[1]): r for r in rows}
    assert by_key[("mmgraph", "homes")][2] == "0.3" and "own page" in by_key[("mmgraph", "homes")][5]
    assert by_key[("hikey", "docs")][3] == "retrieval.hikey_docs"
    assert by_key[("mirag", "seed_weight")][4] == "short separate documents: 1.0"
    assert "template corpus: 0 (dense)" in by_key[("lilac", "alpha")][4]
    table = knobs.table()
    assert table.count("\n") == len(rows) + 1 and "| mmgraph | homes | 0.3 |" in table
