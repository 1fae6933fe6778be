"""Second hops by name: the documents of the corpus whose title a unit's text names.

A bridge question's second document is usually named in the first one's text ("... located at
Marion, South Australia"), whether or not the PDF carries a link annotation to it, and most
bridge pages a page ranking misses have their title written in the other gold page
(bench/RESULTS.md#stages). This module finds such mentions with a title index: every document title, the title without a trailing
parenthetical qualifier ("122nd Division (Imperial Japanese Army)" -> "122nd Division"), and
the title before its first comma, the other way a wiki qualifies a name ("Summerlin, Nevada"
is written "located in Summerlin, Clark County, Nevada"), matched as a whole run of words that
starts with a capital letter or a digit (a title named in running text is a proper name). The
name before the comma counts only where the text also writes what follows the comma: alone it
is mostly something else ("Bill Clinton" is no hop to "Clinton, Minnesota", nor "Logan
International Airport in Boston" to "Boston, Lincolnshire"). Titles of one short or
lower-case word are left out: they would match everywhere. Nothing here is tuned on a collection.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from backend.index.texts import strip_qualifier  # "Kiss and Tell (1945 film)" is written "Kiss and Tell"

WORD = re.compile(r"\w+", re.UNICODE)
ARTICLE = re.compile(r"^the\s+", re.I)
MAX_TITLE_WORDS = 8  # longer titles (a paper's full title) are not written out in running text
MIN_SINGLE_WORD_CHARS = 5  # a one-word title ("Paris", "Nokia") must be at least this long


@dataclass(frozen=True, slots=True)
class TitleIndex:
    """Lower-cased title word tuples -> the documents with that title (several: homonyms)."""

    by_words: dict[tuple[str, ...], tuple[str, ...]]
    longest: int
    # (name before the comma, document) -> the words after it ("Boston, Lincolnshire": lincolnshire)
    qualifiers: dict[tuple[tuple[str, ...], str], tuple[str, ...]] = field(default_factory=dict)
    # a title's first word -> the most words of a title starting with it: a word that starts none is
    # passed at once (a unit's text is read at every hop of FiF's and strata's, ~1 ms a page before)
    first: dict[str, int] = field(default_factory=dict)

    def mentioned(self, text: str, exclude: str | None = None, limit: int = 8) -> list[str]:
        """Documents whose title `text` names, in order of first mention, at most `limit`;
        the longest title wins at each position (no match inside a longer one). A title named by
        the name before its comma counts only when its qualifier is written in the text too."""
        return [d for group in self.mentions(text, exclude, limit) for d in group][:limit]

    def mentions(self, text: str, exclude: str | None = None, limit: int = 8) -> list[tuple[str, ...]]:
        """The documents of `mentioned`, grouped by the mention that names them: homonyms ("The
        Young Ones" names the TV series and the video game) share a group."""
        raw = WORD.findall(text)
        low = [w.lower() for w in raw]
        joined = ""  # the text's words, for the qualifier check: built when first needed
        groups: list[tuple[str, ...]] = []
        found: set[str] = set()
        i = 0
        while i < len(raw) and len(found) < limit:
            step = 1
            longest = self.first.get(low[i], 0) if self.first else self.longest
            if longest and (raw[i][:1].isupper() or raw[i][:1].isdigit()):
                for n in range(min(longest, len(raw) - i), 0, -1):
                    form = tuple(low[i:i + n])
                    docs = self.by_words.get(form)
                    if docs and self.qualifiers:
                        joined = joined or " " + " ".join(low) + " "
                        docs = [d for d in docs if self._qualified(form, d, joined)]
                    if docs:
                        new = tuple(d for d in docs if d != exclude and d not in found)
                        if new:
                            groups.append(new)
                            found.update(new)
                        step = n
                        break
            i += step
        return groups

    def _qualified(self, form: tuple[str, ...], doc: str, joined: str) -> bool:
        qualifier = self.qualifiers.get((form, doc))
        return qualifier is None or f" {' '.join(qualifier)} " in joined


def _title_forms(title: str) -> dict[tuple[str, ...], tuple[str, ...] | None]:
    """The title's forms -> the qualifier a form needs written beside it (None: none)."""
    forms: dict[tuple[str, ...], tuple[str, ...] | None] = {}
    bare = strip_qualifier(title)
    name, _, qualifier = bare.partition(",")
    candidates = [(title, None), (bare, None), (name, tuple(w.lower() for w in WORD.findall(qualifier)) or None)]
    if ARTICLE.match(bare):  # running text writes "the Beatles" for "The Beatles"
        candidates.append((ARTICLE.sub("", bare), None))
    # "Faith Lutheran Middle School & High School" is written with "and" too ("&" is no word)
    candidates += [(form.replace(" & ", " and "), needs) for form, needs in candidates if " & " in form]
    for form, needs in candidates:
        words = tuple(w.lower() for w in WORD.findall(form))
        if not words or len(words) > MAX_TITLE_WORDS:
            continue
        if len(words) == 1 and (len(words[0]) < MIN_SINGLE_WORD_CHARS or words[0].isdigit()):
            continue
        if words not in forms or needs is None:
            forms[words] = needs
    return forms


def build_title_index(titles: dict[str, str]) -> TitleIndex:
    """The index of {document id: title}."""
    by_words: dict[tuple[str, ...], list[str]] = {}
    qualifiers: dict[tuple[tuple[str, ...], str], tuple[str, ...]] = {}
    for doc_id, title in titles.items():
        for form, needs in _title_forms(title or "").items():
            by_words.setdefault(form, []).append(doc_id)
            if needs:
                qualifiers[(form, doc_id)] = needs
    first: dict[str, int] = {}
    for form in by_words:
        first[form[0]] = max(first.get(form[0], 0), len(form))
    return TitleIndex({k: tuple(v) for k, v in by_words.items()}, max((len(k) for k in by_words), default=0), qualifiers, first)


def title_index(corpus) -> TitleIndex:
    """The corpus's title index, built once per loaded corpus."""
    return corpus.derived(_corpus_title_index)


def _corpus_title_index(corpus) -> TitleIndex:
    return build_title_index({doc_id: doc.title for doc_id, doc in corpus.documents.items()})
