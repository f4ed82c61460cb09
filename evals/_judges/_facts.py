"""Which checkable facts of a claim its cited sources state: the strict verdict layer of the
answer check and of the faithfulness metric.

A claim's *checkable facts* are its numbers (with their units), dates and quantities
(``_numbers``), its clock times (``_clock``: "9 pm" is "21:00"), its proper names (a
capitalised word that does not open the sentence, an all-capitals word, or a run of
capitalised words anywhere: "Tom Lee"), its codes (a token mixing letters and digits:
"E1234", "v2.3.1", "HTTP/2"), its misnamed identifiers (below) and its negations
(``_polarity``).
Each must be *stated* by the context:

- found there: the same number with no unit of another kind, or the same quantity in
  another unit ("30 s" for "30,000 ms", ``_units``), or the sum or difference of two numbers
  of the sentences the claim is aligned with (``_numbers.derivable``); the name's words
  together in one sentence (any case, any inflection, "PhDs" for "PhD"; a hyphenated word's
  lower-case parts are no name: "AI-supported" names "AI"); the code as a token; a number
  past twenty also in words ("twenty five");
- a snake_case name in code is unstated only when it misnames one the context writes: the
  context's name with parts added or left out (``retry_delay_ms`` where the sources define
  ``delay_ms``), or one part replaced in a sentence saying what the claim says
  (``create_order`` for ``place_order``, ``_identifiers``); a name the context never comes
  near is let pass, since a cited chunk of code often lacks the ``def`` line of the
  function it is the body of;
- "HTTP 403" is status 403 and "404 Not Found" says no more than 404 (``_http``);
- a name found is stated (the words beside a name vary too much for the subject check:
  on SummEdits' consistent summaries half the false flags were names); a number or a code
  is stated about the same subject: the clause of the sentence that holds it does not put
  another word in the place of one of the claim's ("The day shift has 8 people" for "The
  night shift has 8 people"; words within ``_subject.NEAR`` of the fact, in its clause:
  "The day shift starts at 9 pm; the night shift at 11 pm"), and it, or it
  with a neighbour, holds half of the claim clause's words that the context has
  (``_subject``);
- and not negated the other way: a clause of the sentences most about the claim clause
  denies what the claim affirms ("no card is ever charged" against "Sandbox keys charge the
  card"), or affirms what it denies, and none of them says it the claim's way;
- and not swapped: the sentences most about the clause write the word's opposite, or
  another member of its closed class (a colour, a season, a relative), and not the word
  (``_opposites``).

A quote (``ContextText.is_quote``) states its facts. The verdict this gives is in the
faithfulness score (a claim with an unstated fact counts 0, the answer is capped under 0.5;
see ``evaluators.faithfulness``); the judge's graded score is kept in the details.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from .._text import PASSAGE_MARKER, content_words, is_negation_cue, numbers
from ._clock import TimeCheck, checked_times
from ._context import META_WORDS, ContextText, claim_words, context_text
from ._evidence import clauses as claim_clauses
from ._http import as_status
from ._identifiers import SNAKE, misnamed, named_not_called
from ._names import counted_by_names, name_found, proper_names, without_stated_quarters
from ._numbers import YEAR, NumberSlot, derivable, number_slots
from ._opposites import Swap, antonym_swaps
from ._polarity import MIN_WORDS, Clause
from ._polarity import clauses as polarity_clauses
from ._subject import WORD, other_subject
from ._units import dimension_of, quantities

FactKind = Literal["number", "name", "code", "identifier", "negation", "antonym"]

_CURRENCIES = frozenset(content_words("dollar euro pound yen cent usd eur gbp"))
_CODE = re.compile(
    r"(?<![\w/.-])(?:\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:[.,]\d+)?)?(?:Z|[+-]\d\d:?\d\d)?"
    r"|[A-Za-z][\w/+.-]*\d[\w/+.-]*(?<![.-])|\d+(?:\.\d+){2,})(?![\w/])"
)
"""An ISO 8601 date and time ("2024-05-14T09:21:07Z", a JSON field's value: read as numbers
and names it was "T09", a name no source writes), a token mixing letters and digits
("E1234", "v2.3.1", "HTTP/2"), or a dotted version or address ("2.3.1", "10.0.0.1")."""


@dataclass(frozen=True, slots=True)
class UnstatedFact:
    """A checkable fact of a claim the context does not state: the token as the claim
    writes it, its kind, the reason for a person (it names the token) and the source
    sentence that says it of something else or says the opposite (``""`` when none)."""

    token: str
    kind: FactKind
    reason: str
    source: str = ""


def unstated_facts(
    claim: str, context: str | ContextText, *, cited: bool = True
) -> list[UnstatedFact]:
    """The checkable facts of ``claim`` that ``context`` does not state about the same
    subject (see the module docstring), in the claim's order; ``cited`` says the context is
    the sources the claim cites (the reasons say "no cited source")."""
    ctx = context if isinstance(context, ContextText) else context_text(context)
    if not ctx.sentences or ctx.is_quote(claim):
        return []
    where = "no cited source" if cited else "no source"
    out: list[UnstatedFact] = []
    for part in claim_clauses(claim):
        part = as_status(without_stated_quarters(part, ctx))
        about = _about_words(part, ctx)
        timed, times = checked_times(part, ctx)
        out += [f for f in (_time(t, part, about, ctx, where) for t in times) if f]
        part = timed  # a time's digits are no numbers of their own
        codes = _codes(part)
        plain = _CODE.sub(" code ", part)  # a code's digits are no number of their own
        out += [f for f in (_code(c, part, about, ctx, where) for c in codes) if f]
        out += _misnamed(part, ctx, where)
        counted = counted_by_names(part)
        slots = [s for s in _slots(plain) if s.number not in counted]
        out += [f for f in (_number(s, plain, about, ctx, where) for s in slots) if f]
        out += [f for f in (_name(n, part, ctx, where) for n in proper_names(plain)) if f]
    out += _negations(claim, ctx)
    named = {f.token for f in out if f.kind == "name"}
    swaps = [_swapped(swap, claim, ctx) for swap in antonym_swaps(claim, ctx)]
    out += [f for f in swaps if f.token not in named]  # "Brown" is a name, not a colour
    return list({(f.kind, f.token): f for f in out}.values())


def _slots(text: str) -> list[NumberSlot]:
    return number_slots(PASSAGE_MARKER.sub(" ", text))


def _about_words(part: str, ctx: ContextText) -> list[str]:
    """The clause's content words that the context has, numbers and words about the source
    left out: what a sentence stating one of its facts must be about."""
    return [
        w
        for w in claim_words(part, ctx)
        if w in ctx.words and not w[:1].isdigit() and w not in META_WORDS
    ]


# Numbers ---------------------------------------------------------------------------------


def _number(
    slot: NumberSlot, text: str, about: list[str], ctx: ContextText, where: str
) -> UnstatedFact | None:
    written = _as_written(slot, text)
    claimed = [q for q in quantities(text) if q.number == slot.number]
    candidates = ctx.number_index.get(slot.number) or _written_in(slot.number, ctx)
    found = [i for i in candidates if _states(slot, ctx.slots_of(i))]
    if claimed and not found:
        found = [
            i
            for i, sentence in enumerate(ctx.sentences)
            if any(q.same(r) for q in claimed for r in quantities(sentence))
        ]
    if not found:
        pool = [t for i in _aligned(about, ctx) for t in ctx.slots_of(i)]
        if derivable(slot, pool):
            return None
        return UnstatedFact(written, "number", f"{written} is in {where}")
    return _same_subject(written, "number", found, about, ctx, text)


def _time(
    time: TimeCheck, text: str, about: list[str], ctx: ContextText, where: str
) -> UnstatedFact | None:
    """A clock time (``_clock``) the context may state is checked for its subject as a
    number is; one it may not is unstated."""
    if time.found:
        return _same_subject(time.written, "number", list(time.found), about, ctx, text)
    return UnstatedFact(time.written, "number", time.unstated(where))


def _written_in(number: str, ctx: ContextText) -> list[int]:
    """The sentences that write ``number``'s digits where the number reader does not see
    them: a bracketed list ("[408, 429, 500]") reads as a citation marker; or spell it in
    words past twenty ("twenty five Euros" for "25 Euros", a SummEdits rewording)."""
    if not number.replace(".", "").isdigit():
        return []
    spelt = _spelt_number(number)
    if spelt is not None:
        return [i for i, sentence in enumerate(ctx.sentences) if spelt.search(sentence)]
    digits = re.compile(rf"(?<![\w.,]){re.escape(number)}(?![\w]|[.,]\d)")
    return [i for i, sentence in enumerate(ctx.sentences) if digits.search(sentence)]


_TENS = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_UNITS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine")


def _spelt_number(number: str) -> re.Pattern[str] | None:
    """How words write a number from 21 to 99 ("twenty five", "twenty-five", "thirty");
    ``None`` for any other (``_text.numbers`` reads the words up to twenty)."""
    if not number.isdigit() or not 21 <= int(number) <= 99:
        return None
    tens, unit = divmod(int(number), 10)
    words = _TENS[tens - 2] + (rf"[\s-]+{_UNITS[unit - 1]}" if unit else r"(?![\s-]+[a-z]+\b)")
    return re.compile(rf"\b{words}\b", re.IGNORECASE)


def _states(slot: NumberSlot, stated: list[NumberSlot]) -> bool:
    """A sentence whose numbers hold ``slot``'s: the same number in a compatible unit, or
    one its words spell that no slot reads ("a twelve-bar blues")."""
    same = [t for t in stated if t.number == slot.number]
    return not same or any(_compatible(slot, t) for t in same)


def _compatible(claimed: NumberSlot, stated: NumberSlot) -> bool:
    """The same number may be the same quantity: units alike, or one missing, or two
    ordinary words ("5 attempts", "5 tries": a rewording); never a year for a count, a
    currency for another thing, nor units ``_units`` converts (those compare by value)."""
    if claimed.may_equal(stated):
        return True
    units = (claimed.unit or "", stated.unit or "")
    kinds = [u.startswith("<") or u in _CURRENCIES or dimension_of(u) is not None for u in units]
    return not any(kinds) and YEAR not in units


def _aligned(about: list[str], ctx: ContextText) -> list[int]:
    alignment = ctx.align(about) if about else None
    if alignment is None:
        return []
    return sorted({*alignment.top, *alignment.pair_indices})


_NUMBER_TEXT = re.compile(
    r"[$€£¥]?\d+(?:[.,]\d+)*%?|\b(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|"
    r"eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty)\b",
    re.IGNORECASE,
)


def _as_written(slot: NumberSlot, text: str) -> str:
    """The number as the claim writes it, with its unit word when it has one ("8 people")."""
    for match in _NUMBER_TEXT.finditer(text):
        if numbers(match.group(0).strip("$€£¥%")) != {slot.number}:
            continue
        written = match.group(0)
        unit = slot.unit or "<"
        following = _FOLLOWING.match(text, match.end())
        if (
            not unit.startswith("<")
            and following
            and content_words(following.group(1))[:1] == [unit]
        ):
            written = f"{written} {following.group(1)}"
        return written
    return slot.number


_FOLLOWING = re.compile(r"[ -]([A-Za-z][\w-]*)")


# Codes and names ----------------------------------------------------------------------------


def _codes(text: str) -> list[str]:
    """Tokens mixing letters and digits that are not a number glued to its unit ("30s")."""
    found = [m.group(0) for m in _CODE.finditer(text)]
    return [c for c in found if not re.fullmatch(r"\d+(?:[.,]\d+)*[a-z]{1,3}", c, re.IGNORECASE)]


def _code_key(code: str) -> str:
    key = code.lower()
    return key[1:] if re.match(r"v\d", key) else key


def _code(
    code: str, text: str, about: list[str], ctx: ContextText, where: str
) -> UnstatedFact | None:
    key = re.escape(_code_key(code))
    pattern = re.compile(rf"(?<![\w/.-])v?{key}(?![\w/]|[.-]\w)", re.IGNORECASE)
    found = [i for i, s in enumerate(ctx.sentences) if pattern.search(s)]
    if not found:
        return UnstatedFact(code, "code", f"{code} is in {where}")
    return _same_subject(code, "code", found, about, ctx, text)


def _misnamed(text: str, ctx: ContextText, where: str) -> list[UnstatedFact]:
    words = {w for w in claim_words(SNAKE.sub(" ", text), ctx) if not w[:1].isdigit()}

    def beside(name: str) -> float:
        # The claim's other words, all of them: a line of code holds a word or two of any.
        if not named_not_called(name, ctx.body):
            return 0.0
        held = [
            len(words & ctx.sentence_words[i])
            for i, sentence in enumerate(ctx.sentences)
            if name in sentence.lower()
        ]
        return max(held, default=0) / len(words) if words else 0.0

    return [
        UnstatedFact(name, "identifier", f"{name} is in {where} (the sources write {near})")
        for name, near in misnamed(text, ctx.code_names, beside)
    ]


def _name(name: str, text: str, ctx: ContextText, where: str) -> UnstatedFact | None:
    # A name found is stated (``_names.name_found``): a name is what a sentence is about,
    # rarely an attribute moved to another subject, and the words beside it vary (on
    # SummEdits' consistent summaries, half the false flags were names "said of" another
    # word).
    return (
        None if name_found(name, text, ctx) else UnstatedFact(name, "name", f"{name} is in {where}")
    )


def _same_subject(
    token: str, kind: FactKind, found: list[int], about: list[str], ctx: ContextText, claim: str
) -> UnstatedFact | None:
    other = other_subject(token, found, about, ctx, claim)
    return None if other is None else UnstatedFact(token, kind, *other)


# Negation ---------------------------------------------------------------------------------


def _negations(claim: str, ctx: ContextText) -> list[UnstatedFact]:
    out = []
    for clause in polarity_clauses(claim):
        present = clause.words & ctx.words
        if len(present) < MIN_WORDS:
            continue
        flip = _flip(clause, frozenset(present), ctx)
        if flip is not None:
            out.append(flip)
    return out


def _flip(clause: Clause, present: frozenset[str], ctx: ContextText) -> UnstatedFact | None:
    """The other polarity in the sentences most about ``clause``, and the claim's in none."""
    counts: dict[int, int] = {}
    for word in present:
        for i in ctx.index.get(word, ()):
            counts[i] = counts.get(i, 0) + 1
    best = max(counts.values(), default=0)
    if best < max(MIN_WORDS, 0.8 * len(present)):
        return None
    negative = clause.denies(present)
    wanted = (clause.denied if negative else clause.words) & present
    numbered = numbers(clause.text)
    top = [
        (i, other)
        for i, n in counts.items()
        if n == best
        for other in ctx.clauses_of(i)
        if len(other.words & present) >= MIN_WORDS and numbers(other.text) <= numbered
    ]
    opposite = next(
        (
            (i, other)
            for i, other in top
            if other.denies(present) != negative
            and _about_it(other, present, negative, wanted, clause.denied)
        ),
        None,
    )
    if opposite is None:
        return None
    i, other = opposite
    said_of = other.words & present
    subject = next((w for w in content_words(clause.text) if w in present), None)
    if any(
        c.denies(present) == negative
        and said_of <= c.words
        and (subject is None or subject in c.words or subject not in ctx.sentence_words[i])
        for _, c in top
    ):
        # The source says it the claim's way too; not a clause of another subject of the
        # same sentence ("live keys charge the card, while sandbox keys ... no card is
        # ever charged" says nothing for "Sandbox keys charge the card").
        return None
    said = _raw_clause(ctx.sentences[i], other)
    if other.negative:
        reason = f"negation: the source says {said!r}; the claim says it without the negation"
    else:
        cue = next((t for t in clause.text.split() if is_negation_cue(t, "", "x")), "not")
        reason = f"negation: the claim says {cue!r} where the source says {said!r}"
    return UnstatedFact(said, "negation", reason, ctx.sentences[i])


