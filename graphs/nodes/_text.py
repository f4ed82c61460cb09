"""Word-level helpers the heuristic paths share: words, stop words, light stems, the
question of a state, and the turns before it.

The stop list is larger than the BM25 one (``kbgraph.retrieval.lexical``) on purpose: here it
separates what a question is *about* from how it is asked ("how do I", "can you explain"),
which BM25's idf does for the index but a term-coverage test cannot.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from typing import Any

import Stemmer
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from kbgraph.prompts import load_prompt

from ..turns import marker_of


def word_set(text: str) -> frozenset[str]:
    """The whitespace-separated words of ``text`` (keeps word lists readable in code)."""
    return frozenset(text.split())


_WORD = re.compile(r"\w+(?:['’]\w+)?", re.UNICODE)

STOP_WORDS: frozenset[str] = word_set(
    """
    a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing done down during each
    either else ever few for from further get gets got had has have having he her here hers
    herself him himself his how i if in into is it its itself just let me might mine more
    most much must my myself no nor not now of off on once only or other our ours ourselves
    out over own per please same shall she should so some such than that the their theirs
    them themselves then there these they this those through to too under until up upon us
    very was we were what when where which while who whom whose why will with within without
    would yes yet you your yours yourself yourselves i'm it's what's that's there's don't
    doesn't can't isn't how's let's tell explain describe show give find know want need says
    say said mean means meant anything something thing things way ways use using used
    """
)
"""English function words plus request verbs ("tell me", "explain") that carry no topic."""

_local = threading.local()


def words(text: str) -> list[str]:
    """Case-folded words (Unicode letters and digits; ``don't`` stays one word)."""
    return [w.replace("’", "'") for w in _WORD.findall(text.casefold())]


def _stemmer() -> Stemmer.Stemmer:
    # PyStemmer objects keep a cache and are not safe to share between threads.
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = _local.stemmer = Stemmer.Stemmer("english")
    return stemmer


def stems(terms: Sequence[str]) -> list[str]:
    """Snowball English stems, so that "policies" matches "policy"."""
    out: list[str] = _stemmer().stemWords(list(terms))
    return out


def content_terms(text: str) -> list[str]:
    """The topic words of ``text``: no stop words, no one-letter words, each once, in
    order of first appearance."""
    seen: dict[str, None] = {}
    for word in words(text):
        if word not in STOP_WORDS and (len(word) > 1 or word.isdigit()):
            seen.setdefault(word, None)
    return list(seen)


def term_stems(text: str) -> set[str]:
    return set(stems(content_terms(text)))


def message_text(message: BaseMessage) -> str:
    return message.text


def last_human_index(messages: Sequence[BaseMessage]) -> int | None:
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], HumanMessage):
            return i
    return None


def question_of(state: dict[str, Any]) -> str:
    """``rag_query`` when given, else the text of the last human message, else ``""``."""
    explicit = (state.get("rag_query") or "").strip()
    if explicit:
        return explicit
    messages = state.get("messages") or []
    index = last_human_index(messages)
    return message_text(messages[index]).strip() if index is not None else ""


def reply_text(message: AIMessage) -> str:
    """What a reply said, for a transcript: without the extractive answer's fixed header,
    and a not-found reply as one short line rather than its canned reasons and advice."""
    marker = marker_of(message)
    if marker is not None and marker.get("mode") == "not_grounded":
        return "(no answer: the documents did not cover this)"
    text = message_text(message).strip()
    header = load_prompt("agent_extractive_header").strip()
    return text.removeprefix(header).strip()


def previous_turns(messages: Sequence[BaseMessage], limit: int = 6) -> list[tuple[str, str]]:
    """(role, text) of up to ``limit`` human/AI messages before the last human one."""
    index = last_human_index(messages)
    before = messages[:index] if index is not None else messages
    turns: list[tuple[str, str]] = []
    for message in before:
        if isinstance(message, HumanMessage):
            turns.append(("user", message_text(message)))
        elif isinstance(message, AIMessage) and message_text(message).strip():
            turns.append(("assistant", reply_text(message)))
    return turns[-limit:]


def format_turns(turns: Sequence[tuple[str, str]], max_chars: int = 600) -> str:
    """A transcript for prompts, each turn cut to ``max_chars``."""
    if not turns:
        return "(no earlier turns)"
    lines = []
    for role, text in turns:
        flat = " ".join(text.split())
        lines.append(f"{role}: {flat[:max_chars]}{'…' if len(flat) > max_chars else ''}")
    return "\n".join(lines)


def coverage(question_terms: Sequence[str], text: str) -> tuple[float, list[str]]:
    """Share of the question's topic terms whose stem occurs in ``text``, and the terms
    that do not."""
    if not question_terms:
        return 1.0, []
    present = set(stems(words(text)))
    missing = [
        t for t, s in zip(question_terms, stems(question_terms), strict=True) if s not in present
    ]
    return 1 - len(missing) / len(question_terms), missing


__all__ = [
    "STOP_WORDS",
    "content_terms",
    "coverage",
    "format_turns",
    "last_human_index",
    "message_text",
    "previous_turns",
    "question_of",
    "reply_text",
    "stems",
    "term_stems",
    "word_set",
    "words",
]
