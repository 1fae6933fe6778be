"""The rules reader on a real manual nobody here wrote: R-intro.pdf from Debian's r-doc-pdf (113
pages, ingested once for the module: about a minute).

The package is fetched with `apt-get download` (tests/fixtures/debian_manuals.py; cached); the
test skips with the reason when that cannot be done. What the user reads must hold the answer a
person can use: the instruction and its example, the sentence a code line belongs to, the value
the manual names; a one-hop question is not split into made-up parts.
bench/manual_answers.py measures the same on more questions and manuals.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from backend.types import DecomposeStep
from tests.fixtures.debian_manuals import DebianManual, ManualUnavailable, fetch_manual

pytestmark = pytest.mark.slow

R_INTRO = DebianManual("R-intro", "r-doc-pdf", "usr/share/R/doc/manual/R-intro.pdf", "Texinfo (pdfTeX)", (10, 17))


@pytest.fixture(scope="module")
def r_intro(service, tmp_path_factory) -> Path:
    try:
        pdf = fetch_manual(R_INTRO)
    except ManualUnavailable as exc:
        pytest.skip(f"R-intro: {exc}")
    folder = tmp_path_factory.mktemp("r_intro")
    report = service.ingest(folder / "ws", [pdf])
    assert not report.failed, [(f.file_name, f.reason) for f in report.failed]
    return folder / "ws"


@pytest.mark.parametrize(("question", "expected"), [
    ("How do you create a vector in R?", r"x <- c\(10\.4, 5\.6, 3\.1, 6\.4, 21\.7\)"),
    ("How are missing values represented?", r"(?<![\w.])NA\b"),
    ("How do you get help on a specific function?", r"help\(solve\)"),
    ("How do you browse the help pages in HTML format?", r"help\.start\(\)"),
])
def test_the_rules_reader_answers_a_manual_question_with_what_a_person_can_use(service, r_intro, question, expected):
    answer = service.ask(r_intro, question, "strata").answer
    assert not answer.abstained, question
    assert re.search(expected, answer.text), (question, answer.text)
    assert not re.search(r"(?:\bis|:)\s*$", answer.text), f"an announcing sentence without what it announces: {answer.text!r}"
    assert answer.text[:1].isupper() or answer.text[:1] in "<>", f"a clipped sentence: {answer.text!r}"


@pytest.mark.parametrize("method", ["lilac", "fif", "strata"])
def test_a_one_hop_manual_question_is_not_split(service, r_intro, method):
    trace = service.ask(r_intro, "How do you create a vector in R?", method).trace
    steps = [s for s in trace.steps if isinstance(s, DecomposeStep)]
    assert steps, f"{method} records no decomposition"
    assert [q.text for q in steps[0].subqueries] == ["How do you create a vector in R"]
    assert "one hop" in steps[0].reason
