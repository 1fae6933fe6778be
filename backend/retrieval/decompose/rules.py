"""Rules for LILaC's query prompts (appendix F): QUERY DECOMPOSITION and MODALITY SELECTION
(the offline answer of task.DECOMPOSE).

Decomposition follows the prompt's guidelines as rules: the smallest set (1-5) of subqueries,
each aimed at one component; every content word of the question appears in some subquery;
prerequisites first (a relative clause or an "X of Y" phrase that names the bridge entity
comes before the clause that asks about it; so does a named thing's role written in front of its
name, "the Green performer", and a possessive name's bridge, "Neville A. Stanton's employer");
a clause describes a bridge with a relative pronoun, a participle ("the country containing Hoora")
or neither ("the province WRSU-FM broadcasts in"), as MuSiQue composes its questions; a bridge that
is described by a bridge of its own is split again, so a 3- or 4-hop question gives a subquery per
hop; comparisons ("A or B", "both A and B") give one subquery per compared entity with the
compared attribute; no split when nothing calls for one: a one-hop question stays whole ("How do
you create a vector in R?": "a vector in R" is a kind of thing in a setting, not a thing to find
first), and the task's reason says why the rules split a question or left it whole.
Modality selection applies the prompt's heuristics (numeric totals, percentages, year-by-year
figures -> table; appearance, colours, logos, charts -> figure; everything else -> text).

What it does not do: resolve a bridge entity (that needs the evidence; FiF and MI-RAG do it
from what they found) or paraphrase.
"""

from __future__ import annotations

import re
from typing import Any

from backend.llm.text import QUESTION_WORDS, content_tokens

MAX_SUBQUERIES = 5
# A name: capitalised words, an ampersand between two of them ("Filthy Rich & Catflap", "Procter & Gamble").
NAME_WORD = r"[A-Z0-9][\w'’.&-]*"
NAME = NAME_WORD + r"(?:\s+(?:&\s+)?" + NAME_WORD + ")*"
# A title may hold "of", "the", "and" or "de" between its capitalised words ("City of Angels", "Bank of America").
LONG_NAME = NAME_WORD + r"(?:\s+(?:(?:&|of|the|and|de)\s+)*" + NAME_WORD + ")*"
RELATIVE_RE = re.compile(r"\s(who|whom|whose|which|that|where)\s", re.I)
# "the director of the film X", "the capital of the country that ..."
OF_BRIDGE_RE = re.compile(
    r"\b((?i:the|a|an|this|its|his|her|their)\s+(?:[a-z-]+\s+){0,2}?[a-z-]+)\s+(of|for|from|by|in)\s+"
    r"((?:the\s+)?(?:[\w'’.-]+\s+){0,6}?(?:\"[^\"]+\"|“[^”]+”|" + LONG_NAME + "))",
)
# An of-phrase that ends in a number names a time or a place in the document, not an entity.
NUMBER_NAME_RE = re.compile(r"(?:^|\s)[$€£]?\d[\d,.]*%?$")
# "the Green performer", "the Blue Monday record label": a named work or thing, then the role of the
# entity the question is about (a Wikidata relation written as a description, as MuSiQue composes
# its questions). A capitalised word that is a demonym ("the British author") is no name.
ROLE_NOUNS = (
    "performer|singer|band|director|author|writer|screenwriter|creator|producer|founder|owner|developer|publisher|"
    "manufacturer|composer|lyricist|artist|designer|architect|distributor|operator|record label|label|network|"
    "builder|inventor|illustrator|narrator|editor|presenter|headquarters|parent company"
)
# The nouns a possessive name's bridge ends on: a person, a place, an organisation or a work with a page of its
# own (MuSiQue's Wikidata relations: employer, spouse, father, educated at, member of sports team, place of birth,
# country, record label, ...). "Apple's total net sales" or "Autodesk's goodwill" name a figure of the same
# document, no hop.
ENTITY_NOUNS = frozenset((
    ROLE_NOUNS.replace("|", " ") + " employer spouse wife husband father mother son daughter brother sister sibling "
    "parent child children partner teammate team club college school university alma birthplace hometown country "
    "city state province county capital village community town region district division league party album single "
    "song film movie novel book series show sitcom company successor predecessor leader coach manager president "
    "member persona character group organisation organization studio airline airport station stadium arena venue "
    "church diocese festival award competition tournament war battle army unit regiment ship place continent"
).split())
# "the city of Singapore" is Singapore: a place noun before "of" and a name is no hop.
# "on She's Got the Rhythm (And I Got the Blues)", "at the 2010 Commonwealth Games": a preposition and a name.
NAMED_PP_RE = re.compile(
    r"(?:on|at|in|for|from|with)\s+(?:the\s+)?(?:\d{4}\s+)?[A-Z0-9\"“][^\s]*(?:\s+(?:(?:of|the|and|&|a|de)\s+)*[A-Z0-9\"“(][^\s]*)*")
