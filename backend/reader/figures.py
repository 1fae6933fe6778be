"""Numbers in the evidence: the figures a unit holds that could answer a number question, a table
cell as a number, the years a question or a column header names, and what a table row gives by
arithmetic over its cells (a change, a percentage change, an average, a total, the years past a
threshold). A row is read from its cells (EvidenceUnit.row), never from its text.
"""

from __future__ import annotations

import re

from backend.llm.text import content_tokens
from backend.reader.evidence import EvidenceUnit
from backend.reader.patterns import FOOTNOTE_RE, NUMBER_RE, YEAR_RE
from backend.reader.questions import LESS_Q_RE, MORE_Q_RE, RESPECTIVE_RE, THRESHOLD_Q_RE, YEARS_Q_RE


def row_cells(e: EvidenceUnit) -> list[tuple[str, str]]:
    """A table row's (header, value) cells, the first one its label's, each header's spaced-out year
    closed up ("2 0 1 8" -> "2018"); [] for a unit without cells (no row, or a row stored without them)."""
    return [(unspaced(h), v) for h, v in e.row.cells] if e.row is not None else []


NUMBER_WORDS = ("one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
                "seventeen eighteen nineteen twenty")
NUMBER_WORD_RE = re.compile(rf"\b(?:{NUMBER_WORDS.replace(' ', '|')})\b", re.I)
COMPOUND_AFTER_RE = re.compile(r"-([A-Za-z]+)")  # "15-county": a number inside a modifier


def number_candidates(
    e: EvidenceUnit, q_tokens: set[str], count: bool, pairs: int = 0, years: tuple[str, ...] = ()
) -> list[tuple[float, str]]:
    """(bonus, value) of every number in a unit that could answer a number question: a bonus when
    the number is followed by a word of the question ("17 scenes") or sits near its words, a
    penalty when it is part of a name ("Landsat 8", "Table 2"); a table row gives the cell under
    the header that shares most words with the question (bonus 0.4; `pairs`: the question says
    "respectively" about `pairs` years: one cell per year of `years`, in the question's order, else
    the first `pairs` such cells in row order). Years are dates, not numbers. A figure inside a
    modifier ("a 15-county area") gets a penalty unless the question names what it counts. A count
    may be written as a word before the counted thing ("three world titles")."""
    text = e.text
    if e.kind == "row":
        cells = row_cells(e)
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
    cells = e.row.value_spans() if e.kind == "row" and e.row is not None else None
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


def row_arithmetic(question: str, e: EvidenceUnit) -> str | None:
    """What a row gives by arithmetic over the years the question names: the
    change from the earlier to the later year, its percentage, the average or the total; an
    average that names no year is over every year the row holds ("What was the average realized
    losses?"). None when the question asks for none of these or the row lacks a cell for each year."""
    years = years_in(question)
    m = ARITH_RE.search(question)
    if e.kind != "row" or not m or RESPECTIVE_RE.search(question):
        return None  # "X in 2019 and 2018 respectively" asks for the values, not their sum
    if YEAR_AVERAGE_RE.search(question):
        return _year_averages(question, e, m)
    if not years and m.group("avg"):
        row = {y: v for y, v in (_row_years(e) or {}).items() if v is not None}
        return plain_number(sum(row.values()) / len(row)) if len(row) >= 2 else None
    cells = row_cells(e)
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


def _year_averages(question: str, e: EvidenceUnit, m: re.Match) -> str | None:
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


def _row_years(e: EvidenceUnit) -> dict[str, float | None] | None:
    """A table row's value under each year column, in the row's order (None: no row with two or
    more year columns)."""
    if e.kind != "row":
        return None
    by_year: dict[str, float | None] = {}
    for head, value in row_cells(e):
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


def years_answer(question: str, e: EvidenceUnit) -> str | None:
    """The year(s) a table row gives a "which year" question, in the row's order:
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


def cell_of_year(question: str, e: EvidenceUnit) -> str | None:
    """The cell of a table row under the one year the question names ("What was the Accrued
    postretirement benefits in 2018?"): None unless exactly one of the row's headers holds it."""
    years = set(years_in(question))
    if e.kind != "row" or len(years) != 1:
        return None
    cells = [v.strip() for h, v in row_cells(e) if years <= set(years_in(h))]
    return cells[0] if len(cells) == 1 and cells[0] else None


HOW_MANY_YEARS_RE = re.compile(r"\bhow many (?:fiscal )?years\b", re.I)


def years_counted(question: str, e: EvidenceUnit) -> str | None:
    """How many of a row's years pass the question's threshold: "How many years did net sales
    exceed $200,000 thousand?". None for any other question or unit."""
    by_year = _row_years(e) if HOW_MANY_YEARS_RE.search(question) else None
    if by_year is None:
        return None
    hits = _past_threshold(question, {y: v for y, v in by_year.items() if v is not None})
    return None if hits is None else str(len(hits))


