"""Words, stems and stop words: the one text pipeline of BM25, the subgraph's heuristics and
the offline evaluators, so that a word means the same token and the same stem everywhere.

- :func:`words`: lowercased maximal runs of Unicode word characters (``\\w+``), in order,
  repeats kept; an apostrophe splits (``don't`` → ``don``, ``t``), as it does in BM25.
  ``min_len=2`` gives exactly the words of bm25s' ``(?u)\\b\\w\\w+\\b`` (Lù 2024,
  arXiv:2407.03618), so that BM25 scores and rankings stay comparable with it.
- :func:`stems` / :func:`stem`: Snowball English stems (PyStemmer, the stemmer bm25s uses),
  so that "policies" matches "policy".
- Stop lists, one per purpose, all lowercased words as :func:`words` gives them:
  :data:`BM25_STOP_WORDS` (Lucene's English set, bm25s' ``"en"``: short on purpose, because
  BM25's idf already discounts common words), :data:`FUNCTION_WORDS` (the much wider set of
  function words an overlap test must drop, having no idf), :data:`NEGATIONS` (kept apart:
  they change meaning) and :data:`QUESTION_STOP_WORDS` (function words plus how a question
  is asked, "tell me", "explain": no topic in a question, content in a document).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Sequence
from functools import lru_cache

import Stemmer

WORD_PATTERN = r"\w+"
_find_words = re.compile(WORD_PATTERN).findall
# Every ASCII byte that ``\w`` does not match becomes a space; bytes >= 0x80 stay as they are.
_ASCII_SEPARATORS = bytes(
    0x20 if i < 0x80 and not re.match(r"\w", chr(i)) else i for i in range(256)
)
# PyStemmer's Stemmer objects keep a cache and are not safe to share between threads.
_local = threading.local()


def words(text: str, *, min_len: int = 1) -> list[str]:
    """The lowercased ``\\w+`` runs of ``text`` at least ``min_len`` long, in order.

    About twice as fast as ``re.findall``: a run never spans a non-word character, so
    splitting first on ASCII non-word characters and whitespace changes nothing; the split
    runs in C (``bytes.translate``, ``str.split``) and only pieces holding non-ASCII
    characters, which may hide non-word ones such as "–" or "±", go through the regex."""
    raw = text.lower().encode("utf-8", "surrogatepass").translate(_ASCII_SEPARATORS)
    out: list[str] = []
    for piece in raw.decode("utf-8", "surrogatepass").split():
        if piece.isascii():
            out.append(piece)
        else:
            out.extend(_find_words(piece))
    if min_len > 1:
        return [w for w in out if len(w) >= min_len]
    return out


def word_set(text: str) -> frozenset[str]:
    """The :func:`words` of a readable word list (``"don't i'm ok"`` → don, t, i, m, ok)."""
    return frozenset(words(text))


def _stemmer() -> Stemmer.Stemmer:
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = _local.stemmer = Stemmer.Stemmer("english")
    return stemmer


def stems(terms: Sequence[str]) -> list[str]:
    """Snowball English stems of ``terms``, in order."""
    if not terms:
        return []
    out: list[str] = _stemmer().stemWords(list(terms))
    return out


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Snowball English stem of one word (cached: evaluators stem word by word)."""
    out: str = _stemmer().stemWord(word)
    return out


def stem_set(texts: Iterable[str]) -> set[str]:
    """The stems of every word of ``texts``."""
    return {s for text in texts for s in stems(words(text))}


BM25_STOP_WORDS: frozenset[str] = frozenset(
    {
        "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into",
        "is", "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then",
        "there", "these", "they", "this", "to", "was", "will", "with",
    }
)  # fmt: skip
"""Lucene's English stop set (``StopAnalyzer.ENGLISH_STOP_WORDS_SET``), bm25s' ``"en"``."""

NEGATIONS: frozenset[str] = word_set(
    """
    not no never nobody nothing neither nor cannot without nowhere don doesn didn isn aren
    wasn weren hasn haven hadn won wouldn shouldn couldn
    """
)
"""Negation cues, contracted ones as :func:`words` splits them (``don't`` → ``don``); the
``t`` left over is no cue, or "t and v1" would negate."""

FUNCTION_WORDS: frozenset[str] = BM25_STOP_WORDS.difference(NEGATIONS) | word_set(
    """
    about above after again against all also am any because been before being below between
    both can could did do does doing down during each few from further had has have having
    he her here hers herself him himself his how i its itself just me more most my myself
    once only other our ours ourselves out over own same she should so some than too under
    until up very we were what when where which while who whom why would you your yours
    yourself yourselves them themselves those through us may might must shall let lets get
    gets got yes yeah oh well like really think know thing things one ones much many s t ll
    ve re d m don doesn didn isn aren wasn weren hasn haven hadn won wouldn shouldn
    """
)
"""English function words (pronouns, auxiliaries, determiners, prepositions, conjunctions,
discourse words). Negation words are not in it (they are tracked separately), but the
first halves of contractions are, since "don't" splits into "don" and "t"."""

QUESTION_STOP_WORDS: frozenset[str] = word_set(
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
"""English function words plus words that say how a question is asked ("tell me",
"explain", "can you describe"): what the subgraph's heuristics drop to find a question's
topic. In a document those request words are content, so the evaluators keep them."""


__all__ = [
    "BM25_STOP_WORDS",
    "FUNCTION_WORDS",
    "NEGATIONS",
    "QUESTION_STOP_WORDS",
    "WORD_PATTERN",
    "stem",
    "stem_set",
    "stems",
    "word_set",
    "words",
]
