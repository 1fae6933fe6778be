"""Rules for the FiF prompts (appendix D of "Failure is Feedback"): the offline answers of tasks.py.

Every task reads only the payload the retriever sends, and follows its prompt's rules:

- `fif_orchestrate` (Orchestrator). Target: the earliest open subtask whose prerequisites are
  resolved (a prerequisite that names no entity is turned around: its dependant goes first).
  A dependent subtask is composed with its prerequisite's answer, the bridge entity. Strategy:
  the cheapest untried rung of the cost ladder (LADDER: neighbours < global vector search;
  document < component < subcomponent granularity; then LLM reasoning for components, then for
  both), per (entity, anchor); rungs whose LLM calls do not fit the budget are skipped.
  History-aware backtracking: a dependent hop starts from its prerequisite's successful step,
  not from the dead end the last hop reached (the retriever records that as `backtrack_to`); a
  dead end (no unit on the route names the entity) moves on to the next-most-likely entity, a
  near miss (the entity mentioned, its page not reached) keeps the entity and escalates; after
  two failures in a row another successful step whose evidence best matches the subtask is
  tried as an anchor too. PLAN (at most once) when every rung failed, when a resolved plan
  leaves query words uncovered (a chain longer than the plan: the last hop reached the bridge's
  page, which does not say what is asked), or when a one-subtask plan's query asks for an entity
  (whose own page is the next hop). STOP when every subtask is resolved or a budget is spent.
- `fif_select_docs` / `fif_select_components` (traversers with LLM reasoning): re-score the
  vector shortlist by how well each candidate covers the subtask's named entities and other
  content words (and the query's), and keep the best.
- `fif_evaluate` (Traversal Evaluator): "answerable" when a retrieved unit above the score
  threshold covers the subtask: all its named entities, or half of them and every other content
  word; for a composed subtask, the bridge entity's own page or a unit meeting the subtask's
  other named constraints. Answers: the bridge entity with alternatives (the unit's own title
  when the subtask only describes it, then the titles it links to and other capitalised names,
  those carrying the subtask's own words first ("X's high school": "Bishop Gorman High
  School"), each ranked by how much of the subtask their sentence covers) for a subtask others
  depend on, else the sentence covering it best.
- `fif_plan` (Subquery Planner): one follow-up task "(i) <query words still uncovered, or its
  non-entity words>" on the entities the latest successful evidence names, pages the evidence
  already holds left out (re-reading one adds nothing).
- `fif_rerank` (Reranker): the best unit of each answered subtask first, in subtask order, so
  every hop of a chain is in the first ranks; then the rest by relevance to the query plus the
  credit of the hops that found them (success over failure, earlier ranks over later).

What it does not do: understand relations. "Held what position" is judged by the words and
entities a unit shares with it, not by meaning; a real model does better on such hops.
"""

from __future__ import annotations

import re
from typing import Any

from backend.llm.text import WORD_RE
from backend.retrieval.entities import (  # noqa: F401 (entity_spans: the rules' names for the tests and tasks)
    SENTENCE_RE,
    _acronyms,
    bridge_entities,
    compose,
    content_tokens,
    entity_spans,
    query_terms,
)

# Strategy rungs as the orchestrator prompt names them: (document_search_mode, component_search_mode,
# vector_granularity). Cheapest first; "monotonic within the same anchor unless you backtrack or replan".
LADDER: tuple[tuple[str, str, str], ...] = (
    ("neighbors", "vector search", "document"),
    ("vector search", "vector search", "document"),
    ("vector search", "vector search", "component"),
    ("vector search", "vector search", "subcomponent"),
    ("vector search", "llm reasoning", "subcomponent"),
    ("llm reasoning", "llm reasoning", "subcomponent"),
)
# LLM calls a traverse at each rung makes besides the evaluator (the decision is already paid).
RUNG_LLM_CALLS = {("vector search", "vector search"): 0, ("neighbors", "vector search"): 0,
                  ("vector search", "llm reasoning"): 1, ("neighbors", "llm reasoning"): 1,
                  ("llm reasoning", "vector search"): 1, ("llm reasoning", "llm reasoning"): 2}
