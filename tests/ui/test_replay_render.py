"""The pure renderers of ui/replay.py (one view per trace step kind, the pack tree, the token bar)
and the run-file and parameter helpers of ui/ask.py. PDF text is escaped in every view."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from backend.errors import StrataError
from backend.service import NodeBrief
from backend.types import (
    AgentStep,
    Answer,
    AskResult,
    BeamStep,
    Citation,
    DecomposeStep,
    DocScore,
    EntityEdge,
    EntityHit,
    EntityStep,
    EvidencePack,
    FuseStep,
    IterationStep,
    MethodInfo,
    NodeKind,
    PackedUnit,
    ParamInfo,
    RankSectionsStep,
    RankStep,
    ResultItem,
    RouteDocsStep,
    ScoredEdge,
    ScoredNode,
    SectionScore,
    Strategy,
    SubQuery,
    SubqueryMatch,
    Trace,
)
from ui import ask, replay

EVIL = '<script>window.__xss=1</script><img src=x onerror="window.__xss=2">'


def _brief(node_id: str, kind: NodeKind, text: str, page: int = 3, doc: str = "report.pdf", path=("Report", "3 Results")) -> NodeBrief:
    return NodeBrief(id=node_id, kind=kind, doc=doc, doc_id="d", page=page, section_path=list(path), text=text)


NODES = {
    "d": _brief("d", NodeKind.DOCUMENT, "Report\n1 Intro", page=1),
    "d:s5": _brief("d:s5", NodeKind.SECTION, "3 Results", page=2),
    "d:p1": _brief("d:p1", NodeKind.PARAGRAPH, "The programme planted 4,820 trees."),
    "d:p1.0": _brief("d:p1.0", NodeKind.SENTENCE, "The programme planted 4,820 trees."),
    "d:p2": _brief("d:p2", NodeKind.PARAGRAPH, "Survival was 91.7 percent.", page=4),
    "d:p2.1": _brief("d:p2.1", NodeKind.SENTENCE, "Survival was 91.7 percent.", page=4),
    "d:t3": _brief("d:t3", NodeKind.TABLE, "District | Trees", page=5),
    "entity:a": _brief("entity:a", NodeKind.ENTITY, "Trees planted"),
    "entity:b": _brief("entity:b", NodeKind.ENTITY, "Old Quay"),
    "evil:p9": _brief("evil:p9", NodeKind.PARAGRAPH, EVIL, doc=f"{EVIL}.pdf"),
}


def _assert_escaped(html: str) -> None:
    assert "<script" not in html and "<img" not in html
    assert "&lt;script&gt;" in html


def _frame(step, nodes=NODES, trace: Trace | None = None) -> str:
    trace = trace or Trace(method="m", steps=[step])
    return replay.render_step(trace, trace.steps.index(step), nodes)


def _xml(html: str) -> ET.Element:
    """The HTML as an element tree (our renderers write well-formed markup)."""
    return ET.fromstring(f"<root>{html}</root>")


# ---------------------------------------------------------------- node references


def test_node_ref_shows_document_page_kind_and_snippet():
    html = replay.node_ref("d:p1.0", NODES)
    assert "report.pdf p.3" in html and "sentence" in html and "4,820 trees" in html
    assert 'data-node="d:p1.0"' in html
    section = replay.node_ref("d:s5", NODES)
    assert "3 Results" in section and "section" in section
    unknown = replay.node_ref("other:p7", NODES)  # an id this workspace does not hold: shown as the id
    assert "st-node-unknown" in unknown and "other:p7" in unknown
    _assert_escaped(replay.node_ref("evil:p9", NODES))


# ---------------------------------------------------------------- one view per step kind


def test_decompose_view_lists_subqueries_with_modality_and_dependencies():
    step = DecomposeStep(subqueries=[
        SubQuery(text="Which district gained most canopy", modality="table"),
        SubQuery(text="How many trees were planted there", modality="text", depends_on=[0], status="answered"),
    ], reason="two hops")
    html = _frame(step)
    assert "2 subqueries" in html and "two hops" in html
    assert 'st-modality-table' in html and 'st-modality-text' in html
    assert ">q0<" in html and 'data-status="answered"' in html


def test_rank_view_shows_nodes_scores_and_cuts_long_lists():
    cands = [ScoredNode(node_id="d:p1", score=0.9, why="bm25")] + [
        ScoredNode(node_id=f"d:x{i}", score=0.5 - i / 100, why="") for i in range(replay.TABLE_LIMIT + 4)
    ]
    html = _frame(RankStep(label="seeds: top components", index="hybrid", candidates=cands))
    assert "seeds: top components" in html and "report.pdf p.3" in html and "0.900" in html
    assert "… and 5 more" in html


def test_route_docs_view_marks_kept_and_dropped_documents():
    step = RouteDocsStep(alpha=0.5, kept=1, docs=[
        DocScore(doc_id="a", file_name="a.pdf", bm25=1, dense=0.5, score=0.9),
        DocScore(doc_id="b", file_name="b.pdf", bm25=0.1, dense=0.2, score=0.1),
    ])
    html = _frame(step)
    assert html.count('class="st-kept"') == 1 and html.count('class="st-dropped"') == 1
    assert "1 of 2" in html


def test_rank_sections_view_names_the_anchor_unit():
    step = RankSectionsStep(lam=0.3, sections=[
        SectionScore(section_id="d:s5", path=["Report", "3 Results"], doc_score=0.8, section_score=0.6, final=0.66, anchor="d:p1"),
    ])
    html = _frame(step)
    assert "3 Results" in html and "4,820 trees" in html and "0.3 * doc + 0.7 * section" in html


def _beam_trace() -> Trace:
    edges = [
        ScoredEdge(src="d:p1", dst="d:p2", edge_kind="xref", score=1.7, matches=[
            SubqueryMatch(subquery=0, node_id="d:p1.0", score=0.95), SubqueryMatch(subquery=1, node_id="d:p2.1", score=0.75),
        ]),
        ScoredEdge(src="d:p1", dst="d:t3", edge_kind="caption", score=0.4, one_sided=True, matches=[
            SubqueryMatch(subquery=0, node_id="d:p1.0", score=0.4),
        ]),
    ]
    return Trace(method="lilac", steps=[
        DecomposeStep(subqueries=[SubQuery(text="trees planted"), SubQuery(text="survival rate")]),
        BeamStep(iteration=1, frontier=["d:p1", "d:t3"], edges=edges, kept=["d:p1", "d:p2"], pruned=["d:t3"]),
    ])


def test_beam_view_shows_winners_scored_edges_kept_and_pruned():
    trace = _beam_trace()
    html = _frame(trace.steps[1], trace=trace)
    assert "Beam iteration 1" in html and "scored 2 edge(s)" in html and "pruned 1" in html
    # The winning subcomponent per subquery is the best match over all edges, with its subquery text.
    winners = html.split("Winning subcomponent per subquery", 1)[1].split("Scored edges", 1)[0]
    assert "trees planted" in winners and "survival rate" in winners
    assert "0.950" in winners and "0.750" in winners and "0.400" not in winners
    # Edges best first, coloured by score: the best edge's cell is darker than the worst's.
    cells = re.findall(r'class="st-num st-score" style="background:rgb\((\d+),(\d+),(\d+)\)[^>]*>([\d.]+)<', html)
    assert [c[3] for c in cells] == ["1.700", "0.400"]
    assert sum(map(int, cells[0][:3])) < sum(map(int, cells[1][:3]))
    assert "caption · one-sided" in html
    pruned = html.split("Pruned (1)", 1)[1]
    assert 'class="st-pruned"' in pruned and 'data-node="d:t3"' in pruned


def _agent_trace() -> Trace:
    return Trace(method="fif", steps=[
        AgentStep(step=1, action="traverse", subquery="trees planted", strategy=Strategy(hop="global"), outcome="success",
                  found=[ScoredNode(node_id="d:p1", score=0.9)], seconds=0.25, llm_calls=1, llm_tokens=120),
        AgentStep(step=2, action="traverse", subquery="survival", strategy=Strategy(hop="local", granularity=1),
                  anchor=["d"], outcome="failure", reason="no unit covers 'survival'", llm_calls=2, llm_tokens=300),
        AgentStep(step=3, action="traverse", subquery="survival", strategy=Strategy(hop="local", granularity=2, reasoning="both"),
                  anchor=["d:p1"], outcome="success", backtrack_to=1, found=[ScoredNode(node_id="d:p2", score=0.8)]),
        AgentStep(step=4, action="stop", outcome="stopped"),
    ])


def test_agent_view_draws_timeline_with_backtrack_arrow_and_costs():
    trace = _agent_trace()
    html = _frame(trace.steps[2], trace=trace)
    svg = html[html.index("<svg"): html.index("</svg>") + 6]
    root = ET.fromstring(svg)
    ns = {"s": "http://www.w3.org/2000/svg"} if root.tag.startswith("{") else {}
    groups = root.findall(".//s:g" if ns else ".//g", ns)
    assert [g.get("data-step") for g in groups] == ["1", "2", "3", "4"]
    assert [g.get("data-outcome") for g in groups] == ["success", "failure", "success", "stopped"]
    assert [g.get("opacity") for g in groups] == ["1", "1", "1", "0.25"]  # step 4 not reached yet
    arrows = [p for p in root.iter() if p.get("class") == "st-backtrack"]
    assert [(p.get("data-from"), p.get("data-to")) for p in arrows] == [("3", "1")]
    assert "re-anchored to the context of step 1" in html
    assert "granularity g2, reasoning both" in html
    assert "0.25 s · 1 call(s) · 120 tok" in html and "2 call(s) · 300 tok" in html
    assert 'data-agent-step="4"' not in html  # the table shows only steps reached so far
    # Before step 3 the backtrack has not happened: no arrow.
    assert "st-backtrack\"" not in _frame(trace.steps[1], trace=trace).split("</svg>")[0].replace("st-backtrack-key", "")


def test_iteration_view_shows_queries_found_and_reasoning_record():
    trace = Trace(method="mirag", steps=[
        IterationStep(iteration=1, queries=["How many trees?"], found=[ScoredNode(node_id="d:p1", score=1.0)], record="[d:p1.0] 4,820"),
        IterationStep(iteration=2, queries=["trees Old Quay", "survival Old Quay"], record=f"fact {EVIL}", llm_calls=1),
    ])
    html = _frame(trace.steps[1], trace=trace)
    assert "Iteration 2 of 2" in html and "2 queries" in html
    assert "<li>trees Old Quay</li>" in html and "<li>survival Old Quay</li>" in html
    assert 'class="st-pre st-record"' in html
    _assert_escaped(html)
    first = _frame(trace.steps[0], trace=trace)
    assert "4,820 trees" in first and "[d:p1.0] 4,820" in first


def test_entities_view_shows_entities_edges_and_components():
    step = EntityStep(mode="broad", entities=[EntityHit(node_id="entity:a", name="Trees planted", score=1.0)],
                      edges=[EntityEdge(src="entity:b", dst="entity:a", relation="Trees planted: 1,240", score=0.8)],
                      components=[ScoredNode(node_id="d:t3", score=0.7)])
    html = _frame(step)
    assert "broad relations" in html and "Trees planted: 1,240" in html
    assert "Old Quay" in html  # an edge end that is not a matched entity is named from its node
    assert "report.pdf p.5" in html and "table" in html


def test_fuse_view_shows_the_rank_of_each_unit_in_each_input():
    step = FuseStep(label="RRF", weights={"hikey": 1.0, "hybrid": 0.5}, inputs={
        "hikey": [ScoredNode(node_id="d:p1", score=1.0), ScoredNode(node_id="d:p2", score=0.5)],
        "hybrid": [ScoredNode(node_id="d:p2", score=1.0)],
    })
    html = _frame(step)
    assert "hikey=1, hybrid=0.5" in html
    rows = re.findall(r'data-node="(d:p\d)".*?</td><td class="st-num">([\d-]+)</td><td class="st-num">([\d-]+)</td>', html, re.S)
    assert rows == [("d:p1", "1", "-"), ("d:p2", "2", "1")]


def test_unknown_step_kind_is_shown_as_json():
    class FutureStep:  # a step kind added by a later strategy: shown, not dropped
        kind = "agent_memory"

        def model_dump_json(self, indent=None):
            return '{"note": "' + EVIL + '"}'

    trace = Trace.model_construct(method="x", params={}, steps=[FutureStep()], notes=[], llm_backend="rules", llm_calls=0, llm_tokens=0)
    html = replay.render_step(trace, 0, NODES)
    assert "agent memory" in html and "&quot;note&quot;" in html
    _assert_escaped(html)


# ---------------------------------------------------------------- frames, header, escaping


def _evil_result() -> AskResult:
    cite = Citation(n=1, node_id="evil:p9", doc=f"{EVIL}.pdf", page=1, bbox=None, kind=NodeKind.PARAGRAPH, section_path=[EVIL], text=EVIL)
    trace = Trace(method="every", params={"beam": 3}, notes=[f"note {EVIL}"], llm_backend="rules", llm_calls=2, llm_tokens=50, steps=[
        DecomposeStep(subqueries=[SubQuery(text=EVIL)], reason=EVIL),
        RankStep(label=EVIL, index="bm25", candidates=[ScoredNode(node_id="evil:p9", score=1, why=EVIL)]),
        RouteDocsStep(alpha=0.5, kept=1, docs=[DocScore(doc_id="e", file_name=EVIL, bm25=1, dense=1, score=1)]),
        RankSectionsStep(lam=0.3, sections=[SectionScore(section_id="s", path=[EVIL], doc_score=1, section_score=1, final=1, anchor="evil:p9")]),
        BeamStep(iteration=1, frontier=["evil:p9"], edges=[ScoredEdge(src="evil:p9", dst="d:p1", edge_kind=EVIL, score=1,
                 matches=[SubqueryMatch(subquery=0, node_id="evil:p9", score=1)])], kept=["evil:p9"], pruned=["d:p1"]),
        AgentStep(step=1, action="traverse", subquery=EVIL, anchor=["evil:p9"], outcome="success", reason=EVIL,
                  found=[ScoredNode(node_id="evil:p9", score=1, why=EVIL)]),
        IterationStep(iteration=1, queries=[EVIL], record=EVIL, found=[ScoredNode(node_id="evil:p9", score=1)]),
        EntityStep(entities=[EntityHit(node_id="entity:x", name=EVIL, score=1)],
                   edges=[EntityEdge(src="entity:x", dst="evil:p9", relation=EVIL)], components=[ScoredNode(node_id="evil:p9", score=1)]),
        FuseStep(label=EVIL, reason=EVIL, weights={EVIL: 1.0}, inputs={EVIL: [ScoredNode(node_id="evil:p9", score=1)]}),
    ])
    pack = EvidencePack(budget=100, tokens=60, text=EVIL, units=[
        PackedUnit(node_id="d:s5", role="header", tokens=5, path=[EVIL], anchor="evil:p9"),
        PackedUnit(node_id="evil:p9", role="anchor", tokens=40, path=[EVIL], anchor="evil:p9"),
        PackedUnit(node_id="d:p2", role="associate", tokens=15, path=[EVIL, EVIL], anchor="evil:p9"),
    ])
    return AskResult(
        question=EVIL, method="every", trace=trace, pack=pack, timings_ms={"total": 1.0}, llm_backend="rules",
        results=[ResultItem(rank=1, node_id="evil:p9", doc=f"{EVIL}.pdf", page=1, bbox=None, kind=NodeKind.PARAGRAPH,
                            section_path=[EVIL], text=EVIL, score=1.0)],
        answer=Answer(text=EVIL, abstained=False, citations=[cite]),
    )


def test_pdf_text_is_escaped_in_every_replay_view():
    result = _evil_result()
    frames = replay.replay_frames(result.trace, NODES)
    assert len(frames) == len(result.trace.steps)
    for frame in frames:
        _assert_escaped(frame)
    _assert_escaped(replay.render_replay_header(result))
    _assert_escaped(replay.render_pack_tree(result.pack, NODES))
    # With only what the run itself knows (a run imported elsewhere), still escaped.
    fallback = replay.briefs_from_result(result)
    for frame in replay.replay_frames(result.trace, fallback):
        _assert_escaped(frame)


def test_frames_one_per_step_with_the_current_step_marked():
    trace = _beam_trace()
    frames = replay.replay_frames(trace, NODES)
    assert len(frames) == 2
    for i, frame in enumerate(frames, 1):
        assert f'data-step="{i}"' in frame.split(">", 1)[0]
        assert f"Step {i} of 2" in frame
        current = re.findall(r'class="st-stepchip[^"]*st-stepchip-current[^"]*" data-step="(\d+)"', frame)
        assert current == [str(i)]
    assert replay.replay_frames(Trace(method="bm25"), NODES) == [replay.NO_STEPS]


def test_header_shows_llm_use_params_and_notes():
    result = _evil_result()
    html = replay.render_replay_header(result)
    assert "rules: 2 call(s), 50 token(s) while retrieving" in html
    assert "beam=3" in html and "Notes" in html and "note &lt;script&gt;" in html


def test_run_node_ids_collects_every_step_kind_once():
    ids = replay.run_node_ids(_evil_result())
    assert len(ids) == len(set(ids))
    assert {"evil:p9", "d:p1", "d:s5", "d:p2", "entity:x", "s"} <= set(ids)


# ---------------------------------------------------------------- packed evidence


def _pack(budget: int = 400) -> EvidencePack:
    root, sec = ["Report"], ["Report", "3 Results"]
    units = [
        PackedUnit(node_id="d", role="header", tokens=10, path=root, anchor="d:p1"),
        PackedUnit(node_id="d:s5", role="header", tokens=6, path=sec, anchor="d:p1"),
        PackedUnit(node_id="d:p1", role="anchor", tokens=100, path=sec, anchor="d:p1"),
        PackedUnit(node_id="d:p2", role="sibling", tokens=40, path=sec, anchor="d:p1"),
        PackedUnit(node_id="d:s9", role="header", tokens=8, path=["Report", "4 Costs"], anchor="d:p1"),
        PackedUnit(node_id="d:t3", role="associate", tokens=60, path=["Report", "4 Costs"], anchor="d:p1"),
        PackedUnit(node_id="d:p7", role="anchor", tokens=50, path=sec, anchor="d:p7"),
    ]
    return EvidencePack(budget=budget, tokens=sum(u.tokens for u in units), units=units, text="serialised")


def test_pack_tree_nests_headers_anchors_siblings_and_associates():
    html = replay.render_pack_tree(_pack(), NODES)
    tree = _xml(html).find(".//ul[@class='st-ptree']")
    top = tree.findall("./li")
    assert len(top) == 1 and "Report" in "".join(top[0].itertext())  # one document root, header packed (10 tok)
    results = top[0].find("./ul/li")
    assert "3 Results" in "".join(results.itertext())
    anchors = results.findall("./ul/li[@class='st-ptree-anchor']")
    assert [a.get("data-anchor") for a in anchors] == ["d:p1", "d:p7"]  # both anchors share the header chain
    children = anchors[0].findall("./ul/li")
    assert [c.get("class") for c in children] == ["st-ptree-sibling", "st-ptree-associate"]
    assert "4 Costs" in "".join(children[1].itertext()) and "its header, 8 tok" in "".join(children[1].itertext())
    assert "Reader input" in html


def test_token_bar_follows_the_budget_and_roles():
    full = replay.render_token_bar(_pack(400))
    assert 'data-tokens="274" data-budget="400"' in full and "274</b> of 400 tokens used (68%)" in full
    widths = dict(re.findall(r'st-tokbar-seg st-role-(\w+)" style="width:([\d.]+)%', full))
    assert widths == {"header": "6.00", "anchor": "37.50", "sibling": "10.00", "associate": "15.00"}
    tight = EvidencePack(budget=128, tokens=100, units=[PackedUnit(node_id="d:p1", role="anchor", tokens=100, path=[])], text="")
    assert re.findall(r'st-role-anchor" style="width:([\d.]+)%', replay.render_token_bar(tight)) == ["78.12"]
    assert "Nothing was packed" in replay.render_pack_tree(EvidencePack(budget=64, tokens=0, units=[], text=""), NODES)


# ---------------------------------------------------------------- ask.py helpers


def test_read_run_round_trips_and_rejects_other_files(tmp_path: Path):
    good = tmp_path / "run.json"
    good.write_text(_evil_result().model_dump_json(), encoding="utf-8")
    assert ask.read_run(good) == _evil_result()
    for name, text in [("notes.json", '{"question": "q"}'), ("broken.json", "{not json"), ("list.json", "[1, 2]")]:
        bad = tmp_path / name
        bad.write_text(text, encoding="utf-8")
        with pytest.raises(StrataError, match=f"'{name}' is not a Strata run"):
            ask.read_run(bad)


def test_method_parameter_slots_keep_integer_types():
    info = MethodInfo(name="lilac", description="", params=[
        ParamInfo(name="beam", default=30, minimum=1, maximum=200, description="b"),
        ParamInfo(name="alpha", default=0.5, minimum=0.0, maximum=1.0, description="a"),
    ])
    beam, alpha = ask._slot_props(info.params[0]), ask._slot_props(info.params[1])
    assert (beam["step"], beam["value"], beam["label"]) == (1, 30, "beam")
    assert alpha["step"] == 0.01 and alpha["visible"]
    assert ask._slot_props(None)["visible"] is False
    values = ask._param_values(info, (12.0, 0.25, 7))  # a third, unused slot is ignored
    assert values == {"beam": 12, "alpha": 0.25} and isinstance(values["beam"], int)
    assert ask._param_values(info, (30, 0.25)) == {"alpha": 0.25}, "a slider left at its default is not sent"
