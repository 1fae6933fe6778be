"""Documents a question names (backend/stages/names.py): a document's own words, and their
units first on a template corpus, through the query pipeline."""

from __future__ import annotations

import pytest

from backend.stages.names import document_names, named_documents, question_names
from backend.retrieval.traits import is_long_separate_corpus, is_short_separate_corpus, is_template_corpus
from tests.fakes import FILMS, build_corpus

BOILERPLATE = [
    "The Company is exposed to market risks, including changes in interest rates and foreign currency exchange rates.",
    "Net sales increased compared with the same quarter of the prior year, driven by higher demand.",
    "The Company repurchased shares of its common stock under the authorised repurchase program.",
    "The Company's products face competition from firms with greater resources.",
]
OWN = {
    "ACME": ["ACME makes rocket skates and anvils.", "ACME rocket skates sold well in the desert.", "ACME anvils shipped late."],
    "GLOBEX": ["GLOBEX builds hammocks and doomsday devices.", "GLOBEX hammocks sold well.", "GLOBEX devices were recalled."],
    "INITECH": ["INITECH writes banking software.", "INITECH software reached new banks.", "INITECH staplers were red."],
}
QUESTION = "Did GLOBEX repurchase shares of its common stock?"


@pytest.fixture(scope="module")
def filings(service):
    docs = {f"2023_Q{q}_{co}.pdf": [f"{co} quarterly report for quarter {q}."] + BOILERPLATE + own
            for co, own in OWN.items() for q in (1, 2)}
    return build_corpus(service, docs)


def _files(corpus, doc_ids) -> set[str]:
    return {corpus.documents[d].file_name for d in doc_ids}


def test_a_document_s_names_are_its_own_words_not_the_shared_boilerplate(filings):
    names = document_names(filings).by_word
    assert _files(filings, names["globex"]) == {"2023_Q1_GLOBEX.pdf", "2023_Q2_GLOBEX.pdf"}
    assert _files(filings, names["initech"]) == {"2023_Q1_INITECH.pdf", "2023_Q2_INITECH.pdf"}
    assert not {"compani", "repurchas", "stock", "quarter"} & set(names)  # every filing uses them


def test_only_the_words_a_question_writes_as_names_count(filings):
    assert question_names("Did GLOBEX repurchase shares of Apple's stock?") == {"globex": "GLOBEX", "appl": "Apple"}
    assert question_names("Globex repurchased shares?") == {}  # the first word is capitalised anyway
    found, docs = named_documents(filings, QUESTION)
    assert set(found) == {"GLOBEX"} and _files(filings, docs) == {"2023_Q1_GLOBEX.pdf", "2023_Q2_GLOBEX.pdf"}
    assert named_documents(filings, "Did the company repurchase globex hammocks?") == ({}, set())


def test_a_sentence_s_first_word_and_a_page_reference_are_not_names():
    assert question_names("what is total debt of COSTCO in FY 2021?Answer in millions.") == {"costco": "COSTCO", "2021": "2021"}
    assert question_names("How many figures are in Pages 51-53 of the ACME manual? List them.") == {"acm": "ACME"}
    assert question_names('Which is bigger, "Apple" or (Dell)? "Intel" is not asked.') == {"appl": "Apple", "dell": "Dell"}
    assert question_names("How many people with scarf are there in  Page 5?") == {}


REPORTS = {
    "ACME_annual_report.pdf": ["ACME makes rocket skates and anvils for desert customers.",
                               "ACME revenue grew as rocket skates sold in the desert.", "ACME anvils shipped late in winter."],
    "GLOBEX_annual_report.pdf": ["GLOBEX builds hammocks and doomsday devices on its island.",
                                 "GLOBEX hammocks were sold to resorts.", "GLOBEX devices were recalled after a storm."],
    "INITECH_annual_report.pdf": ["INITECH writes banking software for regional lenders.",
                                  "INITECH software revenue reached new banks.", "INITECH staplers were red."],
    "Industry_review.pdf": ["Revenue of manufacturers grew this year as sales rose across the industry.",
                            "Analysts expect revenue growth to slow next year.", "Sales of leisure goods rose."],
}


def test_long_separate_reports_put_the_named_company_s_report_first(service):
    """Reports of many pages that do not lead to one another: "What was GLOBEX's revenue?" is
    about GLOBEX's report, however well the industry review matches "revenue"; the same documents
    as one-page tables are left in the strategy's order (their capitalised words are row labels)."""
    question = "How did revenue grow at GLOBEX this year?"
    long_reports = build_corpus(service, REPORTS, pages=40)
    assert is_long_separate_corpus(long_reports) and not is_template_corpus(long_reports)
    hits, trace = service._pipeline(long_reports, None, None).retrieve(
        service.retriever("strata", long_reports), "strata", question, 6, {})
    docs = [long_reports.nodes.doc_of(h.node_id) for h in hits]
    assert _files(long_reports, docs[:3]) == {"GLOBEX_annual_report.pdf"}, _files(long_reports, docs)
    assert any(getattr(s, "index", None) == "names" for s in trace.steps)
    assert any(n.startswith("Long documents that do not lead to one another: the question names 'GLOBEX'") for n in trace.notes)
    short = build_corpus(service, REPORTS)
    assert is_short_separate_corpus(short) and not is_long_separate_corpus(short)
    _, short_trace = service._pipeline(short, None, None).retrieve(service.retriever("strata", short), "strata", question, 6, {})
    assert not any(getattr(s, "index", None) == "names" for s in short_trace.steps)


