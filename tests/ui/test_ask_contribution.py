"""The Ask tab's contribution line as plain functions: after asking the same question with another
method in the session, the units only this method found and on which pages; "same answer as X"
with the evidence difference when the answers are word for word the same; nothing on a first ask;
and a session history that stays small."""

from __future__ import annotations

from backend.types import Answer, AskResult, EvidencePack, NodeKind, ResultItem, Trace
from ui import ask

QUESTION = "How many trees did the programme plant?"


def _result(method: str, units: list[tuple[str, str, int]], answer: str = "1200 trees.", question: str = QUESTION,
            abstained: bool = False) -> AskResult:
    results = [
        ResultItem(rank=i + 1, node_id=node, doc=doc, page=page, bbox=None, kind=NodeKind.SENTENCE, section_path=["Report"],
                   text=f"unit {node}", score=1.0 / (i + 1))
        for i, (node, doc, page) in enumerate(units)
    ]
    return AskResult(
        question=question, method=method, results=results, pack=EvidencePack(units=[], tokens=0, budget=512, text=""),
        answer=Answer(text=answer, citations=[], abstained=abstained), trace=Trace(method=method), timings_ms={}, llm_calls=0,
        llm_backend="rules",
    )


BM25 = _result("bm25", [("n1", "brief.pdf", 2), ("n2", "brief.pdf", 3)], answer="1200 trees.")
HIKEY = _result("hikey", [("n1", "brief.pdf", 2), ("n7", "report.pdf", 5), ("n8", "<b>x</b>.pdf", 1)], answer=" 1200  trees. ")


def test_a_first_ask_shows_nothing():
    assert ask.contribution(BM25, {}) is None and ask.render_contribution(BM25, None) == ""
    history = ask.remember({}, BM25)
    assert ask.contribution(BM25, history) is None  # the same method again is not "another method"


def test_units_only_this_method_found_are_counted_with_their_pages_and_escaped():
    history = ask.remember({}, BM25)
    c = ask.contribution(HIKEY, history)
    assert c.others == ("bm25",) and [u[0] for u in c.only] == ["n7", "n8"] and c.same_answer_as == "bm25"
    html = ask.render_contribution(HIKEY, c)
    assert 'data-only-count="2"' in html and 'data-same-as="bm25"' in html
    assert "Same answer as bm25; different evidence: 2 unit(s) found only by hikey, on" in html
    assert "report.pdf p.5" in html and "&lt;b&gt;x&lt;/b&gt;.pdf p.1" in html and "<b>x" not in html
    assert "Compared with bm25, asked earlier in this session." in html


def test_a_different_answer_says_found_only_by_without_claiming_the_same_answer():
    other = _result("strata", [("n9", "brief.pdf", 4)], answer="About 1,200.")
    html = ask.render_contribution(other, ask.contribution(other, ask.remember({}, BM25)))
    assert html.count("Found only by strata: 1 unit(s) on brief.pdf p.4") == 1 and "Same answer" not in html


def test_identical_runs_say_same_answer_and_same_evidence():
    twin = _result("lilac", [("n2", "brief.pdf", 3), ("n1", "brief.pdf", 2)])
    html = ask.render_contribution(twin, ask.contribution(twin, ask.remember({}, BM25)))
    assert 'data-only-count="0"' in html and "Same answer as bm25; same evidence" in html and "found only by lilac:" not in html


def test_nothing_new_and_a_different_answer():
    sub = _result("lilac", [("n1", "brief.pdf", 2)], answer="Not enough evidence.", abstained=True)
    c = ask.contribution(sub, ask.remember({}, BM25))
    assert c.same_answer_as is None and c.only == ()
    assert "Found only by lilac: nothing; every result was also found by another method" in ask.render_contribution(sub, c)


def test_two_abstentions_are_not_called_the_same_answer():
    a = _result("bm25", [("n1", "a.pdf", 1)], answer="Not enough evidence.", abstained=True)
    b = _result("hikey", [("n1", "a.pdf", 1)], answer="Not enough evidence.", abstained=True)
    assert ask.contribution(b, ask.remember({}, a)).same_answer_as is None


def test_history_is_per_question_keeps_each_methods_latest_run_and_stays_small():
    history = ask.remember(ask.remember({}, BM25), HIKEY)
    other_question = _result("hikey", [("n5", "a.pdf", 1)], question="Which district gained most canopy?")
    assert ask.contribution(other_question, history) is None  # asked with bm25 only for another question
    # Whitespace and case do not make a new question.
    same_q = _result("strata", [("n1", "brief.pdf", 2)], question="  how many trees did the programme   plant? ")
    assert ask.contribution(same_q, history).others == ("bm25", "hikey")
    rerun = ask.remember(history, _result("bm25", [("n7", "report.pdf", 5)]))
    assert [u[0] for u in rerun[ask.question_key(QUESTION)]["bm25"].units] == ["n7"]
    # bm25's latest run found n7 only, so hikey's n1 is now its own too.
    assert [u[0] for u in ask.contribution(HIKEY, rerun).only] == ["n1", "n8"]
    for i in range(ask.MAX_REMEMBERED_QUESTIONS + 3):
        rerun = ask.remember(rerun, _result("bm25", [("n1", "a.pdf", 1)], question=f"question {i}"))
    assert len(rerun) == ask.MAX_REMEMBERED_QUESTIONS and ask.question_key(QUESTION) not in rerun
    assert history[ask.question_key(QUESTION)].keys() == {"bm25", "hikey"}  # remember never changes its input
