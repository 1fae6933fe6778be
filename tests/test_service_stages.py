"""Service.ask and Service.compare with stages (backend/stages/): the default set, none, a named
subset, unknown names, one spec per compared method, and the stage list the UI shows."""

from __future__ import annotations

import pytest

from backend.errors import StrataError
from backend.stages import STAGES
from backend.types import ProfileStep, StageStep

QUESTION = "What does Table 2 of the data annex show?"


def test_stage_infos_list_every_stage_in_pipeline_order_the_scope_filter_last(service):
    infos = service.stage_infos()
    assert [i.name for i in infos] == [s.name for s in STAGES] + ["scope"]
    assert all(i.description and i.acts_on for i in infos)
    assert [i.switchable for i in infos] == [True] * len(STAGES) + [False]


def test_ask_labels_the_stages_it_ran(service, sample_workspace):
    default = service.ask(sample_workspace, QUESTION, method="hikey", top_k=5)
    assert default.stages == [s.name for s in STAGES] and default.label == "hikey + stages"
    assert service.ask_reply(default).stages == default.stages
    none = service.ask(sample_workspace, QUESTION, method="hikey", top_k=5, stages="none")
    assert none.stages == [] and none.label == "hikey"
    assert not [s for s in none.trace.steps if isinstance(s, (StageStep, ProfileStep))]
    subset = service.ask(sample_workspace, QUESTION, method="hikey", top_k=5, stages="references, quoted")
    assert subset.stages == ["quoted", "references"] and subset.label == "hikey + stages(quoted,references)"
    flat = service.ask(sample_workspace, QUESTION, method="bm25", top_k=5)
    assert flat.stages == [] and flat.label == "bm25"  # the flat floors take no default stage
    named = service.ask(sample_workspace, QUESTION, method="bm25", top_k=5, stages="references")
    assert named.stages == ["references"] and named.label == "bm25 + stages(references)"


def test_unknown_stages_are_named_before_the_corpus_is_loaded(service, tmp_path):
    with pytest.raises(StrataError, match="'sprad'.*spread"):
        service.ask(tmp_path / "no-such-workspace", QUESTION, method="hikey", stages="quoted,sprad")
    with pytest.raises(StrataError, match="one per method"):
        service.compare(tmp_path, QUESTION, ["hikey", "strata"], stages=["none"])


def test_compare_puts_a_method_beside_itself_with_and_without_stages(service, sample_workspace):
    results = service.compare(sample_workspace, QUESTION, ["hikey", "hikey", "hikey"], top_k=5,
                              stages=["none", "default", "none"])
    assert [r.label for r in results] == ["hikey", "hikey + stages"]  # the repeated pair is dropped
    both = service.compare(sample_workspace, QUESTION, ["hikey", "strata"], top_k=5, stages="none")
    assert [r.label for r in both] == ["hikey", "strata"]
