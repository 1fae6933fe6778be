"""The rules reader's choice of answer unit, its citations and its abstention (issue 10 item 4,
issue 11 item 2): scored evidence in, the ANSWER task's reply out, as the reader sends it."""

from __future__ import annotations

import pytest

from backend.llm.rules import RulesBackend
from backend.reader import ANSWER, AnswerPayload, EvidenceUnit, answer_by_rules, question_type, subqueries_of
from backend.reader.figures import years_in
from backend.reader.rules import NEGATED_INSTRUCTION_RE
from backend.types import Cell, DecomposeStep, SubQuery, TableRow, Trace

THRESHOLD = 0.35


def unit(uid: str, text: str, score: float, coverage: float, kind: str = "sentence", **extra) -> EvidenceUnit:
    return EvidenceUnit(id=uid, kind=kind, text=text, score=score, cosine=score, coverage=coverage, role="anchor", **extra)


def row_unit(uid: str, table: str | None, cells: list[tuple[str, str]], score: float, coverage: float, **extra) -> EvidenceUnit:
    """A table row's unit: its cells, and its text written from them as the parser writes it."""
    row = TableRow(table=table, cells=tuple(Cell(h, v) for h, v in cells))
    return EvidenceUnit(id=uid, kind="row", text=row.index_text(), score=score, cosine=score, coverage=coverage,
                        role="anchor", row=row, **extra)


def test_a_right_type_sentence_ranked_third_beats_the_top_one_17_scenes():
    # The packed evidence holds the count, but two better-scored sentences come first: one
    # with a number inside a name ("Landsat 8"), one with a share.
    evidence = [
        unit("u1", "The survey used Landsat 8 imagery over the northern coast.", 0.70, 0.6),
        unit("u2", "Cloud cover stayed below 10% during the survey.", 0.52, 0.2),
        unit("u3", "In total 17 scenes were used.", 0.38, 0.4),
    ]
    out = answer_by_rules("How many Landsat scenes were used in the survey?", evidence, THRESHOLD)
    assert out.answer == "17"
    assert out.citations[0] == "u3"
    assert not out.abstain


def test_a_date_from_the_third_unit_answers_a_when_question():
    evidence = [
        unit("u1", "The Royal Albert Bridge crosses the River Tamar.", 0.64, 0.75),
        unit("u2", "It is a railway bridge designed by Isambard Kingdom Brunel.", 0.58, 0.25),
        unit("u3", "The bridge was opened by Prince Albert in May 1859.", 0.49, 0.5),
    ]
    out = answer_by_rules("When was the Royal Albert Bridge opened?", evidence, THRESHOLD)
    assert out.answer == "May 1859"
    assert out.citations[0] == "u3"


def test_an_option_list_item_answers_what_the_option_does_not_the_usage_line():
    evidence = [
        unit("u1", "Usage: certtool [-c] [-v] [--outfile FILE] INPUT", 0.66, 0.5),
        unit("u2", "certtool is a tool to generate and parse certificates and keys.", 0.58, 0.0),
        unit("u3", "-c, --check  checks the syntax only", 0.48, 0.0),
    ]
    out = answer_by_rules("What does the -c option do?", evidence, THRESHOLD)
    assert question_type("What does the -c option do?") == "definition"
    assert out.answer == "checks the syntax only"
    assert out.citations == ["u3"]


def test_an_option_inside_a_run_on_paragraph_gives_only_its_own_description():
    text = ("Usage: certtool [-c] [-v] INPUT Options: -v, --verbose  prints more -c, --check  checks the syntax "
            "only -o FILE  writes the output to FILE")
    out = answer_by_rules("What does the -c option do?", [unit("u1", text, 0.6, 0.5)], THRESHOLD)
    assert out.answer == "checks the syntax only"


def test_a_one_sentence_answer_cites_only_the_units_that_support_it():
    evidence = [
        unit("u1", "asn1_der_decoding fills the structure from the DER encoding and returns ASN1_SUCCESS.", 0.72, 0.8),
        unit("u2", "GNU Libtasn1 Reference Manual, for version 4.19", 0.69, 0.2),
        unit("u3", "Returns: ASN1_MEM_ERROR if the output buffer is too small.", 0.66, 0.2),
        unit("u4", "On success asn1_der_decoding returns ASN1_SUCCESS and the structure holds the values.", 0.6, 0.8),
    ]
    out = answer_by_rules("What does asn1_der_decoding return on success?", evidence, THRESHOLD)
    assert out.citations == ["u1", "u4"]  # the title page and another function's return value are not cited


def test_a_unit_sharing_the_short_answer_is_cited_with_the_chosen_one():
    evidence = [
        unit("u1", "In total 17 scenes were used.", 0.6, 0.5),
        unit("u2", "Table 1 lists the 17 scenes by acquisition date.", 0.45, 0.25),
        unit("u3", "The imagery is distributed by the USGS.", 0.44, 0.25),
    ]
    out = answer_by_rules("How many scenes were used?", evidence, THRESHOLD)
    assert out.answer == "17" and out.citations == ["u1", "u2"]


def test_it_abstains_when_no_unit_holds_the_asked_type_and_coverage_is_weak():
    evidence = [
        unit("u1", "The company designs analog chips for industrial customers.", 0.52, 0.34),
        unit("u2", "Its headquarters moved to a larger campus.", 0.41, 0.0),
    ]
    out = answer_by_rules("When was the company founded by its owners?", evidence, THRESHOLD)
    assert out.abstain and out.answer == "not enough evidence" and out.citations == []
    assert "date" in out.reason


def test_a_typed_question_with_strong_coverage_still_quotes_its_evidence():
    evidence = [unit("u1", "The plant was founded after the merger of the two mills.", 0.7, 1.0)]
    out = answer_by_rules("When was the plant founded?", evidence, THRESHOLD)
    assert not out.abstain and out.answer.startswith("The plant was founded")


def test_below_the_threshold_it_abstains_whatever_the_type():
    out = answer_by_rules("How many scenes were used?", [unit("u1", "17 scenes were used.", 0.3, 0.5)], THRESHOLD)
    assert out.abstain


def test_the_last_subquerys_unit_answers_and_the_bridge_unit_is_cited():
    # "Which city was the director of Kiss and Tell born in?" split in two: the unit that names
    # the director answers the first subquery (cited as the bridge), the birthplace answers.
    evidence = [
        EvidenceUnit(id="u1", kind="sentence", text="Kiss and Tell was directed by Richard Wallace.", score=0.66,
                     cosine=0.6, coverage=0.4, role="anchor", subquery=0, sub_coverage=1.0),
        EvidenceUnit(id="u2", kind="sentence", text="Kiss and Tell is a 1945 American comedy film.", score=0.62,
                     cosine=0.6, coverage=0.4, role="anchor", subquery=0, sub_coverage=0.5),
        EvidenceUnit(id="u3", kind="sentence", text="Richard Wallace was born in Sacramento, California.", score=0.5,
                     cosine=0.5, coverage=0.2, role="associate", subquery=1, sub_coverage=1.0),
    ]
    payload = AnswerPayload(question="Which city was the director of Kiss and Tell born in?", evidence=evidence,
                            threshold=THRESHOLD, subqueries=["Who directed Kiss and Tell?", "Where was the director born?"])
    out = RulesBackend().run(ANSWER, payload)
    assert out.answer == "Sacramento"
    assert out.citations[0] == "u3" and "u1" in out.citations