# Questions whose answer is a quantity, a date or yes/no, not an entity with a page of its own.
NON_ENTITY_Q_RE = re.compile(
    r"^\s*(how (many|much|long|old|far|large|big|high|tall)|when\b|what (year|date|month|day|time)|in (what|which) year|"
    r"(is|are|was|were|does|do|did|can|could|has|have|had|will|would|should)\b)|\b(how many|what year|which year)\b",
    re.I,
)


# ---------------------------------------------------------------- text helpers


def asks_entity(question: str) -> bool:
    """Whether the answer is a named thing (a person, place, work, organisation), which has a page
    of its own, rather than a number, a date or yes/no."""
    return not NON_ENTITY_Q_RE.search(question)


def coverage(tokens: set[str], entities: list[frozenset[str]], unit_tokens: set[str]) -> tuple[float, float]:
    """(share of the named entities whose words all occur, share of the other content words);
    1.0 where there is nothing to cover."""
    relation = tokens - set().union(*entities)
    ent = sum(e <= unit_tokens for e in entities) / len(entities) if entities else 1.0
    rel = len(relation & unit_tokens) / len(relation) if relation else 1.0
    return ent, rel


def _unit_tokens(unit: dict[str, Any]) -> set[str]:
    """A unit's content tokens and the acronyms of the names it spells out: a question writes
    "UNLV" where the page writes "University of Nevada, Las Vegas"."""
    text = f"{unit.get('title', '')} {unit.get('text', '')}"
    return content_tokens(text) | _acronyms(text)


def _words_of(text: str, keep: set[str]) -> str:
    """The words of a text whose tokens are in `keep`, in order (a rewritten, shorter subtask)."""
    out = [w for w in WORD_RE.findall(text) if content_tokens(w) & keep]
    return " ".join(dict.fromkeys(out))


# ---------------------------------------------------------------- orchestrator


def _action(mode: str | None = None, **fields: Any) -> dict[str, Any]:
    if mode in ("stop", "replan"):
        base = {"next_action": mode, "next_retrieval_subtask": None, "document_search_mode": None,
                "component_search_mode": None}
    else:
        base = {"next_action": "search"}
    base.update(fields)
    return {"action": base}


def _rung_key(entry: dict[str, Any]) -> tuple[str, str, str]:
    s = entry["strategy"]
    return s["document_search_mode"], s["component_search_mode"], s["vector_granularity"]


def _trailing_failures(attempts: list[dict[str, Any]]) -> int:
    n = 0
    for m in reversed(attempts):
        if m["outcome"] != "failure":
            break
        n += 1
    return n


