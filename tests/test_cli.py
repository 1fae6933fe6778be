"""The command line end to end, in subprocesses (DESIGN.md section 7): machine-readable output on
stdout and nothing else, failures named on stderr, exit codes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from backend.types import Trace
from tests.http_servers import dead_url

REPO_ROOT = Path(__file__).resolve().parents[1]
SAMPLE_DIR = REPO_ROOT / "sample_corpus"
SCORE_PY = REPO_ROOT.parent / "shared" / "bench" / "score.py"

ASK_FIELDS = {"question", "method", "answer", "results", "timings_ms", "llm_calls", "trace"}
RESULT_FIELDS = {"rank", "node_id", "doc", "page", "bbox", "kind", "section_path", "text", "score"}
CITATION_FIELDS = {"n", "node_id", "doc", "page", "bbox", "kind", "section_path", "text"}

pytestmark = pytest.mark.slow


def run_cli(*args: str, timeout: float = 300, **strata_env: str) -> subprocess.CompletedProcess:
    """`python -m backend ARGS` with no STRATA_* setting of this environment, only `strata_env`'s."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false", PYTHONPATH=str(REPO_ROOT))
    for key in [k for k in env if k.startswith("STRATA_")]:
        del env[key]  # the command line alone decides
    env.update(strata_env)
    return subprocess.run(
        [sys.executable, "-m", "backend", *args], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


def test_ingest_names_failures_and_exits_non_zero_only_when_nothing_was_ingested(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("plain text, not a PDF\n")
    ws = tmp_path / "ws"
    proc = run_cli("ingest", "--workspace", str(ws), str(SAMPLE_DIR / "policy_brief.pdf"), str(bad))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    statuses = {f["file_name"]: f["status"] for f in report["files"]}
    assert statuses == {"policy_brief.pdf": "ingested", "bad.txt": "failed"}
    failed = next(f for f in report["files"] if f["file_name"] == "bad.txt")
    assert "not a pdf" in failed["reason"].lower()
    assert "bad.txt" in proc.stderr and "not a PDF" in proc.stderr

    only_bad = run_cli("ingest", "--workspace", str(tmp_path / "ws2"), str(bad))
    assert only_bad.returncode != 0
    assert "bad.txt" in only_bad.stderr
    assert json.loads(only_bad.stdout)["files"][0]["status"] == "failed"


def test_ask_json_prints_one_object_and_nothing_else(workspace_copy):
    question = "How many hours above 30 °C did the Old Quay sensors record in July 2023?"
    proc = run_cli("ask", "--workspace", str(workspace_copy), "--method", "hikey", "--top-k", "5", "--json", question)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 1, proc.stdout[:2000]
    out = json.loads(lines[0])  # json.loads rejects anything after the object
    assert isinstance(out, dict)
    assert ASK_FIELDS <= set(out), set(out)
    assert out["question"] == question and out["method"] == "hikey"
    assert set(out["answer"]) == {"text", "abstained", "citations"}
    assert isinstance(out["answer"]["abstained"], bool)
    assert "96" in out["answer"]["text"]
    citations = out["answer"]["citations"]
    assert citations and all(set(c) == CITATION_FIELDS for c in citations)
    assert [c["n"] for c in citations] == list(range(1, len(citations) + 1))
    assert all(c["doc"].endswith(".pdf") and c["page"] >= 1 and isinstance(c["node_id"], str) for c in citations)
    assert any("96" in c["text"] for c in citations)  # the cited unit holds the answer
    assert 1 <= len(out["results"]) <= 5
    for i, r in enumerate(out["results"], 1):
        assert RESULT_FIELDS <= set(r)
        assert r["rank"] == i
        assert r["doc"].endswith(".pdf") and "/" not in r["doc"]
        assert isinstance(r["page"], int) and r["page"] >= 1
        assert r["bbox"] is None or (len(r["bbox"]) == 4 and r["bbox"][0] <= r["bbox"][2])
        assert isinstance(r["section_path"], list) and r["section_path"]
    scores = [r["score"] for r in out["results"]]
    assert scores == sorted(scores, reverse=True)
    assert isinstance(out["llm_calls"], int)
    assert "total" in out["timings_ms"]
    assert Trace.model_validate(out["trace"]).method == "hikey"


def test_ask_batch_writes_one_line_per_question(workspace_copy, tmp_path):
    questions = tmp_path / "q.jsonl"
    rows = [
        {"id": "q-trees", "question": "How many trees did the programme plant?"},
        {"id": "q-budget", "question": "What budget was proposed for the second phase?"},
        {"id": "q-off", "question": "Who won the 1998 FIFA World Cup final?"},
    ]
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    pred = tmp_path / "out" / "pred.jsonl"
    proc = run_cli(
        "ask", "--workspace", str(workspace_copy), "--method", "bm25", "--top-k", "4", "--questions", str(questions), "--out", str(pred)
    )
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in pred.read_text().splitlines()]
    assert [p["id"] for p in lines] == [r["id"] for r in rows]
    for p in lines:
        assert {"id", "results", "answer"} <= set(p)
        assert len(p["results"]) <= 4
        assert all(RESULT_FIELDS <= set(r) for r in p["results"])
        assert set(p["answer"]) >= {"text", "abstained", "citations"}
    assert lines[2]["answer"]["abstained"] is True
    assert lines[0]["answer"]["abstained"] is False


def test_a_batch_whose_llm_server_is_dead_says_so_per_line_and_exits_3(workspace_copy, tmp_path):
    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(json.dumps({"id": f"q{i}", "question": q}) + "\n" for i, q in enumerate(
        ["How many trees did the programme plant?", "What budget was proposed for the second phase?"])))
    pred = tmp_path / "pred.jsonl"
    proc = run_cli("ask", "--workspace", str(workspace_copy), "--method", "bm25", "--top-k", "4", "--questions", str(questions),
                   "--out", str(pred), STRATA_READER__LLM_BACKEND="openai", STRATA_LLM__BASE_URL=dead_url(),
                   STRATA_LLM__MAX_RETRIES="0", STRATA_LLM__MODEL="fake-model")
    assert proc.returncode == 3, proc.stderr[-2000:]
    assert proc.stdout.strip() == str(pred)
    assert "LLM FAILED on 2 of 2 questions (the rules answered them" in proc.stderr
    lines = [json.loads(line) for line in pred.read_text().splitlines()]
    assert [p["id"] for p in lines] == ["q0", "q1"] and all(p["results"] and p["answer"]["text"] for p in lines)
    assert all("openai:fake-model failed, so the rules backend answered" in p["llm_error"] for p in lines)
    if SCORE_PY.is_file():  # the referee reads the lines, extra key and all
        bench = tmp_path / "bench"
        bench.mkdir()
        gold = [{"doc": "policy_brief.pdf", "page": 2}]
        (bench / "questions.jsonl").write_text("".join(json.dumps(
            {"id": f"q{i}", "question": "q", "answers": [], "unanswerable": False, "gold": gold}) + "\n" for i in range(2)))
        scored = subprocess.run([sys.executable, str(SCORE_PY), str(bench), str(pred)], capture_output=True, text=True, timeout=60)
        assert scored.returncode == 0 and "SUMMARY" in scored.stdout, scored.stderr[-2000:]


