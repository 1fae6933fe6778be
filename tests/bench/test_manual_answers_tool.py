"""bench/manual_answers.py: its questions are well formed and split by bench/split.py's rule; what
it counts as a clipped answer. (The answers themselves: tests/test_manual_answers.py and the tool.)"""

from __future__ import annotations

import json

from tests.bench.conftest import load_tool, run_tool


def _tool():
    return load_tool("manual_answers")


def test_the_probe_is_well_formed_and_split_by_the_id():
    tool = _tool()
    from bench.split import split_of

    rows = [json.loads(line) for line in tool.PROBE.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(rows) >= 30 and len({r["id"] for r in rows}) == len(rows)
    assert {r["manual"] for r in rows} <= set(tool.PACKAGES) and len({r["manual"] for r in rows}) >= 2
    for r in rows:
        assert r["question"].endswith("?") and r["answers"] and all(isinstance(p, int) and p >= 1 for p in r["pages"]), r
        assert r["half"] == split_of(r["id"]), r["id"]
    assert {split_of(r["id"]) for r in rows} == {"tune", "check"}


def test_a_clipped_answer_is_one_that_starts_inside_a_sentence_or_announces_what_it_leaves_out():
    clipped = _tool().clipped
    assert clipped("y with 11 entries consisting of two copies of x")
    assert clipped("To get more information on any specific named function, for example solve, the command is")
    assert clipped("The parameters specify the type as follows:")
    assert not clipped("To get more information on a function, the command is > help(solve)")
    assert not clipped("GLP_FR") and not clipped("glp_add_rows") and not clipped("TRUE, FALSE, and NA")


def test_the_tool_documents_its_options():
    done = run_tool("manual_answers", "--help", timeout_s=120)
    assert done.returncode == 0, done.stderr
    assert "--workspace-root" in done.stdout and "--half" in done.stdout


def test_an_accepted_answer_counts_as_written_and_not_inside_a_longer_name():
    holds = _tool().holds_answer
    assert holds("use the R command > x <- c(10.4, 5.6, 3.1, 6.4, 21.7)", ["c("])  # a call's opening is no name's part
    assert holds("the special value NA.", ["NA"]) and not holds("0/0 gives NaN", ["NA"])
    assert holds("An alternative is > ?solve", ["?solve"]) and not holds("> ??solve", ["?solve"])
    assert holds("its type is  GLP_FR and", ["GLP_FR"]) and not holds("GLP_FRX", ["GLP_FR"])
