"""The offline `rules` backend, and the rules of the reader's prompt (task 'answer', the HiKEY/LILaC
reader: backend/llm/answer.py holds it as a typed task).

A typed task (backend/llm/task.py) carries its own rules, which `run` calls. The reader's rules:
given scored evidence units (sentences, table rows, figure regions), pick the ones that answer
the question, extract a short answer when the question asks for a number, date, name or yes/no,
cite them, or abstain with "not enough evidence" when the best evidence is weak. They do no
generation beyond extraction.
"""

from __future__ import annotations

import re
from typing import Any

from backend.llm.base import LLMUsage
from backend.llm.task import A, LLMTask, P
from backend.llm.text import QUESTION_WORDS, content_tokens

NOT_ENOUGH = "not enough evidence"
YESNO_RE = re.compile(r"^(is|are|was|were|does|do|did|can|could|has|have|had|will|would|should|may)\b", re.I)
NUMBER_Q_RE = re.compile(
    r"\b(how (many|much|long|old|far|large|big|high)|what (is|was|were|are) the (total|number|amount|percentage|share|rate|value|"
    r"cost|price|revenue|change|average|ratio|difference)|what (percentage|percent|proportion|share|fraction|number|amount)|"
    r"(percentage|percent|ratio|average|total)\b)",
    re.I,
)
DATE_Q_RE = re.compile(r"\b(when|what (year|date|month|day)|in which year|which year)\b", re.I)
WHO_Q_RE = re.compile(r"^\s*(who|whom|whose)\b", re.I)
NUMBER_RE = re.compile(r"[-−]?[$€£]?\(?\d[\d,]*(?:\.\d+)?\)?\s?(?:%|percent|million|billion|thousand|bn|m\b|k\b)?", re.I)
MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec"
DATE_RE = re.compile(
    rf"\b(?:(?:\d{{1,2}}\s+)?(?:{MONTHS})\.?\s+(?:\d{{1,2}},?\s+)?\d{{4}}|(?:{MONTHS})\s+\d{{1,2}}|\d{{4}}-\d{{2}}-\d{{2}}|(?:1[5-9]|20)\d{{2}})\b"
)
NAME_RE = re.compile(r"\b([A-Z][a-zA-Z'’\-]+(?:\s+(?:[A-Z]\.\s*)?[A-Z][a-zA-Z'’\-]+)+)")
NEGATIONS = {"not", "no", "never", "none", "neither", "nor", "without"}


def _negated(text: str) -> bool:
    return any(w in NEGATIONS or w.endswith("n't") for w in re.findall(r"[a-z']+", text.lower()))