@pytest.mark.skipif(not SCORE_PY.is_file(), reason=f"{SCORE_PY} not found")
def test_eval_on_a_tiny_bench_prints_a_summary(workspace_copy, tmp_path):
    bench_root = tmp_path / "bench"
    bench = bench_root / "tiny"
    (bench / "corpus").mkdir(parents=True)
    for name in ("data_annex.pdf", "methods_appendix.pdf"):
        shutil.copyfile(SAMPLE_DIR / name, bench / "corpus" / name)
    shutil.copyfile(SCORE_PY, bench_root / "score.py")

    def q(qid, question, answers, doc, page):
        return {
            "id": qid, "question": question, "answers": answers, "answer_format": "str", "unanswerable": False,
            "gold": [{"doc": doc, "page": page, "bbox": None, "text": None}], "modality": "text", "hops": 1,
            "source": "strata-tests", "meta": {},
        }

    questions = [
        q("tiny-1", "How many Landsat scenes were used?", ["17"], "methods_appendix.pdf", 2),
        q("tiny-2", "How many hours above 30 °C did the Old Quay sensors record in July 2023?", ["96"], "data_annex.pdf", 2),
        q("tiny-3", "What was the accuracy of the 2023 canopy map?", ["94.6%"], "methods_appendix.pdf", 2),
    ]
    (bench / "questions.jsonl").write_text("".join(json.dumps(x) + "\n" for x in questions))
    out_dir = tmp_path / "eval_out"
    proc = run_cli("eval", "--workspace", str(workspace_copy), "--bench", str(bench), "--method", "hybrid", "--out-dir", str(out_dir))
    assert proc.returncode == 0, proc.stderr
    summary = [line for line in proc.stdout.splitlines() if line.startswith("SUMMARY")]
    assert len(summary) == 1, proc.stdout
    preds = list(out_dir.glob("*.jsonl"))
    assert len(preds) == 1
    assert sorted(json.loads(line)["id"] for line in preds[0].read_text().splitlines()) == ["tiny-1", "tiny-2", "tiny-3"]

    # --scoped: each question asked of its meta.doc_scope, and the report says so.
    questions[0]["meta"] = {"doc_scope": ["methods_appendix.pdf"]}
    (bench / "questions.jsonl").write_text("".join(json.dumps(x) + "\n" for x in questions))
    proc = run_cli("eval", "--workspace", str(workspace_copy), "--bench", str(bench), "--method", "hybrid", "--out-dir",
                   str(out_dir), "--scoped", "--limit", "1")
    assert proc.returncode == 0, proc.stderr
    assert "method=hybrid (scoped)" in proc.stdout
    scoped = out_dir / "tiny.hybrid.scoped.jsonl"
    assert {r["doc"] for r in json.loads(scoped.read_text().splitlines()[0])["results"]} == {"methods_appendix.pdf"}