NAME_OF_RE = re.compile(r"\b(?i:the\s+)?(?:full\s+)?name\s+of\s+(?=the\s)")
PLACE_NOUNS = frozenset("city town village state province county country region district community continent".split())
ATTRIBUTIVE_RE = re.compile(
    r"\b(?i:the)\s+(?P<name>\"[^\"]+\"|“[^”]+”|" + NAME_WORD + r"(?:(?:\s+(?:of|the|and|de|&))*\s+" + NAME_WORD + ")*?)"
    r"\s+(?P<role>" + ROLE_NOUNS + r")\b"
)
# "When was the institute that owned The Collegian founded?": a question whose main clause waits
# for its verb ("When was the institute ... founded") ends with that verb, after the relative clause.
AWAITS_VERB_RE = re.compile(
    r"^(?i:(?:in\s+)?(?:when|where|what\s+year|which\s+year|what|which|who|how)\s+"
    r"(?:was|were|is|are|did|does|do|has|have|had)\s)"
)
TRAILING_VERBS = frozenset((
    "born founded established formed created released built opened published written located launched introduced "
    "discovered died made produced directed designed named held signed elected married buried started begun began "
    "completed ended closed incorporated headquartered based form die start end begin open close win join become "
    "leave move retire marry found establish release debut premiere air premiered aired debuted"
).split())
QUESTION_START_RE = re.compile(r"(?i:(?:in|on|at|for|from|by|to|of)\s+)?(?i:what|which|who|whom|whose|when|where|how|why|is|was|are|were|did|does|do|has|have|had)\b")
OBJECT_START_RE = re.compile(r"(?:the|a|an|its|his|her|their|as)$|[\"“A-Z0-9]")
DO_SUPPORT_RE = re.compile(r"^(?:\S+\s+){1,2}(?i:does|did|do)\s")
AUXILIARIES = frozenset("is was are were be been being has have had".split())
# Words that end a noun phrase after a possessive name ("Kaiser Ventures' founder established ..."):
# prepositions, determiners, auxiliaries and conjunctions.
PHRASE_ENDS = frozenset((
    "of in on at by for from with to into about as than and or but the a an this that these those his her its their "
    "before after during over across since until between among within without under per via near "
    "while whereas although though because if unless so "
    "who whom whose which that where when is was are were be been being has have had do does did can could will would"
).split())
PREPOSITIONS = frozenset("in on at by for from with to into about of off over under through against".split())
PARTICIPLE_RE = re.compile(r"\s([a-z]{3,}ing)\s+(\S+)")
# A clause with no relative pronoun, ending on its preposition: "the province WRSU-FM broadcasts in".
CONTACT_CLAUSE_RE = re.compile(r"\s(?=(?:the\s+)?" + NAME + r"\s+(?:[a-z][\w'’-]*\s+){0,3}?(?:" + "|".join(sorted(PREPOSITIONS))
                               + r")(?:\s+[a-z]+)?\s*(?:,|$))")
