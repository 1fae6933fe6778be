"""bench/knobs.py lists every parameter of every method, read from the parameter models."""

from __future__ import annotations

from backend.config import Settings
from backend.retrieval.base import get_retriever_class, method_names
from tests.bench.conftest import run_tool


def test_every_parameter_of_every_method_has_a_row_with_its_default():
    done = run_tool("knobs")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert lines[0].startswith("| method | parameter | default | setting |")
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[2:]]
    expected = {(m, f) for m in method_names() for f in get_retriever_class(m).Params.model_fields}
    assert {(r[0], r[1]) for r in rows} == expected and len(rows) == len(expected)
    settings = Settings()
    for method, field, default, *_ in rows:
        assert default == repr(get_retriever_class(method).Params.defaults(settings)[field]).replace("|", "/"), (method, field)