def test_on_a_template_corpus_the_named_company_s_filings_come_first(service, filings):
    assert is_template_corpus(filings)
    pipeline = service._pipeline(filings, None, None)
    for method in ("strata", "lilac", "mirag"):
        hits, trace = pipeline.retrieve(service.retriever(method, filings), method, QUESTION, 6, {})
        docs = [filings.nodes[h.node_id].doc for h in hits]
        first = {d for d in docs[:2]}
        assert _files(filings, first) <= {"2023_Q1_GLOBEX.pdf", "2023_Q2_GLOBEX.pdf"}, (method, _files(filings, docs))
        assert any(getattr(s, "index", None) == "names" for s in trace.steps) and any("'GLOBEX'" in n for n in trace.notes)
        assert all(a.score >= b.score for a, b in zip(hits, hits[1:]))


def test_the_flat_floors_and_other_corpora_are_unchanged(service, filings):
    pipeline = service._pipeline(filings, None, None)
    hits, trace = pipeline.retrieve(service.retriever("hybrid", filings), "hybrid", QUESTION, 6, {})
    assert not any(getattr(s, "index", None) == "names" for s in trace.steps)
    films = build_corpus(service, FILMS)
    assert not is_template_corpus(films)
    film_pipeline = service._pipeline(films, None, None)
    question = "Where was the director of the film Moonlit Harbor born?"
    _, trace = film_pipeline.retrieve(service.retriever("strata", films), "strata", question, 5, {})
    assert not any(getattr(s, "index", None) == "names" for s in trace.steps)


YEARLY = {  # filings that never write whose they are: only their file names say it
    f"{co}_{year}_10K.pdf": [f"The Company reports its results for fiscal {year}, with {year - 1} for comparison."] + BOILERPLATE
    + [f"Net sales of the segment {line} in fiscal {year}." for line in ("rose", "fell", "held")]
    for co, years in (("GLOBEXCORP", (2019, 2020)), ("INITECH", (2019, 2020)), ("UMBRELLA", (2018,)), ("HOOLI", (2018,)))
    for year in years
}


def test_a_question_names_by_years_runs_of_words_and_acronyms():
    names = question_names("What is the FY2019 inventory of Best Buy and of JPM in 2021 Q1? Answer in USD.")
    assert {"2019", "2021", "bestbuy", "jpm"} <= set(names)
    assert names["bestbuy"] == "BestBuy"


def test_a_file_name_names_its_company_and_year(service):
    corpus = build_corpus(service, YEARLY)
    assert is_template_corpus(corpus)
    question = "What were GLOBEX's net sales in FY2019?"
    found, docs = named_documents(corpus, question)
    assert _files(corpus, docs) == {"GLOBEXCORP_2019_10K.pdf", "GLOBEXCORP_2020_10K.pdf", "INITECH_2019_10K.pdf"}
    assert set(found) == {"GLOBEX", "2019"}  # an acronym that begins the file's name, and the year
    hits, trace = service._pipeline(corpus, None, None).retrieve(service.retriever("strata", corpus), "strata", question, 8, {})
    files = [corpus.documents[corpus.nodes.doc_of(h.node_id)].file_name for h in hits]
    assert files[0] == "GLOBEXCORP_2019_10K.pdf", files  # named twice, by its own file name, before those named once
    assert any("named most" in n for n in trace.notes)


def test_a_year_names_less_than_a_word(service):
    """"Debit card users in India in 2015" is asked of the report on India, not of a filing for 2015:
    the year breaks ties between the documents the words name, it does not outrank them."""
    reports = dict(REPORTS)
    reports["India_payments_review.pdf"] = ["India saw debit card users grow across its cities.",
                                            "India card payments rose as users went online.", "India wallets spread."]
    reports["UMBRELLA_2015_10K.pdf"] = ["Card users of the company grew in fiscal 2015.", "Revenue per card user rose.",
                                        "The company issued debit cards."]
    corpus = build_corpus(service, reports, pages=40)
    question = "How many more debit card users were there in India in 2015 than in 2014?"
    hits, _ = service._pipeline(corpus, None, None).retrieve(service.retriever("strata", corpus), "strata", question, 6, {})
    assert corpus.documents[corpus.nodes.doc_of(hits[0].node_id)].file_name == "India_payments_review.pdf"
