"""What a question asks for: its type (yes/no, person, date, place, definition, number, entity or
sentence; a "how do I" question is a sentence question that asks for an instruction), the term a definition question asks about, whether a
text is negated, and which of the retriever's subqueries asks what the whole question asks."""

from __future__ import annotations

import re
from collections.abc import Sequence

from backend.llm.text import QUESTION_WORDS, content_tokens
from backend.reader.patterns import YEAR_RE

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

ENTITY_Q_RE = re.compile(r"^\s*(which|what)\s+(?!(is|was|are|were|does|do|did|has|have|had|can|could|will|would)\b)[a-z]", re.I)

# "How do you create a vector?", "How can I quit?", "How to read a file?", "How are missing values
# represented?": an instruction or a way of doing, answered by the sentence that gives it and its example.
HOW_Q_RE = re.compile(r"^\s*how\s+(?:do|does|can|could|should|would|will|may|must|to|is|are|was|were)\b"
                      r"(?!\s+(?:it|they|there)\s+(?:compare|differ|change))", re.I)
# "How do you ...", "can I", "should one": the asker and the auxiliary, no words of what is asked
ASKER_RE = re.compile(r"\b(?:do|does|can|could|should|would|will|may|must|shall)\s+(?:i|you|we|one)\b", re.I)
REASON_Q_RE = re.compile(r"\b(reason|why|explain|describe|what caused|how did)\b", re.I)

_WH = r"(?:who|whom|whose|what|which|when|where|how)"
INTERROGATIVE_RE = re.compile(
    rf"^\s*{_WH}\b|\b(?:by|in|since|of|for|from|to|at|on|with|during|as|until|before|after|than)\s+{_WH}\b|\b{_WH}\s*\??\s*$", re.I)

NEGATIONS = {"not", "no", "never", "none", "neither", "nor", "without"}


def negated(text: str) -> bool:
    return any(w in NEGATIONS or w.endswith("n't") for w in re.findall(r"[a-z']+", text.lower()))


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

TERM_NOISE = {"the", "a", "an", "option", "flag", "switch", "command", "function", "term", "parameter", "argument"}


def question_type(question: str) -> str:
    """What the question asks for: yes/no, person, date, place, definition, number, entity or
    sentence (HOW_Q_RE tells the sentence questions that ask for an instruction)."""
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


def asked_tokens(question: str) -> set[str]:
    """The question's content words, less the question words and the asker ("How do you create a
    vector?" asks about creating a vector: a sentence saying "you" and "do" covers none of it)."""
    return content_tokens(question) - QUESTION_WORDS - content_tokens(" ".join(m.group(0) for m in ASKER_RE.finditer(question)))


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

