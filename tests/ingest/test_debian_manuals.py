"""Heading recovery on real manuals, with their PDF outline as the ground truth.

Debian packages ship typeset manuals whose outline (bookmarks) lists every section with its
level and page. Each test fetches one with `apt-get download` (cached under
~/.cache/strata-test-debs or STRATA_DEB_CACHE; skipped with the reason when apt-get, the
package lists or the network are missing), cuts it to page 1 + a page window to stay quick,
and parses it with parse_pdf:
- with the outline removed, the section tree found from numbering and fonts must recover the
  outline's headings (title F1, page +- 1) and their levels above the floors below;
- with the outline kept, the parser must build its tree from it.

The floors sit a little under what the parser reached when they were set; `python
bench/heading_f1.py --window` prints the current figures (run it without --window for the
whole manuals) when a parser change moves them on purpose.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from backend.config import IngestSettings
from backend.ingest.parser import parse_pdf
from tests.fixtures.debian_manuals import MANUALS, DebianManual, ManualUnavailable, fetch_manual, parsed_headings, score_headings, write_copy

pytestmark = pytest.mark.slow

# name -> (title F1 floor, level accuracy floor) without the outline. Measured on the test
# windows (bookworm packages): developers-reference 0.984 / 1.0, debian-policy 0.899 / 1.0
# (body-size bold terms it sets like headings but leaves out of the outline), bashref
# 0.992 / 1.0, debian-reference 1.0 / 1.0. Whole manuals: bench/heading_f1.py.
NO_OUTLINE_FLOORS: dict[str, tuple[float, float]] = {
    "developers-reference": (0.95, 0.95),
    "debian-policy": (0.85, 0.95),
    "bashref": (0.95, 0.95),
    "debian-reference": (0.95, 0.95),
}
WITH_OUTLINE_FLOOR = 0.98  # F1 and level accuracy when the outline is present


@pytest.fixture(scope="module", params=MANUALS, ids=lambda m: m.name)
def manual(request) -> tuple[DebianManual, Path]:
    try:
        return request.param, fetch_manual(request.param)
    except ManualUnavailable as exc:
        pytest.skip(f"{request.param.name}: {exc}")


def test_every_manual_has_floors() -> None:
    assert set(NO_OUTLINE_FLOORS) == {m.name for m in MANUALS}


def test_headings_recovered_without_outline(manual: tuple[DebianManual, Path], tmp_path: Path) -> None:
    spec, pdf = manual
    copy = tmp_path / f"{spec.name}-no-outline.pdf"
    gold = write_copy(pdf, copy, keep_outline=False, page_window=spec.test_pages)
    assert len(gold) >= 10, f"{spec.name}: the window {spec.test_pages} holds only {len(gold)} outline entries"

    parsed = parse_pdf(copy, IngestSettings(), None)

    assert parsed.document.hierarchy_source != "outline"
    score = score_headings(gold, parsed_headings(parsed.sections))
    f1_floor, level_floor = NO_OUTLINE_FLOORS[spec.name]
    summary = (
        f"{spec.name}: {score.matched}/{score.gold} outline headings found, {score.predicted} predicted, "
        f"P={score.precision:.3f} R={score.recall:.3f} F1={score.f1:.3f} level accuracy={score.level_accuracy:.3f}"
    )
    assert score.f1 >= f1_floor, summary
    assert score.level_accuracy >= level_floor, summary
    by_id = {s.id: s for s in parsed.sections}
    for s in parsed.sections[1:]:
        assert by_id[s.parent].level < s.level, f"{spec.name}: '{s.title}' (level {s.level}) sits under a section of level {by_id[s.parent].level}"


def test_outline_is_used_when_present(manual: tuple[DebianManual, Path], tmp_path: Path) -> None:
    spec, pdf = manual
    copy = tmp_path / f"{spec.name}-outline.pdf"
    gold = write_copy(pdf, copy, keep_outline=True, page_window=spec.test_pages)

    parsed = parse_pdf(copy, IngestSettings(), None)

    assert parsed.document.hierarchy_source == "outline"
    score = score_headings(gold, parsed_headings(parsed.sections), page_slack=0)
    summary = f"{spec.name}: {score.matched}/{score.gold} matched, {score.predicted} sections, F1={score.f1:.3f}, level accuracy={score.level_accuracy:.3f}"
    assert score.f1 >= WITH_OUTLINE_FLOOR, summary
    assert score.level_accuracy >= WITH_OUTLINE_FLOOR, summary
    outline_sections = [s for s in parsed.sections[1:] if s.source == "outline"]
    assert all(s.confidence >= 0.9 for s in outline_sections)
