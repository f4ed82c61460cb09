"""Proper names of a claim, and whether a context states one.

A name is stated when the context holds its words together in one sentence (any case, any
inflection), or writes it another way people write names (each way below was a false
"unstated fact" on SummEdits' consistent summaries, development data):

- a plural the stemmer leaves whole, either way: "PhDs" for "PhD", "CNN" for "CNNs";
- an acronym spelt out, its initials those of consecutive words, hyphenated parts too,
  small words with or without theirs: "TLS" for "transport layer security", "YoY" for
  "year-over-year", "NASM" for "National Air and Space Museum";
- a nationality for its country, alone or in a name: "Chinese" for "China", "Canadian
  Senior Men's National Team" for "Canada's Senior Men's National team";
- a sentence's first word glued to a name: "Set HARBOR_RETRY_MAX_ATTEMPTS";
- and, found on WiCE (Wikipedia sentences against the pages they cite): a month cut
  beside a number, either way ("Nov 10, 2018" for "November 10"), and a name without its
  accents, either way ("Hygiene" for "Hygiène").

A quarter written as a code ("Q2", "2Q", "4Q") is stated by the quarter in words ("the
second quarter"): :func:`without_stated_quarters` takes those out of a claim before its
codes and numbers are checked, so "4Q 2020" reads no bare "4".
"""

from __future__ import annotations

import itertools
import re
from functools import lru_cache

from .._text import ACCENTED, MONTH_OF, MONTHS, content_words, normalise, unaccented
from ._context import ContextText
from ._subject import TOKENS, WORD

_CONNECTORS = frozenset({"of", "de", "van", "von", "der", "den", "da", "la", "le", "du", "del"})
_OPENS = re.compile(r"(?:^|[.!?:;]\s+|[\n(\"\u201c\-*\u2022]\s*)$")


def proper_names(text: str) -> list[str]:
    """The proper names of ``text``: runs of capitalised words (joined by "of", "van" …),
    less a sentence's capitalised first word when it stands alone ("Sandbox keys …") and
    the function words that open a run ("The Team plan" names "Team"); all-capitals words
    count wherever they stand ("API")."""
    text = normalise(text)
    runs: list[list[tuple[str, bool]]] = []
    current: list[tuple[str, bool]] = []
    gap = 0
    for match in WORD.finditer(text):
        word = _capitalised_part(match.group(0).removesuffix("'s"))
        joined = bool(current) and text[gap : match.start()].strip() in ("", "-")
        if word[:1].isupper():
            if current and not joined:
                runs.append(current)
                current = []
            current.append((word, bool(_OPENS.search(text[: match.start()]))))
        elif joined and word in _CONNECTORS:
            current.append((word, False))
        else:
            if current:
                runs.append(current)
            current = []
        gap = match.end()
    if current:
        runs.append(current)
    return [n for n in (_name_of(run) for run in runs) if n]


def _capitalised_part(word: str) -> str:
    """A hyphenated word's leading capitalised parts: "AI-supported" names "AI" (its
    lower-case parts are ordinary words the judge weighs), "Jean-Luc" stays whole."""
    parts = word.split("-")
    kept = list(itertools.takewhile(lambda p: p[:1].isupper(), parts))
    return "-".join(kept) if kept else word


def _name_of(run: list[tuple[str, bool]]) -> str | None:
    words = [w for w, _ in run]
    while words and words[0][:1].isupper() and not content_words(words[0]):
        words = words[1:]  # "The", "In", "By": a function word opening a run
    if not words or not any(content_words(w) for w in words):
        return None
    alone_at_start = len(words) == 1 and len(run) == 1 and run[0][1]
    if alone_at_start and not (len(words[0]) > 1 and words[0].isupper()):
        return None
    while words and words[-1].lower() in _CONNECTORS:
        words = words[:-1]
    return " ".join(words) or None


