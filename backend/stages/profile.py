"""Corpus profiles: the parameter overrides the methods run with on a kind of corpus, chosen by the
corpus's measured traits (backend/retrieval/traits.py) or by the setting STRATA_RETRIEVAL__PROFILE.

A profile is one or more corpus kinds joined by "+" ("template+long_separate": filings sharing
one boilerplate, long and not leading to one another). Each kind holds every override it makes,
as method -> parameter -> value; the overrides fill only the parameters a call does not set, and
the trace records them as a ProfileStep. The kinds also say where the kind-bound stages act
(backend/stages/__init__.py: `novelty` in a web of pages, `named_documents` where the documents a
question names decide). "plain" is no kind: no override, the methods' own defaults. Asked with
`--stages none`, every method runs plain.

The kinds, by measured traits (thresholds in traits.py; the measurements behind them and behind
each override are in bench/RESULTS.md#stages):
- template: documents share one boilerplate (template share >= TEMPLATE_SHARE). BM25 pulls
  towards whichever document repeats the question's words, so hybrid scores are dense
  (alpha TEMPLATE_ALPHA) and MMGraphRAG does not match entities to the names the question writes.
- web_of_pages: short documents that lead to one another (a wiki).
- short_separate: short documents that rarely lead to one another (one-table reports): each
  question is answered by one of them, and a look-alike pulls a traversal away, so FiF keeps its
  seeds at full weight and falls back on them, and MI-RAG fuses its seeds.
- long_separate: long documents that rarely lead to one another (reports, papers, filings): FiF
  falls back on its seeds when an extension of a resolved plan fails.
Long documents that lead to one another (linked reports) are of no kind: plain.

Not here: the traits themselves (traits.py), or what a parameter does (the strategy's params model).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from backend.errors import StrataError
from backend.retrieval.traits import (
    TEMPLATE_ALPHA,
    hop_share,
    is_long_separate_corpus,
    is_short_separate_corpus,
    is_template_corpus,
    is_web_of_pages,
    mean_pages,
    template_share,
)
from backend.types import Model, ProfileStep

ParamValue = float | int
Overrides = dict[str, dict[str, ParamValue]]  # method -> parameter -> value

PLAIN = "plain"
KIND_OVERRIDES: dict[str, Overrides] = {
    "template": {
        **{method: {"alpha": TEMPLATE_ALPHA} for method in ("hikey", "lilac", "fif", "mirag", "mmgraph")},
        "mmgraph": {"alpha": TEMPLATE_ALPHA, "by_names": 0},
    },
    "web_of_pages": {},
    "short_separate": {"fif": {"seed_extensions": 1, "seed_open": 0}, "mirag": {"seed_weight": 1.0}},
    "long_separate": {"fif": {"seed_extensions": 1}},
}
KIND_DESCRIPTIONS = {
    "template": "documents that share one boilerplate (filings of one form)",
    "web_of_pages": "short documents that lead to one another (a wiki)",
    "short_separate": "short documents that rarely lead to one another (one-table reports)",
    "long_separate": "long documents that rarely lead to one another (reports, papers, filings)",
}


class Profile(Model):
    """A corpus profile: the kinds it stands for and every override they make."""

    name: str
    kinds: tuple[str, ...] = ()
    overrides: Overrides = Field(default_factory=dict)
    traits: dict[str, float] = Field(default_factory=dict)
    chosen_by: Literal["traits", "setting", "stages"] = "traits"

    def has(self, *kinds: str) -> bool:
        """Whether the profile stands for any of `kinds`."""
        return any(k in self.kinds for k in kinds)

    def params_for(self, method: str, params: dict) -> dict:
        """This profile's overrides for `method` that the call's `params` leave unset."""
        return {k: v for k, v in self.overrides.get(method, {}).items() if k not in params}

    def step(self, applied: dict[str, ParamValue]) -> ProfileStep:
        return ProfileStep(name=self.name, traits=self.traits, overrides=dict(applied), chosen_by=self.chosen_by)


def profile_of_kinds(kinds: tuple[str, ...], traits: dict[str, float] | None = None,
                     chosen_by: Literal["traits", "setting", "stages"] = "traits") -> Profile:
    """The profile of `kinds` (in the order KIND_OVERRIDES lists them), their overrides merged."""
    ordered = tuple(k for k in KIND_OVERRIDES if k in kinds)
    merged: Overrides = {}
    for kind in ordered:
        for method, values in KIND_OVERRIDES[kind].items():
            merged.setdefault(method, {}).update(values)
    return Profile(name="+".join(ordered) or PLAIN, kinds=ordered, overrides=merged, traits=traits or {}, chosen_by=chosen_by)


def measured_traits(corpus) -> dict[str, float]:
    """The traits a profile is chosen by (each measured once per loaded corpus)."""
    return {"template_share": round(template_share(corpus), 4), "hop_share": round(hop_share(corpus), 4),
            "mean_pages": round(mean_pages(corpus), 2)}


def profile_by_traits(corpus) -> Profile:
    """The profile the corpus's measured traits choose."""
    kinds = [kind for kind, test in (("template", is_template_corpus), ("web_of_pages", is_web_of_pages),
                                     ("short_separate", is_short_separate_corpus),
                                     ("long_separate", is_long_separate_corpus)) if test(corpus)]
    return profile_of_kinds(tuple(kinds), measured_traits(corpus))


def profile_names() -> list[str]:
    return [PLAIN, *KIND_OVERRIDES]


def named_profile(name: str) -> Profile:
    """The profile a setting names: "plain", a kind, or kinds joined by "+"; a StrataError lists the valid ones."""
    kinds = tuple(k.strip() for k in name.split("+") if k.strip())
    unknown = [k for k in kinds if k not in KIND_OVERRIDES and k != PLAIN]
    if unknown or not kinds:
        raise StrataError(f"Unknown corpus profile {name!r}. Set STRATA_RETRIEVAL__PROFILE to auto or one of: "
                          f"{', '.join(profile_names())} (join kinds with '+').")
    return profile_of_kinds(tuple(k for k in kinds if k != PLAIN), chosen_by="setting")


def choose_profile(corpus, setting: str) -> Profile:
    """The profile of `corpus` under the setting: "auto" (or empty) chooses by traits."""
    if not setting or setting.strip() == "auto":
        return corpus.derived(profile_by_traits)
    return named_profile(setting.strip())
