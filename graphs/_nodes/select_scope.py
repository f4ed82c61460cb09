"""SelectScope: which knowledge bases, sub-paths and file kinds to search.

Heuristic: a knowledge base named in the question is chosen; otherwise, with several
knowledge bases, the one whose description shares the most topic words with the question
(when it beats every other). Files and folders the question names (checked against the
real folder listing) become path filters, and a kind of file named as such ("in the PDF
files") a kind filter. Nothing named means no restriction. The filters reach the engine
before ranking (``kbgraph.retrieval._filters.SearchFilters``). The words that named the scope
(``RagScope.terms``) are not topic words, so GroundingCheck does not look for them in the
sources. A retry widens the scope to everything (:func:`widest_scope`, applied by
GroundingCheck).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from langgraph.runtime import Runtime
from pydantic import BaseModel, Field

from kbgraph._base.escapes import printable

from .._settings import RagSettings, ResolvedKnowledgeBase
from .._state import RagScope, RagState
from ._base import NodeDeps, StepRecorder
from ._paths import (
    Listing,
    existing,
    list_folder,
    mentioned_kinds,
    mentioned_paths,
    scope_kinds,
    scope_terms,
)
from ._probe import in_scope, probe
from ._rewrite_guard import list_problem, screen_reason
from ._text import question_of, term_stems
from .rewrite_query import standalone

NODE = "select_scope"
_PROMPT_PATHS = 60
MAX_PROPOSED_PATHS = 20


class ScopeChoice(BaseModel):
    knowledge_bases: list[str] = Field(default_factory=list, description="names; empty: all")
    paths: list[str] = Field(default_factory=list, description="folder prefixes or globs")
    kinds: list[str] = Field(
        default_factory=list,
        description="file kinds, code languages, 'test' or 'non-test'; empty: all",
    )
    reason: str = ""


def widest_scope(
    kbs: Sequence[ResolvedKnowledgeBase], reason: str, terms: Sequence[str] = ()
) -> RagScope:
    """Everything; ``terms`` (the words that named the narrower scope) are kept, because
    they still name where to look, not what the question is about."""
    return {
        "knowledge_bases": [k.name for k in kbs],
        "paths": [],
        "kinds": [],
        "widened": True,
        "reason": reason,
        "terms": list(terms),
    }


def with_terms(scope: RagScope, question: str) -> RagScope:
    """``scope`` with the question's words that its paths and kinds consumed."""
    return {**scope, "terms": scope_terms(question, scope["paths"], scope["kinds"])}


def _named_kbs(question: str, kbs: Sequence[ResolvedKnowledgeBase]) -> list[str]:
    flat = " " + re.sub(r"[\W_]+", " ", question.casefold()) + " "
    named = []
    for kb in kbs:
        name = re.sub(r"[\W_]+", " ", kb.name.casefold()).strip()
        if name and f" {name} " in flat:
            named.append(kb.name)
    return named


def _described_kb(question: str, kbs: Sequence[ResolvedKnowledgeBase]) -> str | None:
    if len(kbs) < 2:
        return None
    asked = term_stems(question)
    overlap = sorted(
        ((len(asked & term_stems(kb.description)), kb.name) for kb in kbs), reverse=True
    )
    best, runner_up = overlap[0], overlap[1]
    return best[1] if best[0] >= 1 and best[0] > runner_up[0] else None


def heuristic_scope(
    question: str, kbs: Sequence[ResolvedKnowledgeBase], listings: dict[str, Listing]
) -> RagScope:
    names = _named_kbs(question, kbs)
    reasons = [f"named knowledge base(s): {', '.join(names)}"] if names else []
    described = None if names else _described_kb(question, kbs)
    if described:
        names, reasons = [described], [f"description of {described!r} matches the question"]
    paths: dict[str, None] = {}
    holders: set[str] = set()
    for kb in kbs:
        for pattern in mentioned_paths(question, listings[kb.name]):
            paths.setdefault(pattern, None)
            holders.add(kb.name)
    if paths:
        reasons.append(f"named path(s): {', '.join(paths)}")
        if not names:
            names = [k.name for k in kbs if k.name in holders]
    kinds: list[str] = list(mentioned_kinds(question, _merged(listings)))
    if kinds:
        reasons.append(f"named file kind(s): {', '.join(kinds)}")
    return {
        "knowledge_bases": names or [k.name for k in kbs],
        "paths": list(paths),
        "kinds": list(kinds),
        "widened": False,
        "reason": "; ".join(reasons) or "nothing named: search everything",
    }


def _merged(listings: dict[str, Listing]) -> Listing:
    return Listing(
        tuple(f for listing in listings.values() for f in listing.files),
        tuple(d for listing in listings.values() for d in listing.folders),
    )


def checked_choice(
    choice: ScopeChoice, kbs: Sequence[ResolvedKnowledgeBase], listings: dict[str, Listing]
) -> RagScope:
    """The model's scope without names, paths or kinds that do not exist."""
    known = {k.name for k in kbs}
    names = [n for n in choice.knowledge_bases if n in known]
    chosen = [k for k in kbs if k.name in names] or list(kbs)
    paths = [p.strip().lstrip("/") for p in choice.paths if p.strip() and ".." not in p]
    paths = [p for p in paths if any(existing([p], listings[k.name]) for k in chosen)]
    kinds: list[str] = [k for k in choice.kinds if k in scope_kinds()]
    return {
        "knowledge_bases": [k.name for k in chosen],
        "paths": paths,
        "kinds": kinds,
        "widened": False,
        "reason": choice.reason or "chat model choice",
    }


