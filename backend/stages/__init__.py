"""The stages of the query pipeline, listed once, in the order they run (README "Stages").

A method ranks; the stages around it use what the corpus's structure says that a similarity score
does not (titles, table rows, page references, the documents a question names). Each is a named
step the trace records (base.py) and a call can switch off: `stages` is "default" (the default set,
run after the methods whose `follows_references` flag is set: hikey, lilac, fif, mirag, mmgraph,
strata; none after bm25, dense and hybrid, the flat floors), "none" (each method as its paper
describes it, under the plain profile) or a comma-separated list of names (those, after any method).

One stage acts on the question before the method ranks (line_items); the rest reorder
the method's ranking, as deep as it ranked (QueryPipeline.rank_depth). `scope` is the user's filter
to the documents they chose: it is not switchable and runs whenever documents are chosen, last.

Not here: what each stage reads (one module each: measures, novelty, rows, quoted,
spread, names, statements, references, scope), the corpus profiles (profile.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from backend.errors import StrataError
from backend.stages.base import Stage, StageContext, moved_units, run_stage
from backend.stages.measures import with_line_items
from backend.stages.names import named_first, naming_strength
from backend.stages.novelty import new_words_first
from backend.stages.quoted import quoted_page_first
from backend.stages.references import place_references
from backend.stages.rows import named_rows_first
from backend.stages.scope import SCOPE_WIDEN, within_scope
from backend.stages.spread import spread_over_pages
from backend.stages.statements import statement_first
from backend.types import ScoredNode, StageInfo

__all__ = ["SCOPE_WIDEN", "STAGES", "SCOPE", "Stage", "StageContext", "is_none", "moved_units", "run_stage", "select_stages",
           "stage_infos", "stages_label"]

EVERY_CORPUS = "every corpus"


class LineItems:
    name: ClassVar[str] = "line_items"
    description: ClassVar[str] = "A financial ratio the question names is searched with the line items it is computed from."
    acts_on: ClassVar[str] = EVERY_CORPUS + " (corpora with financial tables)"
    kinds: ClassVar[tuple[str, ...]] = ()
    before_retrieval: ClassVar[bool] = True

    def apply(self, context: StageContext, hits: list[ScoredNode]) -> list[ScoredNode]:
        context.searched = with_line_items(context.corpus, context.question, context.trace)
        if context.searched != context.question:
            context.note = f'Searched for "{context.searched}".'
        return hits


class Novelty:
    name: ClassVar[str] = "novelty"
    description: ClassVar[str] = "Pages that add a word of the question go before look-alikes that add none."
    acts_on: ClassVar[str] = "a web of pages (short documents that lead to one another)"
    kinds: ClassVar[tuple[str, ...]] = ("web_of_pages",)
    before_retrieval: ClassVar[bool] = False

    def apply(self, context: StageContext, hits: list[ScoredNode]) -> list[ScoredNode]:
        return new_words_first(context.corpus, context.question, hits, context.trace, web_of_pages=True)


class NamedRows:
    name: ClassVar[str] = "named_rows"
    description: ClassVar[str] = "Pages holding a table row the question names by its whole label go first."
    acts_on: ClassVar[str] = EVERY_CORPUS + " (corpora with tables)"
    kinds: ClassVar[tuple[str, ...]] = ()
    before_retrieval: ClassVar[bool] = False

    def apply(self, context: StageContext, hits: list[ScoredNode]) -> list[ScoredNode]:
        docs = frozenset(context.named()[1])
        return named_rows_first(context.corpus, context.searched, hits, context.trace, docs)


class Quoted:
    name: ClassVar[str] = "quoted"
    description: ClassVar[str] = "The page that quotes the question's words at length goes first."
    acts_on: ClassVar[str] = EVERY_CORPUS
    kinds: ClassVar[tuple[str, ...]] = ()
    before_retrieval: ClassVar[bool] = False

    def apply(self, context: StageContext, hits: list[ScoredNode]) -> list[ScoredNode]:
        return quoted_page_first(context.corpus, context.question, hits, context.trace)


class Spread:
    name: ClassVar[str] = "spread"
    description: ClassVar[str] = "At most two units of a page before every ranked page has had its first ones."
    acts_on: ClassVar[str] = EVERY_CORPUS
    kinds: ClassVar[tuple[str, ...]] = ()
    before_retrieval: ClassVar[bool] = False

    def apply(self, context: StageContext, hits: list[ScoredNode]) -> list[ScoredNode]:
        return spread_over_pages(context.corpus, hits, context.top_k, context.trace)


class NamedDocuments:
    name: ClassVar[str] = "named_documents"
    description: ClassVar[str] = "Units of the documents the question names (\"for COSTCO in FY2021\") go first."
    acts_on: ClassVar[str] = "documents sharing one boilerplate, and long documents that rarely lead to one another"
    kinds: ClassVar[tuple[str, ...]] = ("template", "long_separate")
    before_retrieval: ClassVar[bool] = False

    def apply(self, context: StageContext, hits: list[ScoredNode]) -> list[ScoredNode]:
        kind = "Template corpus" if context.profile.has("template") else "Long documents that do not lead to one another"
        return named_first(context.corpus, context.question, hits, context.trace, kind, context.named())


class Statements:
    name: ClassVar[str] = "statements"
    description: ClassVar[str] = ("Pages of the financial statement the question names (balance sheet, cash flow, income "
                                  "statement) go first, and of those that print the figures it asks for next, in the "
                                  "documents it names.")
    acts_on: ClassVar[str] = EVERY_CORPUS + " (filings whose statements are sections with tables)"
    kinds: ClassVar[tuple[str, ...]] = ()
    before_retrieval: ClassVar[bool] = False

    def apply(self, context: StageContext, hits: list[ScoredNode]) -> list[ScoredNode]:
        named = context.named()[1]
        strength = {d: s for d, s in naming_strength(context.corpus, context.question).items() if d in named} if named else {}
        return statement_first(context.corpus, context.question, hits, context.trace, strength)


class References:
    name: ClassVar[str] = "references"
    description: ClassVar[str] = "Pages and labelled units the question names (\"on page 17\", \"Table 2\") go first."
    acts_on: ClassVar[str] = EVERY_CORPUS
    kinds: ClassVar[tuple[str, ...]] = ()
    before_retrieval: ClassVar[bool] = False

    def apply(self, context: StageContext, hits: list[ScoredNode]) -> list[ScoredNode]:
        return place_references(context.corpus, context.question, hits, context.depth, context.trace, context.question_vector)


class Scope:
    name: ClassVar[str] = "scope"
    description: ClassVar[str] = "Only results from the documents the user chose (always on when documents are chosen)."
    acts_on: ClassVar[str] = "every corpus, when the question is limited to chosen documents"
    kinds: ClassVar[tuple[str, ...]] = ()
    before_retrieval: ClassVar[bool] = False

    def apply(self, context: StageContext, hits: list[ScoredNode]) -> list[ScoredNode]:
        return within_scope(context.corpus, hits, context.scope, context.question, context.question_vector(),
                            context.top_k, context.trace, template=context.profile.has("template"))


STAGES: tuple[Stage, ...] = (LineItems(), Novelty(), NamedRows(), Quoted(), Spread(), NamedDocuments(),
                             Statements(), References())
SCOPE: Stage = Scope()
DEFAULT, NONE = "default", "none"


def stage_names() -> list[str]:
    return [s.name for s in STAGES]


def _names(spec: str | Sequence[str]) -> list[str]:
    return [n.strip().lower() for n in (spec.split(",") if isinstance(spec, str) else spec) if n and n.strip()]


def _is_default(spec: str | Sequence[str] | None) -> bool:
    return spec is None or _names(spec) in ([], [DEFAULT])


def is_none(spec: str | Sequence[str] | None) -> bool:
    """Whether a spec asks for no stage at all ("none"): each method as its paper describes it."""
    return spec is not None and _names(spec) == [NONE]


def select_stages(spec: str | Sequence[str] | None, follows_references: bool) -> tuple[Stage, ...]:
    """The stages a spec selects, in pipeline order: "default" the whole list for a method that
    follows references (none for the flat floors), "none" none, else the names given (a str
    "a,b" or a sequence). A StrataError names an unknown stage and lists the valid ones."""
    if _is_default(spec):
        return STAGES if follows_references else ()
    names = _names(spec)
    if names == [NONE]:
        return ()
    unknown = [n for n in names if n not in stage_names()]
    if unknown or not names:
        raise StrataError(f"Unknown stage(s) {', '.join(repr(n) for n in unknown) or repr(spec)}. Use default, none, or "
                          f"a comma-separated list of: {', '.join(stage_names())}.")
    return tuple(s for s in STAGES if s.name in names)


def stages_label(method: str, spec: str | Sequence[str] | None, selected: Sequence[Stage]) -> str:
    """"hikey" when no stage is selected, "hikey + stages" for the default set, "hikey + stages(a,b)" for a subset."""
    if not selected:
        return method
    if _is_default(spec):
        return f"{method} + stages"
    return f"{method} + stages({','.join(s.name for s in selected)})"


def stage_infos() -> list[StageInfo]:
    """Every stage, in pipeline order, the scope filter last."""
    return [StageInfo(name=s.name, description=s.description, acts_on=s.acts_on, switchable=s is not SCOPE)
            for s in (*STAGES, SCOPE)]
