"""The offline `rules` backend, and the rules of the reader's prompt (task 'answer', the HiKEY/LILaC
reader: backend/llm/answer.py holds it as a typed task).

A typed task (backend/llm/task.py) carries its own rules, which `run` calls. The reader's rules:
given scored evidence units (sentences, table rows, figure regions), type the question (number,
date, person, place, definition, yes/no, sentence), rank every unit above the threshold by its
score plus its fit to that type (and, when the retriever decomposed the question, its coverage
of the subquery that asks what the question asks), extract a short answer from the winner, cite only the units that support
it, or abstain with "not enough evidence" when the best evidence is weak or no unit holds the
asked type and coverage is weak. They do no generation beyond extraction.

Knobs (TYPE_WEIGHT, FINAL_SUBQUERY_WEIGHT, BRIDGE_WEIGHT, WEAK_COVERAGE, CITE_COVERAGE, MAX_CITED) were set
by reasoning, not searched; the question-type patterns, row arithmetic and 'respective' rules came
from reading the tune half's misses (bench/reader_quality.py); its check half is the figure to
quote. The mid-question types ("... developed by which company?"), the modifier and initials rules
and the asking subquery came from reading strata's dev-hotpot-pdf tune answers (hotpot tune EM
0.052 -> 0.104, F1 0.090 -> 0.168; check EM 0.096 -> 0.096, F1 0.144 -> 0.166; the other dev
collections within 0.003; bench/RESULTS.md, sixteenth session). A bound on the chosen unit's
coverage was measured on the tune half and left out: at 0.5 it abstained on 12 more off-corpus
questions but on 15 answerable ones, hotpot's among them. For a decomposed question that asks
for a number, the number is looked for near the asking subquery's words, and only in units that
share one of them: the first hop's page of a 3-page chain scores best against the whole question
and holds numbers of its own ("2017-18 school year"; eighteenth session). The units of a bridge
page (the page another subquery's best unit names, marked by the reader) are read for the asking
subquery, and the bridge's own name is no answer; an interrogative that closes the question
("... since what year?") is answered by the span that follows the same words in the unit
(twenty-second session: strata's hotpot tune EM 0.104 -> 0.135, F1 0.167 -> 0.219; tatqa,
docugami and mmlongbench tune unchanged). A title quoted beside the asked kind ('album "The
Marshall Mathers LP 2"') answers a which-kind question, and "the full name" is what an acronym in
brackets abbreviates (hotpot tune EM 0.135 -> 0.156). "Who is younger, A or B?" and "Which was
released first, A or B?" compare the two names' dates, read where the evidence says when each was
born (released, founded ...); without both dates the other rules answer (tune EM 0.156 -> 0.177).
A place question takes a name of the asked place kind first ("New York City" for "what city").
A question answered by a sentence gets what the sentence says after the question's words it
echoes ("Goodwill consists of | the excess of ..."), unless it asks "What is X?" (the defining
sentence, subject and all) or the echo is not the sentence's opening; a row answers "What was X
in 2018?" with its 2018 cell; "How many years did X exceed N?" counts a row's years past N; an
average that names no year is over the row's years; "F19"/"FY18" name years; computed figures are
never written in exponent notation; a figure in brackets that name another year than the asked
one is the comparative (twenty-third session, from strata's tatqa tune misses: tune EM 0.306 ->
0.363, F1 0.421 -> 0.460; hotpot, docugami and mmlongbench tune unchanged). A sentence that
defines its subject as the kind a which/what question asks for ("Animorphs is a science fantasy
series ...") answers with that subject; a decomposed question's bridge-page unit that says what
the asking subquery's words are ("Its county seat is Newport") answers with what follows; a figure
can fill the closing interrogative's slot ("a population of what" -> "48,982"); a question the
retriever left unsplit, whose best unit names a page but lacks the asked named thing, date or
number, is read on that page; "which year" takes a date's year before 1900 too (twenty-fourth
session, from strata's hotpot tune misses: tune EM 0.177 -> 0.219, F1 0.277 -> 0.313; tatqa,
docugami and mmlongbench unchanged). A count may be a word before the counted thing ("three world
titles"), a name after "by" keeps its initial ("Robert J. Sherman"), and a figure inside a modifier
("a 15-county area") is no answer; "Who produced ...?" takes the name after "produced by", in a
clause about what the question asks (from the probe's chain answers, bench/phrasing_probe.py
--answers: strata 11 -> 18 of 55 tune questions; tatqa tune EM 0.363 -> 0.365). A page one hop past a
bridge, named there by the role the asking subquery asks about ("When was the star of the series
born": "starring Nell Quade"), ranks ROLE_HOP_WEIGHT above the bridge's own units (18 -> 20).

What is not here: scoring the units (backend/reader.py does) or choosing the threshold
(settings.reader.abstain_threshold).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from backend.llm.base import LLMUsage
from backend.llm.task import A, LLMTask, P
from backend.llm.text import QUESTION_WORDS, WORD_RE, content_tokens, content_tokens_each, named_label, row_label

NOT_ENOUGH = "not enough evidence"
YESNO_RE = re.compile(r"^(is|are|was|were|does|do|did|can|could|has|have|had|will|would|should|may)\b", re.I)
NUMBER_Q_RE = re.compile(
    r"\b(how (many|much|long|old|far|large|big|high)|what (is|was|were|are) the (total|number|amount|percentage|share|rate|value|"
    r"cost|price|revenue|change|average|ratio|difference|increase|decrease|sum|proportion)|what (percentage|percent|proportion|share|fraction|number|amount)|"
    r"(percentage|percent|ratio|average|total)\b)",
    re.I,
)
# "When was/did ..." asks for a date; "When is the test necessary?" asks for a condition (a sentence).
DATE_Q_RE = re.compile(r"\b(when (was|were|did|had|will)|what (year|date|month|day)s?|in (which|what) years?|which (years?|fy|fiscal years?)|since when)\b", re.I)
# "In which year was X the largest?", "Which FY has a higher EBITDA?": a year (or years) is the answer.
YEARS_Q_RE = re.compile(r"\b(?:which|what)\s+(?:years?|fy|fiscal years?)\b", re.I)
MORE_Q_RE = re.compile(r"\b(?:larg\w*|high\w*|more|great\w*|most|bigg\w*)\b", re.I)
LESS_Q_RE = re.compile(r"\b(?:low\w*|less|small\w*|least|fewer)\b", re.I)
THRESHOLD_Q_RE = re.compile(r"\b(?P<op>less than|below|under|more than|greater than|exceed(?:s|ed)?|above|over)\s*\$?\s*(?P<n>\d[\d,]*(?:\.\d+)?)", re.I)
# "What was the effective tax rate in 2018?": a quantity named anywhere after "what is/was the".
QUANTITY_Q_RE = re.compile(
    r"\bwhat (is|was|were|are) (the )?[^?]{0,60}?\b(amount|value|rate|total|number|percentage|ratio|change|difference|"
    r"average|revenue|profit|loss|income|expense|cost|sales|margin|ebitda|balance|price|population|attendance|capacity|"
    r"enrollment|area|height|elevation|length)s?\b", re.I)
RESPECTIVE_RE = re.compile(r"\brespective(ly)?\b", re.I)
YEAR_RE = re.compile(r"\b(?:19|20)\d{2}\b")
DATE_YEAR_RE = re.compile(r"\b(?:1[5-9]|20)\d{2}\b")  # the year of a date DATE_RE found ("June 25, 1887")
# "What government position ...", "Which band ...": a named thing (answered by a capitalised phrase).
ENTITY_Q_RE = re.compile(r"^\s*(which|what)\s+(?!(is|was|are|were|does|do|did|has|have|had|can|could|will|would)\b)[a-z]", re.I)
ENTITY_RE = re.compile(r"\b[A-Z][\w'’.-]*(?:\s+(?:(?:of|the|and|de|for|in)\s+)?[A-Z][\w'’.-]*)*")
REASON_Q_RE = re.compile(r"\b(reason|why|explain|describe|what caused|how did)\b", re.I)
NUMBER_RE = re.compile(r"[-−]?[$€£]?\(?\d[\d,]*(?:\.\d+)?\)?\s?(?:%|percent|million|billion|thousand|bn|m\b|k\b)?", re.I)
MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec"
MONTH_RE = re.compile(rf"(?:{MONTHS})\.?")
DATE_RE = re.compile(
    rf"\b(?:(?:\d{{1,2}}\s+)?(?:{MONTHS})\.?\s+(?:\d{{1,2}},?\s+)?\d{{4}}|(?:{MONTHS})\s+\d{{1,2}}|\d{{4}}-\d{{2}}-\d{{2}}|(?:1[5-9]|20)\d{{2}})\b"
)
NAME_RE = re.compile(r"\b((?:[A-Z]\.\s*)+[A-Z][a-zA-Z'’\-]+|[A-Z][a-zA-Z'’\-]+(?:\s+(?:[A-Z]\.\s*)?[A-Z][a-zA-Z'’\-]+)+)")
ADJECTIVE_USE_RE = re.compile(r"\s+(?!(?:of|the|and|de|for|in|is|was|are|were|has|had|who|which|that|a|an|to|on|at|by|from|with|as)\b)[a-z]")
COMPOUND_RE = re.compile(r"-[a-z]+$")
_WH = r"(?:who|whom|whose|what|which|when|where|how)"
INTERROGATIVE_RE = re.compile(
    rf"^\s*{_WH}\b|\b(?:by|in|since|of|for|from|to|at|on|with|during|as|until|before|after|than)\s+{_WH}\b|\b{_WH}\s*\??\s*$", re.I)
SENTENCE_OPENERS = frozenset(
    "she he it they we i you his her its their our this that these those there thus however after before in on at by "
    "from with as when while although though since during following later also then today a an the "
    # prepositions, quantifiers and participles that open a sentence ("Along with Kapaun Mt. Carmel ...")
    "along despite according among amongst between through throughout against around upon unlike besides within "
    "both each every many most some several another other originally currently formerly located based born founded".split())
FOOTNOTE_RE = re.compile(r"\(\d\)")
FOOTNOTE_LEAD_RE = re.compile(r"^\(\d{1,2}\)\s+(?=[A-Z])")  # "(2) Original Equipment Manufacturers ...": a note's label
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



# ---------------------------------------------------------------- the reader's answer rules

# "Which country music star ...", "... by which former Governor of Arkansas?": up to three words
# between the question word and the noun that says a person is asked for (no verb or article:
# "What was the State income tax" asks for no state).
_WORDS = r"(?:(?!(?:is|was|are|were|the|a|an)\b)[\w'’-]+ ){{0,{}}}?"
PERSON_Q_RE = re.compile(
    rf"^\s*(who|whom|whose)\b|\bby (who|whom)\b|\b(which|what) {_WORDS.format(3)}(person|man|woman|actor|actress|author|writer|"
    r"director|player|singer|president|king|queen|founder|composer|artist|star|politician|musician|governor|ruler|manager|"
    r"coach|novelist|playwright|poet|producer|businessman|footballer|athlete|emperor)\b|"
    rf"\bwhat is the name of the {_WORDS.format(3)}(person|man|woman|singer|actor|actress|author|writer|novelist)\b", re.I)
PLACE_Q_RE = re.compile(
    rf"^\s*where\b|\b(in|at|from|to|near) (which|what) {_WORDS.format(2)}(city|country|state|town|county|region|province|island|place)\b|"
    rf"\b(which|what) {_WORDS.format(2)}(city|country|state|town|county|region|province|island|river)\b(?! (?:music|club|team|singer|star))", re.I)
# "... developed by which company?", "... voiced what hedgehog?": a named thing asked for mid-question.
ENTITY_MID_RE = re.compile(
    r"\b(which|what)\s+(?!(?:is|was|are|were|does|do|did|has|have|had|can|could|will|would|the|a|an|of|to|in|kind|type|sort|"
    r"way|extent|happened|makes|made|years?|periods?|time|timeframe)\b)[a-z0-9]", re.I)
# "What is the name of the fight song ...": the name of a thing.
NAME_OF_RE = re.compile(r"\bwhat (?:is|was|are|were) the (?:full )?names? of\b", re.I)
DEFINE_Q_RE = re.compile(
    r"\bwhat (?:does|do|did) (?P<a>.+?) (?:do|mean|stand for|refer to|represent|return)\b|"
    r"\bwhat is (?P<b>.+?) used for\b|\bwhat is meant by (?P<c>[^?]+)", re.I)
OPTION_RE = re.compile(r"(?<![\w\[-])(--?[A-Za-z0-9][\w-]*)")
NEXT_OPTION_RE = re.compile(r"\s(?=--?[A-Za-z0-9][\w-]*(?:,|\s{2,}|\s+[a-z]|\s+[A-Z_<][\w<>]*\s))")
BY_NAME_RE = re.compile(r"\bby (?:the )?([A-Z][\w'’-]+(?:\s+(?:(?:of|and|&|for)\s+)?(?:[A-Z]\.|[A-Z][\w'’-]+))*)")
PLACE_RE = re.compile(r"\b(?:in|at|from|near)\s+((?:[A-Z][\w'’-]+)(?:\s+[A-Z][\w'’-]+)*)")
TERM_NOISE = {"the", "a", "an", "option", "flag", "switch", "command", "function", "term", "parameter", "argument"}
TYPED = ("number", "date", "person", "place", "definition")
TYPE_WEIGHT = 0.5  # a unit of the asked type ranks above any eligible unit without one
FINAL_SUBQUERY_WEIGHT = 0.2  # per unit of coverage of the asking subquery (0.4: tatqa tune EM 0.264 -> 0.232)
ROLE_HOP_WEIGHT = 0.25  # a page the bridge names by the asked role holds the answer more surely than the bridge's own
BRIDGE_WEIGHT = 0.5  # a unit on a bridge page (reader.on_bridge_pages): as much as holding the asked type (0.3: the same tune EM)
WEAK_COVERAGE = 0.5  # no unit of the asked type and best coverage below this: abstain
CITE_COVERAGE = 0.5  # a second unit is cited when it covers this share of the question's terms (and the chosen one's)
MAX_CITED = 3
# A question the retriever did not split is read on a page its best unit names only when it asks
# for a named thing, a date or a number that unit does not hold ("... a play by a playwright born in
# which year?": "Three Men on a Horse is a play by George Abbott ...", the year on Abbott's page).
UNSPLIT_BRIDGE_TYPES = ("number", "date", "person", "place", "entity")
DEFINED_FIT = 1.5  # a sentence that defines its subject as the asked kind holds the answer more surely than any name in it
# a row from which the asked arithmetic is computed over the asked years holds the answer more surely than a
# row with a cell whose header shares the question's words ("Percentage of Total Fees" for "the total ... in
# both 2018 and 2019"); tatqa tune EM 0.377 (1.5) -> 0.388 (1.8) = 0.388 (2.2, lower F1)
COMPUTED_FIT = 1.8
# a table row holding what is asked whose whole label the question writes ("Operating expenses" for "the change
# in operating expenses", not "Other operating expenses"); tatqa tune EM 0.397 (0), 0.428 (0.05), 0.436 (0.1), 0.431 (0.2)
LABEL_WEIGHT = 0.1


def question_type(question: str) -> str:
    """What the question asks for: yes/no, person, date, place, definition, number or sentence."""
    q = question.strip()
    if YESNO_RE.match(q):
        return "yes/no"
    if PERSON_Q_RE.search(q):
        return "person"
    if DATE_Q_RE.search(q):
        return "date"
    if PLACE_Q_RE.search(q):
        return "place"
    if DEFINE_Q_RE.search(q):
        return "definition"
    if REASON_Q_RE.search(q):
        return "sentence"
    if RESPECTIVE_RE.search(q) and len(set(YEAR_RE.findall(q))) >= 2:
        return "number"  # "What are the respective dividend yield in 2017 and 2018?"
    if NUMBER_Q_RE.search(q) or QUANTITY_Q_RE.search(q):
        return "number"
    if ENTITY_Q_RE.search(q) or NAME_OF_RE.search(q) or ENTITY_MID_RE.search(q):
        return "entity"
    return "sentence"


def defined_terms(question: str) -> list[str]:
    """The term a definition question asks about: its options ("-c") or the words before 'do/mean'."""
    options = OPTION_RE.findall(question)
    if options:
        return options
    m = DEFINE_Q_RE.search(question)
    if not m:
        return []
    words = [w for w in re.findall(r"[\w'’.-]+", next(g for g in m.groups() if g)) if w.lower() not in TERM_NOISE]
    return [" ".join(words)] if words else []


def _inside_brackets(text: str, pos: int) -> bool:
    before = text[:pos]
    return before.count("[") > before.count("]") or before.count("{") > before.count("}")


def _definition(text: str, terms: list[str]) -> tuple[float, str | None]:
    """(fit, the definition) of a unit for a definition question: an option-list item that starts
    with the term ("-c, --check  checks the syntax only") fits 1; the term defined inside a run-on
    paragraph fits 0.8; a mention inside brackets (a usage line "[-c]") does not count."""
    best: tuple[float, str | None] = (0.0, None)
    for term in terms:
        for m in re.finditer(rf"(?<![\w\[-]){re.escape(term)}(?![\w])", text, re.I):
            if _inside_brackets(text, m.start()) or "usage" in text[: m.start()].lower()[-40:]:
                continue
            rest = re.sub(r"^(?:\s*,?\s*--?[\w-]+(?:[= ][A-Z_<>\[\]]+)?)*", "", text[m.end():])
            rest = NEXT_OPTION_RE.split(rest, maxsplit=1)[0].strip(" \t:;,-–—=")
            if len(rest.split()) < 2 and not term.startswith("-"):
                rest = ""
            if not rest or len(rest.split()) < 2:
                continue
            fit = 1.0 if m.start() <= 3 else 0.8
            if fit > best[0]:
                best = (fit, rest.rstrip(".") if term.startswith("-") else None)
    return best


def row_cells(text: str) -> list[list[str]]:
    """A table row's "header: value" cells, as its index text writes them ("Table 1: column 1:
    Dividend yield; 2019: 4.5%; 2018: 4.6%"), a header's spaced-out year closed up ("2 0 1 8: 57,768")."""
    return [[unspaced(h), v] for h, v in (c.split(": ", 1) for c in text.split("; ") if ": " in c)]


