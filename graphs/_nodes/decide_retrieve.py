"""DecideRetrieve: is a search needed at all?

Heuristic: no for an empty question, small talk (greetings, thanks, goodbyes, "how are
you" — English plus the commonest French, German, Spanish and Italian forms), closings and
acknowledgements in any common phrasing ("ok got it, cheers", "great, that helps a lot",
"nevermind"; see :mod:`kbgraph.graphs._nodes._closings`, which asks the local embedding model
when its word list does not decide) and for
questions the conversation already answers (a request to repeat / rephrase / summarise the
previous answer, or the same question asked again after an answer that was grounded — the
reply's turn marker says so, see ``kbgraph.graphs._turns``; a question that got "I could not find
an answer", or a reply nobody marked, is searched again); yes otherwise, and always for an
explicit ``rag_query``. With a chat model the model decides, and any failure falls back to
the heuristic.

This node starts every run, so it also resets every ``rag_*`` output key: a parent agent
must not see the previous turn's context after a turn that skipped retrieval.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.runtime import Runtime
from pydantic import BaseModel, Field

from kbgraph._base.text import word_set, words

from .._settings import RagSettings
from .._state import RagScope, RagState
from .._turns import marker_of, reply_after
from ._base import END, NodeDeps, StepRecorder
from ._closings import ClosingDetector, default_detector
from ._probe import probe
from ._rewrite_guard import screen_reason
from ._text import format_turns, message_text, previous_turns, question_of, term_stems
from .rewrite_query import standalone

NODE = "decide_retrieve"


class RetrieveDecision(BaseModel):
    retrieve: bool = Field(description="true when the question needs a document search")
    reason: str = Field(default="", description="one short sentence")


# Words that make a message small talk, and words allowed around them ("thank you so much").
_SMALL_TALK_CORE = word_set(
    """
    hi hello hey hiya howdy yo greetings thanks thank thx ty cheers bye goodbye cya later welcome
    morning afternoon evening night ok okay cool great nice awesome perfect bonjour salut
    merci bonsoir hallo danke tschüss moin hola gracias adiós adios ciao grazie buongiorno
    """
)
_SMALL_TALK_FILLER = word_set(
    """
    you your yours so much very a lot all the for there everyone again good day today how
    are is it going doing what's whats up sup fine well i i'm am me just that was helpful
    help really see later soon have nice oh ah and too bien vielen mucho beaucoup buenos buenas dias
    días de rien nada
    """
)
_HOW_ARE_YOU = re.compile(r"\b(how are you|how's it going|what'?s up|wie geht'?s|ça va|que tal)\b")
_SMALL_TALK_MAX_WORDS = 8
_THANKS = word_set("thanks thank thx ty cheers merci danke gracias grazie")
_GOODBYES = word_set("bye goodbye cya tschüss adiós adios ciao later")
_GREETINGS = word_set(
    "hi hello hey hiya howdy yo greetings morning afternoon evening bonjour salut bonsoir hallo "
    "moin hola buongiorno buenos buenas"
)
SmallTalkKind = Literal["greeting", "thanks", "goodbye"]

# Requests about the previous answer itself, which the conversation holds already.
_ABOUT_LAST_ANSWER = re.compile(
    r"\b(?:(?:repeat|rephrase|reword|summari[sz]e|shorten|simplify|translate|reformulate)"
    r"\b.{0,30}\b(?:that|this|it|your|the (?:last |previous )?(?:answer|reply|response))"
    r"|say (?:that|it) again|what did you (?:just )?say|in (?:other|simpler|fewer) words"
    r"|tl;?dr)\b",
    re.IGNORECASE,
)


def is_small_talk(question: str) -> bool:
    ws = words(question)
    if not ws or len(ws) > _SMALL_TALK_MAX_WORDS:
        return False
    core = any(w in _SMALL_TALK_CORE for w in ws) or bool(_HOW_ARE_YOU.search(question.lower()))
    return core and all(w in _SMALL_TALK_CORE or w in _SMALL_TALK_FILLER for w in ws)


def is_small_talk_or_closing(question: str, closings: ClosingDetector | None = None) -> bool:
    """Small talk, or a closing / acknowledgement (``closings``: default the process-wide
    detector, with the local model when installed)."""
    return is_small_talk(question) or (closings or default_detector()).is_closing(question)


def small_talk_kind(question: str) -> SmallTalkKind:
    """Which kind of small talk or closing (``is_small_talk_or_closing`` decides whether it
    is any): a goodbye ("thanks, bye" included), a greeting, or else thanks (an
    acknowledgement such as "ok got it" is answered like thanks)."""
    ws = set(words(question))
    folded = question.casefold()
    if ws & _GOODBYES or "see you" in folded:
        return "goodbye"
    if ws & _THANKS:
        return "thanks"
    greeting = ws & _GREETINGS or _HOW_ARE_YOU.search(folded)
    return "greeting" if greeting else "thanks"


def answered_already(question: str, messages: Sequence[BaseMessage]) -> str | None:
    """Why the conversation already answers ``question``, or ``None``. A repeated question
    counts as answered only when the reply to it was marked grounded."""
    earlier = list(messages[:-1]) if messages and isinstance(messages[-1], HumanMessage) else []
    answers = [m for m in earlier if isinstance(m, AIMessage) and message_text(m).strip()]
    if not answers:
        return None
    if _ABOUT_LAST_ANSWER.search(question):
        return "the question is about the previous answer"
    asked = term_stems(question)
    if not asked:
        return None
    for i, message in enumerate(earlier):
        if not isinstance(message, HumanMessage) or term_stems(message_text(message)) != asked:
            continue
        reply = reply_after(earlier, i)
        marker = marker_of(reply) if reply is not None else None
        if marker is not None and marker.get("grounded"):
            return "the same question was asked and answered from the sources earlier"
    return None


def heuristic_decision(
    state: RagState, question: str, closings: ClosingDetector | None = None
) -> tuple[bool, str]:
    if not question:
        return False, "no question: the state has neither rag_query nor a human message"
    if (state.get("rag_query") or "").strip():
        return True, "an explicit rag_query asks for retrieval"
    if is_small_talk(question):
        return False, "small talk needs no documents"
    closing = (closings or default_detector()).verdict(question)
    if closing.closing:
        return False, f"a closing or acknowledgement needs no documents ({closing.reason})"
    answered = answered_already(question, state.get("messages") or [])
    if answered:
        return False, answered
    return True, "the question may be answered by the documents"


def _reset(should_retrieve: bool, reason: str, scope: RagScope) -> dict[str, Any]:
    reasons = [] if should_retrieve else [f"retrieval skipped: {reason}"]
    # A run that ends here clears the explicit query, as GroundingCheck does at the end of
    # a search: it was for this turn only.
    cleared = {} if should_retrieve else {"rag_query": None}
    return {
        **cleared,
        "rag_should_retrieve": should_retrieve,
        "rag_attempt": 0,
        "rag_scope": scope,
        "rag_queries": [],
        "rag_candidates": [],
        "rag_context": "",
        "rag_citations": [],
        "rag_grounded": False,
        "rag_grounding": {"grounded": False, "reasons": reasons, "guidance": []},
        "rag_next": "end",
        "rag_standalone": "",
        "rag_rewrites": [],
    }


def decide_retrieve(
    state: RagState, runtime: Runtime[RagSettings], deps: NodeDeps
) -> dict[str, Any]:
    """Decide whether to retrieve; reset the ``rag_*`` keys of the previous turn."""
    rec = StepRecorder(NODE, state, runtime)
    question = question_of(dict(state))
    should, reason = heuristic = heuristic_decision(state, question, deps.closings)
    model = deps.model_for(rec.settings)
    explicit = bool((state.get("rag_query") or "").strip())
    if model is not None and question and not explicit:
        kbs = rec.settings.resolved_knowledge_bases()
        proposal = rec.ask(
            model,
            RetrieveDecision,
            question=question,
            conversation=format_turns(previous_turns(state.get("messages") or [])),
            knowledge_bases=", ".join(k.name for k in kbs) or "(none configured)",
        )
        taken = None if proposal is None else _proposed(proposal, heuristic, rec)
        if taken is not None:
            should, reason = taken
            if not should:
                should, reason = _checked_skip(state, question, reason, heuristic, rec, deps)
    rec.data |= {
        "decision": "retrieve" if should else "skip",
        "reason": reason,
        "question": question,
    }
    scope: RagScope = {
        "knowledge_bases": [],
        "paths": [],
        "kinds": [],
        "widened": False,
        "reason": "",
    }
    return {**_reset(should, reason, scope), "rag_retrieval_debug": rec.update()}


def _proposed(
    proposal: RetrieveDecision, heuristic: tuple[bool, str], rec: StepRecorder
) -> tuple[bool, str] | None:
    """The model's decision and reason, unless its reason repeats itself: a looping model's
    decision is no evidence, so the heuristic decides (``None``; the overruling recorded).
    A long reason is cut."""
    reason, problem = screen_reason(proposal.reason)
    rec.data["proposal"] = {"retrieve": proposal.retrieve, "reason": reason}
    if problem and not reason:
        shown = {"retrieve": proposal.retrieve, "reason": proposal.reason[:120] + "…"}
        why = f"the chat model's decision is not taken: {problem}"
        rec.overrule(shown, {"heuristic": heuristic[1]}, {"retrieve": heuristic[0]}, why)
        return None
    return proposal.retrieve, reason or "chat model decision"


def _checked_skip(
    state: RagState,
    question: str,
    proposed: str,
    heuristic: tuple[bool, str],
    rec: StepRecorder,
    deps: NodeDeps,
) -> tuple[bool, str]:
    """A model's "no search needed" stands only on evidence: the heuristic skips too (small
    talk, a closing by the closings detector, a question the conversation answers already),
    or a lexical probe of the knowledge bases finds nothing on the question resolved
    against the conversation. Otherwise the search runs, and the overruling is recorded."""
    if not heuristic[0]:
        return False, f"{proposed} ({heuristic[1]})"
    messages = state.get("messages") or []
    asked = standalone(question, messages) or question
    found = probe(asked, rec.settings.resolved_knowledge_bases(), rec.settings, deps)
    rec.data["probe"] = found.evidence()
    if found.found_nothing and not found.query:
        return False, f"{proposed} (the message has no topic word to look up)"
    if found.found_nothing:
        where = ", ".join(found.read) or "no knowledge base"
        return False, f"{proposed} (a lexical probe of {where} found nothing)"
    against = (
        f"a lexical probe found {len(found.hits)} hit(s), best {found.hits[0].source}"
        if found.hits
        else f"the probe could not read {', '.join(found.unknown)}"
    )
    why = (
        f"the chat model proposed no search ({proposed!r}), but the message is no closing "
        f"and {against}"
    )
    rec.overrule({"retrieve": False, "reason": proposed}, found.evidence(), {"retrieve": True}, why)
    return True, f"retrieve: {why}"


def route_after_decide(state: RagState) -> Literal["select_scope", "__end__"]:
    return "select_scope" if state.get("rag_should_retrieve") else END


__all__ = [
    "RetrieveDecision",
    "SmallTalkKind",
    "answered_already",
    "decide_retrieve",
    "heuristic_decision",
    "is_small_talk",
    "is_small_talk_or_closing",
    "route_after_decide",
    "small_talk_kind",
]
