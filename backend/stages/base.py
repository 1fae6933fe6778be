"""The one interface of a stage of the query pipeline, what a stage reads, and how what it did is
recorded.

A stage has a name, a one-line description, the corpus kinds it acts on (empty: every corpus; see
profile.py) and `apply(context, hits) -> hits`. A question stage acts before the method ranks: it
rewrites `context.question` or `context.searched` and returns the hits it was given; a ranking
stage reorders, adds or drops the method's hits. `run_stage` calls one and appends a StageStep to
the trace when it moved a unit (or rewrote the question): the units whose order relative to the
rest changed, each from its rank before to its rank after.

Not here: which stages exist and their order (backend/stages/__init__.py), or the pipeline that
runs them (backend/query.py).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar, Protocol

import numpy as np

from backend.stages.profile import Profile
from backend.types import ScoredNode, StageMove, StageStep, Trace


@dataclass(slots=True)
class StageContext:
    """What the stages of one question read and share. `question`: the question as the stages
    read it (a title's typo fixed); `searched`: the text the method ranks by (the question and a
    named ratio's line items); `depth`: how deep the method ranked; `top_k`: results asked for;
    `scope`: the chosen documents' ids (empty: the whole workspace); `note`: set by a stage for
    its step; `encode`: the question in the components' space (asked for only when a stage needs it)."""

    corpus: object
    question: str
    top_k: int
    depth: int
    trace: Trace
    profile: Profile
    encode: Callable[[str], np.ndarray]  # a question in the components' space
    scope: frozenset[str] = frozenset()
    searched: str = ""
    note: str = ""
    _named: tuple[dict[str, list[str]], set[str]] | None = field(default=None, repr=False)
    _vectors: dict[str, np.ndarray] = field(default_factory=dict, repr=False)

    def question_vector(self) -> np.ndarray:
        """The question as the stages read it, encoded once."""
        if self.question not in self._vectors:
            self._vectors[self.question] = self.encode(self.question)
        return self._vectors[self.question]

    def named(self) -> tuple[dict[str, list[str]], set[str]]:
        """The documents the question names (names.named_documents), on the kinds of corpus where
        they decide (template, long_separate); none elsewhere. Read once per question."""
        if self._named is None:
            from backend.stages.names import named_documents

            decide = self.profile.has("template", "long_separate")
            self._named = named_documents(self.corpus, self.question) if decide else ({}, set())
        return self._named


class Stage(Protocol):
    """One named step of the query pipeline (module docstring)."""

    name: ClassVar[str]
    description: ClassVar[str]
    acts_on: ClassVar[str]  # in words, for the UI and the README
    kinds: ClassVar[tuple[str, ...]]  # corpus kinds it acts on (profile.py); empty: every corpus
    before_retrieval: ClassVar[bool]

    def apply(self, context: StageContext, hits: list[ScoredNode]) -> list[ScoredNode]: ...


def moved_units(before: list[str], after: list[str]) -> list[StageMove]:
    """The units whose place relative to the others changed: every unit outside a longest common
    subsequence of the two rankings, with its 1-based rank in each (None: not in that ranking).
    Units in the subsequence keep their order; they shift only by what moved around them."""
    kept = set(_common_subsequence(before, after))
    was = {n: i + 1 for i, n in enumerate(before)}
    now = {n: i + 1 for i, n in enumerate(after)}
    moved = [n for n in dict.fromkeys(after + before) if n not in kept]
    return [StageMove(node_id=n, from_rank=was.get(n), to_rank=now.get(n)) for n in moved]


def _common_subsequence(a: list[str], b: list[str]) -> list[str]:
    """A longest common subsequence of two rankings of unique ids: the longest increasing run of
    `a`'s ranks read in `b`'s order (patience sorting, n log n)."""
    if a == b:
        return list(a)
    rank = {n: i for i, n in enumerate(a)}
    seq = [n for n in b if n in rank]
    tails: list[int] = []  # tails[k]: index in seq ending the increasing run of length k + 1 with the smallest rank
    tail_ranks: list[int] = []  # their ranks, for the bisection
    back: list[int] = [-1] * len(seq)
    for i, n in enumerate(seq):
        k = bisect.bisect_left(tail_ranks, rank[n])
        back[i] = tails[k - 1] if k else -1
        if k == len(tails):
            tails.append(i)
            tail_ranks.append(rank[n])
        else:
            tails[k], tail_ranks[k] = i, rank[n]
    out, i = [], tails[-1] if tails else -1
    while i >= 0:
        out.append(seq[i])
        i = back[i]
    return out[::-1]


def run_stage(stage: Stage, context: StageContext, hits: list[ScoredNode]) -> list[ScoredNode]:
    """`stage` applied to `hits`, with a StageStep in the trace when it moved a unit or rewrote
    the question; unchanged hits when the corpus is not of a kind it acts on."""
    if stage.kinds and not context.profile.has(*stage.kinds):
        return hits
    context.note = ""
    asked = (context.question, context.searched)
    out = stage.apply(context, hits)
    moves = moved_units([h.node_id for h in hits], [h.node_id for h in out])
    if moves or (asked != (context.question, context.searched) and context.note):
        context.trace.add(StageStep(name=stage.name, description=stage.description, moves=moves, note=context.note))
    return out