def test_the_reader_takes_the_subqueries_of_the_last_decomposition():
    trace = Trace(method="lilac")
    assert subqueries_of(trace) == []
    trace.add(DecomposeStep(subqueries=[SubQuery(text="a"), SubQuery(text="b")]))
    assert subqueries_of(trace) == ["a", "b"]


def test_respectively_takes_one_cell_per_year_the_question_lists():
    row = row_unit("r1", "Table 1", [("(Dollars in Millions)", "Net Income"), ("Fiscal Year Ended April 27, 2019", "$106.4"), ("April 28, 2018", "$70.5")], 0.6, 0.6)
    out = answer_by_rules("What was the net income in 2019 and 2018 respectively?", [row], THRESHOLD)
    assert out.answer == "$106.4, $70.5"
    sentence = unit("s1", "During 2020 and 2018 the Company recognized $417 million and $146 million, respectively, "
                          "of amortization.", 0.6, 0.6)
    out = answer_by_rules("What was the amount of amortization in 2020 and 2018 respectively?", [sentence], THRESHOLD)
    assert out.answer == "$417 million, $146 million"


def test_a_row_gives_the_change_average_or_percentage_the_question_asks_for():
    row = row_unit("r1", "Table 1", [("($ in millions)", "Revenues"), ("2019", "$120.0"), ("2018", "$100.0"), ("2017", "$91.0")], 0.6, 0.6)
    ask = lambda q: answer_by_rules(q, [row], THRESHOLD).answer  # noqa: E731
    assert ask("What was the change in the revenues from 2018 to 2019?") == "20"
    assert ask("What is the average revenues for 2018 and 2019?") == "110"
    assert ask("What was the percentage change in revenues between 2018 and 2019?") == "20%"
    assert ask("What is the average revenues from 2017 to 2019?") == "103.67"


def test_a_row_that_holds_the_change_itself_is_read_not_recomputed():
    row = row_unit("r1", None, [("Table 1", "Order intake"), ("2019", "120"), ("2018", "100"), ("Change (%)", "13.2")], 0.6, 0.6)
    out = answer_by_rules("What is the change (%) for order intake between 2018 and 2019?", [row], THRESHOLD)
    assert out.answer == "13.2"


def test_a_computed_figure_is_written_out_never_in_exponent_notation():
    # "{:g}" wrote an average of 12,085,176 as "1.20852e+07", which no reader (and no scorer) takes.
    row = row_unit("r1", "Table 1", [("Rights", "Outstanding at end of period"), ("2019", "12,345,678"), ("2018", "11,824,674")], 0.6, 0.6)
    out = answer_by_rules("What is the average number of rights outstanding at end of period for 2018 and 2019?", [row], THRESHOLD)
    assert out.answer == "12085176"
    assert answer_by_rules("What was the change in rights outstanding at end of period from 2018 to 2019?",
                           [row], THRESHOLD).answer == "521004"


def test_an_increase_or_decrease_question_asks_for_a_number_and_is_computed_from_the_row():
    row = row_unit("r1", "Table 1", [("Appropriation of earnings", "Legal reserve"), ("2018", "$707,299"), ("2019", "$963,947")], 0.6, 0.6)
    q = "What is the increase/ (decrease) in Legal reserve within Appropriation of earnings from 2018 to 2019?"
    assert question_type(q) == "number"
    assert answer_by_rules(q, [row], THRESHOLD).answer == "256648"


def test_a_fiscal_year_written_short_and_an_average_over_the_whole_row():
    row = row_unit("r1", "Table 1", [("$ MILLION", "ROFE"), ("F19", "15.2%"), ("F18", "17.1%")], 0.6, 0.6)
    assert answer_by_rules("What is the average ROFE for the years F19 and F18?", [row], THRESHOLD).answer == "16.15%"
    assert answer_by_rules("What is the change in ROFE from FY18 to FY19?", [row], THRESHOLD).answer == "-1.9%"
    row = row_unit("r2", "Table 1", [("column 1", "Realized losses"), ("2019", "(5,062)"), ("2018", "(6,533)"), ("2017", "(18,494)")], 0.6, 0.6)
    assert answer_by_rules("What was the average realized losses?", [row], THRESHOLD).answer == "-10029.67"


def test_a_clause_ending_on_its_preposition_is_answered_by_what_follows_it_in_the_sentence():
    # "Who is Bruce Spizer an expert on, ...?": the slot is after "an expert on". Before, the first
    # name of the sentence ("New Orleans") answered.
    sentence = unit("s1", 'David "Bruce" Spizer (born July 2, 1955) is a tax attorney in New Orleans, Louisiana, who is also '
                          "recognized as an expert on The Beatles.", 0.6, 0.6)
    out = answer_by_rules("Who is Bruce Spizer an expert on, known as the most influential act of the rock era?",
                          [sentence], THRESHOLD)
    assert out.answer.endswith("Beatles")
    # A question asking for a clause keeps the whole of it: "consist of" is no slot for a name.
    clause = unit("s2", "Purchase obligations consist of significant contractual obligations either on an annual basis or "
                        "over multi-year periods related to our outsourcing activities.", 0.6, 0.6)
    out = answer_by_rules("What do the purchase obligations consist of?", [clause], THRESHOLD)
    assert out.answer.startswith("significant contractual obligations either on an annual basis")


def test_a_years_average_is_the_mean_of_its_end_and_the_end_of_the_year_before():
    # An average balance for a year, as reports compute it: (end of 2019 + end of 2018) / 2. Before,
    # "the 2019 average" was read as the 2019 cell.
    row = row_unit("r1", "Table 1", [("column 1", "Free cash flow"), ("2019", "4,411"), ("2018", "4,044"), ("2017", "3,497")], 0.6, 0.6)
    ask = lambda q: answer_by_rules(q, [row], THRESHOLD).answer  # noqa: E731
    assert ask("What is the 2019 average free cash flow?") == "4227.5"
    assert ask("What is the change between 2018 and 2019 average free cash flow?") == "457"  # 4227.5 - 3770.5
    assert ask("What is the average free cash flow for 2018 and 2019?") == "4227.5"  # the years' mean, as before
    short = row_unit("r2", "Table 1", [("column 1", "Free cash flow"), ("2019", "4,411"), ("2018", "4,044")], 0.6, 0.6)
    assert answer_by_rules("What is the change between 2018 and 2019 average free cash flow?", [short],
                           THRESHOLD).answer != "367"  # no 2017 cell: not the change of the plain cells


def test_a_header_year_in_spaced_out_type_is_read_as_the_year():
    # A letter-spaced header is extracted "2 0 1 8"; the respectively-list read only the 2019 cell.
    row = row_unit("r1", "Table 1", [("column 1", "Operating loss carryforward"), ("December 31 2019", "73,260"), ("2 0 1 8", "57,768")], 0.6, 0.6)
    ask = lambda q: answer_by_rules(q, [row], THRESHOLD).answer  # noqa: E731
    assert ask("What was the operating loss carryforward amount in 2019 and 2018 respectively?") == "73,260, 57,768"
    assert ask("What was the operating loss carryforward amount in 2018?") == "57,768"
    assert years_in("2 0 1 8") == ["2018"] and years_in("2019 and 1 2 3 4") == ["2019"]


