"""Text helpers shared by claims, the offline judge and the baseline: sentences, content
words (stemmed), numbers and negation cues.

Words, stems and stop lists are :mod:`kbgraph._base.text`'s (the ones BM25 and the
subgraph use): content words are its words of two characters or more, Snowball-stemmed,
minus ``FUNCTION_WORDS`` (a wider list than BM25's: BM25's idf discounts common words,
plain overlap has no idf, so function words must go explicitly) and ``NEGATIONS``.
"""

from __future__ import annotations

import itertools
import re
import unicodedata

from kbgraph._base.sentences import sentence_starts
from kbgraph._base.text import FUNCTION_WORDS, NEGATIONS, stem, words

_NUMBER_WORDS = {
    word: str(value)
    for value, word in enumerate((
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
        "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
        "eighteen", "nineteen", "twenty",
    ))
}  # fmt: skip
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?![\w])|\b\d+(?=[a-zA-Z%])")
_SPACED_THOUSANDS = re.compile(
    r"(?<![\d.,])\d{1,3}(?:\s?,\s?\d{3})*\s?,\s?0\d{2}(?:\s?,\s?\d{3})*(?![\d.]|\s?,\s?\d)"
    r"|(?<=[$€£¥])\s?\d{1,3}(?:\s?,\s?\d{3})+(?![\d.]|\s?,\s?\d)"
)
"""``50, 000`` / ``1 , 250 , 000`` / ``£38 , 831``: a thousands separator that tokenising or
a summariser spaced out. Only a group starting with 0, or a currency sign, tells it from a
list ("408, 429, 500")."""
_SHORT_YEAR_RANGE = re.compile(
    r"(?<![\w.,:/-])((?:1[89]|20)(\d\d))(\s?[-\u2013/]\s?)(\d\d)(?!\d|[.,:/-]\d)"
)
"""``2018–19`` / ``1995-96``: a season, an academic or a fiscal year, its second year cut to
two digits (WiCE's "the 2018–19 academic year" for its source's "2018-2019")."""
_CONTRACTION = re.compile(r"(?i)\b(\w+) n't\b")  # tokenised "does n't" -> "doesn't"
_WHOLE_NEGATIONS = (
    (re.compile(r"(?i)\bwon't\b"), "will not"),
    (re.compile(r"(?i)\bcan't\b"), "can not"),
    (re.compile(r"(?i)\bshan't\b"), "shall not"),
)
_CONTRACTION_STUBS = frozenset(
    [
        "don",
        "doesn",
        "didn",
        "isn",
        "aren",
        "wasn",
        "weren",
        "hasn",
        "haven",
        "hadn",
        "won",
        "wouldn",
        "shouldn",
        "couldn",
    ]
)
"""What :func:`words` leaves of a contraction ("don't" -> "don", "t"). After
:func:`normalise` has spelt out "won't", a bare "won" is the verb (Chelsea won the final),
not a negation, and a content word."""
_SKIPPED = (FUNCTION_WORDS | NEGATIONS | frozenset(_NUMBER_WORDS)) - {"won"}


def normalise(text: str) -> str:
    """Curly apostrophes made straight, tokenised contractions ("does n't") joined, "won't"
    / "can't" spelt out, a tokenised thousands separator ("50 , 000") closed up, and a
    year range's cut second year written whole ("2018–19" as "2018–2019"): so that words,
    negations and numbers read the same in every source."""
    if "\u2019" in text or "\u2018" in text:
        text = text.replace("\u2019", "'").replace("\u2018", "'")
    if "n't" in text:
        text = _CONTRACTION.sub(r"\1n't", text)
        for pattern, spelt in _WHOLE_NEGATIONS:
            text = pattern.sub(spelt, text)
    if "," in text:
        text = _SPACED_THOUSANDS.sub(lambda m: re.sub(r"\s", "", m.group(0)), text)
    return _SHORT_YEAR_RANGE.sub(_whole_years, text)


def _whole_years(match: re.Match[str]) -> str:
    """The next year written whole: only the year after the first, so that a month
    ("2011-12" reads as a season either way) or a pair of numbers is left as written."""
    first, tail, between, second = match.groups()
    if int(second) != (int(tail) + 1) % 100:
        return match.group(0)
    return f"{first}{between}{int(first) + 1}"


ACCENTED = re.compile("[\u00c0-\u024f]")
"""A Latin letter with a mark ("è", "ü", "ñ"; also "æ", "ø"); curly quotes are not."""