def name_found(name: str, text: str, ctx: ContextText) -> bool:
    """``ctx`` states ``name``, which ``text`` (the claim clause) writes (module docstring)."""
    stems = set(content_words(name))
    if not stems:
        return True
    if any(stems <= held for held in ctx.sentence_words):
        return True
    if ACCENTED.search(name) or ACCENTED.search(ctx.body):
        # "Hygiène" for "Hygiene" (WiCE): a name's accents are often left out.
        folded = set(content_words(unaccented(name)))
        if any(folded <= held for held in ctx.unaccented_words):
            return True
    if _PLURAL.fullmatch(name):
        # "PhDs" for "PhD", "APIs" for "API": a plural the stemmer leaves whole.
        return name_found(name[:-1], text, ctx)
    if _ACRONYM.fullmatch(name) and (_plural_in(name, ctx) or _spelt_out(name.lower(), ctx)):
        return True
    if _nationality_of(name, ctx) or _month_found(name, text, ctx):
        return True
    rest = _without_nationalities(name, ctx)
    if rest != name:
        # "Canadian Senior Men's National Team" for "Canada's Senior Men's National team".
        return name_found(rest, text, ctx) if rest else True
    first, _, rest_of_name = name.partition(" ")
    if rest_of_name and text.lstrip().startswith(first):
        # "Set HARBOR_RETRY_MAX_ATTEMPTS": a sentence's first word joined to a name.
        return name_found(rest_of_name, text[text.index(first) + len(first) :], ctx)
    return False


_ACRONYM = re.compile(r"[A-Z]{2,6}|[A-Z][a-z]?[A-Z][a-z]?[A-Z]?")
"""All capitals ("TLS"), or capitals with a lower-case letter between ("YoY", "PhD")."""
_PLURAL = re.compile(r"[A-Z][A-Za-z]*[A-Z][a-z]?s")
"""A plural of an acronym or a mixed-case name: "APIs", "PhDs", "CPUs"."""


def _plural_in(acronym: str, ctx: ContextText) -> bool:
    """The context writes the acronym's plural: "CNNs" states "CNN architectures"."""
    plural = re.compile(rf"\b{re.escape(acronym)}s\b")
    return any(plural.search(sentence) for sentence in ctx.sentences)


def _spelt_out(acronym: str, ctx: ContextText) -> bool:
    """Consecutive words of a sentence, hyphenated parts apart, whose initials spell
    ``acronym`` ("transport layer security" for TLS, "year-over-year" for YoY)."""
    for sentence in ctx.sentences:
        words = [p for w in TOKENS.findall(sentence.lower()) for p in w.split("-") if p]
        words = [w for w in words if w[0].isalpha()]
        if acronym in "".join(w[0] for w in words):
            return True
        # "NASM" for "National Air and Space Museum": the small words have no letter.
        if acronym in "".join(w[0] for w in words if w not in _UNLETTERED):
            return True
    return False


_UNLETTERED = frozenset({"and", "of", "the", "for", "in", "on", "at", "to"})


_NATIONALITY = re.compile(r"([A-Z][a-z]{3,}?)(?:ese|ian|an|ish|i)s?")
"""A nationality's stem: "Chin|ese", "Canad|ian", "Americ|an", "Brit|ish", "Iraq|i",
"Jordan|ians"."""


def _nationality_of(name: str, ctx: ContextText) -> bool:
    """``name`` is a nationality whose country the context names: "Chinese" for "China"
    (a news summary says "Chinese officials" where the article says "officials in China")."""
    match = _NATIONALITY.fullmatch(name)
    if match is None:
        return False
    country = re.compile(rf"\b{re.escape(match.group(1))}[a-z]{{0,3}}\b")
    return any(country.search(sentence) for sentence in ctx.sentences)


def _without_nationalities(name: str, ctx: ContextText) -> str:
    """``name`` without its nationality words whose country a sentence writes in their
    place: "Canadian Senior Men's National Team" for "Canada's Senior Men's National team";
    not "American Red Cross" for "British Red Cross sent aid to America", nor "Butuan"
    where the context writes "Butuan" (a word the context writes stands for itself)."""
    words = name.split()
    if len(words) < 2:
        return name
    kept = [
        w
        for w, following in zip(words, [*words[1:], ""], strict=True)
        if not (following and _country_before(w, following, ctx))
    ]
    return " ".join(kept)