def test_a_row_answers_a_what_was_x_in_year_question_with_the_cell_under_that_year():
    row = row_unit("r1", "Table 1", [("($ in millions)", "Accrued postretirement benefits"), ("2019", "16.2"), ("2018", "15.4")], 0.6, 0.6)
    out = answer_by_rules("What was the Accrued postretirement benefits in 2018?", [row], THRESHOLD)
    assert out.answer == "15.4"
    assert out.citations == ["r1"]


def test_how_many_years_counts_the_years_of_a_row_past_the_threshold():
    row = row_unit("r1", "Table 1", [("Net sales", "Americas"), ("2019", "224,056"), ("2018", "205,111"), ("2017", "190,004")], 0.6, 0.6)
    ask = lambda q: answer_by_rules(q, [row], THRESHOLD).answer  # noqa: E731
    assert ask("How many years did net sales from Americas exceed $200,000 thousand?") == "2"
    assert ask("How many years were net sales from Americas less than 200,000?") == "1"


@pytest.mark.parametrize(("question", "text", "answer"), [
    ("What does goodwill consist of?",
     "Goodwill consists of the excess of the consideration transferred over the fair value of net assets acquired.",
     "the excess of the consideration transferred over the fair value of net assets acquired"),
    ("When are corporation tax losses not recognised?",
     "Corporation tax losses are not recognised where future recoverability is uncertain.",
     "where future recoverability is uncertain"),
    ("How is the revenue attributed to for geographical reporting?",
     "For geographical reporting, revenue is attributed to the geographic location in which the customers are located, "
     "while long-lived assets are attributed to the locations in which the assets are.",
     "to the geographic location in which the customers are located"),
    ("What were the principal activities during the financial year within the Group?",
     "The principal activities during the financial year within the Group were health, life and car insurance policy "
     "sales, mortgage brokerage, energy, broadband and financial referral services.",
     "health, life and car insurance policy sales, mortgage brokerage, energy, broadband and financial referral services"),
    # Echoed all over the sentence (the year only near its end): no subject-then-predicate to cut.
    ("what is operating leases occurred in FY 2015 for Netflix?",
     "Rent expense associated with the operating leases was $34.7 million, $31.9 million and $27.7 million for 2015, 2014 "
     "and 2013, respectively.",
     "Rent expense associated with the operating leases was $34.7 million, $31.9 million and $27.7 million for 2015, 2014 "
     "and 2013, respectively."),
    # The sentence that defines the subject answers "What is X?" whole.
    ("What is Tax Fees?", "Tax Fees include fees billed for tax compliance services.",
     "Tax Fees include fees billed for tax compliance services."),
    # A sentence that echoes too little of the question answers whole: nothing says where the answer starts.
    ("Why did the board change the auditor in fiscal 2019?", "The board acted on the audit committee's advice.",
     "The board acted on the audit committee's advice."),
])
def test_a_sentence_answer_is_what_the_sentence_says_after_the_words_it_echoes(question, text, answer):
    assert question_type(question) == "sentence"
    out = answer_by_rules(question, [unit("u1", text, 0.6, 0.6)], THRESHOLD)
    assert out.answer == answer
    assert out.citations == ["u1"]


def test_respective_values_come_in_the_order_the_question_names_the_years():
    row = row_unit("r1", "Table 1", [("Assumptions", "Dividend yield"), ("2019", "4.5%"), ("2018", "4.6%"), ("2017", "4.1%")], 0.6, 0.6)
    out = answer_by_rules("What are the respective dividend yield in 2017 and 2018?", [row], THRESHOLD)
    assert out.answer == "4.1%, 4.6%"


def test_a_what_noun_question_is_answered_by_the_named_thing_not_the_whole_sentence():
    evidence = [
        unit("u1", "It is told in first person, with all six main characters taking turns narrating the books.", 0.62, 0.5),
        unit("u2", "Animorphs is a science fantasy series of young adult books written by Katherine Applegate.", 0.55, 0.4),
    ]
    out = answer_by_rules("What science fantasy young adult series is told in first person?", evidence, THRESHOLD)
    assert question_type("What science fantasy young adult series is told in first person?") == "entity"
    assert out.answer == "Animorphs" and out.citations[0] == "u2"


def test_a_question_word_mid_question_types_it():
    # hotpot asks mostly in the middle of a statement; the noun after the question word says what for.
    assert question_type("Based on a True Story is an album by which country music star, with the single My Eyes?") == "person"
    assert question_type("Robert Suettinger was the national intelligence officer under which former Governor of Arkansas?") == "person"
    assert question_type("Alice David is the voice of Lara Croft in a video game developed by which company ?") == "entity"
    assert question_type("This singer of A Rather Blustery Day also voiced what hedgehog?") == "entity"
    assert question_type("Randall Cunningham II was an athlete at the high school located in what Nevada city?") == "place"
    assert question_type("What is the name of the fight song of the university in Lawrence, Kansas?") == "entity"
    # ... and what it must not take for one: a report's questions keep their types.
    assert question_type("What was the State income taxes, net of federal tax benefit in 2020?") == "number"
    assert question_type("In which years was the current liabilities recorded for?") == "date"  # years, from a row
    assert question_type("In which year was the amount of Investments higher?") == "date"


def test_a_capitalised_modifier_is_no_name_and_initials_are_part_of_one():
    q = "Based on a True Story is an album by which country music star, with the single My Eyes?"
    album = unit("u1", "Based on a True Story is the eighth studio album by American country music artist Blake Shelton.", 0.6, 0.6)
    assert answer_by_rules(q, [album], THRESHOLD).answer == "Blake Shelton"  # not "American"
    q = "What is the name of the detective novelist parent of the author of Q Is for Quarry?"
    daughter = unit("u1", "The daughter of detective novelist C. W. Grafton, she has said he was her strongest influence.", 0.6, 0.5)
    assert answer_by_rules(q, [daughter], THRESHOLD).answer == "C. W. Grafton"
    q = "Both Truth in Science and Discovery embrace what campaign?"
    uk = unit("u1", "Truth in Science is a United Kingdom-based organization which promotes the Teach the Controversy campaign.", 0.6, 0.5)
    assert answer_by_rules(q, [uk], THRESHOLD).answer == "Teach the Controversy"  # not "United Kingdom-based"


def test_the_subquery_that_asks_is_the_one_holding_an_interrogative_not_the_last():
    from backend.reader import asking_subquery

    assert asking_subquery(["a South Korean boy group that was formed by who", "2014 S/S is the debut album of a boy group"]) == 0
    assert asking_subquery(["Virginia Commonwealth University which was founded in what year", "The team represented it"]) == 0
    assert asking_subquery(["a civil war that ended when", "Kerensky was defeated in the course of a civil war"]) == 0
    # a relative pronoun ("the woman who portrayed") asks nothing
    assert asking_subquery(["the woman who portrayed Corliss Archer", "What government position was held by the woman"]) == 1
    assert asking_subquery(["This singer of A Rather Blustery Day", "This singer also voiced a hedgehog"]) == 1  # none: the last
    assert asking_subquery(["one part only"]) is None
    assert asking_subquery(["Who directed Kiss and Tell?", "Where was the director born?"]) == 1  # a chain asks with its last