def unaccented(text: str) -> str:
    """``text`` with its letters' marks left out: "Hygiène" as "Hygiene"."""
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)  # fmt: skip
MONTH_OF = (
    {m.lower(): i for i, m in enumerate(MONTHS)}
    | {m[:3].lower(): i for i, m in enumerate(MONTHS)}
    | {"sept": 8}
)
"""A month's index (0 for January) by its name or abbreviation, lower case."""


def content_words(text: str) -> list[str]:
    """Stemmed content words of ``text`` in order (repeats kept). An identifier such as
    ``max_attempts`` also gives its parts (``max``, ``attempts``), so that prose about a
    setting matches the setting's name. Number words (``five``) are left to
    :func:`numbers`, which maps them to digits."""
    out: list[str] = []
    for word in words(normalise(text), min_len=2):
        if word in _SKIPPED:
            continue
        out.append(stem(word))
        if "_" in word:
            out.extend(
                stem(part)
                for part in word.split("_")
                if len(part) > 1 and part not in FUNCTION_WORDS
            )
    return out


def numbers(text: str) -> set[str]:
    """Numbers in ``text``, normalised: thousands separators dropped (``2,500`` = ``2500``,
    and a tokenised ``2 , 500`` too), a two-digit integer's leading zero (``08`` = ``8``),
    number words mapped to digits. A citation marker or passage header (``[1]``) is no
    number of the text."""
    text = PASSAGE_MARKER.sub(" ", normalise(text))
    found = {m.group(0).replace(",", "") for m in _NUMBER.finditer(text)}
    found |= {_NUMBER_WORDS[w] for w in words(text, min_len=2) if w in _NUMBER_WORDS}
    return {_plain(n.rstrip(".")) for n in found if n}


def _plain(number: str) -> str:
    """A two-digit integer without its leading zero: "June 08" states "June 8", "05" is
    "5"; longer ones keep theirs ("007", "umask 022", a zip code "02139")."""
    return number[1:] if len(number) == 2 and number[0] == "0" and number.isdigit() else number


PASSAGE_MARKER = re.compile(r"\[\d+(?:\s*[,-]\s*\d+)*\]")
"""A citation marker or passage header (``[1]``, ``[2, 3]``): no number of the text."""

NEGATION_CUES: frozenset[str] = NEGATIONS - _CONTRACTION_STUBS
"""Words that negate their clause; a contraction ("doesn't", "n't") is a cue as a whole."""

_NOT_NEGATING = re.compile(
    r"\b(?:not\s+(?:only|just|least|to\s+mention|merely|simply)|no\s+(?:doubt|matter|longer\s+"
    r"than)|never\s+mind"
    r"|(?:told|tells|tell|asked|asks|urged|urges|warned|warns|ordered|orders|advised|advises|"
    r"begged|instructed|reminded)\s+(?:\w+\s+){0,2}not\s+to)\b",
    re.IGNORECASE,
)
"""Cues that negate nothing: "not only X but Y" says X; "the judge told him not to swear"
reports a request, not that he did not."""
_IMPLICIT_NEGATION = re.compile(
    r"\b(?:(?:has|have|had|is|are|was|were)\s+yet\s+to|(?:failed|fails|fail|refused|refuses|"
    r"declined|declines|unable)\s+to|incorrectly|improperly|wrongly|(?:an?\s+)?mistakes?)\b",
    re.IGNORECASE,
)
"""Phrases that deny what follows as "not" does: "the contracts have yet to be signed" =
"have not been signed"; "incorrectly set", "improperly followed", "a mistake during the
checklist" deny as "not correctly", "not properly" do (a WikiEval answer saying so of a
checklist its source says "was not properly followed" was flagged as a negation dropped)."""


def is_negation_cue(token: str, previous: str, following: str) -> bool:
    """``token`` (lower-cased, a contraction whole) negates its clause. A bare "No" or "No,"
    opening a sentence answers a question; "No 1" / "No. 5" is a rank."""
    if token.endswith("n't"):
        return True
    if token not in NEGATION_CUES:
        return False
    if token == "no":
        if following[:1].isdigit() or following == ".":
            return False
        if previous in {"", ".", "!", "?"} and following in {"", ",", ".", "!", "?", ";"}:
            return False
    return True


def negating_spans(text: str) -> str:
    """``text`` with the phrases that look like a negation but are none ("not only", "no
    doubt", "told him not to") blanked out, and those that negate without a cue ("has yet
    to", "failed to") written as "not"."""
    return _IMPLICIT_NEGATION.sub(" not ", _NOT_NEGATING.sub(" ", text))


_BLOCK_START = re.compile(r"^\s*(?:[-*+•]\s|\d+[.)]\s|\||#|```|~~~|>)")