def test_ask_of_chosen_documents_and_a_batch_scoped_by_its_questions(workspace_copy, tmp_path):
    question = "How many trees did the programme plant?"
    proc = run_cli("ask", "--workspace", str(workspace_copy), "--method", "strata", "--top-k", "5", "--json",
                   "--doc", "methods_appendix.pdf", "--doc", "data_annex.pdf", question)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["results"] and {r["doc"] for r in out["results"]} <= {"methods_appendix.pdf", "data_annex.pdf"}
    assert any("Asked of 2 chosen document(s)" in n for n in out["trace"]["notes"])

    proc = run_cli("ask", "--workspace", str(workspace_copy), "--json", "--doc", "no_such_report.pdf", question)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "error: Not in this workspace: 'no_such_report.pdf'" in proc.stderr and "Traceback" not in proc.stderr
    proc = run_cli("ask", "--workspace", str(workspace_copy), "--scoped", question)
    assert proc.returncode == 2 and "--scoped reads each question's meta.doc_scope" in proc.stderr

    # --scoped asks each question of the documents its meta.doc_scope names (the bench format).
    questions = tmp_path / "q.jsonl"
    rows = [{"id": "in-brief", "question": question, "meta": {"doc_scope": ["policy_brief.pdf"]}},
            {"id": "in-annex", "question": question, "meta": {"doc_scope": ["data_annex.pdf"]}}]
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    pred = tmp_path / "pred.jsonl"
    proc = run_cli("ask", "--workspace", str(workspace_copy), "--method", "bm25", "--top-k", "4", "--questions", str(questions),
                   "--out", str(pred), "--scoped")
    assert proc.returncode == 0, proc.stderr
    lines = {json.loads(line)["id"]: json.loads(line) for line in pred.read_text().splitlines()}
    assert {r["doc"] for r in lines["in-brief"]["results"]} == {"policy_brief.pdf"}
    assert {r["doc"] for r in lines["in-annex"]["results"]} == {"data_annex.pdf"}


