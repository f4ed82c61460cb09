"""Which of a chat model's rewrites of a question are worth a search, and which of its
other free-text proposals (a node's reason, a scope's list of kinds) can be taken.

A small model asked for a standalone question, a keyword query and a paraphrase may answer
with a timestamp, forty repetitions of one sentence, a topic of its own or another
language. Each rewrite is checked against the question and the conversation before it is
searched; one that fails a check is dropped, with the reason. The question itself (and its
standalone form) is searched whatever the model wrote.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence

from kbgraph._base.text import QUESTION_STOP_WORDS, stems, words

from ._text import content_terms

LENGTH_FACTOR = 3
LENGTH_SLACK = 12
"""A rewrite may have up to ``max(3 × the question's words, the question's words + 12)``
words: a standalone question adds a topic from the conversation, a paraphrase a few words,
never a page."""
REPEATS = 3
MIN_DISTINCT_SHARE = 0.5
MIN_WORDS_FOR_SHARE = 8
# Japanese mixes kanji and kana in one sentence: one script for this purpose.
_SAME_SCRIPT = {"HIRAGANA": "CJK", "KATAKANA": "CJK", "HALFWIDTH": "CJK"}


def rewrite_problem(
    rewrite: str, question: str, conversation: str = "", *, first: bool = True
) -> str | None:
    """Why ``rewrite`` must not be searched for ``question``, or ``None`` when it may be.
    ``first``: the first attempt, where the question and its keywords are searched (on a
    retry a few of its words alone are a new search)."""
    tokens = words(rewrite)
    if not tokens:
        return "empty"
    asked = words(question)
    limit = max(LENGTH_FACTOR * len(asked), len(asked) + LENGTH_SLACK)
    if len(tokens) > limit:
        return f"much longer than the question ({len(tokens)} words, at most {limit})"
    if is_repetitive(tokens):
        return "repetitive"
    own_script, its_script = dominant_script(question), dominant_script(rewrite)
    if own_script and its_script and own_script != its_script:
        return f"in another script ({its_script.lower()}, the question is {own_script.lower()})"
    topic = set(stems(content_terms(f"{question}\n{conversation}")))
    if topic and not topic & set(stems(content_terms(rewrite))):
        return "shares no content word with the question or the conversation"
    stray = stray_sentence(rewrite, topic)
    if stray:
        return f"a sentence of its own added ({stray!r})"
    own = set(stems(content_terms(question)))
    same_words = set(stems(tokens)) == set(stems(asked))  # deduplicated, said nowhere
    if first and not same_words and set(stems(content_terms(rewrite))) <= own:
        # One more list of the same words only reorders the fused ranking: SmolLM2's
        # "How many attempts does Harbor makes by default when a downstream provider
        # fails?" pushed the chunk with "the default of 5" out of the five sources.
        return "adds no content word to the question"
    return None


STRAY_SENTENCE_WORDS = 6
_SENTENCES = re.compile(r"(?<=[.!?])\s+")


def stray_sentence(rewrite: str, topic: set[str]) -> str | None:
    """A sentence of ``rewrite`` (of :data:`STRAY_SENTENCE_WORDS` words or more, when it has
    two or more) that shares no content word with the question or the conversation
    (``topic``: their stems), or ``None``. SmolLM2's paraphrases were the question and
    "This is a question that has been asked before, but no answer has been found yet.":
    searched, they moved the chunk with the answer out of the sources (the extractive
    fallback then lost "the default of 5" and the status-code table that the run without
    a model quoted). A query is one question; the question itself is searched anyway."""
    sentences = [p for p in _SENTENCES.split(rewrite.strip()) if p]
    if len(sentences) < 2 or not topic:
        return None
    for sentence in sentences:
        if len(words(sentence)) < STRAY_SENTENCE_WORDS:
            continue
        if not set(stems(content_terms(sentence))) & topic:
            return sentence[:80]
    return None


def is_repetitive(tokens: Sequence[str]) -> bool:
    """A content word, a pair or a triple of words said three times or more, or (in eight
    words or more) fewer than half of the words distinct."""
    counts: Counter[tuple[str, ...]] = Counter((w,) for w in tokens if w not in QUESTION_STOP_WORDS)
    for n in (2, 3):
        counts.update(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))
    if counts and max(counts.values()) >= REPEATS:
        return True
    few_distinct = len(set(tokens)) < MIN_DISTINCT_SHARE * len(tokens)
    return len(tokens) >= MIN_WORDS_FOR_SHARE and few_distinct


def dominant_script(text: str) -> str | None:
    """The Unicode script most letters of ``text`` belong to (``LATIN``, ``CYRILLIC``,
    ``CJK``, ``HIRAGANA`` …, the first word of each letter's Unicode name), or ``None``
    without letters."""
    scripts: Counter[str] = Counter()
    for char in text:
        if char.isalpha():
            script = unicodedata.name(char, "UNKNOWN").split(" ", 1)[0]
            scripts[_SAME_SCRIPT.get(script, script)] += 1
    return scripts.most_common(1)[0][0] if scripts else None


def screen_rewrites(
    rewrites: Sequence[str], question: str, conversation: str = "", *, first: bool = True
) -> tuple[list[str], dict[str, str]]:
    """The rewrites worth a search (in order) and the dropped ones with why."""
    kept: list[str] = []
    dropped: dict[str, str] = {}
    for rewrite in rewrites:
        problem = rewrite_problem(rewrite, question, conversation, first=first)
        if problem is None:
            kept.append(rewrite.strip())
        elif rewrite.strip():
            dropped[rewrite.strip()[:300]] = problem
    return kept, dropped


REASON_CHARS = 300
"""A chat model's reason (DecideRetrieve, SelectScope, GroundingCheck) is one short sentence
by its prompt; a small model may write two thousand characters of one sentence looping."""


def screen_reason(reason: str, limit: int = REASON_CHARS) -> tuple[str, str | None]:
    """A model's reason as it may be kept, and what was wrong with it (``None``: nothing).
    A long reason that repeats itself says nothing: it is dropped (``""``); any other long
    one is cut to ``limit`` characters."""
    text = " ".join(reason.split())
    if len(text) <= limit:
        return text, None
    if is_repetitive(words(text)):
        return "", f"its reason repeats itself ({len(text)} characters)"
    return text[: limit - 1] + "…", f"its reason was cut to {limit} characters (of {len(text)})"


def says_something(reason: str) -> bool:
    """Whether a model's reason holds a word (two letters or more): ``1.0.0``, ``...`` or
    ``{}`` from a small model is no reason, and printed as one it reads as if it meant
    something (``Grounded: yes (1.0.0; ...)``)."""
    return any(sum(c.isalpha() for c in word) >= 2 for word in reason.split())


def list_problem(items: Sequence[str], limit: int) -> str | None:
    """Why a proposed list (a scope's kinds or paths) is junk, or ``None``: more entries than
    there are to choose from (``limit``), or the same entries again and again."""
    folded = [item.strip().casefold() for item in items]
    distinct = len(set(folded))
    if len(folded) > limit or (len(folded) > 1 and is_repetitive(folded)):
        return f"{len(folded)} entries, {distinct} distinct"
    return None


__all__ = [
    "REASON_CHARS",
    "STRAY_SENTENCE_WORDS",
    "dominant_script",
    "is_repetitive",
    "list_problem",
    "rewrite_problem",
    "says_something",
    "screen_reason",
    "screen_rewrites",
    "stray_sentence",
]