def _about_it(
    other: Clause,
    present: frozenset[str],
    negative: bool,
    wanted: frozenset[str],
    denied: frozenset[str],
) -> bool:
    """A source clause of the other polarity says the claim clause's thing: mostly made of
    its words (source negative), or holding what the claim denies (claim negative)."""
    if negative:
        # Every word the claim denies is in the source ("is not shared between workers"
        # says nothing against "each worker keeps its own cache": nothing is shared there).
        return bool(wanted) and wanted == denied and wanted <= other.words
    return 2 * len(other.words & present) >= len(other.words)


def _swapped(swap: Swap, claim: str, ctx: ContextText) -> UnstatedFact:
    """An antonym swap or a class member swapped for another (``_opposites``) as the fact
    it leaves unstated, in the claim's words."""
    word = next((w for w in WORD.findall(claim) if content_words(w) == [swap.word]), swap.word)
    sentence = ctx.sentences[swap.sentence]
    said = next(
        (w for w in WORD.findall(sentence) if content_words(w) == [swap.opposite]), swap.opposite
    )
    what = f"another {swap.of_class}" if swap.of_class else "opposite"
    reason = f"{what}: the claim says {word!r} where the source says {said!r}: {sentence!r}"
    return UnstatedFact(word, "antonym", reason, sentence)


def _raw_clause(sentence: str, clause: Clause) -> str:
    """The clause as the sentence writes it: from its first word to its last."""
    tokens = clause.text.split()
    lower = sentence.lower()
    start = lower.find(tokens[0]) if tokens else -1
    while start >= 0:
        end = start
        for token in tokens:
            end = lower.find(token, end)
            if end < 0:
                break
            end += len(token)
        if end >= 0 and end - start <= 2 * len(clause.text) + 10:
            return sentence[start:end]
        start = lower.find(tokens[0], start + 1)
    return clause.text


__all__ = ["FactKind", "UnstatedFact", "proper_names", "unstated_facts"]