def orchestrate(payload: dict[str, Any]) -> dict[str, Any]:
    subtasks: list[dict[str, Any]] = payload["subtasks"]
    traverses = [m for m in payload["memory"] if m["action"] == "traverse"]
    calls_left = payload.get("llm_calls_left")
    can_replan = int(payload.get("replans", 0)) < int(payload.get("max_replans", 1)) and (
        calls_left is None or calls_left >= 3)  # the planner, then a decision and an evaluation
    if int(payload.get("steps_left", 1)) <= 0:
        return _action("stop", reason="step budget spent")
    if calls_left is not None and int(calls_left) < 1:
        return _action("stop", reason="LLM call budget spent")

    if not any(s["status"] == "open" for s in subtasks):
        # A plan is incomplete when part of the query is still uncovered: the chain is longer than
        # the plan (its last hop reached a page that does not say what is asked), or a one-subtask
        # plan missed a hop. So is a one-subtask plan whose query asks for an entity: that entity's
        # own page (named by the evidence) is the next hop.
        if can_replan and any(m["outcome"] == "success" and m.get("entities") for m in traverses):
            gap = _query_gap(payload)
            if gap:
                return _action("replan", reason=f"the plan leaves '{' '.join(sorted(gap))}' uncovered")
            if len(subtasks) == 1 and asks_entity(payload["query"]):
                return _action("replan", reason="the query asks for an entity: follow the entities its evidence names")
        return _action("stop", reason="every subtask is resolved")

    target, deps = _target(subtasks)
    t = target["index"]
    attempts = [m for m in traverses if m["subtask"] == t]
    entities, anchors, prerequisite = _context(target, deps, subtasks, traverses, attempts, int(payload.get("max_entities", 3)))
    routes, unaffordable = _routes(attempts, entities, anchors, calls_left)
    if routes:
        r, entity, anchor_step = routes[0]
        doc_mode, comp_mode, granularity = LADDER[r]
        return _action(
            next_retrieval_subtask=compose(target["text"], entity, prerequisite),
            document_search_mode=doc_mode, component_search_mode=comp_mode, vector_granularity=granularity,
            anchor=anchor_step, subtask_index=t, entity=entity,
            reason=_why(attempts, entity, anchor_step, traverses[-1]["step"] if traverses else None),
        )
    if unaffordable:
        return _action("stop", reason="LLM call budget too small for the next rung")
    if can_replan and not deps:
        return _action("replan", reason=f"subtask {t + 1} failed on every rung", abandon=[t])
    return _action("search", next_retrieval_subtask=None, abandon=[t], reason=f"subtask {t + 1} failed on every rung, entity and anchor")


def _target(subtasks: list[dict[str, Any]]) -> tuple[dict[str, Any], list[int]]:
    """The earliest open subtask whose (effective) prerequisites are resolved, and those prerequisites."""
    deps_of = effective_dependencies(subtasks)
    by_index = {s["index"]: s for s in subtasks}
    open_ = [s for s in subtasks if s["status"] == "open"]
    ready = [s for s in open_ if all(by_index[d]["status"] != "open" for d in deps_of[s["index"]])]
    target = (ready or open_)[0]
    return target, deps_of[target["index"]]


def _context(
    target: dict[str, Any], deps: list[int], subtasks: list[dict[str, Any]], traverses: list[dict[str, Any]],
    attempts: list[dict[str, Any]], max_entities: int,
) -> tuple[list[str | None], list[dict[str, Any]], str]:
    """(candidate entities, anchor steps, prerequisite text) of a subtask. A dependent subtask's
    entities are its prerequisite's answer and alternatives, its anchor the prerequisite's latest
    successful step; after two failures in a row the successful step whose evidence best matches
    the subtask is added as an anchor (the paper's re-anchoring rule 2)."""
    entities: list[str | None] = [None]
    anchors: list[dict[str, Any]] = []
    prerequisite = ""
    if deps:
        dep = next(s for s in subtasks if s["index"] == deps[-1])
        prerequisite = dep["text"]
        names = ([dep["answer"]] if dep.get("answer") else []) + list(dep.get("alternatives", []))
        entities = list(dict.fromkeys(n for n in names if n))[:max_entities] or [None]
        anchors = [m for m in traverses if m["subtask"] in deps and m["outcome"] == "success"][-1:]
    if _trailing_failures(attempts) >= 2:
        tokens, _ = query_terms(target["text"])
        tried = {m.get("anchor") for m in attempts}
        others = [m for m in traverses if m["outcome"] == "success" and m["step"] not in tried and m not in anchors]
        others.sort(key=lambda m: (-len(tokens & set().union(set(), *(_unit_tokens(u) for u in m["evidence"]))), -m["step"]))
        anchors = anchors + others[:1]
    return entities, anchors, prerequisite