def _value_spans(text: str) -> list[tuple[int, int]]:
    """Where a table row's cell values stand in its text ("Table 1: column 1: Deferred revenue;
    Balance at End of Period: $3,444; ..."): after each cell's last ": ", the label's cell left out."""
    spans, start = [], 0
    for i, cell in enumerate(text.split("; ")):
        colon = cell.rfind(": ")
        if i and colon >= 0:
            spans.append((start + colon + 2, start + len(cell)))
        start += len(cell) + 2
    return spans


NUMBER_WORDS = ("one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
                "seventeen eighteen nineteen twenty")
NUMBER_WORD_RE = re.compile(rf"\b(?:{NUMBER_WORDS.replace(' ', '|')})\b", re.I)
COMPOUND_AFTER_RE = re.compile(r"-([A-Za-z]+)")  # "15-county": a number inside a modifier


def _numbers(
    e: dict[str, Any], q_tokens: set[str], count: bool, pairs: int = 0, years: tuple[str, ...] = ()
) -> list[tuple[float, str]]:
    """(bonus, value) of every number in a unit that could answer a number question: a bonus when
    the number is followed by a word of the question ("17 scenes") or sits near its words, a
    penalty when it is part of a name ("Landsat 8", "Table 2"); a table row gives the cell under
    the header that shares most words with the question (bonus 0.4; `pairs`: the question says
    "respectively" about `pairs` years: one cell per year of `years`, in the question's order, else
    the first `pairs` such cells in row order). Years are dates, not numbers. A figure inside a
    modifier ("a 15-county area") gets a penalty unless the question names what it counts. A count
    may be written as a word before the counted thing ("three world titles")."""
    text = e["text"]
    if e.get("kind") == "row":
        cells = row_cells(text)
        named = [(len(content_tokens(h) & q_tokens), i, v.strip()) for i, (h, v) in enumerate(cells)
                 if content_tokens(h) & q_tokens and NUMBER_RE.search(v)]
        if named and pairs and len(named) >= 2:
            by_year = [next((v.strip() for h, v in cells if y in h and NUMBER_RE.search(v)), None) for y in years]
            if len(by_year) >= 2 and all(by_year):  # in the order the question names the years
                return [(0.4, ", ".join(by_year))]  # type: ignore[arg-type]
            return [(0.4, ", ".join(v for _, _, v in named[:pairs]))]
        if named:
            return [(0.4, max(named)[2])]
    found: list[tuple[float, str]] = []
    cells = _value_spans(text) if e.get("kind") == "row" else None
    for m in NUMBER_RE.finditer(text):
        if cells is not None and not any(start <= m.start() < end for start, end in cells):
            continue  # a row's figures are its cells': not "Table 1" nor a header's "(1/1/19)"
        value = m.group(0).strip().rstrip(",.")  # "2018," in running text is the year 2018
        if not re.search(r"\d", value) or re.fullmatch(r"(19|20)\d{2}", value.strip("()")):
            continue  # a year, also "(2018: $6.6 million)"
        if m.start() <= 1 and FOOTNOTE_RE.fullmatch(value):
            continue  # a note's own label: "(1) Strategic Alternative Evaluation costs are ..."
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
        opened = text.rfind("(", 0, m.start())
        if years and opened >= 0 and ")" not in text[opened:m.start()]:
            named = years_in(text[opened + 1:m.start()])
            if named and not set(named) & set(years):
                bonus -= 0.5  # "(2018: $6.6 million)" beside the asked year's figure: the comparative
        window = text[max(0, m.start() - 60): m.end() + 30]
        bonus += 0.05 * len(content_tokens(window) & q_tokens)
        compound = COMPOUND_AFTER_RE.match(text, m.end())
        if compound and not content_tokens(compound.group(1)) & q_tokens:
            bonus -= 0.3
        found.append((bonus, value))
    if count:
        for m in NUMBER_WORD_RE.finditer(text):
            after = re.match(r"\s+(?:[A-Za-z][\w-]*\s+)?([A-Za-z][\w-]*)", text[m.end():])
            if after and content_tokens(after.group(0)) & q_tokens:
                found.append((0.5 + 0.05 * len(content_tokens(text[max(0, m.start() - 60): m.end() + 30]) & q_tokens), m.group(0)))
    return found