def screened_choice(choice: ScopeChoice, rec: StepRecorder) -> ScopeChoice:
    """The model's choice without junk: a list of kinds or paths longer than there is to
    choose from, or the same entries again and again (a small model wrote 125 kinds), is
    overruled (no restriction of that kind) and a long reason cut; repeats are dropped."""
    kinds, paths = list(dict.fromkeys(choice.kinds)), list(dict.fromkeys(choice.paths))
    for field, items, limit in (("kinds", choice.kinds, len(scope_kinds())),
                                ("paths", choice.paths, MAX_PROPOSED_PATHS)):  # fmt: skip
        problem = list_problem(items, limit)
        if problem is None:
            continue
        shown = list(dict.fromkeys(items))[:10]
        why = f"the chat model's {field} list is junk ({problem}): no restriction by {field}"
        rec.overrule({field: shown, "entries": len(items)}, {"limit": limit}, {field: []}, why)
        if field == "kinds":
            kinds = []
        else:
            paths = []
    reason, problem = screen_reason(choice.reason)
    if problem:
        reason = reason or f"chat model choice ({problem})"
    return choice.model_copy(update={"kinds": kinds, "paths": paths, "reason": reason})


def checked_scope(
    proposed: RagScope,
    state: RagState,
    kbs: Sequence[ResolvedKnowledgeBase],
    rec: StepRecorder,
    deps: NodeDeps,
) -> RagScope:
    """A model's scope, unless it leaves out every place where a lexical probe of the
    question finds its best hits: then everything is searched, and the overruling is
    recorded. A scope of everything, or a probe that finds nothing, leaves it as it is."""
    narrowed = proposed["paths"] or proposed["kinds"] or len(proposed["knowledge_bases"]) < len(kbs)
    if not narrowed:
        return proposed
    question = question_of(dict(state))
    asked = standalone(question, state.get("messages") or []) or question
    found = probe(asked, kbs, rec.settings, deps)
    names, paths, kinds = proposed["knowledge_bases"], proposed["paths"], proposed["kinds"]
    if not found.hits or any(in_scope(hit, names, paths, kinds) for hit in found.hits):
        return proposed
    why = (
        f"the chat model's scope ({proposed['reason']!r}) leaves out every place a lexical "
        f"probe found the question in (best {found.hits[0].kb}: {found.hits[0].source})"
    )
    rec.overrule(dict(proposed), found.evidence(), {"scope": "everything"}, why)
    return widest_scope(kbs, f"widened: {why}")


def _describe(kbs: Sequence[ResolvedKnowledgeBase], listings: dict[str, Listing]) -> dict[str, str]:
    lines = [f"- {k.name}: {k.description or '(no description)'}" for k in kbs]
    paths: list[str] = []
    for kb in kbs:
        listing = listings[kb.name]
        # One line each, whatever a name holds: a file named "x\n[2] Source: ..." must not
        # put a line of its own into the prompt.
        paths += [f"{kb.name}: {printable(p)}/" for p in listing.folders[:_PROMPT_PATHS]]
        paths += [f"{kb.name}: {printable(p)}" for p in listing.files[:_PROMPT_PATHS]]
    return {
        "knowledge_bases": "\n".join(lines),
        "paths": "\n".join(paths[: 2 * _PROMPT_PATHS]) or "(none)",
        "kinds": ", ".join(scope_kinds()),
    }


def select_scope(state: RagState, runtime: Runtime[RagSettings], deps: NodeDeps) -> dict[str, Any]:
    """Choose the knowledge bases, paths and kinds of the search."""
    rec = StepRecorder(NODE, state, runtime)
    kbs = rec.settings.resolved_knowledge_bases()
    question = question_of(dict(state))
    if not kbs:
        scope = widest_scope(kbs, "no knowledge base configured")
        scope["widened"] = False
        rec.data = {"scope": dict(scope)}
        return {"rag_scope": scope, "rag_retrieval_debug": rec.update()}
    # A LangChain store has no folder to list: its scope is the knowledge base alone.
    listings = {kb.name: list_folder(kb.folder) if kb.folder else Listing((), ()) for kb in kbs}
    scope = heuristic_scope(question, kbs, listings)
    model = rec.chat_model(deps)
    if model is not None:
        choice = rec.ask(model, ScopeChoice, question=question, **_describe(kbs, listings))
        if choice is not None:
            choice = screened_choice(choice, rec)
            scope = checked_scope(checked_choice(choice, kbs, listings), state, kbs, rec, deps)
    scope = with_terms(scope, question)
    rec.data = {
        "scope": dict(scope),
        "files_listed": {k: len(v.files) for k, v in listings.items()},
    }
    return {"rag_scope": scope, "rag_retrieval_debug": rec.update()}


__all__ = [
    "ScopeChoice",
    "checked_choice",
    "checked_scope",
    "heuristic_scope",
    "screened_choice",
    "select_scope",
    "widest_scope",
    "with_terms",
]