def test_out_of_bounds_input_is_one_line_error_and_a_non_zero_exit(workspace_copy):
    too_long = "Why " + "x" * 2_100 + "?"
    for args, expected in (
        ([too_long], "at most 2,000 are accepted"),
        (["--top-k", "0", "How many trees were planted?"], "top_k must be a whole number between 1 and 100; got 0"),
        (["--top-k", "101", "How many trees were planted?"], "between 1 and 100; got 101"),
    ):
        proc = run_cli("ask", "--workspace", str(workspace_copy), "--json", *args)
        assert proc.returncode == 2, (args[:1], proc.stderr[-500:])
        assert proc.stdout == ""
        errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
        assert len(errors) == 1 and expected in errors[0], proc.stderr[-1000:]
        assert "Traceback" not in proc.stderr


def test_bad_arguments_are_reported_on_stderr(tmp_path):
    proc = run_cli("ask", "--workspace", str(tmp_path / "nowhere"), "--json", "anything")
    assert proc.returncode != 0
    assert proc.stdout == ""
    assert "No workspace" in proc.stderr


def test_ask_stages_switches_the_stages_and_names_an_unknown_one(workspace_copy):
    question = "What does Table 2 of the data annex show?"
    plain = run_cli("ask", "--workspace", str(workspace_copy), "--method", "strata", "--stages", "none", "--json", question)
    assert plain.returncode == 0, plain.stderr
    out = json.loads(plain.stdout)
    assert out["stages"] == []
    assert not [s for s in out["trace"]["steps"] if s["kind"] in ("stage", "profile")]
    bad = run_cli("ask", "--workspace", str(workspace_copy), "--method", "strata", "--stages", "quoted,sprad", question)
    assert bad.returncode != 0 and "'sprad'" in bad.stderr and "spread" in bad.stderr


def test_ingest_keeps_names_that_are_not_utf8_and_writes_nothing_in_the_current_folder(tmp_path):
    """`ingest --workspace W` from another folder: the names keep their bytes (escaped, two names
    one byte apart stay two documents), the speed record reopens the stored copy, and the ONNX
    export and the speed record go to the user's cache folder, not the current directory."""
    import pymupdf

    cwd, inputs, cache_home = tmp_path / "cwd", tmp_path / "in", tmp_path / "xdg-cache"
    cwd.mkdir()
    inputs.mkdir()
    for raw, words in ((b"latin1-\xe9\xff-not-utf8.pdf", "harbour lanterns"), (b"latin1-\xe9\xfe-not-utf8.pdf", "quay cranes")):
        with pymupdf.open() as pdf:
            pdf.new_page().insert_text((72, 72), f"A note about the {words} of the port.", fontsize=12)
            data = pdf.tobytes()  # MuPDF takes names as UTF-8: written by Python under the raw name
        (Path(os.fsdecode(os.path.join(os.fsencode(inputs), raw)))).write_bytes(data)
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
               PYTHONPATH=str(REPO_ROOT), XDG_CACHE_HOME=str(cache_home))
    for key in [k for k in env if k.startswith("STRATA_")]:
        del env[key]
    proc = subprocess.run([sys.executable, "-m", "backend", "ingest", "--workspace", str(tmp_path / "ws"), str(inputs)],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    files = {f["file_name"]: f["status"] for f in json.loads(proc.stdout)["files"]}
    assert files == {"latin1-\\xe9\\xfe-not-utf8.pdf": "ingested", "latin1-\\xe9\\xff-not-utf8.pdf": "ingested"}, files
    assert "ingest speed" not in proc.stderr, proc.stderr
    assert list(cwd.iterdir()) == [], "nothing is written in the current directory"
    assert (cache_home / "strata" / "ingest_speed.json").is_file()
    assert list((cache_home / "strata" / "onnx").glob("*.onnx")), "the ONNX export lives in the cache folder"
    inspect = run_cli("inspect", "--workspace", str(tmp_path / "ws"))
    assert {d["file_name"] for d in json.loads(inspect.stdout)} == set(files)


def test_the_cli_knows_the_workspace_file_the_store_writes():
    """`ask` refuses a folder without a workspace before it loads anything, by the store's file name."""
    from backend.__main__ import WORKSPACE_DB
    from backend.graph.store import DB_NAME

    assert WORKSPACE_DB == DB_NAME