def _routes(
    attempts: list[dict[str, Any]], entities: list[str | None], anchors: list[dict[str, Any]], calls_left: int | None
) -> tuple[list[tuple[int, str | None, int | None]], bool]:
    """Untried (rung, entity, anchor step) routes, best first, and whether a rung was skipped for
    the budget. Cheapest rung first, then the most likely entity; a global dead end rules an
    entity out; after a near miss the same entity escalates first."""
    dead = {m.get("entity") for m in attempts if m.get("dead_end") and m["strategy"]["document_search_mode"] != "neighbors"}
    routes: list[tuple[int, int, str | None, int | None]] = []
    unaffordable = False
    for r, rung in enumerate(LADDER):
        doc_mode, comp_mode, _ = rung
        if calls_left is not None and 1 + RUNG_LLM_CALLS[(doc_mode, comp_mode)] > calls_left:
            unaffordable = True  # this rung's LLM calls and the evaluator's do not fit
            continue
        local = doc_mode == "neighbors"
        for anchor in (anchors if local else anchors[:1] or [None]):
            if local and not anchor.get("neighbors", 0):
                continue
            anchor_step = anchor["step"] if anchor else None
            for e, entity in enumerate(entities):
                if entity in dead or any(
                    _rung_key(m) == rung and m.get("entity") == entity and (not local or m.get("anchor") == anchor_step)
                    for m in attempts
                ):
                    continue
                routes.append((r, e, entity, anchor_step))
    routes.sort(key=lambda o: (o[0], o[1]))
    last = attempts[-1] if attempts else None
    if last is not None and last["outcome"] == "failure" and not last.get("dead_end"):
        routes.sort(key=lambda o: o[2] != last.get("entity"))  # stable: the near-missed entity first
    return [(r, entity, anchor_step) for r, _, entity, anchor_step in routes], unaffordable


def _why(attempts: list[dict[str, Any]], entity: str | None, anchor_step: int | None, last_step: int | None) -> str:
    last = attempts[-1] if attempts else None
    if last is None:
        return "new subtask" + (f", from the context of step {anchor_step}" if anchor_step is not None else "")
    failures = _trailing_failures(attempts)
    if entity != last.get("entity"):
        return f"'{last.get('entity')}' led nowhere (step {last['step']}): next candidate entity"
    if anchor_step is not None and anchor_step != last_step:
        return f"{failures} failure(s): re-anchored to step {anchor_step}, next rung of the cost ladder"
    return f"{failures} failure(s) on this subtask: next rung of the cost ladder"


def effective_dependencies(subtasks: list[dict[str, Any]]) -> dict[int, list[int]]:
    """The plan's dependencies, with an underspecified prerequisite turned around: a subtask that
    names no entity cannot start a hop, so when one that depends on it names some, that one goes
    first and the entity-less subtask is composed from its evidence instead."""
    deps = {s["index"]: list(s.get("depends_on", [])) for s in subtasks}
    named = {s["index"]: bool(query_terms(s["text"])[1]) for s in subtasks}
    for s in subtasks:
        i = s["index"]
        if named[i] or deps[i]:
            continue
        dependants = [d for d in deps if i in deps[d] and named[d]]
        if dependants:
            first = dependants[0]
            deps[first] = [x for x in deps[first] if x != i]
            deps[i] = [first]
    return deps


def _query_gap(payload: dict[str, Any]) -> set[str]:
    """Content words of the query that no successful step's evidence contains."""
    tokens, _ = query_terms(payload["query"])
    covered: set[str] = set()
    for m in payload["memory"]:
        if m["action"] == "traverse" and m["outcome"] == "success":
            for u in m["evidence"]:
                covered |= _unit_tokens(u)
    return tokens - covered


# ---------------------------------------------------------------- traversers