def test_a_bridge_answer_below_the_threshold_is_read_when_it_answers_the_asking_subquery():
    q = "2014 S/S is the debut album of a South Korean boy group that was formed by who?"
    evidence = [
        unit("u1", "2014 S/S is the debut album of South Korean group WINNER.", 0.81, 0.75, subquery=1, sub_coverage=0.86),
        unit("u2", "Winner is a South Korean boy group formed in 2013 by YG Entertainment.", 0.30, 0.5, subquery=0, sub_coverage=1.0),
    ]
    out = answer_by_rules(q, evidence, THRESHOLD, subqueries=2, asking=0)
    assert out.answer == "YG Entertainment" and out.citations[0] == "u2"
    # Taking the last subquery for the asking one, the bridge unit stays below the threshold.
    assert answer_by_rules(q, evidence, THRESHOLD, subqueries=2).answer != "YG Entertainment"
    # Through the typed task, as the reader sends it: the asking subquery is found from the texts.
    payload = AnswerPayload(question=q, evidence=evidence, threshold=THRESHOLD,
                            subqueries=["a South Korean boy group that was formed by who", "2014 S/S is the debut album of a boy group"])
    assert RulesBackend().run(ANSWER, payload).answer == "YG Entertainment"


def test_a_word_capitalised_by_its_place_is_no_name_and_the_full_stop_is_not_kept():
    q = "Ralph Hefferline was a psychology professor at which university?"
    units = [unit("u1", "He was a professor of psychology at Columbia University.", 0.6, 0.6)]
    assert answer_by_rules(q, units, THRESHOLD).answer == "Columbia University"  # not "He"
    q = "Alice David is the voice of Lara Croft in which video game?"
    units = [unit("u1", "She is the voice of Lara Croft in the video game Tomb Raider.", 0.6, 0.6)]
    assert answer_by_rules(q, units, THRESHOLD).answer == "Tomb Raider"  # not "She"
    q = "Which company filed the report?"
    units = [unit("u1", "The report was filed by Apple Inc.", 0.6, 0.5)]
    assert answer_by_rules(q, units, THRESHOLD).answer == "Apple Inc."  # an abbreviation keeps its stop
    q = "Which diocese administers the high school?"
    units = [unit("u1", "Along with Holy Cross Academy, it is administered by the Diocese of Lorne.", 0.6, 0.5)]
    assert answer_by_rules(q, units, THRESHOLD).answer != "Along"  # a preposition opening the sentence


def test_an_entity_question_is_answered_by_a_name_of_the_kind_it_asks_for():
    """"Which Catholic diocese ...": the name whose head is "Diocese" ("Diocese of Lorne", head
    before "of"), not the first name of the sentence ("Holy Cross Academy"); "Which song ...": a
    name ending in "Song"."""
    q = "Which Catholic diocese administers the high school?"
    units = [unit("u1", "Along with Holy Cross Academy, it is administered by the Catholic Diocese of Lorne.", 0.6, 0.5)]
    assert answer_by_rules(q, units, THRESHOLD).answer == "Catholic Diocese of Lorne"
    q = "Which song kept the single from the top of the charts?"
    units = [unit("u1", "Mercer Hill kept it off the top with The Long Road Song for two weeks.", 0.6, 0.5)]
    assert answer_by_rules(q, units, THRESHOLD).answer == "The Long Road Song"


def test_a_which_year_question_is_answered_from_a_rows_year_columns():
    # TAT-QA asks which year a row's value is largest, past a threshold, or which years it covers.
    row = row_unit("r1", "Table 1", [("column 1", "Service cost"), ("Year Ended May 31, 2019", "1,700"), ("2018", "1,500"), ("2017", "1,900")], 0.6, 0.6)
    ask = lambda q: answer_by_rules(q, [row], THRESHOLD).answer  # noqa: E731
    assert question_type("Which FY has a higher EBITDA?") == question_type("In which years was X calculated?") == "date"
    assert ask("Which year has the lowest service cost?") == "2018"
    assert ask("In which year was the service cost larger?") == "2017"
    assert ask("In which year was service cost less than 1,800?") == "2019, 2018"
    assert ask("Which years did service cost exceed $1,600 thousand?") == "2019, 2017"
    assert ask("In which years was the service cost calculated?") == "2019, 2018, 2017"
    # Running text: the year, not the whole date.
    text = unit("u1", "The plan was approved on March 31, 2019 by the board.", 0.6, 0.6)
    assert answer_by_rules("In which year was the plan approved?", [text], THRESHOLD).answer == "2019"


def test_a_year_in_brackets_and_a_notes_label_are_no_answer_to_a_number_question():
    q = "What was the net profit/(loss) after tax in FY19?"
    units = [unit("u1", "Net profit/(loss) after tax was $(9.8) million (2018: $6.6 million).", 0.6, 0.6)]
    assert answer_by_rules(q, units, THRESHOLD).answer == "$(9.8) million"  # not the comparative in brackets
    q2 = "What was the net profit/(loss) after tax in 2018?"  # the bracketed figure is the asked year's here
    assert answer_by_rules(q2, units, THRESHOLD).answer == "$6.6 million"
    q = "What were the total definite-lived intangible assets?"
    units = [unit("u1", "(6) The total definite-lived intangible assets were $492 at year end.", 0.6, 0.6)]
    assert answer_by_rules(q, units, THRESHOLD).answer == "$492"


def test_a_quoted_sentence_does_not_open_with_its_notes_label():
    units = [unit("u1", "(2) Original Equipment Manufacturers (OEM) are the end-customers of the Company.", 0.6, 0.6)]
    out = answer_by_rules("What are Original Equipment Manufacturers?", units, THRESHOLD)
    assert out.answer == "Original Equipment Manufacturers (OEM) are the end-customers of the Company."


def _ev(uid: str, text: str, score: float, subquery: int, sub_coverage: float) -> EvidenceUnit:
    return EvidenceUnit(id=uid, kind="sentence", text=text, score=score, cosine=score, coverage=0.3, role="anchor",
                        subquery=subquery, sub_coverage=sub_coverage)


CHAIN_QUESTION = "What was the 2010 population of the community where Randall Cunningham II's high school is located?"
CHAIN_SUBQUERIES = ["the community where Randall Cunningham II's high school is located",
                    "What was the 2010 population of the community"]


def test_a_population_question_asks_for_a_number():
    assert question_type("What was the 2010 population of the community where the school is located?") == "number"
    assert question_type("What is the seating capacity of the home arena of the team?") == "number"


def test_a_chains_number_comes_from_the_fact_of_the_asking_subquery_not_a_better_scored_first_hop():
    """The first hop's page scores best against the whole question and holds a number ("2017-18
    school year"); the last hop's fact shares few of the question's words but is the one that
    speaks of what the asking subquery asks (a 2010 population)."""
    evidence = [
        _ev("u1", "Randall Cunningham II (born January 4, 1996) is a collegiate high jumper who will be a senior "
                  "during the 2017-18 school year.", 0.57, 0, 0.7),
        _ev("u2", "He was a high jumper and quarterback at Bishop Gorman High School.", 0.31, 0, 0.3),
        _ev("u3", "At the 2010 census, Summerlin's population was nearly 100,000, having risen from 59,000 in 2000.",
            0.24, 1, 0.67),
    ]
    payload = AnswerPayload(question=CHAIN_QUESTION, evidence=evidence, threshold=THRESHOLD, subqueries=CHAIN_SUBQUERIES)
    out = RulesBackend().run(ANSWER, payload)
    assert out.answer == "100,000" and out.citations[0] == "u3", out