class RulesBackend:
    name = "rules"

    def __init__(self) -> None:
        self.usage = LLMUsage()

    def run(self, task: LLMTask[P, A], payload: P) -> A:
        # Rules make no model calls: calls and tokens stay 0, so the cost shown is honest.
        self.usage.tasks[task.name] = self.usage.tasks.get(task.name, 0) + 1
        return task.run_rules(payload)

    def complete_json(
        self, task: str, prompt: str, payload: dict[str, Any], schema: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """The reader's 'answer' prompt as raw JSON; every other prompt is a typed task (run)."""
        if task != "answer":
            raise ValueError(f"The rules backend has no untyped task '{task}': run its LLMTask with run(task, payload).")
        self.usage.tasks[task] = self.usage.tasks.get(task, 0) + 1
        return answer_by_rules(payload["question"], payload["evidence"], float(payload.get("threshold", 0.35)))


def answer_by_rules(question: str, evidence: list[dict[str, Any]], threshold: float) -> dict[str, Any]:
    """The reader prompt's reply by rules (see the module docstring)."""
    if not evidence or evidence[0]["score"] < threshold:
        best = evidence[0]["score"] if evidence else 0.0
        return {"answer": NOT_ENOUGH, "citations": [], "abstain": True, "confidence": round(best, 3),
                "reason": f"best evidence score {best:.2f} is below the threshold {threshold:.2f}"}
    best = evidence[0]
    q = question.strip()
    q_tokens = content_tokens(q) - QUESTION_WORDS
    support = [e for e in evidence[:3] if e["score"] >= max(threshold, best["score"] - 0.08)]
    cited = [e["id"] for e in support]
    answer: str | None = None
    kind = "sentence"
    if YESNO_RE.match(q):
        kind = "yes/no"
        if best.get("coverage", 0.0) >= 0.6:
            answer = "No" if _negated(best["text"]) != _negated(q) else "Yes"
    elif WHO_Q_RE.match(q):
        kind = "name"
        answer = _extract(support, NAME_RE, q_tokens)
    elif DATE_Q_RE.search(q):
        kind = "date"
        answer = _extract(support, DATE_RE, q_tokens)
    elif NUMBER_Q_RE.search(q):
        kind = "number"
        strong = [e for e in evidence[:8] if e["score"] >= max(threshold, best["score"] - 0.3)]
        found = _number(strong, q_tokens, count=bool(re.search(r"\bhow many\b", q, re.I)))
        if found is not None:
            answer = found[0]
            cited = [found[1]] + [c for c in cited if c != found[1]][:1]
    if answer is None:
        kind = "sentence" if kind == "sentence" else f"{kind} (no short answer found; quoting the evidence)"
        answer = best["text"].strip()
    return {"answer": answer, "citations": cited, "abstain": False, "confidence": round(best["score"], 3),
            "reason": f"extractive {kind} answer from {len(cited)} unit(s)"}

def _extract(support: list[dict[str, Any]], pattern: re.Pattern, q_tokens: set[str]) -> str | None:
    for e in support:
        for m in pattern.finditer(e["text"]):
            value = m.group(0).strip()
            if not content_tokens(value) <= q_tokens or not content_tokens(value):
                return value
    return None

def _number(evidence: list[dict[str, Any]], q_tokens: set[str], count: bool = False) -> tuple[str, str] | None:
    """The number the question asks for: (value, id of the unit it came from).

    Scores every number in the strong evidence units: the unit's score, plus a bonus when
    the number is followed by a word of the question ("17 scenes"), a penalty when it is
    part of a name ("Landsat 8", "Table 2"); a table row gives the cell under the header
    the question names.
    """
    best: tuple[float, str, str] | None = None
    for e in evidence:
        text = e["text"]
        if e.get("kind") == "row":
            cells = [c.split(": ", 1) for c in text.split("; ") if ": " in c]
            named = [v for h, v in cells if content_tokens(h) & q_tokens and NUMBER_RE.search(v)]
            if named:
                cand = (e["score"] + 0.4, named[-1].strip(), e["id"])
                best = max(best, cand) if best else cand
                continue
        for m in NUMBER_RE.finditer(text):
            value = m.group(0).strip()
            if not re.search(r"\d", value) or re.fullmatch(r"(19|20)\d{2}", value):
                continue
            after = re.match(r"\s*([A-Za-z][\w-]*)", text[m.end():])
            before = re.search(r"([A-Za-z][\w.-]*)\s*$", text[: m.start()])
            bonus = 0.0
            if after and content_tokens(after.group(1)) & q_tokens:
                bonus += 0.5
            if before and before.group(1)[:1].isupper() and not after:
                bonus -= 0.3
            if before and before.group(1)[:1].isupper() and before.group(1).lower() not in ("in", "of", "by"):
                bonus -= 0.3
            if count and ("%" in value or "percent" in value):
                bonus -= 0.4  # "how many" asks for a count, not a share
            window = text[max(0, m.start() - 60): m.end() + 30]
            bonus += 0.05 * len(content_tokens(window) & q_tokens)
            cand = (e["score"] + bonus, value, e["id"])
            best = max(best, cand) if best else cand
    return (best[1], best[2]) if best else None