# A participle after a noun phrase starts a reduced relative clause ("the network carrying the Maltin on Movies
# podcast"); these -ing words are prepositions or nouns, never such a participle.
NOT_PARTICIPLES = frozenset((
    "during including according regarding following concerning excluding being nothing something anything "
    "everything thing king ring spring string morning evening building wedding painting recording meeting ending "
    "opening offering setting training housing clothing funding marketing engineering timing ceiling"
).split())
DEMONYM_RE = re.compile(r"^[A-Z][a-z]+(?:an|ish|ese|ch|i)$")
COMPARE_OR_RE = re.compile(
    r"^(?P<pre>.*?)(?P<a>(?:\"[^\"]+\"|[A-Z0-9][\w'’.&-]*(?:\s+(?:of|the|and|de|la|van|von|&|[A-Z0-9][\w'’.&-]*))*)(?:\s*\([^)]*\))?)"
    r"\s*,?\s+or\s+(?P<b>(?:\"[^\"]+\"|[A-Z0-9][\w'’.&-]*(?:\s+(?:of|the|de|la|van|von|&|[A-Z0-9][\w'’.&-]*))*)(?:\s*\([^)]*\))?)"
    r"(?P<post>.*)$"
)
BOTH_RE = re.compile(
    r"^(?P<pre>(?:are|were|is|was|do|did|does|have|has)\s+(?:both\s+)?)(?P<a>.+?)\s+and\s+(?P<b>.+?)\s+(?P<post>(?:both|each|the same|from|of|in|located|born|considered|known|an?|American|British)\b.*)$",
    re.I,
)
TABLE_CUES = re.compile(
    r"\b(how (many|much)|total|sum|percentage|percent|%|ratio|average|median|growth|increase|decrease|change|"
    r"year[- ]over[- ]year|per (year|quarter|month)|revenue|income|expenses?|profit|margin|amount|number of|"
    r"rate|share|price|cost|fiscal|quarter(ly)?|balance|assets|liabilities|cash)\b",
    re.I,
)
FIGURE_CUES = re.compile(
    r"\b(look(s)? like|colou?r|logo|image|photo|picture|figure|fig\.|chart|graph|plot|diagram|map|icon|shown|"
    r"drawn|illustrat\w+|visual|appearance|shape|slide)\b",
    re.I,
)


def modality_of(text: str) -> str:
    """The LILaC modality heuristics: figure cues first (explicit), then table cues, else text."""
    if FIGURE_CUES.search(text):
        return "figure"
    if TABLE_CUES.search(text):
        return "table"
    return "text"


