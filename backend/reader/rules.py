"""The reader's rules: the offline answer to the ANSWER task (backend/reader/task.py).

Given scored evidence units (sentences, table rows, figure regions), they type the question
(questions.py), rank every unit above the threshold by its score plus its fit to that type (and,
when the retriever decomposed the question, its coverage of the subquery that asks what the
question asks, and a bonus for a unit on a bridge page), extract a short answer from the winner
(spans.py for text, figures.py for numbers and table rows), cite only the units that support it,
or abstain with "not enough evidence" when the best evidence is weak or no unit holds the asked
type and coverage is weak. A sentence answer is never a clipped sentence: a sentence that continues
another or announces what follows ("the command is", "as follows:") is shown with them (its lead
and follows, context.py), and a "how do I" question over a manual is answered by the instruction
and its example (how_fit). Comparisons of two names by date and shares of one row in another are
computed across units first (computed.py). They do no generation beyond extraction and arithmetic.

The knobs (TYPE_WEIGHT, FINAL_SUBQUERY_WEIGHT, BRIDGE_WEIGHT, ROLE_HOP_WEIGHT, WEAK_COVERAGE,
CITE_COVERAGE, MAX_CITED, DEFINED_FIT, COMPUTED_FIT, LABEL_WEIGHT) and the question patterns come
from reading the reader's misses on the development collections; the measurements behind them are
in bench/RESULTS.md#reader.

What is not here: scoring the units (backend/reader/reader.py does) or choosing the threshold
(settings.reader.abstain_threshold).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from backend.llm.text import QUESTION_WORDS, content_tokens, named_label, row_label
from backend.reader.computed import compared, shared_rows
from backend.reader.evidence import AnswerReply, EvidenceUnit
from backend.reader.figures import cell_of_year, number_candidates, row_arithmetic, years_answer, years_counted, years_in
from backend.reader.patterns import BY_NAME_RE, code_line, DATE_RE, DATE_YEAR_RE, ENTITY_RE, FOOTNOTE_LEAD_RE, NAME_RE, PLACE_RE
from backend.reader.questions import HOW_Q_RE, OPTION_RE, RESPECTIVE_RE, asked_tokens, YEARS_Q_RE, defined_terms, negated, question_type
from backend.reader.spans import (
    FULL_NAME_Q_RE, KIND_RE, PLACE_KINDS, WHAT_IS_RE, agent_of, aligned_span, defined_subject, definition_in,
    described_subject, expansion, first_new, of_kind, predicate_of,
)
from backend.types import Cell, TableRow

NOT_ENOUGH = "not enough evidence"
# A call or an identifier a manual prints as code: "c()", "help.start()", "glp_add_rows", "GLP_FR".
CODE_WORD_RE = re.compile(r"(?<![\w.])[A-Za-z][\w.]*\((?P<args>[^()]{0,60})\)|\b[A-Za-z]+_[A-Za-z0-9_]+\b")
FOOTNOTE_MARK_RE = re.compile(r"\s*(?:\d{1,2}|[a-z]|[ivx]{1,4})\s*")
# "To set up a vector named x ..., use the R command", "To remove objects the function rm is
# available", "... by running": a sentence that tells what to use or do.
INSTRUCTION_RE = re.compile(r"^\s*to\s+[a-z]+\b.*?(?:,|\buse\b|\bthe\b)|\b(?:use|the (?:\w+ )?command|the function \w+|"
                            r"the routine \w+|by running|is available|can be used|may be used)\b", re.I)
# "You will not need to use an explicit loop", "never use", "there is no need to run": a sentence
# that tells what not to use or do gives no instruction
NEGATED_INSTRUCTION_RE = re.compile(r"\b(?:not|never|no need to|\w+n't)\s+(?:\w+\s+){0,2}?(?:use|run|need)\b", re.I)
# "Which routine ...", "What function ...": a thing a manual names in code
CODE_KIND_Q_RE = re.compile(r"\b(?:which|what)\s+(?:\w+\s+){0,2}?(?:routines?|functions?|commands?|options?|flags?|macros?|"
                            r"procedures?|calls?|constants?|parameters?|keywords?|operators?|statements?|type of variable)\b", re.I)
# "Which file ...", "To which directory ...": a file or a folder, named in a manual as a path
FILE_KIND_Q_RE = re.compile(r"\b(?:which|what)\s+(?:\w+\s+){0,2}?(?:files?|director(?:y|ies)|folders?|paths?)\b", re.I)
FILE_NAME_RE = re.compile(r"(?<![\w.])(?:\.\w[\w.-]*|[\w-]+\.[a-zA-Z]{1,4}\b|~?/[\w./-]+)")
# what follows a list's first item: ", B, and C" / " or C"
LIST_REST_RE = re.compile(r"(?:\s*,\s*[^,;.()]{1,30}?)*,?\s+(?:and|or)\s+[^,;.()\s][^,;.()]{0,29}")
# "How are missing values represented?": the form a thing takes, not a way of doing
HOW_FORM_RE = re.compile(r"^\s*how\s+(?:is|are|was|were)\b", re.I)
CAPITAL_VALUE_RE = re.compile(r"\b(?:value|values|as|marker|symbol|constant)\s+[A-Z][A-Z_]{1,}\b")

TYPED = ("number", "date", "person", "place", "definition")
TYPE_WEIGHT = 0.5  # a unit of the asked type ranks above any eligible unit without one
FINAL_SUBQUERY_WEIGHT = 0.2  # per unit of coverage of the asking subquery (bench/RESULTS.md#reader)
ROLE_HOP_WEIGHT = 0.25  # a page the bridge names by the asked role holds the answer more surely than the bridge's own
BRIDGE_WEIGHT = 0.5  # a unit on a bridge page (reader.on_bridge_pages): as much as holding the asked type
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
# both 2018 and 2019"); measured in bench/RESULTS.md#reader
COMPUTED_FIT = 1.8
# a table row holding what is asked whose whole label the question writes ("Operating expenses" for "the change
# in operating expenses", not "Other operating expenses") ranks this much higher (bench/RESULTS.md#reader)
LABEL_WEIGHT = 0.1


def type_fit(qtype: str, e: EvidenceUnit, question: str, q_tokens: set[str]) -> tuple[float, str | None]:
    """How well a unit holds what the question asks for (0: not at all), and the short answer in it."""
    text = e.text
    how = qtype == "sentence" and HOW_Q_RE.search(question) is not None
    if how:
        return how_fit(e, question)
    if qtype not in ("yes/no", "definition"):
        aligned = aligned_span(qtype, text, question, q_tokens)
        if aligned is not None:
            return 1.0, aligned
        expanded = expansion(text) if FULL_NAME_Q_RE.search(question) else None
        if expanded is not None:
            return 1.0, expanded
    if qtype in ("entity", "person"):
        agent = agent_of(text, question, q_tokens)
        if agent is not None:
            return DEFINED_FIT, agent
    if qtype in ("entity", "person", "place"):
        defined = defined_subject(text, question, q_tokens)
        if defined is not None:
            return DEFINED_FIT, defined
    if qtype == "sentence":
        described = described_subject(text, question, q_tokens)
        if described is not None:
            return DEFINED_FIT, described
    if qtype == "number":
        computed = years_counted(question, e) or row_arithmetic(question, e)
        if computed is not None:
            return COMPUTED_FIT, computed
        years = tuple(years_in(question))
        pairs = max(2, len(years)) if RESPECTIVE_RE.search(question) else 0
        nums = number_candidates(e, q_tokens, count=bool(re.search(r"\bhow many\b", question, re.I)), pairs=pairs, years=years)
        if not nums:
            return 0.0, None
        bonus, value = max(nums)
        if pairs and e.kind != "row" and len(nums) >= 2:  # "... $417 million and $146 million, respectively"
            value = ", ".join(v for _, v in sorted(sorted(nums, reverse=True)[:pairs], key=lambda n: nums.index(n)))
        return max(0.2, 1.0 + bonus), value
    if qtype == "date":
        years = years_answer(question, e)
        if years is not None:
            return 1.5, years
        value = first_new(DATE_RE, text, q_tokens)
        if value and YEARS_Q_RE.search(question) and DATE_YEAR_RE.search(value):
            value = DATE_YEAR_RE.findall(value)[-1]  # "In which year ...": 2019, not March 31, 2019
        return (1.0, value) if value else (0.0, None)
    if qtype == "place":  # a name of the asked kind ("New York City" for "what city"), a capitalised
        # name after in/at/from/near; any other name fits half
        kind = KIND_RE.search(question)
        named = of_kind(text, question, q_tokens) if kind and content_tokens(kind.group(1)) & PLACE_KINDS else None
        if named is not None:
            return 1.0, named
        for m in PLACE_RE.finditer(text):
            if content_tokens(m.group(1)) and not content_tokens(m.group(1)) <= q_tokens:
                return 1.0, m.group(1)
        value = first_new(NAME_RE, text, q_tokens)
        return (0.5, value) if value else (0.0, None)
    if qtype == "entity":
        if CODE_KIND_Q_RE.search(question):  # "Which routine erases ...": the sentence that names it in code
            return (1.0, e.whole()) if code_word(e.whole()) else (0.0, None)
        if FILE_KIND_Q_RE.search(question):  # "To which file ...": the sentence that names it (".RData")
            return (1.0, e.whole()) if FILE_NAME_RE.search(e.whole()) else (0.0, None)
        value = of_kind(text, question, q_tokens) or first_new(ENTITY_RE, text, q_tokens)
        return (1.0, listed(value, text, question)) if value else (0.0, None)
    if qtype == "person":  # "approved by the Board of Directors", else any name
        value = first_new(BY_NAME_RE, text, q_tokens) or first_new(NAME_RE, text, q_tokens)
        return (1.0, value) if value else (0.0, None)
    if qtype == "definition":
        return definition_in(text, defined_terms(question))
    if qtype == "yes/no":
        return (1.0, None) if e.coverage >= 0.6 else (0.0, None)
    return 0.0, None


def code_word(text: str) -> bool:
    """Whether a text names a call, an identifier (CODE_WORD_RE) or a command-line option ("-c",
    "--check") as code; a footnote mark or an enumeration in brackets ("market(1)", "item(a)") is none."""
    return any(m.group("args") is None or not FOOTNOTE_MARK_RE.fullmatch(m.group("args")) for m in CODE_WORD_RE.finditer(text)) \
        or OPTION_RE.search(text) is not None


def listed(value: str, text: str, question: str) -> str:
    """The whole list a name stands first in when the question asks for several ("What values can
    ... have?" -> "TRUE, FALSE, and NA", not "TRUE")."""
    kind = KIND_RE.search(question)
    if kind is None or not kind.group(1).split()[0].lower().endswith("s"):
        return value
    m = re.match(re.escape(value) + LIST_REST_RE.pattern, text[text.find(value):]) if value in text else None
    return m.group(0).strip() if m else value


def how_fit(e: EvidenceUnit, question: str) -> tuple[float, str | None]:
    """An instruction with its example: a unit whose whole (context.py: its lead and what it
    announces) holds a line of code or a call ("> help(solve)", "x <- c(10.4, 5.6)", "glp_add_rows")
    fits 1 and is the answer, whole; one that tells what to use or do ("To set up a vector ...,
    use the R command", "the function rm is available") fits half more, unless it tells what not to
    use ("You will not need to use an explicit loop"). A question of a form ("How
    are missing values represented?") is answered by a value a manual writes in capitals ("the
    special value NA") as by code."""
    whole = e.whole()
    code = any(code_line(part) for part in (e.lead, e.text, e.follows) if part) or code_word(whole)
    if not code and HOW_FORM_RE.match(question):
        code = CAPITAL_VALUE_RE.search(e.text) is not None
    if not code:
        return 0.0, None
    told = e.lead or e.text
    return 1.0 + 0.5 * (INSTRUCTION_RE.search(told) is not None and NEGATED_INSTRUCTION_RE.search(told) is None), whole


def _abstain(best: float, why: str) -> AnswerReply:
    return AnswerReply(answer=NOT_ENOUGH, citations=[], abstain=True, confidence=round(best, 3), reason=why)


def _without(e: EvidenceUnit, span: str) -> EvidenceUnit:
    """The unit with `span` blanked out of its text, and out of its cells, which write that text."""
    row = e.row
    if row is not None:
        row = TableRow(table=row.table.replace(span, " ") if row.table else row.table,
                       cells=tuple(Cell(h.replace(span, " "), v.replace(span, " ")) for h, v in row.cells))
    return e.model_copy(update={"text": e.text.replace(span, " "), "row": row})


def _rank(qtype: str, e: EvidenceUnit, question: str, q_tokens: set[str], asks: int | None,
          asked_tokens: set[str] | None = None, bridges: Sequence[set[str]] = ()) -> tuple[float, float, str | None]:
    """(rank, fit, short answer) of one eligible unit: its evidence score, plus TYPE_WEIGHT times its
    fit to the asked type, plus a bonus for covering the decomposed question's asking subquery (the
    one whose answer is the question's). asked_tokens: the asking subquery's words, which the number
    a question asks for sits near ("2010 population", not "Randall Cunningham II's high school",
    whose page says "2017-18 school year")."""
    if qtype == "number" and asked_tokens and not content_tokens(e.text) & asked_tokens:
        fit, span = 0.0, None  # a number in a fact that says nothing of what the asking subquery asks
    else:
        fit, span = type_fit(qtype, e, question, asked_tokens if qtype == "number" and asked_tokens else q_tokens)
        if qtype == "sentence" and fit <= 0 and asked_tokens and e.bridge \
                and (said := predicate_of(e.text, asked_tokens, name_alone=True)):
            fit, span = 1.0, said  # what a bridge page says the asking subquery's words are: "Its county seat is | Newport"
        for _ in range(2):  # a span that names a bridge is the hop, not the answer: read the unit without it
            if not (span and any(b <= content_tokens(span) for b in bridges)):
                break
            e = _without(e, span)
            fit, span = type_fit(qtype, e, question, q_tokens)
    rank = e.score + TYPE_WEIGHT * fit
    if fit > 0 and e.kind == "row" and named_label(row_label(e.row), q_tokens):
        rank += LABEL_WEIGHT  # the row the question names by its whole label ("Operating expenses", not "Other operating expenses")
    if asks is not None and e.subquery == asks:
        rank += FINAL_SUBQUERY_WEIGHT * e.sub_coverage
    if e.bridge:
        rank += BRIDGE_WEIGHT + ROLE_HOP_WEIGHT * (e.hop >= 2)
    return rank, fit, span


def supporting(
    chosen: EvidenceUnit, eligible: list[EvidenceUnit], span: str | None, decomposed: bool, only: set[str] | None = None
) -> list[str]:
    """The ids to cite: the chosen unit, then units that share the answer span, cover the question's
    terms as well as the chosen one (and at least CITE_COVERAGE), or best answer another subquery.
    `only`: when given, the other units must be in it (a definition's: those defining the term)."""
    cited = [chosen.id]
    bound = max(CITE_COVERAGE, chosen.coverage)
    needle = span.lower() if span and len(span) >= 2 else None
    for e in eligible:
        if len(cited) >= MAX_CITED or e.id == chosen.id or (only is not None and e.id not in only):
            continue
        shares_span = needle is not None and needle in e.text.lower()
        bridge = decomposed and e.subquery not in (None, chosen.subquery) and e.sub_coverage >= CITE_COVERAGE
        if shares_span or e.coverage >= bound or bridge:
            cited.append(e.id)
    return cited


def answer_by_rules(question: str, evidence: list[EvidenceUnit], threshold: float, subqueries: int = 0,
                    asking: int | None = None, asking_text: str = "") -> AnswerReply:
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
    if not evidence or evidence[0].score < threshold:
        best = evidence[0].score if evidence else 0.0
        return _abstain(best, f"best evidence score {best:.2f} is below the threshold {threshold:.2f}")
    q = question.strip()
    computed = compared(q, evidence) or shared_rows(q, evidence)
    if computed is not None:
        return computed
    q_tokens = asked_tokens(q)
    qtype = question_type(q)
    decomposed = subqueries > 1
    asks = (subqueries - 1 if asking is None else asking) if decomposed else None
    if not decomposed and (qtype not in UNSPLIT_BRIDGE_TYPES or type_fit(qtype, evidence[0], q, q_tokens)[0] > 0):
        # Not split, and the best unit holds what is asked (or the question asks for no named thing):
        # a page it names is no hop ("When was Kiss and Tell released?" is not Shirley Temple's birth).
        evidence = [e.model_copy(update={"bridge": ""}) if e.bridge else e for e in evidence]
    # A bridge question's answer matches its asking subquery, not the whole question ("Where is the
    # company headquartered" of "Where is the company that Sachin Warrier worked for ..."): such a
    # unit is a candidate below the threshold, once the best evidence has passed it.
    # So is a unit of a bridge page, where the asking subquery's answer is read; the bridge's own
    # name is no answer ("Shirley Temple" is who portrayed Corliss Archer, not the position she held).
    eligible = [e for e in evidence if e.score >= threshold
                or (asks is not None and e.subquery == asks and e.sub_coverage >= CITE_COVERAGE)
                or e.bridge]
    asked = (content_tokens(asking_text) - QUESTION_WORDS) & q_tokens if decomposed else set()
    bridges = [content_tokens(t) for t in dict.fromkeys(e.bridge for e in eligible) if t]
    ranks = [(_rank(qtype, e, q, q_tokens, asks, asked, bridges), i) for i, e in enumerate(eligible)]
    # A unit that shares no word with the question competes only as the best one, as a unit of a
    # bridge page, or as a definition of the asked term (an option's item: "-c" is no word to the tokenizer).
    ranks = [r for r in ranks if r[1] == 0 or eligible[r[1]].coverage > 0 or eligible[r[1]].bridge
             or (qtype == "definition" and r[0][1] > 0)]
    ranked = sorted(ranks, key=lambda r: (-r[0][0], r[1]))
    (_, fit, span), idx = ranked[0]
    chosen = eligible[idx]
    best_cov = max(e.coverage for e in eligible)
    if qtype in TYPED and fit <= 0 and best_cov < WEAK_COVERAGE:
        return _abstain(evidence[0].score, f"no evidence unit holds the {qtype} the question asks for "
                        f"and the best covers {best_cov:.0%} of its terms")
    answer, kind = span, qtype
    if qtype == "yes/no" and fit > 0:
        answer = "No" if negated(chosen.text) != negated(q) else "Yes"
    if answer is None and qtype in ("sentence", "entity"):
        answer = cell_of_year(q, chosen)
    if answer is None and qtype == "sentence":
        # What the sentence says of the question's subject, when the sentence is whole in the unit;
        # a sentence that continues another or announces what follows is shown whole, with them.
        whole = not (chosen.lead or chosen.follows)
        predicate = None if WHAT_IS_RE.match(q) or not whole else predicate_of(chosen.text, q_tokens)
        answer = predicate or FOOTNOTE_LEAD_RE.sub("", chosen.whole())
    if answer is None:
        kind = f"{qtype} (no short answer found; quoting the evidence)"
        answer = chosen.whole()
    defining = {eligible[i].id for (_, f, _), i in ranks if f > 0} if qtype == "definition" else None
    cited = supporting(chosen, eligible, span, decomposed, defining)
    return AnswerReply(answer=answer, citations=cited, abstain=False, confidence=round(chosen.score, 3),
                       reason=f"extractive {kind} answer from {len(cited)} unit(s)"
                       + (f", read on the page of {chosen.bridge}, which another hop's best unit names" if chosen.bridge else ""))