def _country_before(word: str, following: str, ctx: ContextText) -> bool:
    """A sentence writes the country of the nationality ``word`` right before ``following``
    ("Canada's Senior"), and not ``word`` itself there."""
    match = _NATIONALITY.fullmatch(word)
    if match is None:
        return False
    country = re.compile(
        rf"\b({re.escape(match.group(1))}[a-z]{{0,3}})(?:'s)?\s+{re.escape(following)}\b",
        re.IGNORECASE,
    )
    return any(found.group(1) != word for s in ctx.sentences for found in country.finditer(s))


def _month_found(name: str, text: str, ctx: ContextText) -> bool:
    """``name`` is a month the context writes whole or cut, a cut one before or after a
    number: "Nov 10, 2018" states "November" (WiCE's web pages date that way), "November
    10" states "Nov. 10". A cut month away from a number is no month ("Jan" is a name too),
    in the claim (``text``) or in the context."""
    month = MONTH_OF.get(name.lower().rstrip("."))
    if month is None:
        return False
    said = _month_written(month)
    if name.lower() != MONTHS[month].lower() and not said.search(text):
        return False  # "written by Jan."
    return any(said.search(sentence) for sentence in ctx.sentences)


@lru_cache(maxsize=12)
def _month_written(month: int) -> re.Pattern[str]:
    whole = MONTHS[month]
    cut = f"(?:{whole[:3]}|Sept)" if month == 8 else whole[:3]
    return re.compile(rf"\b{whole}\b|\b{cut}\b\.?(?=\s*\d)|(?<=\d\s){cut}\b")


_ORDINALS = ("first", "second", "third", "fourth")
_QUARTER_CODE = re.compile(r"\b(?:Q([1-4])|([1-4])Q)\b")


def without_stated_quarters(text: str, ctx: ContextText) -> str:
    """``text`` with each quarter code the context states (as the code or in words: "Q2"
    for "the second quarter") replaced by a plain word, so that neither its code nor its
    digit is checked again; an unstated one stays, to be flagged."""

    def replace(match: re.Match[str]) -> str:
        n = int(match.group(1) or match.group(2))
        said = re.compile(
            rf"\b(?:Q{n}|{n}Q|{_ORDINALS[n - 1]}[\s-]+quarter|{n}(?:st|nd|rd|th)[\s-]+quarter)\b",
            re.IGNORECASE,
        )
        return "quarter" if any(said.search(s) for s in ctx.sentences) else match.group(0)

    return _QUARTER_CODE.sub(replace, text)


_COUNTED_LIST = re.compile(
    r"\b(two|three|four|five|[2-5])\s+[a-z]+(?:\s+[a-z]+)?,?\s+"
    r"((?:[A-Z][\w'-]*,\s+)*[A-Z][\w'-]*,?\s+and\s+[A-Z][\w'-]*)",
    re.IGNORECASE,
)
_COUNTS = {"two": "2", "three": "3", "four": "4", "five": "5"}


def counted_by_names(text: str) -> frozenset[str]:
    """The numbers of ``text`` that count the names listed right after them: "Two friends,
    Steve and Carly, ..." states its 2 by naming both (the names are checked as names; a
    SummEdits dialogue summary was flagged for "Two friends" the dialogue never says)."""
    out = set()
    for match in _COUNTED_LIST.finditer(text):
        names = re.split(r",\s+|,?\s+and\s+", match.group(2))
        if not all(n[:1].isupper() for n in names):
            continue
        number = _COUNTS.get(match.group(1).lower(), match.group(1))
        if int(number) == len(names):
            out.add(number)
    return frozenset(out)


__all__ = ["counted_by_names", "name_found", "proper_names", "without_stated_quarters"]
