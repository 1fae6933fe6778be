"""Answers computed across units rather than read in one: which of two names the question
compares came first (by the dates the evidence gives each), and the share of one table row in
another (or of one cell of a row in another), read from the rows' cells."""

from __future__ import annotations

import re

from backend.llm.text import QUESTION_WORDS, content_tokens, row_label
from backend.reader.evidence import AnswerReply, EvidenceUnit
from backend.reader.figures import cell_value, plain_number, row_cells, years_in
from backend.reader.patterns import DATE_RE, MONTHS, YEAR_RE

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


def _when(name: str, verb: str, e: EvidenceUnit) -> tuple[int, int, int] | None:
    """When the unit says `name` was born (founded, released ...): the date after the verb, or for
    a birth the opening brackets ("Keith Bostic (born January 17, 1961)", "(April 23, 1928 – 2014)")."""
    text = e.text
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


def compared(question: str, evidence: list[EvidenceUnit]) -> AnswerReply | None:
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
    return AnswerReply(answer=name, citations=[d[2].id for d in dated], abstain=False, confidence=round(e.score, 3),
                       reason=f"compared when each was {verb.lower()}: {dated[0][1]} {dated[0][0][0]}, {dated[1][1]} {dated[1][0][0]}")


# "What is the percentage of Bell Wireless out of the Total BCE operating revenues in Q4 2019?",
# "the proportion of X over total assets", "the ratio of A to B", "What percentage of B is made up
# of A?": a share of one table row in another (two-row arithmetic).
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


def _rows_for(phrase: str, rows: list[EvidenceUnit]) -> list[EvidenceUnit]:
    """The rows whose label the phrase names best: the largest share of the label's words in the
    phrase (at least ROW_MATCH), then the most words shared; ties in evidence order."""
    words = content_tokens(phrase) - QUESTION_WORDS
    found = []
    for e in rows:
        label = content_tokens(row_label(e.row))
        if label and (shared := len(label & words)) and shared / len(label) >= ROW_MATCH:
            found.append(((shared / len(label), shared), e))
    top = max((key for key, _ in found), default=None)
    return [e for key, e in found if key == top]


def _column(question: str, a: EvidenceUnit, b: EvidenceUnit) -> tuple[float, float] | None:
    """The two rows' values in one column: the one year the question names, else the header that
    shares most words with the question, else the first column both rows fill."""
    years = years_in(question)
    ca, cb = dict(row_cells(a)[1:]), dict(row_cells(b)[1:])
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


def _cells(row: EvidenceUnit, a_phrase: str, b_phrase: str) -> tuple[float, float, str, str] | None:
    """Two cells of one row that the phrases name by their headers, beyond the row's label: "the
    purchase obligations of more than 5 years in the total purchase obligations" is the row's "More
    than 5 years" cell over its "Total" cell. (a, b, header a, header b), or None."""
    label = content_tokens(row_label(row.row))
    cells = [(h, cell_value(v)) for h, v in row_cells(row)[1:] if cell_value(v) is not None]
    picked = []
    for phrase in (a_phrase, b_phrase):
        words = content_tokens(phrase) - QUESTION_WORDS - label
        scored = [(len(content_tokens(h) & words), -i, h, v) for i, (h, v) in enumerate(cells) if content_tokens(h) & words]
        if not scored:
            return None
        picked.append(max(scored))
    (_, _, ha, va), (_, _, hb, vb) = picked
    return (va, vb, ha, hb) if ha != hb else None  # type: ignore[return-value]


def shared_rows(question: str, evidence: list[EvidenceUnit]) -> AnswerReply | None:
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
    rows = [e for e in evidence if e.kind == "row"]
    pairs = [(ra, rb) for ra in _rows_for(a_phrase, rows) for rb in _rows_for(b_phrase, rows)
             if ra.id.rpartition(".")[0] == rb.id.rpartition(".")[0]]
    if not pairs:
        return None
    ra, rb = next(((ra, rb) for ra, rb in pairs if ra.id != rb.id), pairs[0])
    if ra.id != rb.id:
        values = _column(question, ra, rb)
        what = f"the row '{row_label(ra.row)}' in the row '{row_label(rb.row)}'"
    else:
        cells = _cells(ra, a_phrase, b_phrase)
        values = cells[:2] if cells else None
        what = f"'{cells[2]}' in '{cells[3]}' of the row '{row_label(ra.row)}'" if cells else ""
    if values is None or not values[1]:
        return None
    percent = m.group("op").lower() == "percentage"
    value = values[0] / values[1] * (100 if percent else 1)
    return AnswerReply(answer=plain_number(value) + ("%" if percent else ""), citations=list(dict.fromkeys([ra.id, rb.id])),
                       abstain=False, confidence=round(min(ra.score, rb.score), 3),
                       reason=f"computed the {m.group('op').lower()} of {what}")