def _clean(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip(" ,;:?.")
    return text


def _comparison(q: str) -> list[str] | None:
    m = COMPARE_OR_RE.match(q)
    if m and (m.group("pre").strip() or m.group("post").strip()):
        attr = _clean(f"{m.group('pre')} {m.group('post')}")
        attr = re.sub(r"^(which|who|what)\s+(one\s+)?(is|was|are|were|has|had|did|does)?\s*", "", attr, flags=re.I)
        return [_clean(f"{m.group('a')} {attr}"), _clean(f"{m.group('b')} {attr}")]
    m = BOTH_RE.match(q)
    if m:
        post = _clean(m.group("post"))
        post = re.sub(r"^(both|each)\s+", "", post, flags=re.I)
        return [_clean(f"{m.group('a')} {post}"), _clean(f"{m.group('b')} {post}")]
    return None


def _possessive_bridge(q: str) -> list[str] | None:
    """"When was Neville A. Stanton's employer founded" -> ['the employer of Neville A. Stanton',
    'When was the employer founded']: a possessive name is the first hop, as MuSiQue composes its
    questions. The noun phrase after the "'s" is one to three lower-case words, the first may be a
    capitalised modifier ("Ken Rose's UNLV teammate"); a capitalised word as its noun makes the
    possessive part of a title ("James Gunn's PG Porn")."""
    words = q.split(" ")
    for i, word in enumerate(words):
        m = re.fullmatch(r"([A-Z0-9][\w.&-]*?)(['’]s|(?<=s)['’])", word)
        lower = [bool(re.fullmatch(r"[a-z][\w-]*,?", w)) for w in words[i + 1:i + 3]]
        if m is None or not lower or not (lower[0] or (re.fullmatch(r"[A-Z][\w-]*", words[i + 1]) and lower[1:] == [True])):
            continue  # a lower-case noun, or one capitalised modifier before it ("Ken Rose's UNLV teammate")
        start = i
        while start > 0 and re.fullmatch(r"[A-Z0-9][\w'’.&-]*|&", words[start - 1]) and \
                words[start - 1].lower() not in PHRASE_ENDS | QUESTION_WORDS:  # "From Apple's": no "From"
            start -= 1
        end = i + 1 + (not lower[0])  # the noun phrase: words[i + 1:end]; a comma ends it after its word
        while end < len(words) and end - i <= 3 and re.fullmatch(r"[a-z][\w-]*,?", words[end]) and \
                not _ends_phrase(words[end], last=end == len(words) - 1):
            end += 1
            if words[end - 1].endswith(","):
                break
        head = end  # "X's place of birth", "X's country of citizenship": the noun is the one before "of"
        if end > i + 1 and end + 1 < len(words) and words[end] == "of" and re.fullmatch(r"[a-z][\w-]*[,?]?", words[end + 1]) \
                and not _ends_phrase(words[end + 1].rstrip(",?"), last=end + 1 == len(words) - 1):
            end += 2
        if end > i + 2 and end < len(words) and words[end] in PREPOSITIONS | {"up"} and \
                {"does", "did", "do"} & {w.lower() for w in words[:start]}:
            end -= 1  # "How did NVIDIA's operating expenses compare to ...": the question's own verb
        if end == i + 1 or end < len(words) and re.match(r"[\"“A-Z0-9]", words[end]):
            continue  # no noun, or one a name stands beside ("Poison's album "Shut Up, Make Love"")
        the = start > 0 and words[start - 1].lower() == "the"
        comma = words[end - 1].endswith(",")
        noun = " ".join(words[i + 1:end]).rstrip(",")
        if words[min(head, end) - 1].rstrip(",").split("-")[-1] not in ENTITY_NOUNS:  # "co-writer" is a writer
            continue
        # A name the noun holds its role on goes with it: "Alan Jackson's co-writer on She's Got the Rhythm".
        # A place holds no role on anything: in "Gerald Reive's country at the 2014 Games" the Games are the question's.
        on = NAMED_PP_RE.match(" ".join(words[end:])) if not comma and noun.split()[-1] not in PLACE_NOUNS else None
        scope = on.group(0).split() if on else []
        main = _clean(" ".join(words[:start - the] + [f"the {noun}" + ("," if comma else "")] + words[end + len(scope):]))
        if _asks_beyond(main, noun):
            return [_clean(f"the {noun} of {' '.join(words[start:i] + [m.group(1)] + scope)}"), main]
    return None


def _ends_phrase(word: str, last: bool) -> bool:
    """Whether a word after a possessive name is past its noun phrase: a function word, a verb of
    the main clause ("... employer founded"), an adverb, a past participle ("... division called")."""
    return word in PHRASE_ENDS or (last and word in TRAILING_VERBS) or word.endswith("ly") or \
        (len(word) > 4 and word.endswith("ed"))


def _clause_markers(q: str) -> list[tuple[int, int, str]]:
    """Where relative clauses start, in order: (start, end of the marker, pronoun). A relative
    pronoun is its own marker; a participle after a noun ("the community containing X") and a
    clause with no pronoun that ends on its preposition ("the city the Memphis Hustle plays in",
    "the series Azie Mira Dungey writes for", the main clause's verb may follow) start where their
    first word does, with no pronoun."""
    found = [(m.start(), m.end(), m.group(1)) for m in RELATIVE_RE.finditer(q)
             if not q[:m.start()].endswith(" as")]  # "a recurring role as whom": a question word in place
    for m in [*PARTICIPLE_RE.finditer(q), *CONTACT_CLAUSE_RE.finditer(q)]:
        if m.re is PARTICIPLE_RE and (m.group(1) in NOT_PARTICIPLES or not OBJECT_START_RE.match(m.group(2))
                                      or not (QUESTION_START_RE.match(q) or AUXILIARIES & set(q[:m.start()].lower().split()))):
            continue  # a participle takes an object ("the average operating income" has none) after the question's verb
        before = q[:m.start()].split()  # the clause follows a noun ("the city", not "the operating loss")
        if m.re is CONTACT_CLAUSE_RE and DO_SUPPORT_RE.match(q):
            continue  # "Which team does the player Lionel Messi play for": the question's own verb
        if before and re.fullmatch(r"[a-z][\w-]*", before[-1]) and before[-1] not in PHRASE_ENDS:
            found.append((m.start(), m.start() + 1, ""))
    return sorted(set(found))


def _relative_bridge(q: str) -> list[str] | None:
    """'What position was held by the woman who portrayed X in Y' ->
    ['the woman who portrayed X in Y', 'What position was held by the woman']; a clause closed by a
    comma leaves what follows it to the main clause ("the state where X was born, contains Y")."""
    for start, end, pronoun in _clause_markers(q):
        before = q[:start]
        # The head noun phrase: the last 1-4 words before the pronoun, from its last determiner ("the
        # nickname of the city where ...": the clause is the city's, and the nickname is asked of it).
        head = re.search(
            r"(\b(?i:the|a|an|this|that)\s+(?:(?!(?i:the|a|an|of)\s)[\w'’-]+\s+){0,3}[\w'’-]+|\b[A-Z][\w'’-]*(?:\s+[A-Z][\w'’-]*)*)$",
            before.strip()
        )
        if head is None or len(before.split()) < 2 or _clean(before).lower() == head.group(1).lower():
            continue  # a subject relative ("The manager who ... managed X"): its end is unknown without a parser
        clause, _, after = q[end:].partition(", ")
        if after and (not re.match(r"[a-z]", after) or after.split(" ")[0] in PHRASE_ENDS):
            clause, after = q[end:], ""  # an apposition ("X's son, the high jumper, ..."), not the clause's end
        if len(clause.split()) < 2:
            continue
        main = _clean(f"{before} {after}")
        words = clause.split()
        if AWAITS_VERB_RE.match(main) and len(words) > 2 and words[-1].lower().strip("?.,") in TRAILING_VERBS \
                and words[-2].lower() not in AUXILIARIES:  # "... where X is located": the clause's own verb
            main, clause = f"{main} {words[-1]}", " ".join(words[:-1])
        bridge = _clean(f"{head.group(1)} {pronoun} {clause}")
        main = _clean(main)
        if len(content_tokens(main) - QUESTION_WORDS) == 0:
            continue
        return [bridge, main]
    return None


def _asks_beyond(main: str, phrase: str) -> bool:
    """Whether the question left after taking out a bridge asks about something beyond the phrase
    that stands for the bridge (a content word that is neither the phrase's nor a question word)."""
    return bool(content_tokens(main) - content_tokens(phrase) - QUESTION_WORDS)


def _attributive_bridge(q: str) -> list[str] | None:
    """'Who is the spouse of the Green performer' -> ['the performer of Green', 'Who is the spouse
    of the performer']: the named thing's role is the bridge, asked first; the question then asks
    about whoever holds it (FiF composes the found name into 'the performer')."""
    m = ATTRIBUTIVE_RE.search(q)
    if m is None or DEMONYM_RE.match(m.group("name")):
        return None
    role, name = m.group("role"), re.sub(r"['’]s$", "", m.group("name"))  # "the Stanley Clarke Band's performer"
    main = _clean(f"{q[: m.start()]}the {role}{q[m.end():]}")
    if not _asks_beyond(main, role):
        return None  # nothing is asked about the role's holder beyond the phrase itself
    return [f"the {role} of {name}", main]


# A figure's noun: "the change in Other", "the amount for Appliances", "the ratio of IMFT's total assets" ask
# for a figure of what they name, read where it is named; nothing is found first and then asked about.
MEASURE_NOUNS = frozenset((
    "change changes amount amounts value values difference sum total average mean ratio proportion percentage "
    "share portion fraction rate increase decrease growth number level balance"
).split())


def _kind_in_context(m: re.Match) -> bool:
    """Whether an OF_BRIDGE_RE match names a kind of thing in a setting rather than a thing to find
    first: "a vector in R", "the options for gcc" (a preposition other than "of", or an indefinite
    article, before a noun that is no person, place, organisation or work: ENTITY_NOUNS). "the
    director of the film X" and "the community of Faith Lutheran ..." stay bridges."""
    determiner, *words = m.group(1).lower().split()
    if len(words) > 1 and (words[-1] in TRAILING_VERBS or words[-1].endswith("ed")):
        words = words[:-1]  # a participle after its noun: "a boarding school opened | by ...", "this gospel singer born | in ..."
    return words[-1] not in ENTITY_NOUNS and (m.group(2) != "of" or determiner in ("a", "an"))


def _of_bridge(q: str) -> list[str] | None:
    """'The director of the romantic comedy "Big Stone Gap" is based in what city' ->
    ['the director of the romantic comedy "Big Stone Gap"', 'The director is based in what city'].
    No bridge is a year or a page ("the percentage change in X from 2018 to 2019"), nor a figure's
    noun (MEASURE_NOUNS: "What was the change in the amount for Appliances in 2019 from 2018?")."""
    m = next((m for m in OF_BRIDGE_RE.finditer(q)
              if not NUMBER_NAME_RE.search(m.group(3)) and m.group(1).split()[-1].lower() not in MEASURE_NOUNS
              and not _kind_in_context(m)), None)
    if not m:
        return None
    rest = _clean(q[: m.start()] + m.group(1) + q[m.end():])
    bridge = _clean(m.group(0))
    if not _asks_beyond(rest, m.group(1)):
        return _inner_of_bridge(q, m)  # nothing is asked beyond the phrase: a chain ("the sibling of the author of X")?
    return [bridge, rest]


INNER_OF_RE = re.compile(
    r"\b(?i:the)\s+(?P<noun>[a-z-]+(?:\s+of\s+[a-z-]+|\s+[a-z-]+)?)\s+of\s+(?:the\s+)?(?:(?!of\b)[a-z-]+\s+){0,2}?"
    r"(?P<name>\"[^\"]+\"|“[^”]+”|" + NAME + ")"
)


def _inner_of_bridge(q: str, outer: re.Match) -> list[str] | None:
    """'Who is the sibling of the author of Kapalkundala' -> ['the author of Kapalkundala', 'Who is
    the sibling of the author']: in a chain of of-phrases the innermost one, ending at the name,
    is the first hop, and the question is then asked of its holder."""
    m = INNER_OF_RE.search(outer.group(3))
    if m is None:
        return None
    start = outer.start(3) + m.start()
    main = _clean(f"{q[:start]}the {m.group('noun')}{q[outer.start(3) + m.end():]}")
    if not _asks_beyond(main, m.group("noun")):
        return None
    return [_clean(m.group(0)), main]


def _of_entity(bridge: str) -> bool:
    """Whether an of-phrase found inside a bridge is a hop of its own: it asks for a person, an
    organisation or a work of a named thing ("the singer of the song KMFDM covered ..."), not for a
    place that is the name itself ("the city of Singapore"), a member of a group ("a member of the
    Charlotte Hornets"), a month ("the month of July") or an adjective ("the father of modern American")."""
    m = re.match(r"the\s+(?:[\w-]+\s+){0,2}?([\w-]+)\s+of\s", bridge)
    return bool(m) and m.group(1) in ENTITY_NOUNS - PLACE_NOUNS and not DEMONYM_RE.match(bridge.split()[-1])


def _bridges(q: str, depth: int = 1) -> list[str] | None:
    """The hops of a bridge question, first hop first. The bridge split off the question is split
    again when it describes an entity of its own by a clause, a possessive or a role ("the country
    that borders the state where Finding Dory takes place": the state, then the country), up to
    MAX_SUBQUERIES parts; an of-phrase inside it only when it asks for an entity (`_of_entity`)."""
    parts = _attributive_bridge(q) or _relative_bridge(q)
    if parts is None and (parts := _possessive_bridge(q)):
        return parts  # a name's noun is the innermost hop
    if parts is None and (parts := _of_bridge(q)) and depth > 1 and not _of_entity(parts[0]):
        return None
    if parts and depth < MAX_SUBQUERIES - 1:
        inner = _bridges(parts[0], depth + 1)
        if inner:
            parts = inner + parts[1:]
    return parts


def _held_by_the_bridge(parts: list[str]) -> list[str]:
    """The question left after the bridges may ask along a chain of of-phrases ending at the last
    bridge: "... administers the high school of the high-jumping daughter of the UNLV teammate"
    (the teammate found first) is the daughter of the teammate, then her high school, then the
    question asked of it. Each "the N of <the bridge>" whose N is an entity is a hop of its own; the
    question keeps the whole chain (cut to "When was the creator born", it would match any birth
    date)."""
    if len(parts) < MAX_SUBQUERIES and (branch := _possessive_bridge(parts[-1])):
        parts = parts[:-1] + branch  # a second branch: "How many countries in X's continent are recognized by the organization"
    while len(parts) < MAX_SUBQUERIES:
        main, before = parts[-1], parts[-2] if len(parts) > 1 else ""
        words = before.split() if before.lower().startswith("the ") else []  # the bridge, as the question calls it
        hop = next((m for k in range(min(5, len(words)), 1, -1) if words[k - 1] not in PHRASE_ENDS and (m := re.search(
            r"\b((?i:the)\s+(?:[\w-]+\s+){0,2}?([\w-]+))\s+of\s+" + re.escape(" ".join(words[:k])) + r"(?=[\s,?.]|$)", main))), None)
        if hop is None or hop.group(2) not in ENTITY_NOUNS - PLACE_NOUNS:
            return parts
        rest = NAME_OF_RE.sub(" ", main[:hop.start()] + hop.group(1) + main[hop.end():])
        if not _asks_beyond(_clean(rest), hop.group(1)):
            return parts  # "What is the name of the fight song of the university" asks for the song: no hop past it
        parts = parts[:-1] + [_clean(hop.group(0)), main]  # the question keeps the whole chain it asks along
    return parts


def _why_not_split(q: str) -> str:
    """Why a question stays whole: what the rules looked for, and a phrase that looked like a bridge
    but names a kind of thing in a setting ("a vector in R")."""
    why = ("one hop: no comparison, and no relative clause, possessive name, role or of-phrase that names "
           "another person, place, organisation or work to find first")
    kinds = [m.group(0) for m in OF_BRIDGE_RE.finditer(q) if _kind_in_context(m)]
    return why + (f"; '{kinds[0]}' names a kind of thing in a setting, not a thing to find first" if kinds else "")


def decompose_why(question: str) -> tuple[list[dict[str, Any]], str]:
    """The subqueries (see `decompose`) and why the rules split the question or left it whole."""
    q = _clean(question)
    parts: list[str] | None = None
    dependent = False
    if (parts := _comparison(q)) is not None:
        why = "compares named things: one subquery each, with the compared attribute"
    elif parts := _bridges(q):
        dependent = True
        parts = _held_by_the_bridge(parts)
        why = f"'{parts[0]}' names what the question asks about, found first; each later subquery is asked of the one before"
    if not parts:
        parts, why = [q], _why_not_split(q)
    # Remove redundancy: drop empty or duplicate subqueries.
    seen: set[str] = set()
    uniq: list[str] = []
    for p in parts:
        key = p.lower()
        if p and key not in seen and content_tokens(p):
            seen.add(key)
            uniq.append(p)
    parts = uniq[:MAX_SUBQUERIES] or [q]
    # Coverage: every content word of the question appears in some subquery.
    covered = set().union(*(content_tokens(p) for p in parts))
    missing = [w for w in re.findall(r"[\w'’-]+", q) if (content_tokens(w) - QUESTION_WORDS) and not content_tokens(w) <= covered]
    if missing:
        parts[-1] = _clean(parts[-1] + " " + " ".join(dict.fromkeys(missing)))
    if len(parts) == 1 and "one hop" not in why:
        why = _why_not_split(q)  # the parts collapsed into the question itself
    out = []
    for i, p in enumerate(parts):
        deps = list(range(i)) if dependent and i > 0 else []
        out.append({"text": p, "modality": modality_of(p), "depends_on": deps})
    return out, why


def decompose(question: str) -> list[dict[str, Any]]:
    """The question as 1-MAX_SUBQUERIES modality-labelled subqueries ({"text", "modality", "depends_on"})."""
    return decompose_why(question)[0]


def decompose_answer(question: str) -> dict[str, Any]:
    """The decomposition task's answer: {"subqueries": [...], "reason": ...}; the reason says why
    the rules split the question or left it whole."""
    subs, why = decompose_why(question)
    kind = "single" if len(subs) == 1 else ("bridge" if any(s["depends_on"] for s in subs) else "parallel")
    return {"subqueries": subs, "reason": f"{kind} decomposition by rules ({len(subs)} subquer{'y' if len(subs) == 1 else 'ies'}): {why}"}