def _blocks(text: str) -> list[list[str]]:
    """The lines of each paragraph; list items, table rows, headings, quotes and every line
    of a fenced code block are blocks of their own (Markdown's block structure, roughly)."""
    blocks: list[list[str]] = []
    current: list[str] = []
    in_fence = False
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        stripped = line.strip()
        fence = stripped.startswith(("```", "~~~"))
        if not stripped or fence or in_fence or _BLOCK_START.match(line) or _is_line_block(current):
            if current:
                blocks.append(current)
            current = []
        if fence:
            in_fence = not in_fence
        if stripped:
            current.append(stripped)
    if current:
        blocks.append(current)
    return blocks


_CONNECTORS = frozenset(
    [
        "to",
        "and",
        "or",
        "of",
        "in",
        "for",
        "with",
        "but",
        "which",
        "that",
        "from",
        "by",
        "on",
        "at",
        "as",
        "than",
        "who",
        "whose",
        "where",
        "when",
        "while",
        "nor",
        "into",
        "onto",
        "over",
        "under",
        "about",
        "after",
        "before",
        "because",
        "if",
        "unless",
        "until",
    ]
)
_OPEN_END = re.compile(r"[,;(\[{/&+=\-–—]$")


def _wrapped(previous: str, following: str) -> bool:
    """``following`` continues the sentence of ``previous`` across a hard line wrap: the
    line ends open (a comma, a hyphen, a function word) or the next starts with a word
    that joins ("than", "and", "which")."""
    if _OPEN_END.search(previous):
        return True
    last = words(previous[-30:])
    first = words(following[:30])
    if last and last[-1] in FUNCTION_WORDS and not previous.endswith((".", "!", "?", ":")):
        return True
    return bool(first) and following[:1].islower() and first[0] in _CONNECTORS


def _line_groups(lines: list[str]) -> list[str]:
    """Lines joined where a sentence wraps, split where one ends without punctuation."""
    groups = [lines[0]]
    for previous, line in itertools.pairwise(lines):
        if _wrapped(previous, line):
            groups[-1] = f"{groups[-1]} {line}"
        else:
            groups.append(line)
    return groups


def _is_line_block(current: list[str]) -> bool:
    """Table rows, headings and quotes end at the end of their line."""
    return bool(current) and current[0][:1] in "|#>"


_GLUED_END = re.compile(r"(?<=[^\W\d_A-Z]{2}[.!?])(?=[A-Z][^\W\d_A-Z]+\s)")
"""A full stop after a lower-case word and before a capitalised word, without a space."""


def split_blocks(text: str, *, glued: bool = False, lines: bool = False) -> list[list[str]]:
    """The sentences of ``text`` grouped by block (paragraph, list item, table row …);
    hard-wrapped lines of one paragraph are joined. A sentence ends at ``.!?…`` and
    whitespace, or at CJK ``。！？``, whatever the next letter's case: lower-cased,
    tokenised text ("the vote was 5-2 . the mayor left .") has sentences too. Abbreviations,
    initials (``U.S.``, ``e.g.``), decimals (``1.6 s``) and dotted names (``harbor.yaml``)
    do not end one (the chunker's rules, ``kbgraph.retrieval._chunking``).

    ``glued=True`` also ends a sentence where a full stop joins two without a space
    ("funds.In the"), as text scraped from web pages often does; only for sources, not
    answers, where ``pathlib.Path`` is a name.

    ``lines=True`` also ends a sentence at a line break that no punctuation marks, unless the
    line wraps a sentence (it ends on a comma or a function word, or the next one starts with
    "than", "and" …): a summary written one sentence a line has one claim a line."""
    out: list[list[str]] = []
    for block_lines in _blocks(text):
        groups = _line_groups(block_lines) if lines else [" ".join(block_lines)]
        pieces = [piece for group in groups for piece in _sentence_pieces(group)]
        if glued:
            pieces = [part for piece in pieces for part in _GLUED_END.split(piece)]
        sentences = [piece for piece in pieces if piece]
        if sentences:
            out.append(sentences)
    return out


def _sentence_pieces(block: str) -> list[str]:
    cuts = [0, *sentence_starts(block), len(block)]
    return [block[start:end].strip() for start, end in itertools.pairwise(cuts)]


def split_sentences(text: str, *, glued: bool = False) -> list[str]:
    """Every sentence of :func:`split_blocks`, in order."""
    return [sentence for block in split_blocks(text, glued=glued) for sentence in block]


__all__ = [
    "NEGATION_CUES",
    "PASSAGE_MARKER",
    "content_words",
    "is_negation_cue",
    "negating_spans",
    "normalise",
    "numbers",
    "split_blocks",
    "split_sentences",
]
