"""The short answer inside one unit's text: an option's definition, the span where the question's
interrogative stands, a name of the asked kind, the agent of the question's verb, the subject a
sentence defines as the asked kind, and what a sentence says of the question's subject."""

from __future__ import annotations

import re

from backend.llm.text import QUESTION_WORDS, WORD_RE, content_tokens, content_tokens_each
from backend.reader.patterns import (
    ADJECTIVE_USE_RE, COMPOUND_RE, DATE_RE, DATE_YEAR_RE, ENTITY_RE, MONTH_RE, NUMBER_RE, SENTENCE_OPENERS, code_line,
)
from backend.reader.questions import NEXT_OPTION_RE, YEARS_Q_RE


def _inside_brackets(text: str, pos: int) -> bool:
    before = text[:pos]
    return before.count("[") > before.count("]") or before.count("{") > before.count("}")


# "The routine glp_simplex is ...", "The function rm ...": the term as the subject its kind names
SUBJECT_LEAD_RE = re.compile(r"\s*(?:the\s+)?(?:(?:routine|function|command|option|macro|parameter|constant|flag|"
                             r"variable|program|utility|method|keyword|operator)\s+)?", re.I)


EXAMPLE_FIT = 0.3  # an example's line answers "what does X do" only when no sentence says it


def definition_in(text: str, terms: list[str]) -> tuple[float, str | None]:
    """(fit, the definition) of a unit for a definition question: an option-list item that starts
    with the term ("-c, --check  checks the syntax only") or a sentence whose subject it is ("The
    routine glp_simplex is a driver ...") fits 1; the term defined inside a run-on paragraph fits
    0.8; a line of code using it ("s31: glp_simplex(lp, NULL);", an example) fits EXAMPLE_FIT; a
    mention inside brackets (a usage line "[-c]") does not count."""
    best: tuple[float, str | None] = (0.0, None)
    example = code_line(re.sub(r"^\w+:\s+", "", text))  # "s31: glp_simplex(lp, NULL);": a numbered example line
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
            fit = EXAMPLE_FIT if example else 1.0 if m.start() <= 3 or SUBJECT_LEAD_RE.fullmatch(text[:m.start()]) else 0.8
            if fit > best[0]:
                best = (fit, rest.rstrip(".") if term.startswith("-") else None)
    return best


def first_new(pattern: re.Pattern, text: str, q_tokens: set[str]) -> str | None:
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


def aligned_span(qtype: str, text: str, question: str, q_tokens: set[str]) -> str | None:
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


def expansion(text: str) -> str | None:
    """The words an acronym in brackets abbreviates, read by their initials: "Severe acute
    respiratory syndrome (SARS)" -> "Severe acute respiratory syndrome"."""
    for m in ACRONYM_RE.finditer(text):
        letters = m.group(1).lower()
        words = WORD_RE.findall(text[: m.start()])[-len(letters):]
        if len(words) == len(letters) and "".join(w[0].lower() for w in words) == letters:
            return " ".join(words)
    return None


KIND_RE = re.compile(r"\b(?:which|what)\s+((?:[\w'’-]+\s+){0,2}[\w'’-]+)", re.I)


def of_kind(text: str, question: str, q_tokens: set[str]) -> str | None:
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
            return first_new(ENTITY_RE, n.group(0), q_tokens)
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


def agent_of(text: str, question: str, q_tokens: set[str]) -> str | None:
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
    return first_new(ENTITY_RE, text[hit.end() + agent.end(): hit.end() + 120], q_tokens) if agent else None


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


def defined_subject(text: str, question: str, q_tokens: set[str]) -> str | None:
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


def described_subject(text: str, question: str, q_tokens: set[str]) -> str | None:
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


def predicate_of(text: str, q_tokens: set[str], name_alone: bool = False) -> str | None:
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