ARITH_RE = re.compile(
    r"\b(?P<pct>percentage (change|increase|decrease|difference)|% change|change \(%\)|change in %)|\b(?P<avg>average|mean)\b|"
    r"\b(?P<chg>change|increase|decrease|difference|growth)\b|\b(?P<sum>total|sum|combined|altogether)\b", re.I)


def cell_value(text: str) -> float | None:
    """A table cell as a number: "$(9,399)" -> -9399.0; None when it is not one."""
    t = text.strip().replace("$", "").replace(",", "").replace(" ", "").rstrip("%")
    neg = t.startswith("(") and t.endswith(")")
    try:
        value = float(t.strip("()").replace("−", "-"))
    except ValueError:
        return None
    return -value if neg else value


FY_RE = re.compile(r"\bF(?:Y\s?)?'?((?:19|20)?\d{2})\b")  # "F19", "FY18", "FY'19", "FY2019": a fiscal year
SPACED_YEAR_RE = re.compile(r"\b(?:1 9|2 0) \d \d\b")  # "2 0 1 8": a header set in spaced-out type, as extracted


def unspaced(text: str) -> str:
    """`text` with each year set in spaced-out type closed up: "2 0 1 8" -> "2018"."""
    return SPACED_YEAR_RE.sub(lambda m: m.group(0).replace(" ", ""), text)


def years_in(text: str) -> list[str]:
    """The years a question or a column header names, in order, once each: "2019", a fiscal year
    written short ("F19", "FY18") as the year it stands for ("2019", "2018"), and a year set in
    spaced-out type ("2 0 1 8"), as a PDF's letter-spaced header is extracted."""
    text = unspaced(text)
    found = [(m.start(), m.group(0)) for m in YEAR_RE.finditer(text)]
    found += [(m.start(), m.group(1) if len(m.group(1)) == 4 else "20" + m.group(1)) for m in FY_RE.finditer(text)]
    return list(dict.fromkeys(y for _, y in sorted(found)))


def _arithmetic(question: str, e: dict[str, Any]) -> str | None:
    """What a row gives by arithmetic over the years the question names (TAT-QA style): the
    change from the earlier to the later year, its percentage, the average or the total; an
    average that names no year is over every year the row holds ("What was the average realized
    losses?"). None when the question asks for none of these or the row lacks a cell for each year."""
    years = years_in(question)
    m = ARITH_RE.search(question)
    if e.get("kind") != "row" or not m or RESPECTIVE_RE.search(question):
        return None  # "X in 2019 and 2018 respectively" asks for the values, not their sum
    if YEAR_AVERAGE_RE.search(question):
        return _year_averages(question, e, m)
    if not years and m.group("avg"):
        row = {y: v for y, v in (_row_years(e) or {}).items() if v is not None}
        return plain_number(sum(row.values()) / len(row)) if len(row) >= 2 else None
    cells = row_cells(e["text"])
    op = re.sub(r"[^a-z%]", " ", m.group(0).lower()).split()[-1]
    if len(years) < 2 or any(op in h.lower() for h, _ in cells):
        return None  # the row has the figure already (a "Change (%)" column): the cell answers
    values: dict[str, float] = {}
    for y in years:
        found = [cell_value(v) for h, v in cells if y in years_in(h) and cell_value(v) is not None]
        if not found:
            return None
        values[y] = found[0]
    early, late = values[min(years)], values[max(years)]
    if m.group("avg") and re.search(rf"\bfrom {min(years)} to {max(years)}\b", question):
        for h, v in cells:  # "average ... from 2015 to 2019": every year in the range the row holds
            y = re.search(r"\b(?:19|20)\d{2}\b", h)
            if y and min(years) < y.group(0) < max(years) and y.group(0) not in values and cell_value(v) is not None:
                values[y.group(0)] = cell_value(v)
    if m.group("pct"):
        result = (late - early) / early * 100 if early else None
    elif m.group("avg"):
        result = sum(values.values()) / len(values)
    elif m.group("chg"):
        result = late - early
    else:
        result = sum(values.values())
    # A percentage change, or arithmetic over cells written in per cent, is written with its sign.
    percent = bool(m.group("pct")) or all("%" in v for h, v in cells if set(years) & set(years_in(h)))
    return None if result is None else plain_number(result) + ("%" if percent else "")


YEAR_AVERAGE_RE = re.compile(r"\b(?:19|20)\d{2} average\b", re.I)