def test_the_reader_hands_over_the_best_unit_of_a_subquery_the_top_units_leave_out():
    from backend.reader import MAX_EVIDENCE, with_each_subquery

    first_hop = [_ev(f"a{i}", f"Randall Cunningham II fact {i}.", 0.6 - 0.01 * i, 0, 0.7) for i in range(MAX_EVIDENCE + 3)]
    last_hop = [_ev("b1", "Summerlin is a planned community.", 0.2, 1, 0.33),
                _ev("b2", "At the 2010 census, Summerlin's population was nearly 100,000.", 0.19, 1, 0.67)]
    scored = sorted(first_hop + last_hop, key=lambda e: -e.score)
    evidence = with_each_subquery(scored, 2)
    assert [e.id for e in evidence[:MAX_EVIDENCE]] == [e.id for e in scored[:MAX_EVIDENCE]]
    assert [e.id for e in evidence[MAX_EVIDENCE:]] == ["b2"]  # the asking subquery's best, by its coverage
    assert with_each_subquery(scored, 1) == scored[:MAX_EVIDENCE]  # not decomposed: the top units alone


def test_a_bridge_page_s_unit_answers_and_the_bridge_s_own_name_is_no_answer():
    """The first hop's sentence names the bridge ("... starring Odile Marchetti as Mina Corvell")
    and scores best; the answer is on the bridge's own page, in a sentence sharing no word with the
    question. The reader marks that page's units (`bridge`); the rules read them for the asking
    subquery and do not answer with the bridge's name, even inside a longer one."""
    q = "What government position was held by the woman who portrayed Mina Corvell in the film Paper Lanterns?"
    evidence = [
        unit("u1", "Paper Lanterns is a 1951 comedy film starring then 19-year-old Odile Marchetti as Mina Corvell.", 0.59, 0.5,
             subquery=0, sub_coverage=0.71),
        unit("u2", "Odile Marchetti Vance was an actress and diplomat who served as Chief of Protocol of the United States.",
             0.15, 0.0, bridge="Odile Marchetti"),
    ]
    out = answer_by_rules(q, evidence, THRESHOLD, subqueries=2, asking=1)
    assert out.citations[0] == "u2" and out.answer.startswith("Chief of Protocol"), out
    assert "read on the page of Odile Marchetti" in out.reason
    # Unmarked, the bridge page's unit is below the threshold and shares no word: the bridge's name answers.
    plain = [e.model_copy(update={"bridge": "", "hop": 0}) for e in evidence]
    assert answer_by_rules(q, plain, THRESHOLD, subqueries=2, asking=1).answer == "Odile Marchetti"


ROVELLI = ("Carlo Rovelli (born 3 May 1956) is an Italian theoretical physicist who has worked in Italy, "
           "the United States and since 2000, in France.")
SARS = "Severe acute respiratory syndrome (SARS) is a viral respiratory disease of zoonotic origin."
# (question, the unit, the answer): where the question's closing interrogative stands ("since what
# year?" -> the year after "since", not the unit's first date; "65,000 what?" -> the word after
# "65,000"), a title quoted beside the asked kind (the album's, not the song's before it), and the
# words an acronym abbreviates for "the full name", a place named by the asked kind ("what city" ->
# "New York City", not "Upper Manhattan" before it). A question that opens with its interrogative
# is read as before.
SPANS = [
    ("Seven Brief Lessons on Physics was written by an Italian physicist that has worked in France since what year?",
     ROVELLI, "2000"),
    ("Works by Hanna Varis are part of a collection in a museum that houses approximately 65,000 what?",
     "It houses one of the largest print rooms in the world with approximately 65,000 drawings and approximately "
     "1 million old master prints.", "drawings"),
    ("In what year was Carlo Rovelli born?", ROVELLI, "1956"),
    ('Which Eminem album included vocals from a singer who had an album titled "Unapologetic"?',
     '"The Monster" is a song by American rapper Eminem, featuring guest vocals from Barbadian singer Rihanna, taken '
     'from Eminem\'s album "The Marshall Mathers LP 2" (2013).', "The Marshall Mathers LP 2"),
    ("Both Truth in Science and Discovery embrace what campaign?",
     'Truth in Science promotes the Discovery Institute\'s "Teach the Controversy" campaign.', "Teach the Controversy"),
    ("What is the full name of the viral respiratory disease in which Yi Guan's research helped to prevent the outbreak?",
     SARS, "Severe acute respiratory syndrome"),
    ("Ralph Hefferline was a psychology professor at a university that is located in what city?",
     "Columbia University is a private Ivy League research university in Upper Manhattan, New York City.", "New York City"),
]


@pytest.mark.parametrize("question, text, answer", SPANS, ids=["since", "count-noun", "opening", "quoted", "quoted-before",
                                                               "acronym", "place-kind"])
def test_the_span_is_read_where_the_question_points(question, text, answer):
    assert answer_by_rules(question, [unit("u1", text, 0.6, 0.5)], THRESHOLD).answer == answer


def test_an_acronym_is_expanded_only_for_a_full_name():
    assert answer_by_rules("What is SARS?", [unit("u1", SARS, 0.6, 0.5)], THRESHOLD).answer != "Severe acute respiratory syndrome"


def test_a_comparison_of_two_names_is_answered_by_their_dates():
    """"Who is younger, A or B?" reads each one's birth date from a unit that writes the name (middle
    names between included) and answers with the later-born, citing both; "released first" compares
    release dates. A missing date leaves the question to the other rules."""
    bostic = unit("b", "William Keith Bostic (born January 17, 1961) is a former professional American football player.", 0.4, 0.4)
    glanville = unit("c", "Jerry Michael Glanville (born October 14, 1941) is a former American football coach.", 0.4, 0.4)
    captain = unit("a", "Bostic served as the Oiler defensive captain under Jerry Glanville.", 0.57, 0.6)
    out = answer_by_rules("who is younger Keith Bostic or Jerry Glanville ?", [captain, bostic, glanville], THRESHOLD)
    assert out.answer == "Keith Bostic" and set(out.citations) == {"b", "c"}, out
    assert answer_by_rules("Who is older, Keith Bostic or Jerry Glanville?", [captain, bostic, glanville], THRESHOLD).answer \
        == "Jerry Glanville"
    albums = [unit("x", "Abbey Road is the eleventh studio album by the Beatles, released on 26 September 1969.", 0.5, 0.5),
              unit("y", "Let It Be is the twelfth album by the Beatles, released on 8 May 1970.", 0.5, 0.5)]
    assert answer_by_rules("Which was released first, Abbey Road or Let It Be?", albums, THRESHOLD).answer == "Abbey Road"
    out = answer_by_rules("who is younger Keith Bostic or Jerry Glanville ?", [captain, bostic], THRESHOLD)
    assert "compared" not in out.reason, "Glanville's birth date is not in the evidence"
    footballer = unit("k", "Kenton Terry Richardson (born 26 July 1999) is an English professional footballer.", 0.45, 0.4)
    photographer = unit("t", 'Terrence "Uncle Terry" Richardson (born August 14, 1965) is an American photographer.', 0.4, 0.4)
    morton = unit("m", "Annie Morton (born October 8, 1970) is an American model.", 0.42, 0.4)
    out = answer_by_rules("Who is older, Annie Morton or Terry Richardson?", [footballer, morton, photographer], THRESHOLD)
    assert "compared" not in out.reason, "two Terry Richardsons of different years: no comparison"
    out = answer_by_rules("Who is older, Annie Morton or Terry Richardson?", [morton, photographer], THRESHOLD)
    assert out.answer == "Terry Richardson", out


