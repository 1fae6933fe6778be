"""Strata's stages in the UI as plain functions: a stage step and a profile step in the replay
(what moved, from which rank to which, entered and dropped; the profile, its traits and its
overrides), all PDF text escaped; the Ask tab's stages menu turned into the service's `stages`
value; runs named by their label ("hikey", "hikey + stages") in the contribution line, the run
facts and the Compare tab, which doubles each method when asked for both."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from backend.errors import StrataError
from backend.service import NodeBrief
from backend.types import (
    Answer,
    AskResult,
    EvidencePack,
    NodeKind,
    ProfileStep,
    RankStep,
    ResultItem,
    ScoredNode,
    StageInfo,
    StageMove,
    StageStep,
    Trace,
)
from ui import ask, compare, render, replay

EVIL = '<script>window.__xss=1</script><img src=x onerror="window.__xss=2">'
QUESTION = "How many trees did the programme plant?"


def _brief(node_id: str, text: str, page: int = 2, doc: str = "brief.pdf") -> NodeBrief:
    return NodeBrief(id=node_id, kind=NodeKind.PARAGRAPH, doc=doc, doc_id="d", page=page, section_path=["Brief"], text=text)


NODES = {
    "n1": _brief("n1", "The programme planted 4,820 trees."),
    "n2": _brief("n2", "Survival was 91.7 percent.", page=3),
    "n3": _brief("n3", "Table 2: trees per district", page=4),
    "n4": _brief("n4", "An unrelated paragraph.", page=5),
    "evil": _brief("evil", EVIL, doc=f"{EVIL}.pdf"),
}
MOVES = [
    StageMove(node_id="n3", from_rank=None, to_rank=1),  # brought in
    StageMove(node_id="n1", from_rank=1, to_rank=2),  # down one
    StageMove(node_id="n2", from_rank=4, to_rank=3),  # up one
    StageMove(node_id="n4", from_rank=3, to_rank=None),  # dropped
]


def _stage(name: str = "named_rows", moves=MOVES, note: str = "row label 'Old Quay' named in the question") -> StageStep:
    return StageStep(name=name, description="Lifts table rows whose label the question names.", moves=list(moves), note=note)


def _profile() -> ProfileStep:
    return ProfileStep(
        name="template", traits={"template_share": 0.82, "cross_links": 0.1}, overrides={"alpha": 0.3, "docs": 5, "route": True},
        chosen_by="traits",
    )


def _trace(*extra) -> Trace:
    rank = RankStep(label="bm25: top 3", index="bm25", candidates=[ScoredNode(node_id="n1", score=2.0)])
    return Trace(method="hikey", steps=[rank, *extra])


def _result(method: str = "hikey", stages: list[str] | None = None, label: str = "", units=("n1", "n2"),
            trace: Trace | None = None, answer: str = "4,820 trees.") -> AskResult:
    results = [
        ResultItem(rank=i + 1, node_id=n, doc="brief.pdf", page=NODES[n].page, bbox=None, kind=NodeKind.PARAGRAPH,
                   section_path=["Brief"], text=NODES[n].text, score=1.0 / (i + 1))
        for i, n in enumerate(units)
    ]
    return AskResult(
        question=QUESTION, method=method, results=results, pack=EvidencePack(units=[], tokens=0, budget=512, text=""),
        answer=Answer(text=answer, citations=[], abstained=False), trace=trace or Trace(method=method), timings_ms={"total": 5.0},
        llm_backend="rules", stages=stages or [], label=label or method,
    )


def _xml(html: str) -> ET.Element:
    return ET.fromstring(f"<root>{html}</root>")


def _assert_escaped(html: str) -> None:
    assert "<script" not in html and "<img" not in html
    assert "&lt;script&gt;" in html


# ---------------------------------------------------------------- replay


def test_a_stage_step_shows_its_description_note_and_each_move():
    trace = _trace(_stage())
    html = replay.render_step(trace, 1, NODES)
    root = _xml(html)
    step = root.find(".//div[@class='st-step']")
    assert step.get("data-kind") == "stage" and step.get("data-step") == "2"
    assert "Step 2 of 2: Strata stage named_rows: 4 unit(s) moved, 1 entered, 1 dropped" in html
    assert "Lifts table rows whose label the question names." in html
    assert "What it read" in html and "row label &#x27;Old Quay&#x27; named in the question" in html
    rows = root.findall(".//tr[@data-move]")
    assert [r.get("data-move") for r in rows] == ["entered", "down", "up", "dropped"]
    cells = [[(td.text or "").strip() for td in r.findall("td")][1:] for r in rows]
    assert cells == [
        ["-", "1", "entered at rank 1"], ["1", "2", "down 1"], ["4", "3", "up 1"], ["3", "-", "dropped (was rank 3)"],
    ]
    # The units are named by document, page and text, not by bare ids.
    assert "brief.pdf p.4" in html and "Table 2: trees per district" in html


def test_stage_chips_follow_the_methods_steps_and_are_marked():
    trace = _trace(_stage(), _stage("page_spread", moves=[StageMove(node_id="n2", from_rank=3, to_rank=2)]))
    frames = replay.replay_frames(trace, NODES)
    assert len(frames) == 3
    chips = _xml(frames[0]).findall(".//button")
    assert [c.get("data-kind") for c in chips] == ["rank", "stage", "stage"]
    assert ["st-stepchip-stage" in c.get("class") for c in chips] == [False, True, True]
    assert [c.text for c in chips][1:] == ["2 stage named rows", "3 stage page spread"]


def test_a_profile_step_shows_the_profile_its_traits_and_its_overrides():
    trace = Trace(method="hikey", steps=[_profile()])
    html = replay.render_step(trace, 0, NODES)
    root = _xml(html)
    assert "Corpus profile: template (chosen by traits)" in html
    profile = root.find(".//div[@class='st-profile']")
    assert profile.get("data-profile") == "template" and profile.get("data-chosen-by") == "traits"
    def pairs(cls: str) -> dict[str, str]:
        table = f".//table[@class='st-table st-replay-table {cls}']//tr[@data-key]"
        return {tr.get("data-key"): tr.findall("td")[1].text for tr in root.findall(table)}

    traits, overrides = pairs("st-profile-traits"), pairs("st-profile-overrides")
    assert traits == {"template_share": "0.82", "cross_links": "0.1"}
    assert overrides == {"alpha": "0.3", "docs": "5", "route": "True"}
    by_setting = ProfileStep(name="plain", traits={}, overrides={}, chosen_by="setting")
    html = replay.render_step(Trace(method="bm25", steps=[by_setting]), 0, NODES)
    assert "Set in the settings" in html and html.count('<div class="st-muted">none</div>') == 2


def test_stage_and_profile_text_is_escaped():
    evil_stage = StageStep(name=EVIL, description=EVIL, note=EVIL, moves=[StageMove(node_id="evil", from_rank=2, to_rank=1)])
    evil_profile = ProfileStep(name=EVIL, traits={EVIL: 1.0}, overrides={EVIL: EVIL}, chosen_by=EVIL)
    trace = _trace(evil_profile, evil_stage)
    for frame in replay.replay_frames(trace, NODES):
        _assert_escaped(frame)
    result = _result(stages=[EVIL], label=f"hikey + stages({EVIL})", trace=trace)
    _assert_escaped(replay.render_replay_header(result))
    _assert_escaped(render.render_run_facts(result, run_id="r"))
    _assert_escaped(compare.render_columns([result, _result()], None))


def test_the_header_says_which_stages_ran_and_how_many_moved_a_unit():
    with_stages = _result(stages=["named_rows", "page_spread"], label="hikey + stages", trace=_trace(_stage()))
    html = replay.render_replay_header(with_stages)
    field = _xml(html).find(".//span[@data-field='stages']")
    assert field.get("data-acted") == "1"
    assert "named_rows, page_spread (1 acted; each is a step of its own)" in html
    assert "hikey + stages" in html
    none = replay.render_replay_header(_result(trace=_trace()))
    assert "none: the method as published" in none and 'data-acted="0"' in none
    assert ask.replay_title(with_stages) == "Traversal replay: hikey, 2 step(s), 1 from Strata's stages"
    assert ask.replay_title(_result(trace=_trace())) == "Traversal replay: hikey, 1 step(s)"


def test_run_node_ids_include_the_units_a_stage_moved():
    ids = replay.run_node_ids(_result(trace=_trace(_stage())))
    assert {"n1", "n2", "n3", "n4"} <= set(ids) and len(ids) == len(set(ids))


# ---------------------------------------------------------------- Ask: the stages menu

INFOS = [
    StageInfo(name="named_rows", description="Lifts table rows the question names.", acts_on="corpora with tables"),
    StageInfo(name="page_spread", description="Spreads results over pages.", acts_on="long reports"),
    StageInfo(name="scope", description="Keeps the chosen documents.", acts_on="any corpus", switchable=False),
]


def test_the_stages_menu_becomes_the_service_value():
    assert ask.stage_spec(ask.WITH_STAGES, ["named_rows"]) == "default"
    assert ask.stage_spec(ask.WITHOUT_STAGES, ["named_rows"]) == "none"
    assert ask.stage_spec(ask.CHOSEN_STAGES, ["named_rows", "page_spread"]) == "named_rows,page_spread"
    with pytest.raises(StrataError, match="No stage is ticked"):
        ask.stage_spec(ask.CHOSEN_STAGES, [])
    with pytest.raises(StrataError, match="'sometimes'"):
        ask.stage_spec("sometimes", [])


def test_the_stages_menu_starts_from_the_server_setting():
    assert ask.initial_stages("default", INFOS) == ("default", ["named_rows", "page_spread"])
    assert ask.initial_stages("none", INFOS) == ("none", ["named_rows", "page_spread"])
    assert ask.initial_stages(" page_spread , gone , scope", INFOS) == ("chosen", ["page_spread"])
    assert ask.stage_choices(INFOS)[0] == ("named_rows: Lifts table rows the question names. · acts on: corpora with tables", "named_rows")
    assert [v for _, v in ask.stage_choices(INFOS)] == ["named_rows", "page_spread"]  # the documents filter is not a choice


def test_the_contribution_line_tells_a_method_with_stages_from_the_same_method_without():
    plain = _result(units=("n1", "n2"))
    staged = _result(stages=["named_rows"], label="hikey + stages", units=("n3", "n1"), answer="4,820 trees in all.")
    history = ask.remember({}, plain)
    c = ask.contribution(staged, history)
    assert c is not None and c.others == ("hikey",) and [u[0] for u in c.only] == ["n3"]
    html = ask.render_contribution(staged, c)
    assert "Found only by hikey + stages: 1 unit(s) on brief.pdf p.4" in html
    assert ask.remember(history, staged)[ask.question_key(QUESTION)].keys() == {"hikey", "hikey + stages"}


def test_run_facts_name_the_run_and_its_stages():
    facts = _xml(render.render_run_facts(_result(stages=["named_rows"], label="hikey + stages"), run_id="r1")).find("div")
    assert facts.get("data-method") == "hikey" and facts.get("data-label") == "hikey + stages"
    assert facts.get("data-stages") == "named_rows"
    assert "none (method as published)" in render.render_run_facts(_result(), run_id="r2")


# ---------------------------------------------------------------- Compare


def test_both_doubles_each_method_without_stages_first():
    assert compare.compare_runs(["hikey"], compare.BOTH) == (["hikey", "hikey"], ["none", "default"])
    assert compare.compare_runs(["bm25", "hikey"], compare.BOTH, "named_rows") == (
        ["bm25", "bm25", "hikey", "hikey"], ["none", "named_rows", "none", "named_rows"],
    )
    assert compare.compare_runs(["bm25", "hikey"], compare.WITHOUT_STAGES) == (["bm25", "hikey"], ["none", "none"])
    assert compare.compare_runs(["bm25", "hikey"], compare.WITH_STAGES) == (["bm25", "hikey"], ["default", "default"])


def test_the_runs_fit_the_columns():
    with pytest.raises(StrataError, match="Tick 1 to 2 methods to compare each with and without stages \\(3 ticked\\)"):
        compare.compare_runs(["bm25", "dense", "hikey"], compare.BOTH)
    with pytest.raises(StrataError, match="\\(0 ticked\\)"):
        compare.compare_runs([], compare.BOTH)
    with pytest.raises(StrataError, match="Tick 2 to 4 methods to compare \\(1 ticked\\)"):
        compare.compare_runs(["hikey"], compare.WITH_STAGES)
    with pytest.raises(StrataError, match="'maybe'"):
        compare.compare_runs(["bm25", "hikey"], "maybe")


def test_with_stages_follows_the_server_setting_unless_it_switches_them_off():
    assert compare.with_stages_spec("default") == "default"
    assert compare.with_stages_spec("named_rows,page_spread") == "named_rows,page_spread"
    assert compare.with_stages_spec("none") == "default" and compare.with_stages_spec("") == "default"


def test_compare_names_each_run_by_its_label():
    plain = _result(units=("n1", "n2"), trace=_trace())
    staged = _result(stages=["named_rows"], label="hikey + stages", units=("n3", "n1"), trace=_trace(_stage()))
    root = _xml(compare.render_columns([plain, staged], None))
    cols = root.findall(".//section")
    assert [(c.get("data-method"), c.get("data-label"), c.find("h3").text) for c in cols] == [
        ("hikey", "hikey", "hikey"), ("hikey", "hikey + stages", "hikey + stages"),
    ]
    lines = [c.find("div[@class='st-cmp-stages']") for c in cols]
    assert lines[0].get("data-acted") == "0" and "Without stages" in lines[0].text
    assert lines[1].get("data-acted") == "1" and "named_rows (4 moved)" in "".join(lines[1].itertext())
    summary = _xml(compare.render_summary([plain, staged], None, None))
    assert [tr.get("data-label") for tr in summary.findall(".//tbody/tr")] == ["hikey", "hikey + stages"]
    overlap = _xml(compare.render_overlap([plain, staged]))
    assert {(td.get("data-a"), td.get("data-b")) for td in overlap.findall(".//td[@data-jaccard]")} == {
        ("hikey", "hikey + stages"), ("hikey + stages", "hikey"),
    }
    same = _result(stages=["named_rows"], label="hikey + stages", answer="4,820 trees.")
    assert compare.same_answer_as([plain, same]) == ["hikey + stages", "hikey"]


def test_a_stage_that_moved_nothing_says_so_with_what_it_read():
    rewrite = StageStep(
        name="title_fix", description="Mends misspelt titles in the question.", note="'Saltmarsh' for 'Saltmarch'",
    )
    html = replay.render_step(_trace(rewrite), 1, NODES)
    assert "Strata stage title_fix: moved nothing" in html and "It moved nothing." in html
    assert "&#x27;Saltmarsh&#x27; for &#x27;Saltmarch&#x27;" in html and "st-stage-moves" not in html


def test_a_method_without_default_stages_is_one_run_not_two():
    plain = _result("bm25", units=("n1",))
    same = _result("bm25", units=("n1",))  # "default" selects no stage for it: label "bm25" again
    staged = _result(stages=["spread"], label="hikey + stages", units=("n2",))
    runs, twice = compare.distinct_runs([plain, same, _result(units=("n1",)), staged])
    assert [compare.label(r) for r in runs] == ["bm25", "hikey", "hikey + stages"] and twice == ["bm25"]
    assert runs[0] is plain


def test_moves_across_the_results_cut_are_marked_when_the_number_of_results_is_known():
    trace = _trace(_stage())
    html = replay.replay_frames(trace, NODES, shown=3)[1]
    root = _xml(html)
    assert [r.get("data-cut") for r in root.findall(".//tr[@data-move]")] == ["in", "", "in", "out"]
    assert "up 1; now in the top 3" in html and "dropped (was rank 3); out of the top 3" in html
    line = root.find(".//div[@data-into]")
    assert (line.get("data-into"), line.get("data-out")) == ("2", "1")
    assert "moved 2 unit(s) into them and 1 out of them" in html
    # Without the number (a frame drawn on its own), no cut is claimed.
    plain = replay.render_step(trace, 1, NODES)
    assert "top 3" not in plain and "data-into" not in plain
