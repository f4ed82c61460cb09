"""Word-level helpers the heuristic paths share: a question's topic terms and their
coverage in a text, the question of a state, and the turns before it.

Words, stems and stop words are :mod:`kbgraph._base.text`'s, the ones BM25 and the
evaluators use. The stop list here is ``QUESTION_STOP_WORDS``, larger than BM25's on
purpose: it separates what a question is *about* from how it is asked ("how do I", "can you
explain"), which BM25's idf does for the index but a term-coverage test cannot.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from kbgraph._base.text import QUESTION_STOP_WORDS, stems, word_set, words
from kbgraph.prompts import load_prompt

from .._turns import marker_of

OTHER_STOP_WORDS = word_set(
    """
    le la les une des du de et est ce cette ces qui que quoi comment pourquoi quand où dans
    sur pour avec sans par au aux je tu il elle nous vous ils elles mon ma mes sa ses leur
    leurs ne pas qu est-ce quel quelle quels quelles être avoir faire peut dois
    der das dem den ein eine einer eines einem einen und ist sind wie wo wann warum wer
    welche welcher welches mit für von zu zum zur im auf aus bei nach über unter ich du er
    wir ihr es nicht kein keine kann können muss soll wird werden haben oder auch noch nur
    sich mich mir dich dir
    el los las unos unas del al para qué cómo como cuándo dónde donde cuál cuáles quién
    mi su sus lo les más muy está están puedo puede
    il gli della dei delle nel nella che chi cosa dove perché quale è sono non ci
    um uma são dos das nas em com sem onde porque qual quais eu você ela não
    """
)
"""Function and question words of French, German, Spanish, Italian and Portuguese that are
no English word a document might be about: a question asked in another language than the
documents listed them as "missing terms" (``la``, ``comment``, ``wie``)."""


def content_terms(text: str) -> list[str]:
    """The topic words of ``text``: no stop words (English, or the commonest of five other
    languages), no one-letter words, each once, in order of first appearance."""
    seen: dict[str, None] = {}
    for word in words(text):
        stop = word in QUESTION_STOP_WORDS or word in OTHER_STOP_WORDS
        if not stop and (len(word) > 1 or word.isdigit()):
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
    return without_extractive_header(message_text(message))


_HEADER = re.compile(
    re.escape(load_prompt("agent_extractive_header").strip()).replace(r"\{why\}", ".*?")
)


def without_extractive_header(text: str) -> str:
    """An extractive answer's text without its header (whatever it says of why)."""
    return _HEADER.sub("", text.strip(), count=1).strip()


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


# A word as written (case kept), and where a sentence starts: the text's start, or after
# ., ?, ! or : and the spaces and opening quotes or brackets that follow.
_WRITTEN = re.compile(r"\w+")
_SENTENCE_START = re.compile(r"(?:^|[.?!:]\s+)[\"'(\[«“‘]*$")
# A name's variants: "Postgres" and "PostgreSQL" (the shorter at least 5 letters and 60 %
# of the longer), not "QUIC" and "quickstart" nor "open" and "OpenTelemetry".
_MIN_PREFIX = 5
_MIN_PREFIX_SHARE = 0.6
_NOT_NAMES = QUESTION_STOP_WORDS | {"ok"}


def asked_names(text: str) -> list[str]:
    """The names ``text`` writes, in order, once each: a word with a capital after its
    first letter or with letters and digits mixed (``TLS``, ``GraphQL``, ``gRPC``, ``S3``),
    or a capitalised word that does not start a sentence (``Kafka``, ``Redis``). A
    question that names a thing is about that thing; common words are lowercase, and a
    sentence's first word is capitalised whatever it is."""
    seen: dict[str, None] = {}
    for match in _WRITTEN.finditer(text):
        word = match.group()
        if len(word) < 2 or word.isdigit() or word.lower() in _NOT_NAMES:
            continue
        inner_capital = any(c.isupper() for c in word[1:])
        mixed = any(c.isdigit() for c in word) and any(c.isalpha() for c in word)
        starts = bool(_SENTENCE_START.search(text[: match.start()]))
        if inner_capital or mixed or (word[0].isupper() and not starts):
            seen.setdefault(word, None)
    return list(seen)


def unmentioned(names: Sequence[str], text: str) -> list[str]:
    """The ``names`` that ``text`` never writes: not as a word of the same stem, nor as a
    variant that begins the other ("Postgres" is mentioned by "postgresql")."""
    present = words(text)
    stemmed = set(stems(present))
    long_words = {w for w in present if len(w) >= _MIN_PREFIX}

    def variant(a: str, b: str) -> bool:
        short, long = sorted((a, b), key=len)
        return long.startswith(short) and len(short) >= _MIN_PREFIX_SHARE * len(long)

    def mentioned(name: str, stem: str) -> bool:
        low = name.lower()
        if stem in stemmed:
            return True
        return len(low) >= _MIN_PREFIX and any(variant(low, w) for w in long_words)

    lowered = [n.lower() for n in names]
    return [n for n, s in zip(names, stems(lowered), strict=True) if not mentioned(n, s)]


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
    "OTHER_STOP_WORDS",
    "asked_names",
    "content_terms",
    "coverage",
    "format_turns",
    "last_human_index",
    "message_text",
    "previous_turns",
    "question_of",
    "reply_text",
    "term_stems",
    "unmentioned",
    "without_extractive_header",
]