# (question, units as (text, score), the answer): a sentence that defines its subject as the kind
# the question asks for answers with that subject, ahead of a better-scored sentence that only holds
# a name; a definition whose noun is another kind ("an album by country star X" defines an album),
# a pronoun subject, the question's own subject, and a kind asked by a relative "in which" are no
# such answer.
DEFINED = [
    ("What fantasy young adult series, told in first person, features a band of shape-shifting teenagers?",
     [("The Marlowe Prize for Young Adult Fantasy went to the series in 1999.", 0.62),
      ("Skinwalkers is a fantasy series of young adult books narrated in the first person by five teenagers.", 0.55)],
     "Skinwalkers"),
    ('Which comedy series "Lanterns" character is Odile Marchetti known for playing?',
     [("Paper Lanterns is a comedy series starring Odile Marchetti.", 0.6),
      ('Wilhelmina "Mina" Corvell is the title character of the comedy series "Lanterns".', 0.5)],
     'Wilhelmina "Mina" Corvell'),
    ("Which country music star recorded the album Gravel Roads?",
     [("Gravel Roads is the third studio album by country music star Dale Hensley.", 0.6)], "Dale Hensley"),
    ("Which British singer-songwriter hosted the 12th Harbour Awards?",
     [("She is a British singer-songwriter and television presenter.", 0.6),
      ("The 12th Harbour Awards were hosted by Mara Quill in Leeds.", 0.5)], "Mara Quill"),
    # the kind asked after "the name of the"; the subject's words are all the question's, but not written together there
    ("What is the name of the fight song of the college whose campus is in Ashford, Vale?",
     [("Two campuses of the college are in the Vale region: the North Campus in Ashford and the Quay Campus.", 0.65),
      ("Vale Song (Hail to Ashford) is a fight song of Ashford College.", 0.57)], "Vale Song"),
]


@pytest.mark.parametrize("question, units, answer", DEFINED, ids=["series", "quoted-name", "album-by-star", "pronoun", "name-of-the-kind"])
def test_a_sentence_that_defines_its_subject_as_the_asked_kind_answers_with_the_subject(question, units, answer):
    evidence = [unit(f"u{i}", text, score, 0.4) for i, (text, score) in enumerate(units)]
    assert answer_by_rules(question, evidence, THRESHOLD).answer == answer


def test_a_definition_of_the_questions_own_subject_or_of_a_relative_kind_is_no_defined_answer():
    own = [unit("u1", "Gravel Roads is a country album by Dale Hensley.", 0.6, 0.5)]
    assert answer_by_rules("Which country album did Dale Hensley record in 1998, Gravel Roads?", own, THRESHOLD).answer != "Gravel Roads"
    where = [unit("u1", "Inside the Harbour is the third album of Mara Quill, recorded at the Sands.", 0.6, 0.5)]
    assert answer_by_rules("Where is the hotel in which Mara Quill's third album was recorded?", where, THRESHOLD).answer \
        != "Inside the Harbour"


def test_a_sentence_that_says_its_subject_is_the_asked_description_answers_with_the_subject():
    """"What was the 31st biennial Harbour regatta held after ...?": the sentence "The Harbour regatta
    of 2016 was the 31st biennial Harbour regatta, ..." answers with its subject, not a better-scored
    sentence about what the question names. The description must be echoed for at least three
    content words ("the capital of" is not enough), and a pronoun is no subject."""
    q = "What was the 31st biennial Harbour regatta held after the 2016 Ashford sprint?"
    evidence = [
        unit("u1", "The 2016 Ashford sprint took place on May 3 in Ashford, ahead of the 2016 regatta.", 0.66, 0.55),
        unit("u2", "The Harbour regatta of 2016 was the 31st biennial Harbour regatta, held on Saturday, June 4, 2016.", 0.64, 0.6),
    ]
    assert answer_by_rules(q, evidence, THRESHOLD).answer == "The Harbour regatta of 2016"
    pronoun = [evidence[0], unit("u2", "It was the 31st biennial Harbour regatta, held on Saturday, June 4, 2016.", 0.64, 0.6)]
    assert answer_by_rules(q, pronoun, THRESHOLD).answer != "It"
    short = [unit("u1", "Halden is the capital of Ash County.", 0.6, 0.5)]
    assert answer_by_rules("What is the capital of the county where Little Brook lies?", short, THRESHOLD).answer != "Halden"


def test_a_bridge_pages_unit_that_says_what_the_asking_subquerys_words_are_answers():
    """"What is the county seat of the county where ...?" is split; the bridge county's page says
    "Its county seat is Halden." after a better-scored first-hop sentence that names the county.
    Only a bridge page's unit is read this way.
    One word answers when it is a name; a sentence where the asked words are not followed by
    is/was ("... had 1,200 inhabitants and ...") gives no span."""
    q = "What is the county seat of the county where Little Brook, Vermont is located?"
    evidence = [
        unit("u1", "Little Brook is a village in the town of Brook in Ash County, Vermont.", 0.77, 0.7, subquery=0, sub_coverage=0.8),
        unit("u2", "Brook is a town in Ash County, Vermont, United States.", 0.67, 0.6, subquery=0, sub_coverage=0.7, bridge="Brook"),
        unit("u3", "Its county seat is Halden.", 0.43, 0.3, subquery=1, sub_coverage=1.0, bridge="Ash County"),
    ]
    out = answer_by_rules(q, evidence, THRESHOLD, subqueries=2, asking=1, asking_text="What is the county seat of the county")
    assert out.answer == "Halden" and out.citations[0] == "u3", out
    # Not split: no asking subquery, so no such reading; nor on a page that is no bridge (a report's
    # "Audit fees are comprised of ..." for a split "What is Audit Fees?" keeps the rules before).
    assert answer_by_rules(q, evidence, THRESHOLD).answer != "Halden"
    unmarked = [e.model_copy(update={"bridge": "", "hop": 0}) for e in evidence]
    assert answer_by_rules(q, unmarked, THRESHOLD, subqueries=2, asking=1,
                           asking_text="What is the county seat of the county").answer != "Halden"


def test_a_figure_stands_where_the_closing_interrogative_points():
    q = "The Harbour Hawks are based in a suburb of a city with a population of what in 2010?"
    text = "The 2010 census reported a population of 48,112, making Ferrisburg the third largest city in the state."
    assert answer_by_rules(q, [unit("u1", text, 0.6, 0.5)], THRESHOLD).answer == "48,112"


def test_a_which_year_question_takes_the_year_of_a_date_before_1900():
    text = "Harlan Brisk (June 25, 1887 – January 31, 1960) was an American theatre producer."
    assert answer_by_rules("In which year was Harlan Brisk born?", [unit("u1", text, 0.6, 0.5)], THRESHOLD).answer == "1887"


