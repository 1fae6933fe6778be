"""bench/denamed_corpus.py: a page's body stops naming its subject; its heading, its links and the
other pages' mentions of it stay."""

from __future__ import annotations

import pymupdf
import pytest

from tests.bench.conftest import load_bench_module


@pytest.fixture(scope="module")
def dn_mod():
    return load_bench_module("denamed_corpus")


def _page(path, heading: str, body: str, link_to: str | None = None) -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), heading, fontsize=16)
    page.insert_text((72, 110), body, fontsize=10)
    if link_to:  # on the linked page's title in the body, as the dev corpus's links are
        anchor = page.search_for(link_to.removesuffix(".pdf").replace("_", " "))[0]
        page.insert_link({"kind": pymupdf.LINK_GOTOR, "from": anchor, "file": link_to, "page": 0, "to": pymupdf.Point(0, 0)})
    doc.save(path)
    doc.close()


def test_the_body_loses_its_subject_and_keeps_the_rest(dn_mod, tmp_path):
    src = tmp_path / "bench" / "toy"
    (src / "corpus").mkdir(parents=True)
    (src / "questions.jsonl").write_text("{}\n")
    _page(src / "corpus" / "Nora_Ephron.pdf", "Nora Ephron", "Nora Ephron was an American writer of When Harry Met Sally.",
          link_to="When_Harry_Met_Sally.pdf")
    _page(src / "corpus" / "When_Harry_Met_Sally.pdf", "When Harry Met Sally (film)", "The film was written by Nora Ephron.")
    dst = tmp_path / "out" / "toy"
    pages, denamed, mentions = dn_mod.denamed_copy(src, dst, share=1.0)
    assert (pages, denamed, mentions) == (2, 1, 1), "the film's page never writes its own title"
    with pymupdf.open(dst / "corpus" / "Nora_Ephron.pdf") as doc:
        lines = doc[0].get_text().strip().split("\n")
        assert lines[0] == "Nora Ephron" and "Nora Ephron" not in " ".join(lines[1:])
        assert "was an American writer of When Harry Met Sally." in " ".join(lines[1:])
        assert doc[0].get_links()[0]["file"] == "When_Harry_Met_Sally.pdf"
    with pymupdf.open(dst / "corpus" / "When_Harry_Met_Sally.pdf") as doc:
        assert "written by Nora Ephron" in doc[0].get_text(), "another page's mention of the title stays"
    assert (dst / "questions.jsonl").read_text() == "{}\n"
    assert dn_mod.denamed_copy(src, tmp_path / "none" / "toy", share=0.0)[1] == 0


def test_title_forms_and_the_fixed_choice(dn_mod):
    assert dn_mod.title_forms("Summerlin, Nevada") == ["Summerlin, Nevada", "Summerlin"]
    assert dn_mod.title_forms("Kiss and Tell (1945 film)") == ["Kiss and Tell (1945 film)", "Kiss and Tell"]
    picks = [dn_mod.chosen(f"page_{i}.pdf", 0.5) for i in range(400)]
    assert picks == [dn_mod.chosen(f"page_{i}.pdf", 0.5) for i in range(400)] and 150 < sum(picks) < 250