def _select(payload: dict[str, Any], text_of) -> list[tuple[float, int]]:
    tokens, entities = query_terms(payload["subtask_query"])
    q_tokens, _ = query_terms(payload.get("original_query", ""))
    out = []
    for i, c in enumerate(payload["candidates"]):
        unit_tokens = content_tokens(text_of(c))
        ent, rel = coverage(tokens, entities, unit_tokens)
        also = len(q_tokens & unit_tokens) / len(q_tokens) if q_tokens else 0.0
        score = 0.4 * float(c.get("score", 0.0)) + 0.35 * ent + 0.15 * rel + 0.1 * also
        out.append((score, i))
    out.sort(key=lambda s: (-s[0], s[1]))
    return out[: int(payload.get("max_results", 5))]


def select_docs(payload: dict[str, Any]) -> dict[str, Any]:
    ranked = _select(payload, lambda c: f"{c.get('title', '')} {c.get('summary', '')}")
    cands = payload["candidates"]
    return {"selection": [{"index": i, "filename": cands[i]["filename"], "score": round(s, 4)} for s, i in ranked]}


def select_components(payload: dict[str, Any]) -> dict[str, Any]:
    ranked = _select(payload, lambda c: f"{c.get('title', '')} {c.get('text', '')}")
    cands = payload["candidates"]
    return {"selection": [
        {"index": i, "filename": cands[i]["filename"], "component_id": cands[i]["component_id"], "score": round(s, 4)}
        for s, i in ranked
    ]}


# ---------------------------------------------------------------- evaluator


def evaluate(payload: dict[str, Any]) -> dict[str, Any]:
    target = payload["subtask_query"]
    tokens, entities = query_terms(target)
    min_cov = float(payload.get("min_coverage", 0.5))
    min_score = float(payload.get("min_score", 0.3))
    bridge = content_tokens(payload.get("entity") or "")
    source = set(payload.get("source_files") or [])
    best: tuple[float, int] | None = None
    mentions = False
    for i, unit in enumerate(payload["candidates"]):
        if float(unit.get("score", 0.0)) < min_score:
            continue
        if bridge and unit.get("filename") in source:
            continue  # re-reading the page the entity was read from tells nothing new about it
        unit_tokens = _unit_tokens(unit)
        ent, rel = coverage(tokens, entities, unit_tokens)
        if bridge:
            # A composed subtask: the bridge entity's own page, or a unit meeting the subtask's other
            # named constraints (the guessed entity may be wrong, the constraints are not). A unit
            # that only mentions the entity elsewhere is a near miss.
            own = [e for e in entities if not e <= bridge]
            ok = (bridge <= content_tokens(unit.get("title", "")) or (bool(own) and all(e <= unit_tokens for e in own))
                  or (bridge <= unit_tokens and rel >= min_cov))
            mentions = mentions or bridge <= unit_tokens
        else:
            ok = (ent >= 0.999 and (rel >= min_cov or bool(entities))) or (ent >= 0.5 and rel >= 0.999)
        if ok and (best is None or ent > best[0]):  # the best-ranked unit among those covering the most entities
            best = (ent, i)
    if best is None:
        # A route that never reaches the bridge entity is a dead end for that entity.
        dead_end = bool(bridge) and not mentions
        reason = ("dead end: no unit on this route names the entity" if dead_end
                  else "near miss: units mention the entity but none is its page" if bridge else "no unit covers the subtask")
        return {"status": "not answerable", "updated_subtasks": [], "dead_end": dead_end, "reason": reason}
    unit = payload["candidates"][best[1]]
    index = int(payload.get("subtask_index", 0))
    others = [u for j, u in enumerate(payload["candidates"]) if j != best[1]]
    updated = [_answer(index, target, [unit, *others], payload)]
    # Other open subtasks the same unit answers (e.g. both sides of a comparison on one page).
    deps_of = effective_dependencies(payload.get("subtasks", []))
    for s in payload.get("subtasks", []):
        if s["index"] == index or s["status"] != "open" or deps_of[s["index"]]:
            continue
        s_tokens, s_ent = query_terms(s["text"])
        ent, rel = coverage(s_tokens, s_ent, _unit_tokens(unit))
        if s_ent and ent >= 0.999 and rel >= min_cov:
            updated.append(_answer(s["index"], s["text"], [unit], payload))
    return {"status": "answerable", "updated_subtasks": updated, "dead_end": False, "evidence": best[1],
            "entities": bridge_entities(payload.get("original_query", target), unit),
            "reason": f"unit {best[1]} covers the subtask ({best[0]:.0%} of its named entities)"}


