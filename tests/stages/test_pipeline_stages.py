"""The stage machinery without a corpus: the list and its order, what a spec selects and how a run
is labelled, how moves are read from two rankings, and how profiles merge their kinds' overrides."""

from __future__ import annotations

import pytest

from backend.errors import StrataError
from backend.stages import STAGES, is_none, select_stages, stage_infos, stages_label
from backend.stages.base import moved_units
from backend.stages.profile import KIND_OVERRIDES, PLAIN, named_profile, profile_of_kinds

ORDER = ["line_items", "novelty", "named_rows", "quoted", "spread", "named_documents", "statements", "references"]


def test_the_stages_are_listed_once_in_pipeline_order():
    assert [s.name for s in STAGES] == ORDER
    assert all(s.before_retrieval == (s.name == "line_items") for s in STAGES)
    assert [i.name for i in stage_infos()] == ORDER + ["scope"]


@pytest.mark.parametrize(("spec", "follows", "names", "label"), [
    (None, True, ORDER, "hikey + stages"),
    ("default", True, ORDER, "hikey + stages"),
    (["default"], True, ORDER, "hikey + stages"),
    ("default", False, [], "hikey"),
    ("none", True, [], "hikey"),
    (["none"], True, [], "hikey"),
    ("Spread, quoted", True, ["quoted", "spread"], "hikey + stages(quoted,spread)"),
    (["references"], False, ["references"], "hikey + stages(references)"),
])
def test_a_spec_selects_stages_in_pipeline_order_and_labels_the_run(spec, follows, names, label):
    selected = select_stages(spec, follows)
    assert [s.name for s in selected] == names
    assert stages_label("hikey", spec, selected) == label
    assert is_none(spec) == (spec in ("none", ["none"]))


def test_an_unknown_stage_is_named_with_the_valid_ones():
    with pytest.raises(StrataError, match="'sprad'.*line_items, novelty"):
        select_stages("quoted,sprad", True)
    with pytest.raises(StrataError, match="'scope'"):  # the scope filter is not switchable
        select_stages("scope", True)


def test_moves_are_the_units_whose_order_changed():
    before = ["a", "b", "c", "d", "e"]
    assert moved_units(before, before) == []
    moves = moved_units(before, ["d", "a", "b", "c", "e"])  # d moved up; the rest only shifted
    assert [(m.node_id, m.from_rank, m.to_rank) for m in moves] == [("d", 4, 1)]
    moves = moved_units(before, ["x", "a", "c", "b"])  # x brought in, e and d dropped, b or c moved
    got = {m.node_id: (m.from_rank, m.to_rank) for m in moves}
    assert got["x"] == (None, 1) and got["e"] == (5, None) and got["d"] == (4, None)
    assert len(got) == 4 and ("b" in got) != ("c" in got)


def test_profiles_merge_their_kinds_overrides_and_fill_only_unset_parameters():
    plain = profile_of_kinds(())
    assert plain.name == PLAIN and plain.overrides == {} and plain.params_for("fif", {}) == {}
    both = profile_of_kinds(("long_separate", "template"))
    assert both.name == "template+long_separate" and both.has("template") and not both.has("web_of_pages")
    assert both.params_for("fif", {}) == {"alpha": 0.0, "seed_extensions": 1}
    assert both.params_for("fif", {"alpha": 0.5}) == {"seed_extensions": 1}
    assert both.params_for("bm25", {}) == {} and both.params_for("mmgraph", {})["by_names"] == 0
    assert named_profile("plain").kinds == () and named_profile("template+plain").name == "template"
    assert named_profile("short_separate").chosen_by == "setting"
    assert set(KIND_OVERRIDES) == {"template", "web_of_pages", "short_separate", "long_separate"}
    with pytest.raises(StrataError, match="STRATA_RETRIEVAL__PROFILE"):
        named_profile("filings")