def test_an_unsplit_question_reads_a_named_page_only_when_its_best_unit_lacks_the_asked_type():
    q = "Lantern Song is a play by a playwright born in which year?"
    evidence = [unit("u1", "Lantern Song is a play by Harlan Brisk and Edith Rowe.", 0.48, 0.4),
                unit("u2", "Milo Fenner (born September 3, 1967) is a playwright born in Roanoke.", 0.34, 0.3),
                unit("u3", "Harlan Brisk (June 25, 1887 – 1960) was an American playwright.", 0.17, 0.1, bridge="Harlan Brisk")]
    assert answer_by_rules(q, evidence, THRESHOLD).answer == "1887"
    # The best unit holds a year itself: the named page is no hop.
    held = [unit("u1", "Lantern Song is a 1931 play by Harlan Brisk and Edith Rowe.", 0.48, 0.4), evidence[2]]
    assert answer_by_rules("In which year was the play Lantern Song written?", held, THRESHOLD).answer == "1931"


# (question, unit, answer): a count written as a word before what it counts, a name with an
# initial after "by", and a figure inside a modifier ("a 15-county area") that is no answer.
NUMBER_FORMS = [
    ("How many world titles did Kai Moreno win?",
     "Over his career Kai Moreno won three world titles (2002, 2003, 2004) and two Pro Search titles.", "three"),
    ("How many shipbuilding yards made up the Harlow Shipyards?",
     "The Harlow Shipyards were seven major shipbuilding yards on the west coast during the war.", "seven"),
    ("Who wrote the music and lyrics of the song Marigold?",
     "Marigold is a song from the 2015 stage musical Love Birds with music and lyrics by Robert J. Sherman.", "Robert J. Sherman"),
    ("What is the population of the Harbour metropolitan area?",
     "The Harbour metropolitan area is a 15-county metropolitan area anchored by Harbour City, and with a population of "
     "about 2,340,000 it ranks second in the state.", "2,340,000"),
]


@pytest.mark.parametrize("question, text, answer", NUMBER_FORMS, ids=["count-word", "count-word-adjective", "initial", "modifier"])
def test_number_words_initials_and_modifiers(question, text, answer):
    assert answer_by_rules(question, [unit("u1", text, 0.6, 0.5)], THRESHOLD).answer == answer


def test_a_who_verb_question_takes_the_name_after_its_own_verb_in_the_passive():
    film = ("Paper Lanterns is a 1951 American comedy film directed by Harlan Brisk and produced by Odile Marchetti, with songs "
            "written by the Rowe Sisters.")
    assert answer_by_rules("Who produced the film Paper Lanterns?", [unit("u1", film, 0.6, 0.5)], THRESHOLD).answer == "Odile Marchetti"
    assert answer_by_rules("Who directed the film Paper Lanterns?", [unit("u1", film, 0.6, 0.5)], THRESHOLD).answer == "Harlan Brisk"
    cowritten = "Harbour Nights is a 1996 drama film directed, co-produced, and co-written by Mara Quill, and co-written by Ada Rowe."
    assert answer_by_rules("Who co-wrote the 1996 drama film Harbour Nights?", [unit("u1", cowritten, 0.6, 0.5)], THRESHOLD).answer \
        == "Mara Quill"
    # The passive is about another subject than the question's: no agent is read from it.
    other = [unit("u1", "In addition, Veldt was supported by Ostmark with military advisers.", 0.6, 0.5),
             unit("u2", "Lundia was supported by its two allies Brisa and Carrow during the Salt War.", 0.55, 0.5)]
    assert answer_by_rules("Which countries supported Lundia in the Salt War?", other, THRESHOLD).answer != "Ostmark"


def test_a_share_of_one_row_in_another_is_computed_from_both_rows_of_one_table():
    """"What is the percentage of Harbour Wireless out of the total operating revenues in Q4 2019?"
    divides one row's Q4 2019 cell by the other's; a ratio is written without "%". A row of another
    table that matches a phrase less well is not used, and when a phrase's best row has no partner
    in its table nothing is computed."""
    rows = [
        row_unit("d:t1.1", "Table 1", [("OPERATING REVENUES", "Harbour Wireless"), ("Q4 2019", "2,493"), ("Q4 2018", "2,407")], 0.6, 0.6),
        row_unit("d:t1.4", "Table 1", [("OPERATING REVENUES", "Total operating revenues"), ("Q4 2019", "6,316"), ("Q4 2018", "6,215")], 0.55, 0.6),
        row_unit("d:t2.1", "Table 2", [("column 1", "Wireless"), ("Q4 2019", "900"), ("Q4 2018", "850")], 0.5, 0.4),
        unit("d:p1.0", "Harbour Wireless operating revenues increased by 3.6% in Q4 2019.", 0.8, 0.7),
    ]
    out = answer_by_rules("What is the percentage of Harbour Wireless out of the total operating revenues in Q4 2019?", rows, THRESHOLD)
    assert out.answer == "39.47%" and out.citations == ["d:t1.1", "d:t1.4"], out
    assert answer_by_rules("What is the ratio of Harbour Wireless to total operating revenues in Q4 2018?", rows, THRESHOLD).answer == "0.39"
    alone = [rows[0], rows[2], rows[3]]  # no total row beside the best Harbour Wireless row
    out = answer_by_rules("What is the percentage of Harbour Wireless out of the total operating revenues in Q4 2019?", alone, THRESHOLD)
    assert "computed" not in out.reason and out.answer != "277%", out


def test_a_share_of_two_cells_of_one_row_is_read_by_their_headers():
    row = row_unit("d:t3.2", "Table 3", [("column 1", "Purchase obligations"), ("Total", "424,561"), ("Less than 1 year", "201,000"), ("1-3 years", "150,000"), ("More than 5 years", "36,675")], 0.6, 0.6)
    q = "What is the percentage of the purchase obligations of more than 5 years in the total purchase obligations?"
    assert answer_by_rules(q, [row], THRESHOLD).answer == "8.64%"


def test_a_row_that_computes_the_asked_total_beats_a_better_scored_row_with_a_cell_of_shared_words():
    """"the total amount of audit fees in both 2018 and 2019" is the Audit Fees row's sum, not the
    "Percentage of Total Fees" cell of a better-scored row, where "total" names a header."""
    evidence = [
        row_unit("d:t1.1", "Table 1", [("column 1", "Statutory audit and certification"), ("2019", "4,105,000"), ("Percentage of Total Fees", "96.3%")], 0.66, 0.7),
        row_unit("d:t2.1", "Table 2", [("column 1", "Audit Fees (1)"), ("2018", "$58,000"), ("December 31, 2019", "$55,000")], 0.59, 0.6),
    ]
    assert answer_by_rules("What is the total amount of audit fees in both 2018 and 2019?", evidence, THRESHOLD).answer == "113000"


def test_the_row_the_question_names_by_its_whole_label_answers_before_a_better_scored_look_alike():
    """Both rows give a change from 2018 to 2019; "the change in operating expenses" is asked of
    "Operating expenses", not of the better-scored "Other operating expenses". A definition
    question is still answered by its sentence, not by the row that bears the term's name."""
    evidence = [
        row_unit("a:t1.2", "Table 1", [("column 1", "Other operating expenses"), ("2019 (1)", "27.0"), ("2018", "33.7")], 0.61, 0.67),
        row_unit("b:t1.1", "Table 1", [("column 1", "Operating expenses"), ("Year Ended December 31, 2019", "261,264"), ("2018", "194,054")], 0.56, 0.67),
    ]
    out = answer_by_rules("What was the change in operating expenses between 2018 and 2019?", evidence, THRESHOLD)
    assert out.answer == "67210" and out.citations[0] == "b:t1.1", out
    definition = [
        row_unit("r", "Table 1", [("column 1", "Tax Fees (2)"), ("2018", "$31,000"), ("2019", "$29,500")], 0.58, 0.6),
        unit("s", "Tax Fees include fees billed for tax compliance services and tax consultations.", 0.6, 0.6),
    ]
    assert answer_by_rules("What is Tax Fees?", definition, THRESHOLD).answer.startswith("Tax Fees include")