def _answer(index: int, text: str, units: list[dict[str, Any]], payload: dict[str, Any]) -> dict[str, Any]:
    """The answer of one subtask. When another subtask depends on it: the bridge entity with
    alternatives, from the judged unit first and then the other retrieved units (empty when none
    names one: a sentence is not an entity). Otherwise the judged unit's sentence that covers the
    subtask best."""
    needed = any(index in deps for deps in effective_dependencies(payload.get("subtasks", [])).values())
    if needed:
        names = list(dict.fromkeys(n for u in units for n in bridge_entities(text, u)))[:5]
        return {"index": index + 1, "status": "answerable", "answer": names[0] if names else "", "alternatives": names[1:]}
    tokens, _ = query_terms(text)
    sentences = SENTENCE_RE.split(units[0].get("text", "")) or [""]
    best = max(sentences, key=lambda s: len(content_tokens(s) & tokens))
    return {"index": index + 1, "status": "answerable", "answer": best[:200], "alternatives": []}


# ---------------------------------------------------------------- planner


def plan(payload: dict[str, Any]) -> dict[str, Any]:
    """One follow-up task: '(i) <query words no successful evidence covers>', depending on the
    latest successful subtask whose evidence names candidate bridge entities (most likely first)."""
    gap = _query_gap(payload)
    tokens, spans = query_terms(payload["query"])
    words = _words_of(payload["query"], gap or tokens - set().union(*spans)) or payload["query"]
    successes = [m for m in payload["memory"] if m["action"] == "traverse" and m["outcome"] == "success"]
    # A page the successful steps already hold as evidence is no next hop: its title is left out.
    read = {u.get("title", "").lower() for m in successes for u in m.get("evidence", [])}
    for m in reversed(successes):
        entities = [e for e in m.get("entities") or [] if e.lower() not in read]
        if entities:
            return {"tasks": [f"(i) {words}"], "depends_on": [[m["subtask"]]], "answers": [entities],
                    "reason": f"follow the entities named by step {m['step']}'s evidence into '{words}'"}
    return {"tasks": [words], "depends_on": [[]], "answers": [[]], "reason": "the query words no evidence covers yet"}


# ---------------------------------------------------------------- reranker


def rerank(payload: dict[str, Any]) -> dict[str, Any]:
    """Relevance to the original query plus the credit of the hops that found the unit; the units
    in `chain` (the best evidence of each answered subtask) lead, in subtask order."""
    w_hop = float(payload.get("hop_weight", 0.5))
    cands = payload["candidates"]
    scored: list[tuple[float, int]] = []
    for i, c in enumerate(cands):
        credit = max((((1.0 if f["outcome"] == "success" else 0.5) / (1 + f["rank"])) for f in c.get("found_by", [])), default=0.0)
        scored.append(((1 - w_hop) * float(c.get("score", 0.0)) + w_hop * credit, i))
    scored.sort(key=lambda s: (-s[0], s[1]))
    leads = list(dict.fromkeys(i for i in payload.get("chain", []) if isinstance(i, int) and 0 <= i < len(cands)))
    top = scored[0][0] if scored else 0.0
    ranking = [(top + 1e-3 * (len(leads) - r), i) for r, i in enumerate(leads)]
    ranking += [(s, i) for s, i in scored if i not in leads]
    return {"ranking": [
        {"index": i, "filename": cands[i].get("filename", ""), "component_id": cands[i].get("component_id", ""), "score": round(s, 6)}
        for s, i in ranking
    ]}