def _year_averages(question: str, e: dict[str, Any], m: re.Match) -> str | None:
    """A year's average of a balance, as a report computes it: the mean of the figures at the year's
    end and at the end of the year before. "What is the 2019 average free cash flow?" is the mean of
    the 2019 and 2018 cells; "the change between 2018 and 2019 average free cash flow" is the 2019
    average less the 2018 one. None when the row lacks a cell for a year it needs."""
    by_year = {y: v for y, v in (_row_years(e) or {}).items() if v is not None}
    averages = []
    for year in years_in(question):
        pair = [by_year.get(year), by_year.get(str(int(year) - 1))]
        if None in pair:
            return None
        averages.append((year, sum(pair) / 2))
    if len(averages) == 1 and not m.group("chg") and not m.group("pct"):
        return plain_number(averages[0][1])
    if len(averages) != 2:
        return None
    (_, early), (_, late) = sorted(averages)
    if m.group("pct"):
        return plain_number((late - early) / early * 100) + "%" if early else None
    return plain_number(late - early) if m.group("chg") else None


def plain_number(value: float) -> str:
    """A computed figure as a report writes it, to two decimals at most and never in exponent
    notation: 12085200.5 -> "12085200.5" ("{:g}" gave "1.20852e+07"), -16189.0 -> "-16189"."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def _row_years(e: dict[str, Any]) -> dict[str, float | None] | None:
    """A table row's value under each year column, in the row's order (None: no row with two or
    more year columns)."""
    if e.get("kind") != "row":
        return None
    by_year: dict[str, float | None] = {}
    for head, value in row_cells(e["text"]):
        found = years_in(head)
        if len(found) == 1 and found[0] not in by_year:
            by_year[found[0]] = cell_value(value)
    return by_year if len(by_year) >= 2 else None


def _past_threshold(question: str, values: dict[str, float]) -> list[str] | None:
    """The years whose value is past the question's threshold ("less than 100.0 million",
    "exceed $10,000"); None when the question sets none."""
    t = THRESHOLD_Q_RE.search(question)
    if t is None:
        return None
    n = float(t.group("n").replace(",", ""))
    below = t.group("op").lower() in ("less than", "below", "under")
    return [y for y, v in values.items() if (v < n if below else v > n)]


def _years_answer(question: str, e: dict[str, Any]) -> str | None:
    """The year(s) a table row gives a "which year" question (TAT-QA style), in the row's order:
    those past the question's threshold ("less than 100.0 million"), the one with the largest or
    smallest value ("In which year was X larger?"), or every year it holds ("In which years was X
    calculated?"). None when the unit is no row with two or more year columns."""
    by_year = _row_years(e) if YEARS_Q_RE.search(question) else None
    if by_year is None:
        return None
    values = {y: v for y, v in by_year.items() if v is not None}
    hits = _past_threshold(question, values)
    if hits is not None:
        return ", ".join(hits) or None
    more, less = bool(MORE_Q_RE.search(question)), bool(LESS_Q_RE.search(question))
    if more != less:
        if len(values) < 2:
            return None
        return (max if more else min)(values, key=values.__getitem__)
    return ", ".join(by_year)


def _cell_of_year(question: str, e: dict[str, Any]) -> str | None:
    """The cell of a table row under the one year the question names ("What was the Accrued
    postretirement benefits in 2018?"): None unless exactly one of the row's headers holds it."""
    years = set(years_in(question))
    if e.get("kind") != "row" or len(years) != 1:
        return None
    cells = [v.strip() for h, v in row_cells(e["text"]) if years <= set(years_in(h))]
    return cells[0] if len(cells) == 1 and cells[0] else None


HOW_MANY_YEARS_RE = re.compile(r"\bhow many (?:fiscal )?years\b", re.I)


def _years_counted(question: str, e: dict[str, Any]) -> str | None:
    """How many of a row's years pass the question's threshold: "How many years did net sales
    exceed $200,000 thousand?" (TAT-QA's count questions). None for any other question or unit."""
    by_year = _row_years(e) if HOW_MANY_YEARS_RE.search(question) else None
    if by_year is None:
        return None
    hits = _past_threshold(question, {y: v for y, v in by_year.items() if v is not None})
    return None if hits is None else str(len(hits))


def _first_new(pattern: re.Pattern, text: str, q_tokens: set[str]) -> str | None:
    """The first match whose words are not all the question's own ("Who wrote Hamlet?" is not
    answered by "Hamlet")."""
    for m in pattern.finditer(text):
        value = (m.group(1) if m.groups() else m.group(0)).strip().rstrip(",;:")
        if value.endswith(".") and len(value.split()[-1]) > 4:
            value = value[:-1]  # the sentence's full stop, not an abbreviation's ("Columbia University.", not "Inc.")
        if value.isupper() and len(value) > 4:
            continue  # an upper-case heading ("AMERICAN TOWER CORPORATION"), not a name
        if value[:1].isupper() and ((" " not in value and ADJECTIVE_USE_RE.match(text, m.end())) or COMPOUND_RE.search(value)):
            continue  # a modifier, not a name: "American country music artist", "United Kingdom-based"
        if value.lower() in SENTENCE_OPENERS:
            continue  # capitalised by its place in the sentence: "She is the voice of ...", "Thus, ..."
        if pattern is not DATE_RE and MONTH_RE.fullmatch(value):
            continue  # a date's month ("(April 23, 1928 – ..."), no name
        if content_tokens(value) and not content_tokens(value) <= q_tokens:
            return value
    return None


# The interrogative that ends the question, after the words it completes: "... an expert on
# whom?", "... has worked in France since what year?", "... houses approximately 65,000 what?".
ALIGN_RE = re.compile(r"(?P<left>(?:[^\s,;:?\"]+\s+){1,3})(?:what|which|whom|who)(?:\s+[\w'’-]+){0,2}\s*\??\s*$", re.I)
# "Who is Bruce Spizer an expert on, ...?": the interrogative's slot is after the preposition its clause ends on
STRANDED_RE = re.compile(
    r"^\s*(?:who|whom|what|which)\b.*?\s(?P<left>(?:[^\s,;:?\"]+\s+){1,2}(?:on|of|for|in|at|with|by|from|to|about|into))\s*(?:,|\?|$)",
    re.I)
TEMPORAL = frozenset({"since", "until", "till", "before", "after", "from", "by"})
SLOT_NUMBER_RE = re.compile(r"[$€£]?\d[\d,]*(?:\.\d+)?(?:\s?(?:%|percent|million|billion|thousand))?(?![\w-])")
LOWER_RUN_RE = re.compile(r"[a-z][\w'’-]*(?:\s+(?!(?:and|or|of|in|on|at|to|for|with|by|from|as|that|which|who|was|is)\b)[a-z][\w'’-]*)?")


def _aligned(qtype: str, text: str, question: str, q_tokens: set[str]) -> str | None:
    """The span that stands in the unit where the question's interrogative stands: right after the
    words before it. "Since what year" is answered by "since 2000", not by the "born 3 May 1956"
    before it; "65,000 what" by "65,000 drawings". The anchor is the last one to three of those
    words that the unit writes, holding a content word (a lone since/until/before/after/from/by
    anchors a date); the span is a date, a number, a quoted title, a name or a short lower-case
    phrase, by the asked type, and not all the question's own words."""
    m = ALIGN_RE.search(question) or (STRANDED_RE.search(question) if qtype != "sentence" else None)
    if m is None:  # "What do the purchase obligations consist of?" asks for a clause, not for a slot's filler
        return None
    left = m.group("left").split()
    for n in range(min(3, len(left)), 0, -1):
        words = left[-n:]
        if not content_tokens(" ".join(words)) and not (n == 1 and qtype == "date" and words[0].lower() in TEMPORAL):
            continue
        for hit in re.finditer(r"(?<![\w])" + r"\s+".join(map(re.escape, words)) + r"\s+(?:(?:the|a|an)\s+)?", text, re.I):
            rest = text[hit.end():]
            if qtype == "date":
                found = DATE_RE.match(rest)
            elif qtype == "number":
                found = NUMBER_RE.match(rest)
            else:  # a quoted title, a name, a figure ("a population of what" -> "48,982") or a short phrase
                found = re.match(r"\"([^\"]{2,80})\"", rest) or ENTITY_RE.match(rest) or SLOT_NUMBER_RE.match(rest) \
                    or LOWER_RUN_RE.match(rest)
            if found:
                value = (found.group(1) if found.groups() else found.group(0)).strip().rstrip(".,;:")
                if value and content_tokens(value) and not content_tokens(value) <= q_tokens:
                    if qtype == "date" and YEARS_Q_RE.search(question) and DATE_YEAR_RE.search(value):
                        value = DATE_YEAR_RE.findall(value)[-1]
                    return value
    return None


PLACE_KINDS = frozenset(content_tokens("city country state town county region province island river village capital"))
QUOTED_RE = re.compile(r'"([^"]{2,80})"')
WORD_BEFORE_RE = re.compile(r"([\w'’-]+)[\s,]*$")
WORD_AFTER_RE = re.compile(r"\s*([\w'’-]+)")
ACRONYM_RE = re.compile(r"\(([A-Z]{2,8})\)")
FULL_NAME_Q_RE = re.compile(r"\b(?:full name|stand(?:s)? for|abbreviat\w*)\b", re.I)


def _expanded(text: str) -> str | None:
    """The words an acronym in brackets abbreviates, read by their initials: "Severe acute
    respiratory syndrome (SARS)" -> "Severe acute respiratory syndrome"."""
    for m in ACRONYM_RE.finditer(text):
        letters = m.group(1).lower()
        words = WORD_RE.findall(text[: m.start()])[-len(letters):]
        if len(words) == len(letters) and "".join(w[0].lower() for w in words) == letters:
            return " ".join(words)
    return None


KIND_RE = re.compile(r"\b(?:which|what)\s+((?:[\w'’-]+\s+){0,2}[\w'’-]+)", re.I)


def _of_kind(text: str, question: str, q_tokens: set[str]) -> str | None:
    """A name whose head is the kind the question asks for: "Which Catholic diocese ..." is
    answered by "Diocese of Wichita", not by "Kapaun Mt. Carmel Catholic High School" before it.
    The head is a name's word before its first "of", else its last word; the kind is any of the three
    words after which/what."""
    m = KIND_RE.search(question)
    if m is None:
        return None
    kind = content_tokens(m.group(1)) - QUESTION_WORDS
    for q in QUOTED_RE.finditer(text):  # a title quoted beside its kind: Eminem's album "The Marshall Mathers LP 2"
        beside = WORD_BEFORE_RE.search(text, 0, q.start())
        after = WORD_AFTER_RE.match(text, q.end())
        if ((beside and content_tokens(beside.group(1)) & kind) or (after and content_tokens(after.group(1)) & kind)) \
                and content_tokens(q.group(1)) and not content_tokens(q.group(1)) <= q_tokens:
            return q.group(1).strip()
    for n in ENTITY_RE.finditer(text):
        words = n.group(0).rstrip(".,;:").split()
        head = words[words.index("of") - 1] if "of" in words[1:] else words[-1]
        if content_tokens(head) & kind and not content_tokens(n.group(0)) <= q_tokens:
            return _first_new(ENTITY_RE, n.group(0), q_tokens)
    return None


# The kind a which/what question asks for ("What science fantasy young adult series, told ...",
# "Which other Mexican Formula One race car driver has ..."): its words up to the first auxiliary,
# preposition, relative word, determiner or comma, less a verb before a determiner or a participle
# in -ed; the last one is its head noun.
_KIND_BODY = (r"((?:(?!(?:is|was|are|were|does|do|did|has|have|had|can|could|will|would|that|which|who|whose|of|in|"
              r"on|at|for|to|by|with|from|as|and|or|the|a|an|his|her|its|their)\b)[\w'’\"“”-]+\s*){1,8})(?P<stop>the|a|an|his|her|its|their)?")
KIND_PHRASE_RE = re.compile(r"\b(?:which|what)\s+" + _KIND_BODY, re.I)
# "What is the name of the fight song of ...": a kind asked after "the name of the"
NAMED_KIND_RE = re.compile(r"^\s*what (?:is|was|are|were) the (?:full |official )?names? of (?:the|a|an)\s+" + _KIND_BODY, re.I)
GENERIC_KINDS = frozenset(content_tokens("name kind type sort other"))
# "Animorphs is a science fantasy series of young adult books ...", "Pedro Rodríguez is the most
# successful Mexican driver ...": a sentence that defines its subject as a kind of thing.
DEFINING_RE = re.compile(
    r"^\s*(?P<subj>[A-Z\"“][^,;()]{1,80}?)\s*(?:\([^()]*\)\s*)?,?\s+(?:is|was|are|were)\s+(?:a|an|the|one of the)\s+(?P<desc>[^.;]{3,240})")
NAME_JOINERS = frozenset("of the and de da di del van von la le for in on & at".split())
DESCRIPTION_WORDS = 8  # the kind's head must be among the first words of the definition
# The definition's own noun phrase ends where a preposition, a relative word or a comma starts
# another ("the third studio album | by country music star Randy Travis" defines an album, no star).
DESCRIPTION_END_RE = re.compile(r",|\b(?:of|by|for|in|on|at|from|with|to|who|which|that|whose|and|or)\b", re.I)
FIRST_WH_RE = re.compile(r"\b(?:who|whom|whose|what|which|where|when|why|how)\b", re.I)
# "What was the 58th quadrennial American presidential election held after ...?": a description asked for
WHAT_THE_RE = re.compile(r"^\s*what (?:is|was|are|were) the (?P<desc>[^?]+)", re.I)
MIN_DESCRIBED = 3  # content words of the question's description ("58th quadrennial american presidential election")


# "Who produced the film?": the question's verb, read in the unit as a passive ("... directed by
# Robert Stevenson and produced by Walt Disney"). Irregular participles are written out.
WHO_VERB_RE = re.compile(r"^\s*(?:who|which\s+\w+|what\s+\w+)\s+(?:also\s+)?"
                         r"(?P<verb>[a-z][a-z-]*ed|(?:co-)?wrote|made|built|drew|ran|owns|won|led|began|gave|took|sang|chose)\b", re.I)
PARTICIPLES = {"wrote": "written", "co-wrote": "co-written", "drew": "drawn", "ran": "run", "owns": "owned", "won": "won",
               "made": "made", "built": "built", "led": "led", "began": "begun", "gave": "given", "took": "taken",
               "sang": "sung", "chose": "chosen"}


def _agent_of(text: str, question: str, q_tokens: set[str]) -> str | None:
    """The name after the question's own verb in the unit's first passive of it: "Who produced the
    film ...?" is answered by "Walt Disney" from "directed by Robert Stevenson and produced by Walt
    Disney", not by the first name after "by". What stands before the passive in its clause must
    share a word with the question."""
    m = WHO_VERB_RE.match(question)
    if m is None:
        return None
    verb = m.group("verb").lower()
    participle = PARTICIPLES.get(verb, verb)
    hit = re.search(rf"\b{re.escape(participle)}\s+(?=by\b)", text, re.I)
    if hit is None:
        return None
    patient = re.split(r";|,\s+(?:while|whereas)\b", text[: hit.start()])[-1]
    if not content_tokens(patient) & q_tokens:
        return None  # what was done is not what the question asks about: "Ethiopia was supported by Russia" for Italy's allies
    agent = re.match(r"by\s+(?:the\s+)?", text[hit.end():])
    return _first_new(ENTITY_RE, text[hit.end() + agent.end(): hit.end() + 120], q_tokens) if agent else None


def _asked_kind(question: str) -> re.Match | None:
    """The kind phrase a which/what question asks for (KIND_PHRASE_RE's match): after the question's
    first interrogative ("Which Catholic diocese ..."), or after "What is the name of the" ("What is
    the name of the fight song of the university ...": a fight song). None when the question asks
    with another word first ("Where does the hotel in which ...")."""
    named = NAMED_KIND_RE.match(question)
    if named is not None:
        return named
    kind = KIND_PHRASE_RE.search(question)
    return kind if kind is not None and FIRST_WH_RE.search(question).start() == kind.start() else None


def _own_subject(subject: str, question: str, q_tokens: set[str]) -> bool:
    """Is a defined subject the question's own (a hop's page defines what the question names)? Its
    words are the question's, written together there: "Kansas Song" is not "Lawrence, Kansas ...
    fight song"."""
    if not content_tokens(subject) <= q_tokens:
        return False
    words = [w.lower() for w in WORD_RE.findall(subject) if content_tokens(w)]
    return bool(re.search(r"\b" + r"\W+(?:\w+\W+){0,2}?".join(map(re.escape, words)) + r"\b", question, re.I)) if words else True


def _defining_subject(m: re.Match, question: str, q_tokens: set[str]) -> str | None:
    """DEFINING_RE's subject when it is a name (capitalised words, joined by of/and/the ...) and not
    a pronoun or the question's own subject."""
    subject = m.group("subj").strip()
    words = subject.split()
    if not all(w.lstrip("\"“")[:1].isupper() or w[:1].isdigit() or w.lower() in NAME_JOINERS for w in words):
        return None
    if subject.lower() in SENTENCE_OPENERS or not content_tokens(subject) or _own_subject(subject, question, q_tokens):
        return None
    return subject


def _defined_subject(text: str, question: str, q_tokens: set[str]) -> str | None:
    """The subject of a sentence that defines it as the kind the question asks for: "What science
    fantasy young adult series ... ?" is answered by "Animorphs" from "Animorphs is a science
    fantasy series of young adult books ...". The head noun of the asked kind must be among the
    first DESCRIPTION_WORDS words of the definition, the subject must be a name (_defining_subject)."""
    kind = _asked_kind(question)
    m = DEFINING_RE.match(text)
    if kind is None or m is None:
        return None  # no kind asked, or no definition
    words = WORD_RE.findall(kind.group(1))
    if len(words) > 1 and (kind.group("stop") or words[-1].lower().endswith("ed")):
        words = words[:-1]  # a verb before its object or a participle: "Which diocese administers | the ...", "What airport serviced | by"
    heads = [t for t in content_tokens_each(words) if t and not t <= GENERIC_KINDS]
    if not heads:
        return None
    subject = _defining_subject(m, question, q_tokens)
    if subject is None:
        return None
    phrase = DESCRIPTION_END_RE.split(m.group("desc"), maxsplit=1)[0]
    described = content_tokens(" ".join(WORD_RE.findall(phrase)[:DESCRIPTION_WORDS]))
    return subject if heads[-1] & described else None


def _described_subject(text: str, question: str, q_tokens: set[str]) -> str | None:
    """The subject of a sentence that says it is what the question describes: "What was the 58th
    quadrennial American presidential election held after ...?" is answered by "The United States
    presidential election of 2016" from "The United States presidential election of 2016 was the
    58th quadrennial American presidential election, held ...". The question's description (its
    words after "what is the", as far as the sentence's own description, up to its first preposition,
    relative word or comma, holds each of them) must hold MIN_DESCRIBED content words. The
    subject need not be all names here (the whole description vouches for it), but it may not be a
    pronoun or only the question's words."""
    asked = WHAT_THE_RE.match(question)
    m = DEFINING_RE.match(text)
    if asked is None or m is None or NAMED_KIND_RE.match(question):
        return None
    own = content_tokens(DESCRIPTION_END_RE.split(m.group("desc"), maxsplit=1)[0])
    described = 0
    for tokens in content_tokens_each(WORD_RE.findall(asked.group("desc"))):
        if tokens - own:
            break  # the question's description goes on past the sentence's ("... election | held after ...")
        described += len(tokens)
    if described < MIN_DESCRIBED:
        return None
    subject = m.group("subj").strip()
    if subject.lower() in SENTENCE_OPENERS or not content_tokens(subject) or _own_subject(subject, question, q_tokens):
        return None
    return subject


# What stands between the question's echoed words and what the sentence says of them: a copula
# and the "of"/"as" of "consists of", "defined as". A contrast clause after the answer is another fact.
PREDICATE_LEAD_RE = re.compile(r"^[\s,:;]*(?:(?:is|are|was|were|be|been)\s+)?(?:(?:of|as)\s+)?", re.I)
CONTRAST_RE = re.compile(r",\s+(?:while|whereas)\b.*$", re.I | re.S)
COPULA_RE = re.compile(r"[\s,]*(?:is|are|was|were)\s", re.I)
MIN_PREDICATE_WORDS = 2
PREDICATE_ECHO = 0.5  # the sentence must echo at least this share of the question's words (and two)
# "What is Tax Fees?": the sentence that defines the subject is the answer, subject and all.
WHAT_IS_RE = re.compile(r"^\s*what (?:is|are|was|were) (?!.*\b(?:by|for|of|to|in|as|with|from|on|at|during|within|under|after|before|between)\b)[^?]+\?*\s*$", re.I)


def _predicate(text: str, q_tokens: set[str], name_alone: bool = False) -> str | None:
    """What a sentence says of the question's subject, for a question answered by a sentence: the
    words after the last of the question's words that the sentence echoes ("Goodwill consists of |
    the excess of the consideration transferred ..." for "What does goodwill consist of?", "...
    tax losses are not recognised | where future recoverability is uncertain" for "When are ...
    not recognised?"). Each echoed word counts where the sentence first writes it. None when the
    sentence echoes under PREDICATE_ECHO of the question's words, when the last echoed word is in
    the sentence's second half ("... for 2015, 2014 and 2013, respectively" for a question about
    2015), or when fewer than MIN_PREDICATE_WORDS follow it: the whole sentence answers then.
    `name_alone`: the echoed words must be followed by is/are/was/were, and then one word will do
    when it is a name or a figure ("Its county seat is | Newport")."""
    words = list(WORD_RE.finditer(text))
    first: dict[str, int] = {}
    for i, tokens in enumerate(content_tokens_each([w.group(0) for w in words])):
        for t in tokens & q_tokens:
            first.setdefault(t, i)
    last = max(first.values(), default=len(words))
    if len(first) < max(2, PREDICATE_ECHO * len(q_tokens)) or last >= len(words) / 2:
        return None  # too little echoed, or echoed all over the sentence: no subject then predicate
    if name_alone and not COPULA_RE.match(text, words[last].end()):
        return None
    rest = PREDICATE_LEAD_RE.sub("", text[words[last].end():])
    rest = CONTRAST_RE.sub("", rest).strip().rstrip(".;:,")
    n_words = len(WORD_RE.findall(rest))
    a_name = name_alone and n_words > 0 and (rest[:1].isupper() or rest[:1].isdigit())
    if not content_tokens(rest) or (n_words < MIN_PREDICATE_WORDS and not a_name):
        return None
    return rest


def type_fit(qtype: str, e: dict[str, Any], question: str, q_tokens: set[str]) -> tuple[float, str | None]:
    """How well a unit holds what the question asks for (0: not at all), and the short answer in it."""
    text = e["text"]
    if qtype not in ("yes/no", "definition"):
        aligned = _aligned(qtype, text, question, q_tokens)
        if aligned is not None:
            return 1.0, aligned
        expanded = _expanded(text) if FULL_NAME_Q_RE.search(question) else None
        if expanded is not None:
            return 1.0, expanded
    if qtype in ("entity", "person"):
        agent = _agent_of(text, question, q_tokens)
        if agent is not None:
            return DEFINED_FIT, agent
    if qtype in ("entity", "person", "place"):
        defined = _defined_subject(text, question, q_tokens)
        if defined is not None:
            return DEFINED_FIT, defined
    if qtype == "sentence":
        described = _described_subject(text, question, q_tokens)
        if described is not None:
            return DEFINED_FIT, described
    if qtype == "number":
        computed = _years_counted(question, e) or _arithmetic(question, e)
        if computed is not None:
            return COMPUTED_FIT, computed
        years = tuple(years_in(question))
        pairs = max(2, len(years)) if RESPECTIVE_RE.search(question) else 0
        nums = _numbers(e, q_tokens, count=bool(re.search(r"\bhow many\b", question, re.I)), pairs=pairs, years=years)
        if not nums:
            return 0.0, None
        bonus, value = max(nums)
        if pairs and e.get("kind") != "row" and len(nums) >= 2:  # "... $417 million and $146 million, respectively"
            value = ", ".join(v for _, v in sorted(sorted(nums, reverse=True)[:pairs], key=lambda n: nums.index(n)))
        return max(0.2, 1.0 + bonus), value
    if qtype == "date":
        years = _years_answer(question, e)
        if years is not None:
            return 1.5, years
        value = _first_new(DATE_RE, text, q_tokens)
        if value and YEARS_Q_RE.search(question) and DATE_YEAR_RE.search(value):
            value = DATE_YEAR_RE.findall(value)[-1]  # "In which year ...": 2019, not March 31, 2019
        return (1.0, value) if value else (0.0, None)
    if qtype == "place":  # a name of the asked kind ("New York City" for "what city"), a capitalised
        # name after in/at/from/near; any other name fits half
        kind = KIND_RE.search(question)
        named = _of_kind(text, question, q_tokens) if kind and content_tokens(kind.group(1)) & PLACE_KINDS else None
        if named is not None:
            return 1.0, named
        for m in PLACE_RE.finditer(text):
            if content_tokens(m.group(1)) and not content_tokens(m.group(1)) <= q_tokens:
                return 1.0, m.group(1)
        value = _first_new(NAME_RE, text, q_tokens)
        return (0.5, value) if value else (0.0, None)
    if qtype == "entity":
        value = _of_kind(text, question, q_tokens) or _first_new(ENTITY_RE, text, q_tokens)
        return (1.0, value) if value else (0.0, None)
    if qtype == "person":  # "approved by the Board of Directors", else any name
        value = _first_new(BY_NAME_RE, text, q_tokens) or _first_new(NAME_RE, text, q_tokens)
        return (1.0, value) if value else (0.0, None)
    if qtype == "definition":
        return _definition(text, defined_terms(question))
    if qtype == "yes/no":
        return (1.0, None) if e.get("coverage", 0.0) >= 0.6 else (0.0, None)
    return 0.0, None


def _abstain(best: float, why: str) -> dict[str, Any]:
    return {"answer": NOT_ENOUGH, "citations": [], "abstain": True, "confidence": round(best, 3), "reason": why}


def _rank(qtype: str, e: dict[str, Any], question: str, q_tokens: set[str], asks: int | None,
          asked_tokens: set[str] | None = None, bridges: Sequence[set[str]] = ()) -> tuple[float, float, str | None]:
    """(rank, fit, short answer) of one eligible unit: its evidence score, plus TYPE_WEIGHT times its
    fit to the asked type, plus a bonus for covering the decomposed question's asking subquery (the
    one whose answer is the question's). asked_tokens: the asking subquery's words, which the number
    a question asks for sits near ("2010 population", not "Randall Cunningham II's high school",
    whose page says "2017-18 school year")."""
    if qtype == "number" and asked_tokens and not content_tokens(e["text"]) & asked_tokens:
        fit, span = 0.0, None  # a number in a fact that says nothing of what the asking subquery asks
    else:
        fit, span = type_fit(qtype, e, question, asked_tokens if qtype == "number" and asked_tokens else q_tokens)
        if qtype == "sentence" and fit <= 0 and asked_tokens and e.get("bridge") \
                and (said := _predicate(e["text"], asked_tokens, name_alone=True)):
            fit, span = 1.0, said  # what a bridge page says the asking subquery's words are: "Its county seat is | Newport"
        for _ in range(2):  # a span that names a bridge is the hop, not the answer: read the unit without it
            if not (span and any(b <= content_tokens(span) for b in bridges)):
                break
            e = {**e, "text": e["text"].replace(span, " ")}
            fit, span = type_fit(qtype, e, question, q_tokens)
    rank = e["score"] + TYPE_WEIGHT * fit
    if fit > 0 and e.get("kind") == "row" and named_label(_label(e), q_tokens):
        rank += LABEL_WEIGHT  # the row the question names by its whole label ("Operating expenses", not "Other operating expenses")
    if asks is not None and e.get("subquery") == asks:
        rank += FINAL_SUBQUERY_WEIGHT * e.get("sub_coverage", 0.0)
    if e.get("bridge"):
        rank += BRIDGE_WEIGHT + ROLE_HOP_WEIGHT * (e.get("hop", 1) >= 2)
    return rank, fit, span


def supporting(
    chosen: dict[str, Any], eligible: list[dict[str, Any]], span: str | None, decomposed: bool, only: set[str] | None = None
) -> list[str]:
    """The ids to cite: the chosen unit, then units that share the answer span, cover the question's
    terms as well as the chosen one (and at least CITE_COVERAGE), or best answer another subquery.
    `only`: when given, the other units must be in it (a definition's: those defining the term)."""
    cited = [chosen["id"]]
    bound = max(CITE_COVERAGE, chosen.get("coverage", 0.0))
    needle = span.lower() if span and len(span) >= 2 else None
    for e in eligible:
        if len(cited) >= MAX_CITED or e["id"] == chosen["id"] or (only is not None and e["id"] not in only):
            continue
        shares_span = needle is not None and needle in e["text"].lower()
        bridge = decomposed and e.get("subquery") not in (None, chosen.get("subquery")) and e.get("sub_coverage", 0.0) >= CITE_COVERAGE
        if shares_span or e.get("coverage", 0.0) >= bound or bridge:
            cited.append(e["id"])
    return cited


def asking_subquery(subqueries: Sequence[str]) -> int | None:
    """The index of the subquery that asks what the question asks (None: fewer than two): the
    last one holding an interrogative (a question word that opens it, follows a preposition or
    ends it: "a boy group that was formed by who", "founded in what year", "a civil war that ended
    when"; "the woman who portrayed ..." holds a relative pronoun), else the last one. A chain of
    questions ("Who directed X?", "Where was the director born?") asks with its last."""
    if len(subqueries) < 2:
        return None
    asking = [i for i, sub in enumerate(subqueries) if INTERROGATIVE_RE.search(sub)]
    return asking[-1] if asking else len(subqueries) - 1


_NAME_RUN = r"[A-Z][\w.'’-]*(?:\s+(?:[A-Z][\w.'’-]*|de|da|di|del|van|von|le|la))*"
# "Who is younger, A or B?", "Who was born first, A or B?", "Which was founded earlier, A or B?"
PAIR_RE = re.compile(rf"(?P<a>{_NAME_RUN})\s*,?\s+or\s+(?P<b>{_NAME_RUN})")
COMPARE_RE = re.compile(r"\b(?P<cue>younger|older|first|earlier|sooner|later|last|more recent(?:ly)?)\b", re.I)
EVENT_RE = re.compile(r"\b(?P<verb>born|founded|established|formed|released|opened|published|built|created|launched)\b", re.I)
LATEST_CUES = ("younger", "later", "last", "more recent", "more recently")


def _date_key(text: str) -> tuple[int, int, int] | None:
    """(year, month, day) of the first date in `text` (month and day 0 when not written)."""
    m = DATE_RE.search(text)
    year = YEAR_RE.search(m.group(0)) if m else None
    if year is None:
        return None
    month = next((i + 1 for i, name in enumerate(MONTHS.split("|")[:12]) if name in m.group(0)), 0)
    day = re.search(r"\b(\d{1,2})\b(?!\d)", m.group(0).replace(year.group(0), ""))
    return int(year.group(0)), month, int(day.group(1)) if day else 0


def _when(name: str, verb: str, e: dict[str, Any]) -> tuple[int, int, int] | None:
    """When the unit says `name` was born (founded, released ...): the date after the verb, or for
    a birth the opening brackets ("Keith Bostic (born January 17, 1961)", "(April 23, 1928 – 2014)")."""
    text = e["text"]
    first, *rest = name.split()
    # the name as written, or with middle names between ("Jerry Michael Glanville" for "Jerry Glanville",
    # 'Terrence "Uncle Terry" Richardson' for "Terry Richardson")
    middle = rf"[\"”]?(?:\s+[A-Z][\w.'’-]*){{0,2}}\s+{re.escape(' '.join(rest))}" if rest else ""
    if not re.search(rf"\b{re.escape(first)}{middle}\b", text):
        return None
    after = re.search(rf"\b{verb}\b(?:\s+(?:in|on))?\s+(.{{0,40}})", text, re.I)
    found = _date_key(after.group(1)) if after else None
    if found is None and verb.lower() == "born":
        bracket = re.search(r"\(([^()]*)\)", text)
        found = _date_key(bracket.group(1)) if bracket else None
    return found


def compared(question: str, evidence: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A comparison of two names the question writes ("Who is younger, Keith Bostic or Jerry
    Glanville?"): each name's date read from the best unit that writes the name and says when it was
    born (founded, released ...), the earlier or later one by the question's word. None when the
    question compares no two names by a date, a date is missing, or the units that write a name
    give it dates of different years (homonyms: the rules cannot tell which one is meant)."""
    pair, cue = PAIR_RE.search(question), COMPARE_RE.search(question)
    if pair is None or cue is None:
        return None
    event = EVENT_RE.search(question)
    verb = event.group("verb") if event else ("born" if cue.group("cue").lower() in ("younger", "older") else None)
    if verb is None:
        return None
    dated = []
    for name in (pair.group("a"), pair.group("b")):
        found = [(when, e) for e in evidence if (when := _when(name, verb, e))]
        if not found or len({when[0] for when, _ in found}) > 1:
            return None  # no date, or homonyms of other years ("Kenton Terry Richardson (born 1999)")
        dated.append((found[0][0], name, found[0][1]))
    if dated[0][0] == dated[1][0]:
        return None
    latest = cue.group("cue").lower() in LATEST_CUES
    when, name, e = max(dated) if latest else min(dated)
    return {"answer": name, "citations": [d[2]["id"] for d in dated], "abstain": False, "confidence": round(e["score"], 3),
            "reason": f"compared when each was {verb.lower()}: {dated[0][1]} {dated[0][0][0]}, {dated[1][1]} {dated[1][0][0]}"}


# "What is the percentage of Bell Wireless out of the Total BCE operating revenues in Q4 2019?",
# "the proportion of X over total assets", "the ratio of A to B", "What percentage of B is made up
# of A?": a share of one table row in another (TAT-QA's two-row arithmetic).
SHARE_RE = re.compile(
    r"\b(?P<op>percentage|proportion|ratio|share|portion|fraction)\s+(?:constitution\s+)?of\s+(?P<a>.+?)\s+"
    r"(?:out of|over|to|against|among|within|in)\s+(?P<b>.+)$", re.I)
SHARE_OF_RE = re.compile(
    r"\bwhat\s+(?P<op>percentage|proportion|share|portion|fraction)\s+of\s+(?P<b>.+?)\s+(?:is|was|are|were)\s+"
    r"(?:made up of|comprised of|accounted for by|attributable to|from)\s+(?P<a>.+)$", re.I)
# What a share question says of its period after the rows it names: "in Q4 2019", "as of end of period", "for FY2019"
PERIOD_TAIL_RE = re.compile(
    r"(?:,?\s+(?:in|at|as of|as at|for|during|on|by|of)\s+(?:the\s+)?(?:(?:fiscal(?:\s+year)?|fy|f|q[1-4]|year|end|"
    r"beginning|december|september|june|march)\b|'?\d{2,4}\b).*)?\?*\s*$", re.I)
ROW_MATCH = 2 / 3  # a row answers a phrase when the phrase holds this share of its label's words


def _label(e: dict[str, Any]) -> str:
    """A table row's label (text.row_label)."""
    return row_label(e["text"])


def _rows_for(phrase: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows whose label the phrase names best: the largest share of the label's words in the
    phrase (at least ROW_MATCH), then the most words shared; ties in evidence order."""
    words = content_tokens(phrase) - QUESTION_WORDS
    found = []
    for e in rows:
        label = content_tokens(_label(e))
        if label and (shared := len(label & words)) and shared / len(label) >= ROW_MATCH:
            found.append(((shared / len(label), shared), e))
    top = max((key for key, _ in found), default=None)
    return [e for key, e in found if key == top]


def _column(question: str, a: dict[str, Any], b: dict[str, Any]) -> tuple[float, float] | None:
    """The two rows' values in one column: the one year the question names, else the header that
    shares most words with the question, else the first column both rows fill."""
    years = years_in(question)
    ca, cb = dict(row_cells(a["text"])[1:]), dict(row_cells(b["text"])[1:])
    heads = [h for h in ca if h in cb and cell_value(ca[h]) is not None and cell_value(cb[h]) is not None]
    if len(years) == 1:
        heads = [h for h in heads if years[0] in years_in(h)]
    elif len(years) > 1:
        return None
    if not heads:
        return None
    q_tokens = content_tokens(question)
    head = max(heads, key=lambda h: (len(content_tokens(h) & q_tokens), -heads.index(h)))
    return cell_value(ca[head]), cell_value(cb[head])  # type: ignore[return-value]


def _cells(row: dict[str, Any], a_phrase: str, b_phrase: str) -> tuple[float, float, str, str] | None:
    """Two cells of one row that the phrases name by their headers, beyond the row's label: "the
    purchase obligations of more than 5 years in the total purchase obligations" is the row's "More
    than 5 years" cell over its "Total" cell. (a, b, header a, header b), or None."""
    label = content_tokens(_label(row))
    cells = [(h, cell_value(v)) for h, v in row_cells(row["text"])[1:] if cell_value(v) is not None]
    picked = []
    for phrase in (a_phrase, b_phrase):
        words = content_tokens(phrase) - QUESTION_WORDS - label
        scored = [(len(content_tokens(h) & words), -i, h, v) for i, (h, v) in enumerate(cells) if content_tokens(h) & words]
        if not scored:
            return None
        picked.append(max(scored))
    (_, _, ha, va), (_, _, hb, vb) = picked
    return (va, vb, ha, hb) if ha != hb else None  # type: ignore[return-value]


def shared_rows(question: str, evidence: list[dict[str, Any]]) -> dict[str, Any] | None:
    """A share of one table row in another, computed from the rows in the evidence: "What is the
    percentage of Bell Wireless out of the Total BCE operating revenues in Q4 2019?" divides Bell
    Wireless's Q4 2019 cell by the total's. Each phrase's row is the one whose label it names best
    (_rows_for), and the two must be rows of one table; the column is the question's year. When both
    phrases name the same row, its cells are read by their headers (_cells). A percentage is
    written with "%", a ratio or proportion is not. None when the question asks for no such share
    or the rows or their cells are not found."""
    m = SHARE_OF_RE.search(question) or SHARE_RE.search(question)
    if m is None:
        return None
    a_phrase, b_phrase = (PERIOD_TAIL_RE.sub("", m.group(k)) for k in ("a", "b"))
    rows = [e for e in evidence if e.get("kind") == "row"]
    pairs = [(ra, rb) for ra in _rows_for(a_phrase, rows) for rb in _rows_for(b_phrase, rows)
             if ra["id"].rpartition(".")[0] == rb["id"].rpartition(".")[0]]
    if not pairs:
        return None
    ra, rb = next(((ra, rb) for ra, rb in pairs if ra["id"] != rb["id"]), pairs[0])
    if ra["id"] != rb["id"]:
        values = _column(question, ra, rb)
        what = f"the row '{_label(ra)}' in the row '{_label(rb)}'"
    else:
        cells = _cells(ra, a_phrase, b_phrase)
        values = cells[:2] if cells else None
        what = f"'{cells[2]}' in '{cells[3]}' of the row '{_label(ra)}'" if cells else ""
    if values is None or not values[1]:
        return None
    percent = m.group("op").lower() == "percentage"
    value = values[0] / values[1] * (100 if percent else 1)
    return {"answer": plain_number(value) + ("%" if percent else ""), "citations": list(dict.fromkeys([ra["id"], rb["id"]])),
            "abstain": False, "confidence": round(min(ra["score"], rb["score"]), 3),
            "reason": f"computed the {m.group('op').lower()} of {what}"}


def answer_by_rules(question: str, evidence: list[dict[str, Any]], threshold: float, subqueries: int = 0,
                    asking: int | None = None, asking_text: str = "") -> dict[str, Any]:
    """The reader prompt's reply by rules: the unit that best holds what the question asks for.

    Every unit at or above the threshold is a candidate (not only the top few): a lower-ranked
    unit of the asked type (a number, date, name, place, an option's definition) beats a
    higher-ranked one without it. `subqueries`: how many the retriever split the question into
    (units then carry `subquery`, the index of the one they cover best, and `sub_coverage`);
    `asking`: the one whose answer is the question's (asking_subquery; None: the last), and
    `asking_text` its words, near which an asked number is looked for. Abstains
    below the threshold, and when the question asks for a type no candidate holds and the best
    unit covers under WEAK_COVERAGE of its terms.
    """
    if not evidence or evidence[0]["score"] < threshold:
        best = evidence[0]["score"] if evidence else 0.0
        return _abstain(best, f"best evidence score {best:.2f} is below the threshold {threshold:.2f}")
    q = question.strip()
    computed = compared(q, evidence) or shared_rows(q, evidence)
    if computed is not None:
        return computed
    q_tokens = content_tokens(q) - QUESTION_WORDS
    qtype = question_type(q)
    decomposed = subqueries > 1
    asks = (subqueries - 1 if asking is None else asking) if decomposed else None
    if not decomposed and (qtype not in UNSPLIT_BRIDGE_TYPES or type_fit(qtype, evidence[0], q, q_tokens)[0] > 0):
        # Not split, and the best unit holds what is asked (or the question asks for no named thing):
        # a page it names is no hop ("When was Kiss and Tell released?" is not Shirley Temple's birth).
        evidence = [{k: v for k, v in e.items() if k != "bridge"} for e in evidence]
    # A bridge question's answer matches its asking subquery, not the whole question ("Where is the
    # company headquartered" of "Where is the company that Sachin Warrier worked for ..."): such a
    # unit is a candidate below the threshold, once the best evidence has passed it.
    # So is a unit of a bridge page, where the asking subquery's answer is read; the bridge's own
    # name is no answer ("Shirley Temple" is who portrayed Corliss Archer, not the position she held).
    eligible = [e for e in evidence if e["score"] >= threshold
                or (asks is not None and e.get("subquery") == asks and e.get("sub_coverage", 0.0) >= CITE_COVERAGE)
                or e.get("bridge")]
    asked = (content_tokens(asking_text) - QUESTION_WORDS) & q_tokens if decomposed else set()
    bridges = [content_tokens(t) for t in dict.fromkeys(e.get("bridge") for e in eligible) if t]
    ranks = [(_rank(qtype, e, q, q_tokens, asks, asked, bridges), i) for i, e in enumerate(eligible)]
    # A unit that shares no word with the question competes only as the best one, as a unit of a
    # bridge page, or as a definition of the asked term (an option's item: "-c" is no word to the tokenizer).
    ranks = [r for r in ranks if r[1] == 0 or eligible[r[1]].get("coverage", 0.0) > 0 or eligible[r[1]].get("bridge")
             or (qtype == "definition" and r[0][1] > 0)]
    ranked = sorted(ranks, key=lambda r: (-r[0][0], r[1]))
    (_, fit, span), idx = ranked[0]
    chosen = eligible[idx]
    best_cov = max(e.get("coverage", 0.0) for e in eligible)
    if qtype in TYPED and fit <= 0 and best_cov < WEAK_COVERAGE:
        return _abstain(evidence[0]["score"], f"no evidence unit holds the {qtype} the question asks for "
                        f"and the best covers {best_cov:.0%} of its terms")
    answer, kind = span, qtype
    if qtype == "yes/no" and fit > 0:
        answer = "No" if _negated(chosen["text"]) != _negated(q) else "Yes"
    if answer is None and qtype in ("sentence", "entity"):
        answer = _cell_of_year(q, chosen)
    if answer is None and qtype == "sentence":
        predicate = None if WHAT_IS_RE.match(q) else _predicate(chosen["text"], q_tokens)
        answer = predicate or FOOTNOTE_LEAD_RE.sub("", chosen["text"].strip())
    if answer is None:
        kind = f"{qtype} (no short answer found; quoting the evidence)"
        answer = chosen["text"].strip()
    defining = {eligible[i]["id"] for (_, f, _), i in ranks if f > 0} if qtype == "definition" else None
    cited = supporting(chosen, eligible, span, decomposed, defining)
    return {"answer": answer, "citations": cited, "abstain": False, "confidence": round(chosen["score"], 3),
            "reason": f"extractive {kind} answer from {len(cited)} unit(s)"
                      + (f", read on the page of {chosen['bridge']}, which another hop's best unit names" if chosen.get("bridge") else "")}
