"""The ingest time estimate: pages sorted by what drives their cost, and seconds per page of each
kind fitted to what this server measured (backend/ingest/speed.py)."""

from __future__ import annotations

import json
import threading

import pymupdf
import pytest

from backend.ingest.speed import DEFAULT_SECONDS, FILE_NAME, KINDS, PageMix, SpeedModel, page_mix


def _three_kinds_pdf(path) -> None:
    """Page 1: prose; page 2: prose under a ruled 4x4 grid; page 3: an image and no text layer."""
    with pymupdf.open() as pdf:
        page = pdf.new_page()
        page.insert_text((72, 72), "Plain prose on a page with no drawings at all.")
        page = pdf.new_page()
        page.insert_text((72, 60), "Quarterly figures")
        for i in range(5):
            page.draw_line((72, 100 + 30 * i), (472, 100 + 30 * i))
            page.draw_line((72 + 100 * i, 100), (72 + 100 * i, 220))
        page = pdf.new_page()
        pix = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 40, 40), False)
        pix.clear_with(200)
        page.insert_image(pymupdf.Rect(72, 72, 472, 472), pixmap=pix)
        pdf.save(path)


def test_page_mix_sorts_pages_by_what_drives_their_cost(tmp_path):
    path = tmp_path / "mixed.pdf"
    _three_kinds_pdf(path)
    with pymupdf.open(path) as pdf:
        assert page_mix(pdf) == PageMix(text=1, tables=1, ocr=1)


def test_page_mix_never_runs_a_page_the_parser_would_bound(tmp_path, monkeypatch):
    """page_mix runs in the server (the estimate) and the ingest parent, outside the parse
    worker's limits: an XObject fan-out page (10^7 form draws) used to be run by get_text there
    (280 s, 13 GiB). It is sorted by its counts alone; an ordinary page is still looked at."""
    from tests.fixtures import hostile_pdfs as hostile

    bomb = hostile.fanout_bomb(tmp_path / "fanout.pdf", levels=7)
    ran: list[int] = []
    real = pymupdf.Page.get_text

    def watched(page, *args, **kwargs):
        ran.append(page.number)
        return real(page, *args, **kwargs)

    monkeypatch.setattr(pymupdf.Page, "get_text", watched)
    with pymupdf.open(bomb) as pdf:
        assert page_mix(pdf) == PageMix(text=1)
    assert ran == [], "the fan-out page was run outside the parse worker"
    _three_kinds_pdf(tmp_path / "kinds.pdf")
    with pymupdf.open(tmp_path / "kinds.pdf") as pdf:
        page_mix(pdf)
    assert ran, "ordinary pages are looked at"


def test_page_mix_scales_a_sample_to_the_whole_file(tmp_path):
    path = tmp_path / "long.pdf"
    with pymupdf.open() as pdf:
        for i in range(60):
            pdf.new_page().insert_text((72, 72), f"page {i}")
        pdf.save(path)
    with pymupdf.open(path) as pdf:
        mix = page_mix(pdf, sample=6)
    assert mix == PageMix(text=60)


def test_defaults_hold_before_any_measurement(tmp_path):
    model = SpeedModel(tmp_path)
    assert not model.measured
    assert model.rates() == DEFAULT_SECONDS
    assert model.estimate(PageMix(text=10, ocr=2)) == pytest.approx(10 * DEFAULT_SECONDS["text"] + 2 * DEFAULT_SECONDS["ocr"])


def test_measurements_persist_and_the_fit_recovers_per_kind_rates(tmp_path):
    true = {"text": 0.2, "tables": 1.5, "ocr": 4.0}
    files = [PageMix(40, 2, 0), PageMix(5, 50, 0), PageMix(10, 0, 20), PageMix(30, 30, 5), PageMix(12, 3, 1)]
    writer = SpeedModel(tmp_path)
    for mix in files:
        writer.record(mix, sum(getattr(mix, k) * true[k] for k in KINDS))
    reader = SpeedModel(tmp_path)  # a fresh server process reads the same file
    assert reader.measured
    for kind, rate in reader.rates().items():
        assert rate == pytest.approx(true[kind], rel=0.1), kind
    assert json.loads((tmp_path / FILE_NAME).read_text())["observations"][0] == [40, 2, 0, 11.0, 1.0]


def test_rates_are_for_an_idle_machine_and_an_estimate_scales_with_the_contention_now(tmp_path):
    """A file that took 30 s at contention 3 (load 6 on 2 cores) took 10 s of idle-machine work:
    the estimate on an idle machine is 10 s, on one at contention 2 it is 20 s. Rows written
    before the contention was kept read as idle."""
    model = SpeedModel(tmp_path)
    model.record(PageMix(text=100), 3 * 100 * DEFAULT_SECONDS["text"], load=3.0)
    rates = SpeedModel(tmp_path).rates()
    assert rates["text"] == pytest.approx(DEFAULT_SECONDS["text"], rel=0.02)
    idle = model.estimate(PageMix(text=10))
    assert idle == pytest.approx(10 * DEFAULT_SECONDS["text"], rel=0.02)
    assert model.estimate(PageMix(text=10), load=2.0) == pytest.approx(2 * idle)
    assert model.estimate(PageMix(text=10), load=0.3) == pytest.approx(idle), "contention is at least 1"
    (tmp_path / FILE_NAME).write_text(json.dumps({"observations": [[100, 0, 0, 100 * DEFAULT_SECONDS["text"] * 2]]}))
    assert SpeedModel(tmp_path).rates()["text"] == pytest.approx(2 * DEFAULT_SECONDS["text"], rel=0.02)


def test_contention_is_the_load_per_core_and_at_least_one(monkeypatch):
    from backend.ingest import speed

    monkeypatch.setattr(speed.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(speed.os, "getloadavg", lambda: (7.0, 1.0, 1.0))
    assert speed.contention() == 3.5
    monkeypatch.setattr(speed.os, "getloadavg", lambda: (0.4, 1.0, 1.0))
    assert speed.contention() == 1.0


def test_a_kind_never_measured_follows_this_servers_speed(tmp_path):
    model = SpeedModel(tmp_path)
    model.record(PageMix(text=100), 100 * DEFAULT_SECONDS["text"] * 3)  # this server is 3x slower than the defaults
    rates = model.rates()
    assert rates["text"] == pytest.approx(3 * DEFAULT_SECONDS["text"], rel=0.02)
    assert rates["ocr"] == pytest.approx(3 * DEFAULT_SECONDS["ocr"], rel=0.02)


def test_an_unreadable_file_means_defaults_not_a_failure(tmp_path):
    (tmp_path / FILE_NAME).write_text("{not json")
    model = SpeedModel(tmp_path)
    assert not model.measured and model.rates() == DEFAULT_SECONDS
    model.record(PageMix(text=4), 2.0)
    assert SpeedModel(tmp_path).measured


def test_empty_or_zero_measurements_are_not_recorded(tmp_path):
    model = SpeedModel(tmp_path)
    model.record(PageMix(), 3.0)
    model.record(PageMix(text=3), 0.0)
    assert not SpeedModel(tmp_path).measured


def test_concurrent_ingests_keep_every_measurement(tmp_path):
    def work(i: int) -> None:
        SpeedModel(tmp_path).record(PageMix(text=i + 1), 1.0 + i)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rows = json.loads((tmp_path / FILE_NAME).read_text())["observations"]
    assert sorted(r[0] for r in rows) == list(range(1, 9))
