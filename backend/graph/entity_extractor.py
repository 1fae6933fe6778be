"""The rule-based entity extractor run at ingest: the offline answer to MMGraphRAG's
graph-construction prompts (appendix D, Figure 7), entity extraction (EE) and relationship
recognition (RR) over one chunk, as the one task entities.EXTRACT ('mmgraph_extract').

Payload: ExtractPayload, the chunk's units (ExtractUnit: id, kind sentence|row|caption, text, and a
row's cells), its label ("Table 2" or None) and the names the document already knows (its title).
Answer: ExtractAnswer, in the prompt's format: entities as [name, type, description], relationships
as [source, relationship, target].

Entities, per unit:
- capitalised multi-word spans, with lowercase connectors inside ("Bank of England", "Plan 9
  from Outer Space"); leading function words are cut ("In Paris" -> "Paris"); a single word is
  kept only when it is not just capitalised because it starts the sentence, and not used as an
  adjective ("an American actress", "Dutch club");
- quoted titles ("A Date with Judy"), acronyms (CBS, NDVI), names the document already knows
  (its title: "Kiss and Tell" has no capitalised "and");
- table rows (read from their cells, never from their text): the row label (first cell) and the
  column headers; a labelled table or figure
  ("Table 2") is an entity that depicts the entities of its caption (the paper's figure nodes).
Types from cues: a title before the name or "(born" after it (person); Inc/University/Party
(organisation); City/River/"in X" (place); film/album/quoted (work); a year header (date).
Numbers with units, years and dates are attributes, not nodes: they are written into the
description of the entities of their sentence ("1945", "17-year-old"). As nodes, a year shared
by hundreds of documents would be a hub joining unrelated units.
Relations: entity pairs in one sentence (each with the next, and the sentence's first entity
with every other one) described by the words between them, the connecting verb phrase; in a
table row, row label -> column header, described by "header: value".

What it does not do: coreference ("He" is not linked to the person), disambiguation (two
people called "Washington" are one name), or any reasoning about the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pydantic import Field

from backend.llm.task import TaskAnswer, TaskPayload
from backend.types import TableRow



class ExtractUnit(TaskPayload):
    id: str
    kind: str = Field(description="sentence | row | caption")
    text: str
    row: TableRow | None = Field(None, description="A row unit's cells (None: a row stored without them, or no row).")


class ExtractPayload(TaskPayload):
    """One chunk: its units (sentences, caption, rows), its label ("Table 2") and the names the
    document already knows; `text` is the chunk as the prompt shows it."""

    units: list[ExtractUnit]
    label: str | None
    known: list[str]
    text: str


class ExtractAnswer(TaskAnswer):
    entities: list[list[str]] = Field(description="[name, type, description] per entity.")
    relationships: list[list[str]] = Field(description="[source, relationship, target] per relation.")


MAX_RELATION_WORDS = 6
MAX_DESCRIPTION_WORDS = 24
MAX_ROW_CELLS = 12
MAX_CAPTION_LINKS = 8

TOKEN_RE = re.compile(r"(?:[A-Z]\.){2,}|[^\W_][\w'’\-]*(?:\.[A-Za-z0-9][\w\-]*)*|&")
CONNECTORS = {
    "of", "the", "de", "du", "da", "di", "del", "della", "des", "la", "le", "van", "von", "der", "den", "for",
    "from", "on", "upon", "y", "al", "bin", "ibn", "&",
}
# Capitalised words that are not names on their own (sentence openers, pronouns, determiners).
FUNCTION_WORDS = {
    "the", "a", "an", "in", "on", "at", "it", "he", "she", "they", "we", "i", "you", "this", "that", "these", "those",
    "his", "her", "their", "its", "our", "my", "your", "as", "after", "before", "during", "when", "while", "although",
    "however", "since", "for", "from", "with", "by", "of", "to", "and", "but", "or", "if", "there", "here", "what",
    "which", "who", "whom", "whose", "where", "why", "how", "also", "both", "each", "every", "all", "some", "many",
    "most", "such", "other", "another", "following", "between", "under", "over", "into", "about", "despite", "unlike",
    "like", "then", "thus", "so", "yet", "nor", "not", "no", "yes", "see", "note", "notes", "total", "according", "until", "through", "throughout", "among", "upon",
    "because", "once", "later", "earlier", "today", "currently", "originally", "additionally", "furthermore",
    "moreover", "meanwhile", "instead", "although", "whereas", "per", "via", "mr", "mrs", "ms", "dr", "jan", "feb",
}
MONTHS = {
    "january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november",
    "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
}
WEEKDAYS = {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}
ROMAN_RE = re.compile(r"^(?=[IVXLC])M{0,3}(CM|CD|D?C{0,3})(XC|XL|L?X{0,3})(IX|IV|V?I{0,3})$")
ACRONYM_RE = re.compile(r"^(?:[A-Z]\.){2,}$|^[A-Z][A-Z0-9&]*[A-Z][A-Z0-9&]*s?$")
# A lowercase word after a single capitalised word that still lets it be a noun ("India is", "Hindi and").
NOUN_FOLLOWERS = {
    "is", "was", "are", "were", "has", "had", "have", "and", "or", "of", "in", "on", "at", "to", "for", "with", "by",
    "as", "from", "who", "which", "that", "where", "when", "also", "but", "after", "before", "since", "until",
    "during", "into", "than", "then", "said", "says", "will", "would", "could", "can", "may", "did", "does", "do",
    "became", "becomes", "won", "made", "released", "announced", "reported", "plays", "played",
}
QUOTED_RE = re.compile(r"[\"“]([A-Z0-9][^\"”]{1,80}?)[\"”]")
ATTRIBUTE_RE = re.compile(
    r"\b(?:\d{1,2}\s+(?:January|February|March|April|May|June|July|August|September|October|November|December)\s+\d{4}"
    r"|(?:January|February|March|April|May|June|July|August|September|October|November|December)\s+\d{1,2},?\s+\d{4}"
    r"|(?:January|February|March|April|May|June|July|August|September|October|November|December)\s+\d{4}"
    r"|[$€£]\s?\d[\d,]*(?:\.\d+)?(?:\s?(?:million|billion|thousand|bn|m|k))?"
    r"|\d[\d,]*(?:\.\d+)?(?:-year-old|\s?(?:%|percent|per cent|million|billion|thousand|km|kilometres|kilometers|"
    r"miles|mi|m|metres|meters|ft|feet|kg|tonnes|tons|lb|hours|hrs|minutes|min|seconds|s|years|days|weeks|months|"
    r"°C|°F|degrees|ha|hectares|acres|mm|cm|MW|GW|kWh|people|residents|inhabitants|trees|scenes|episodes|"
    r"seasons|games|goals|seats|members|employees|copies|units)\b)"
    r"|(?:1[5-9]|20)\d{2}s?)\b"
)
VERB_LINK_RE = re.compile(r"^\s*(?:\([^)]*\)\s*,?\s*)?(?:is|was|are|were|has been|had been|became|is one of|was one of)\s+(.*)$", re.I)

PERSON_TITLES = {
    "mr", "mrs", "ms", "dr", "sir", "lord", "lady", "dame", "president", "king", "queen", "prince", "princess",
    "senator", "governor", "general", "captain", "professor", "prof", "judge", "saint", "pope", "bishop", "rev",
    "reverend", "chancellor", "minister", "mayor", "emperor", "duke", "duchess", "count", "countess", "colonel",
}
PERSON_ROLES = {
    "actor", "actress", "singer", "songwriter", "director", "producer", "writer", "author", "novelist", "poet",
    "comedian", "politician", "footballer", "player", "musician", "rapper", "composer", "painter", "artist",
    "journalist", "presenter", "host", "businessman", "businesswoman", "entrepreneur", "scientist", "physicist",
    "chemist", "mathematician", "philosopher", "historian", "economist", "lawyer", "judge", "diplomat", "officer",
    "soldier", "coach", "manager", "guitarist", "drummer", "bassist", "vocalist", "dancer", "model", "photographer",
    "screenwriter", "playwright", "filmmaker", "architect", "engineer", "inventor", "designer", "athlete",
    "boxer", "wrestler", "cyclist", "swimmer", "pitcher", "quarterback", "midfielder", "striker", "defender",
    "goalkeeper", "chef", "priest", "monk", "nun", "king", "queen", "emperor", "monarch", "ceo", "founder", "founders",
    "alum", "star", "anchor", "columnist", "editor", "critic", "professor", "teacher", "surgeon", "physician",
    "nurse", "pilot", "astronaut", "explorer", "activist", "senator", "governor", "mayor", "president", "man",
    "woman", "son", "daughter", "wife", "husband", "brother", "sister", "father", "mother",
}
WORK_ROLES = {
    "film", "movie", "album", "song", "single", "novel", "book", "series", "show", "sitcom", "play", "musical",
    "opera", "poem", "magazine", "newspaper", "game", "podcast", "painting", "documentary", "episode", "ep",
    "soundtrack", "anthology", "comic", "manga", "anime", "programme", "program", "miniseries", "drama", "comedy",
    "thriller", "report", "study", "paper", "journal", "act", "treaty", "law", "bill", "opera", "ballet", "sculpture",
}
ORG_ROLES = {
    "company", "band", "group", "club", "team", "party", "university", "college", "school", "organization",
    "organisation", "agency", "corporation", "firm", "label", "network", "channel", "station", "studio", "publisher",
    "airline", "bank", "brand", "manufacturer", "retailer", "charity", "institute", "council", "committee",
    "department", "ministry", "government", "army", "navy", "church", "franchise", "league", "association",
}
PLACE_ROLES = {
    "city", "town", "village", "country", "state", "county", "province", "region", "district", "island", "river",
    "lake", "mountain", "capital", "suburb", "neighbourhood", "neighborhood", "borough", "municipality", "park",
    "street", "area", "commune", "parish", "territory", "peninsula", "valley", "bay", "coast", "airport", "port",
}
ORG_WORDS = {
    "inc", "corp", "corporation", "company", "co", "ltd", "llc", "plc", "group", "university", "college", "school",
    "institute", "academy", "association", "society", "council", "committee", "agency", "department", "ministry",
    "bank", "party", "club", "fc", "records", "airlines", "airways", "foundation", "church", "army", "navy", "force",
    "commission", "board", "union", "league", "network", "studios", "press", "team", "band", "orchestra", "trust",
    "authority", "service", "services", "office", "bureau", "federation", "organization", "organisation", "institution",
    "corps", "brigade", "division", "industries", "holdings", "technologies", "systems", "entertainment", "media",
    "pictures", "publishing", "enterprises", "partners", "capital", "motors", "energy", "labs", "laboratory",
    "hospital", "museum", "library", "court", "senate", "parliament", "congress", "assembly", "government",
}
PLACE_WORDS = {
    "city", "county", "state", "river", "lake", "mountain", "mountains", "mount", "island", "islands", "street",
    "avenue", "road", "park", "bay", "valley", "province", "region", "district", "kingdom", "republic", "sea",
    "ocean", "airport", "station", "bridge", "square", "quay", "harbour", "harbor", "beach", "forest", "desert",
    "peninsula", "village", "town", "township", "borough", "canyon", "falls", "coast", "strait", "gulf", "north",
    "south", "east", "west", "heights", "hill", "hills", "springs", "territory", "prefecture", "oblast", "canton",
}
WORK_WORDS = {"film", "album", "song", "novel", "book", "show", "series", "magazine", "journal", "report", "act", "treaty", "episode", "season"}
# Words that make a two- or three-word capitalised name something other than a person.
NOT_PERSON_WORDS = {
    "united", "states", "kingdom", "war", "world", "age", "national", "international", "royal", "grand", "great",
    "old", "new", "golden", "award", "awards", "prize", "cup", "championship", "games", "olympics", "series",
    "festival", "day", "year", "century", "history", "center", "centre", "hall", "house", "tower", "palace", "castle",
    "cathedral", "empire", "dynasty", "federal", "central", "media", "project", "program", "programme", "system",
    "edition", "version", "model", "north", "south", "east", "west", "northern", "southern", "eastern", "western",
    "american", "british", "english", "french", "german", "european", "asian", "african", "pacific", "atlantic",
    "summer", "winter", "spring", "autumn", "fall", "revolution", "movement", "class", "division", "conference",
    "tournament", "open", "grand", "prix", "street", "avenue", "road", "line", "route", "highway",
    "appendix", "annex", "methods", "method", "report", "data", "section", "survey", "manager", "lead", "adviser",
    "advisor", "director", "officer", "chair", "head", "climate", "mapping", "monitoring", "analysis", "results",
}
NUMBER_WORDS = {"one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "twelve", "twenty", "hundred"}
REFERENCE_RE = re.compile(
    r"^(Fig\.?|Figure|Table|Tab\.?|Section|Chapter|Appendix|Eq\.?|Equation)\s*([0-9]+(?:\.[0-9]+)*[a-z]?|[A-Z](?:\.\d+)*)$", re.I
)
PERSON_AFTER_RE = re.compile(r"\s*\((?:born|née|nee|\d{1,2} \w+ \d{4}|\w+ \d{1,2}, \d{4}|c\. \d|\d{4}\s*[–-])")
ORG_FIRST_WORDS = {
    "university", "bank", "college", "church", "department", "ministry", "office", "bureau", "institute", "school",
    "museum", "council", "board", "agency", "society", "association", "federation", "house",
}
PLACE_PREPOSITIONS = {"in", "at", "near", "from", "to", "across", "outside", "inside", "around"}


@dataclass(slots=True)
class Mention:
    name: str
    start: int
    end: int
    kind: str  # how it was found: span | quoted | acronym | known | label | row | header


def _tokens(text: str) -> list[tuple[str, int, int]]:
    return [(m.group(0), m.start(), m.end()) for m in TOKEN_RE.finditer(text)]


def _is_cap(tok: str) -> bool:
    return tok[:1].isupper() or tok == "&"


def _date_part(tokens: list[tuple[str, int, int]], i: int) -> bool:
    """A month or weekday next to a number ("April 23, 1928", "May 2008") is a date, not a name."""
    word = tokens[i][0].lower().rstrip(".")
    if word in WEEKDAYS:
        return True
    if word not in MONTHS:
        return False
    nxt = tokens[i + 1][0] if i + 1 < len(tokens) else ""
    prv = tokens[i - 1][0] if i > 0 else ""
    return nxt[:1].isdigit() or prv[:1].isdigit()


def _gap_joins(text: str, a_end: int, b_start: int) -> bool:
    gap = text[a_end:b_start]
    return gap in (" ", ". ", ".", "-") or (gap.strip() == "" and "\n" not in gap and len(gap) <= 2)


def capitalised_spans(text: str, known_caps: set[str]) -> list[Mention]:
    """Capitalised multi-word spans, single names, acronyms of one sentence (see the module doc)."""
    toks = _tokens(text)
    out: list[Mention] = []
    i = 0
    while i < len(toks):
        tok = toks[i][0]
        if not _is_cap(tok) or tok == "&" or _date_part(toks, i):
            i += 1
            continue
        j = i
        while j + 1 < len(toks) and _gap_joins(text, toks[j][2], toks[j + 1][1]):
            nxt = toks[j + 1][0]
            if _is_cap(nxt) and nxt != "&" and not _date_part(toks, j + 1):
                j += 1
            elif nxt[:1].isdigit() and not re.fullmatch(r"(1[5-9]|20)\d{2}", nxt) and len(nxt) <= 4:
                j += 1  # "Plan 9", "Apollo 11", "Route 66" (a year ends the name)
            elif nxt.lower() in CONNECTORS and j + 2 < len(toks) and _is_cap(toks[j + 2][0]) and toks[j + 2][0] != "&" \
                    and _gap_joins(text, toks[j + 1][2], toks[j + 2][1]) and not _date_part(toks, j + 2):
                j += 2
            else:
                break
        span = toks[i:j + 1]
        first_index = i
        i = j + 1
        # Cut function words at the ends ("In Paris" -> "Paris", "The Beatles" -> "The Beatles" stays
        # only when "The" is inside a longer span; the normalised name drops a leading "the" anyway).
        def _drop_first(tok: str, at_start: bool, rest: list) -> bool:
            low = tok.lower().rstrip(".")
            if tok == "The" and rest and rest[0][0][:1].isupper():
                return False  # "The Beatles" (the normalised name drops "the")
            return low in FUNCTION_WORDS or low in MONTHS or (at_start and low in NUMBER_WORDS)

        while span and _drop_first(span[0][0], first_index == 0, span[1:]):
            span = span[1:]
            first_index += 1
        while span and (span[-1][0].lower() in CONNECTORS or span[-1][0].lower() in FUNCTION_WORDS
                        or span[-1][0].lower().rstrip(".") in MONTHS):
            span = span[:-1]
        if not span or not any(t[0][:1].isalpha() for t in span):
            continue
        if first_index == 0 and len(span) > 1 and all(t[0][:1].isdigit() for t in span[1:]):
            continue  # "Reaching 25", "The 30": a sentence opener and a number
        name = text[span[0][1]:span[-1][2]]
        if len(span) == 1:
            word = span[0][0]
            acronym = bool(ACRONYM_RE.match(word)) and not ROMAN_RE.match(word)
            if len(word) < 2 or (first_index == 0 and not acronym and word.lower() not in known_caps):
                continue  # capitalised only because it opens the sentence
            after = re.match(r"\s+([a-z][a-z'’\-]*)", text[span[0][2]:])
            if after and after.group(1) not in NOUN_FOLLOWERS:
                continue  # adjective use: "an American actress", "Dutch club"
            out.append(Mention(name, span[0][1], span[-1][2], "acronym" if acronym else "span"))
        else:
            out.append(Mention(name, span[0][1], span[-1][2], "span"))
    return out


def _known_mentions(text: str, known: list[str]) -> list[Mention]:
    out = []
    for name in known:
        if len(name) < 2:
            continue
        for m in re.finditer(rf"(?<![\w]){re.escape(name)}(?![\w])", text):
            out.append(Mention(name, m.start(), m.end(), "known"))
    return out


def _resolve(mentions: list[Mention]) -> list[Mention]:
    """Non-overlapping mentions by position; known names and quoted titles win over capitalised spans,
    then the longer mention."""
    rank = {"label": 0, "known": 1, "quoted": 2, "span": 3, "acronym": 3}
    chosen: list[Mention] = []
    for m in sorted(mentions, key=lambda m: (rank.get(m.kind, 4), -(m.end - m.start), m.start)):
        if all(m.end <= c.start or m.start >= c.end for c in chosen):
            chosen.append(m)
    return sorted(chosen, key=lambda m: m.start)


def sentence_mentions(text: str, known: list[str], known_caps: set[str], label: str | None = None) -> list[Mention]:
    found = _known_mentions(text, known)
    if label:
        found += [Mention(label, m.start(), m.end(), "label") for m in re.finditer(re.escape(label), text)]
    found += [Mention(m.group(1).strip(), m.start(1), m.end(1), "quoted") for m in QUOTED_RE.finditer(text)
              if len(m.group(1).split()) <= 12]
    found += capitalised_spans(text, known_caps)
    return _resolve(found)


def guess_type(name: str, sentence: str, start: int, end: int, kind: str) -> str:
    """person | organisation | place | date | work | figure | table | other, from cues in the name
    and around it."""
    words = [w.lower().strip(".,") for w in name.split()]
    before_l = [w.lower() for w in re.findall(r"[A-Za-z][\w'’\-]*", sentence[:start])[-3:]]
    after = sentence[end:end + 40]
    ref = REFERENCE_RE.match(name)
    if ref:
        return "table" if ref.group(1).lower().startswith("tab") else "figure" if ref.group(1).lower().startswith("fig") else "other"
    if kind == "quoted":
        return "work"
    if re.fullmatch(r"(1[5-9]|20)\d{2}s?", name.strip()):
        return "date"
    if words and words[-1] in ORG_WORDS or (words and words[0] in ORG_FIRST_WORDS):
        return "organisation"
    if words and (words[-1] in PLACE_WORDS or words[0] in {"mount", "lake", "river", "port", "fort", "cape"}):
        return "place"
    if before_l and before_l[-1].rstrip(".") in PERSON_TITLES or PERSON_AFTER_RE.match(after):
        return "person"
    m = VERB_LINK_RE.match(sentence[end:])
    if m:
        for w in (w.lower() for w in re.findall(r"[A-Za-z][\w'’\-]*", m.group(1))[:8]):
            for roles, etype in ((PERSON_ROLES, "person"), (WORK_ROLES, "work"), (ORG_ROLES, "organisation"), (PLACE_ROLES, "place")):
                if w in roles:
                    return etype
    if before_l:
        prev = before_l[-1]
        for roles, etype in ((PERSON_ROLES, "person"), (WORK_ROLES, "work"), (ORG_ROLES, "organisation")):
            if prev in roles:
                return etype
        if prev in PLACE_PREPOSITIONS and len(words) <= 3 and not set(words) & NOT_PERSON_WORDS:
            return "place"
    if words and words[-1] in WORK_WORDS:
        return "work"
    if kind == "acronym":
        return "organisation"
    if 2 <= len(words) <= 3 and all(w.isalpha() for w in words) and not set(words) & (CONNECTORS | NOT_PERSON_WORDS):
        return "person"  # two or three plain capitalised words: most often a person's name
    return "other"


def _between(sentence: str, a: Mention, b: Mention) -> list[str]:
    return re.findall(r"[A-Za-z][\w'’\-]*", re.sub(r"\([^)]*\)", " ", sentence[a.end:b.start]))


def _shorten(words: list[str]) -> str:
    if len(words) > MAX_RELATION_WORDS:
        words = words[:3] + ["…"] + words[-2:]
    return " ".join(words)


def relation_text(sentence: str, mentions: list[Mention], i: int, j: int) -> str:
    """The connecting verb phrase of mentions i < j: the words between them; for a pair that is
    not adjacent, the words after i (its predicate) and the words just before j."""
    if j == i + 1:
        words = _between(sentence, mentions[i], mentions[j])
        return _shorten(words) if words else "listed with"
    head = _between(sentence, mentions[i], mentions[i + 1])[:3]
    tail = _between(sentence, mentions[j - 1], mentions[j])[-3:]
    return " ".join(w for w in (" ".join(head), "…", " ".join(tail)) if w).strip(" …") or "listed with"


def _window(sentence: str, start: int, end: int, words_left: int, words_right: int) -> str:
    left = sentence[:start]
    right = sentence[end:]
    cut_left = [m.start() for m in re.finditer(r"\S+", left)]
    cut_right = [m.end() for m in re.finditer(r"\S+", right)]
    lo = cut_left[-words_left] if len(cut_left) >= words_left else 0
    hi = end + (cut_right[words_right - 1] if len(cut_right) >= words_right else len(right))
    return sentence[lo:hi].strip(" ,;:")


def _description(sentence: str, m: Mention) -> str:
    """What the sentence says about the entity: its predicate when it is the subject of a copula
    ("X is a 1945 American comedy film ..."), else the words around the mention."""
    link = VERB_LINK_RE.match(sentence[m.end:])
    if link and m.start <= 2:
        return " ".join(link.group(1).split()[:MAX_DESCRIPTION_WORDS]).strip(" ,;:")
    return _window(sentence, m.start, m.end, 8, 10)


def _attributes(sentence: str) -> list[str]:
    return [a.group(0) for a in ATTRIBUTE_RE.finditer(sentence)]


def _is_label_value(value: str) -> bool:
    """A cell that can name a row: has letters and is not a number with a unit."""
    return bool(re.search(r"[A-Za-z]{2}", value)) and not ATTRIBUTE_RE.fullmatch(value.strip()) and len(value) <= 80


def _generic_header(head: str) -> bool:
    return not head or bool(re.fullmatch(r"column \d+", head))


class _Collector:
    def __init__(self) -> None:
        self.entities: dict[str, list[str]] = {}  # name -> [name, type, description]
        self.attributes: dict[str, list[str]] = {}
        self.relations: dict[tuple[str, str, str], None] = {}

    def entity(self, name: str, etype: str, description: str) -> None:
        have = self.entities.get(name)
        if have is None:
            self.entities[name] = [name, etype, description]
        elif have[1] == "other" and etype != "other":
            have[1] = etype

    def attribute(self, name: str, values: list[str]) -> None:
        bucket = self.attributes.setdefault(name, [])
        for v in values:
            if v not in bucket and len(bucket) < 6:
                bucket.append(v)

    def relation(self, src: str, rel: str, dst: str) -> None:
        if src != dst:
            self.relations.setdefault((src, rel, dst), None)

    def answer(self) -> ExtractAnswer:
        entities = []
        for name, (n, etype, desc) in self.entities.items():
            attrs = [a for a in self.attributes.get(name, []) if a not in desc]
            if attrs:
                desc = f"{desc} [{', '.join(attrs)}]" if desc else ", ".join(attrs)
            entities.append([n, etype, desc])
        return ExtractAnswer(entities=entities, relationships=[list(r) for r in self.relations])


def extract(payload: ExtractPayload) -> ExtractAnswer:
    """Entities and relationships of one chunk (MMGraphRAG Figure 7 (a) + (b)) by rules."""
    known = [k for k in payload.known if k]
    label = payload.label or None
    units = payload.units
    out = _Collector()
    # Words the chunk capitalises mid-sentence are names even where they open a sentence.
    known_caps = {k.lower() for k in known}
    for unit in units:
        for tok, start, _end in _tokens(unit.text)[1:]:
            if tok[:1].isupper() and tok.lower() not in FUNCTION_WORDS:
                known_caps.add(tok.lower())
    if label:
        kind = "table" if label.lower().startswith("table") else "figure"
        caption = " ".join(u.text for u in units if u.kind == "caption")[:300]
        out.entity(label, kind, caption or f"{kind} {label}")
    for unit in units:
        text = unit.text
        if unit.kind == "row":
            _row(out, unit, label)
            continue
        mentions = sentence_mentions(text, known, known_caps, label)
        attrs = _attributes(text)
        for m in mentions:
            etype = "table" if m.kind == "label" and label and label.lower().startswith("table") else (
                "figure" if m.kind == "label" else guess_type(m.name, text, m.start, m.end, m.kind))
            out.entity(m.name, etype, _description(text, m))
            out.attribute(m.name, attrs)
        for i in range(len(mentions) - 1):
            out.relation(mentions[i].name, relation_text(text, mentions, i, i + 1), mentions[i + 1].name)
        for j in range(2, len(mentions)):
            out.relation(mentions[0].name, relation_text(text, mentions, 0, j), mentions[j].name)
        if label and unit.kind == "caption":
            for m in [m for m in mentions if m.name != label][:MAX_CAPTION_LINKS]:
                out.relation(label, "depicts", m.name)
    return out.answer()


def _row(out: _Collector, unit: ExtractUnit, label: str | None) -> None:
    """A row's label as an entity (of its table), each header as one, and label -> header
    relations described by "header: value"; nothing for a row without cells."""
    text = unit.text
    cells = [(head.strip(), value.strip()) for head, value in unit.row.cells] if unit.row is not None else []
    if not cells:
        return
    row_head, row_label = cells[0]
    if not _is_label_value(row_label):
        return
    out.entity(row_label, "other", f"row of {label}: {text[:160]}" if label else f"table row: {text[:160]}")
    if label:
        out.relation(label, "has row", row_label)
    for head, value in cells[1:MAX_ROW_CELLS]:
        if _generic_header(head) or not value:
            continue
        htype = "date" if re.fullmatch(r"(?:FY\s?)?(1[5-9]|20)\d{2}", head) else "other"
        out.entity(head, htype, f"column of {label}" if label else "table column")
        out.relation(row_label, f"{head}: {value}"[:80], head)
    if not _generic_header(row_head):
        out.entity(row_head, "other", f"column of {label}" if label else "table column")