def test_a_rows_figures_are_its_cells_not_its_table_label_nor_a_date_in_a_header():
    """A row none of whose headers the question names is read for a figure among its cell values:
    "Table 1" and the "(1/1/19)" of a header are no answer."""
    row = row_unit("r", "Table 1", [("column 1", "Deferred revenue (non-current)"), ("Balance at Beginning of Period (1/1/19)", "$3,707"), ("Increase / (Decrease)", "$(263)")], 0.6, 0.6)
    out = answer_by_rules("What was the Deferred Revenue as reported?", [row], THRESHOLD)
    assert out.answer in ("$3,707", "$(263)"), out


# ---------------------------------------------------------------- manuals: instructions, whole sentences
# Units as the reader scores them on R-intro.pdf (Debian's r-doc-pdf): a manual writes an
# instruction across blocks, the code line on its own ("... the command is" / "> help(solve)").


def test_a_how_question_is_answered_by_the_instruction_and_its_example():
    evidence = [
        unit("y", "would create a vector y with 11 entries consisting of two copies of x with a zero in the middle place.",
             0.62, 0.67, lead="The further assignment > y <- c(x, 0, x)"),
        unit("x", "To set up a vector named x, say, consisting of five numbers, namely 10.4, 5.6, 3.1, 6.4 and 21.7, use the R command",
             0.55, 0.33, follows="> x <- c(10.4, 5.6, 3.1, 6.4, 21.7)"),
        unit("n", "A number occurring by itself in an expression is taken as a vector of length one.", 0.58, 0.33),
    ]
    out = answer_by_rules("How do you create a vector in R?", evidence, THRESHOLD)
    assert out.citations[0] == "x"
    assert out.answer.startswith("To set up a vector named x") and out.answer.endswith("> x <- c(10.4, 5.6, 3.1, 6.4, 21.7)")


def test_an_open_sentence_is_shown_with_what_it_announces():
    text = "To get more information on any specific named function, for example solve, the command is"
    evidence = [unit("h", text, 0.6, 0.5, follows="> help(solve) An alternative is > ?solve"),
                unit("r", "R has an inbuilt help facility similar to the man facility of UNIX.", 0.5, 0.25)]
    out = answer_by_rules("How do you get help on a specific function?", evidence, THRESHOLD)
    assert out.answer == f"{text} > help(solve) An alternative is > ?solve"
    # a sentence question answered by an open sentence is not clipped to its predicate either
    out = answer_by_rules("What is the command for more information on a specific named function?", evidence, THRESHOLD)
    assert "> help(solve)" in out.answer and not out.answer.endswith("the command is")


def test_a_how_question_of_a_form_is_answered_by_the_value_the_manual_writes():
    evidence = [
        unit("nan", "Note that there is a second kind of “missing” values which are produced by numerical computation, "
             "the so-called Not a Number, NaN, values.", 0.6, 0.67),
        unit("na", "When an element or value is “not available” or a “missing value” in the statistical sense, a place "
             "within a vector may be reserved for it by assigning it the special value NA.", 0.55, 0.67),
    ]
    out = answer_by_rules("How are missing values represented?", evidence, THRESHOLD)
    assert out.citations[0] == "na" and out.answer.endswith("the special value NA.")


def test_a_question_for_a_routine_is_answered_by_the_sentence_naming_it():
    evidence = [unit("note", "Note", 0.6, 0.0),
                unit("erase", "The routine glp_erase_prob erases the content of the specified problem object.", 0.55, 0.6)]
    out = answer_by_rules("Which routine erases the content of a problem object?", evidence, THRESHOLD)
    assert out.answer == "The routine glp_erase_prob erases the content of the specified problem object."


def test_a_question_for_several_values_gets_the_whole_list():
    text = "The elements of a logical vector can have the values TRUE, FALSE, and NA (for “not available”, see below)."
    out = answer_by_rules("What values can the elements of a logical vector have?", [unit("l", text, 0.6, 0.7)], THRESHOLD)
    assert out.answer == "TRUE, FALSE, and NA"


def test_what_a_routine_does_is_read_in_the_sentence_whose_subject_it_is_not_in_an_example_line():
    evidence = [unit("ex", "s31: glp_simplex(lp, NULL);", 0.6, 0.33),
                unit("def", "The routine glp_simplex is a driver to the LP solver based on the simplex method.", 0.5, 0.33)]
    out = answer_by_rules("What does glp_simplex do?", evidence, THRESHOLD)
    assert out.citations[0] == "def" and "driver to the LP solver" in out.answer
    # with no sentence that says it, the example line still answers
    assert answer_by_rules("What does glp_simplex do?", evidence[:1], THRESHOLD).answer == "s31: glp_simplex(lp, NULL);"


def test_a_question_for_a_file_gets_the_sentence_naming_it_with_a_dot_files_name_rejoined():
    evidence = [unit("end", "At the end of each R session you are given the opportunity to save all the currently available objects.",
                     0.55, 0.6),
                unit("file", "If you indicate that you want to do this, the objects are written to a file called .", 0.5, 0.6,
                     follows="RData in the current directory.")]
    out = answer_by_rules("To which file are the objects written at the end of a session?", evidence, THRESHOLD)
    assert out.answer == "If you indicate that you want to do this, the objects are written to a file called .RData in the current directory."


def test_an_open_sentence_and_a_code_line_are_told_apart():
    from backend.reader.patterns import code_line, ended

    assert not ended("To get more information on any specific named function, for example solve, the command is")
    assert not ended("The parameters type, lb, and ub specify the type, lower bound, and upper bound, respectively, as follows:")
    assert not ended("the objects are written to a file called .")
    assert ended("Data which is saved will be available in future R sessions.") and ended("GLP_FR — free (unbounded) variable;")
    assert all(code_line(t) for t in ("> help(solve)", "$ cd work", "x <- c(10.4, 5.6)", "help.start()"))
    assert not code_line("The routine glp_add_rows adds new rows (constraints) to the problem object.")


def test_a_sentence_that_says_what_not_to_use_is_no_instruction():
    """A hint that names a loop and a call is no answer to how a loop is written; the sentence that
    introduces the loop's form, with the form it announces, is."""
    evidence = [
        unit("form", "There is also a for loop construction which has the form", 0.5, 0.5,
             follows="> for (name in expr_1) expr_2 where name is the loop variable."),
        unit("hint", "[Hint: You will not need to use an explicit loop. Look again at the diag() function.]", 0.38, 0.5),
    ]
    out = answer_by_rules("How do you write a for loop?", evidence, THRESHOLD)
    assert out.citations[0] == "form" and "> for (name in expr_1)" in out.answer, out
    assert NEGATED_INSTRUCTION_RE.search("There is no need to run it twice")
    assert not NEGATED_INSTRUCTION_RE.search("To quit R without saving, use the command > q(\"no\")")
