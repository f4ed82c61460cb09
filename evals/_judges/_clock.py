"""Clock times: "9 pm", "9pm", "9 p.m.", "9:00 PM" and "21:00" are one time of day, and
"12.30am" (British usage) is "12:30 am".

The number reader sees digits, so a time written another way than its source writes it
was an unstated number: "12.30 am" against "12.30am" (FRANK's CNN/DM summaries, people
marked both sentences correct), "9 pm" against "21:00", "9:00 pm" against "9 pm" ("00 pm
is in no source"); and a wrong time was let pass: "9 pm" where the source says "9 am"
(the same 9, and "pm" / "am" read as two ordinary words).

A clock time is hours and minutes with a colon ("21:00", "9:30", a log's "10:15:32,123"),
an hour with am or pm ("9 pm", "9pm", "9 p.m."), or hours and minutes with a colon or a
dot and am or pm ("12.30am"; a dot without am or pm is a decimal: "12.30" may be a price).
Each reads as the minutes after midnight it may mean (:func:`readings`): "9 pm" and
"21:00" are 1260, "9:30" without am or pm is 570 or 1290, since a twelve-hour clock leaves
the half of the day unsaid, but "09:30" and "10:15:32" are a 24-hour clock's (a zero before
the hour, or seconds); seconds written on both sides must agree. The context's "noon",
"midday" and "midnight" are times too; a claim's are not checked (they are words, and the
judge reads words).

A claim's time is *stated* when one of the context's times may be the same moment; it is
then taken out of the claim before its numbers are checked, so that its digits are not
checked again. One no time of the context may be is unstated, named as the claim writes
it ("1:24 PM is in no source (the sources write 1:34 PM)", not "24 PM") — unless the
context writes its hour outside a time ("9 in the morning", "between 2 and 4 pm", "21-19"
for a score written "21:19"): then the number check decides, as it does when the context
writes no time at all ("at 9 pm" against "at 9 in the evening" keeps its 9).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from .._text import numbers

_TIME = re.compile(
    r"(?<![\w.:])(?:(\d{1,2})(?:[:.]([0-5]\d))?\s?([ap])\.?\s?m\b\.?"
    r"|(\d{1,2}):([0-5]\d)(?::([0-5]\d)(?:[.,]\d{1,6})?)?(?![\w:]|[.,]\d))",
    re.IGNORECASE,
)
"""An hour with am / pm (and minutes after a colon or a dot), or hours and minutes after
a colon (seconds allowed, and their fraction: a log's "10:15:32,123")."""
_WORDS = {"noon": 720, "midday": 720, "midnight": 0}
_WORD_TIME = re.compile(rf"\b(?:{'|'.join(_WORDS)})\b", re.IGNORECASE)
DAY = 24 * 60


@dataclass(frozen=True, slots=True)
class ClockTime:
    """A time as the text writes it, where, its hour as written, the minutes after
    midnight it may mean and its seconds (``None``: not written)."""

    written: str
    start: int
    end: int
    hour: str
    readings: frozenset[int]
    second: int | None = None

    def may_be(self, other: ClockTime) -> bool:
        """Both may be the same moment: a minute in common, and the same seconds where
        both write them."""
        seconds = self.second is None or other.second is None or self.second == other.second
        return bool(self.readings & other.readings) and seconds


def readings(
    hour: int, minute: int, half: str | None, *, whole_day: bool = False
) -> frozenset[int]:
    """The minutes after midnight that ``hour``:``minute`` may mean; ``half`` is ``"a"`` or
    ``"p"`` for am / pm, ``None`` for a time written without: a twelve-hour reading too
    when the hour allows it ("9:30" is 09:30 or 21:30; "21:00" is 21:00 only), unless
    ``whole_day`` says the text counts the whole day ("09:30", "10:15:32": a zero before
    the hour, or seconds, are a 24-hour clock's). Empty for an hour no clock has ("13
    pm", "25:00")."""
    if half is not None:
        if not 1 <= hour <= 12:
            return frozenset()
        base = (hour % 12) * 60 + minute
        return frozenset({base + (12 * 60 if half.lower() == "p" else 0)})
    if hour > 24 or (hour == 24 and minute):
        return frozenset()
    at = (hour * 60 + minute) % DAY
    if whole_day or not 1 <= hour <= 12:
        return frozenset({at})
    return frozenset({at, (at + 12 * 60) % DAY})


def clock_times(text: str) -> list[ClockTime]:
    """The clock times ``text`` writes, in order (see the module docstring)."""
    out = []
    for match in _TIME.finditer(text):
        hour, minute, half, hour24, minute24, second = match.groups()
        if hour is not None:
            at = readings(int(hour), int(minute or 0), half)
        else:
            whole_day = hour24.startswith("0") or second is not None
            at = readings(int(hour24), int(minute24), None, whole_day=whole_day)
            hour = hour24
        if at:
            seconds = None if second is None else int(second)
            written = _written(match.group(0))
            out.append(ClockTime(written, match.start(), match.end(), str(int(hour)), at, seconds))
    return out


def _written(time: str) -> str:
    """The time without the sentence's full stop ("9 pm." ends a sentence; "9 p.m." keeps its
    own)."""
    time = time.strip()
    return time if re.search(r"\.m\.$", time, re.IGNORECASE) else time.rstrip(".")


@dataclass(frozen=True, slots=True)
class TimeCheck:
    """A claim's clock time, the context sentences that may state it (none: unstated) and
    the context's times as written, for the reason."""

    written: str
    found: tuple[int, ...]
    written_there: tuple[str, ...]

    def unstated(self, where: str) -> str:
        """The reason, for a person: "1:24 PM is in no source (the sources write 1:34 PM)"."""
        there = ", ".join(self.written_there[:-1])
        there = f"{there} or {self.written_there[-1]}" if there else self.written_there[-1]
        return f"{self.written} is in {where} (the sources write {there})"


@dataclass(frozen=True, slots=True)
class ContextTimes:
    """A context's clock times, per sentence; the first three as written, for a reason;
    and the numbers it writes outside its times."""

    per_sentence: tuple[tuple[ClockTime, ...], ...]
    written: tuple[str, ...]
    other_numbers: frozenset[str]


def context_times(sentences: Sequence[str]) -> ContextTimes:
    """The clock times of a context's ``sentences`` (``ContextText.clock_times`` keeps
    them), its "noon", "midday" and "midnight" with them."""
    per_sentence = []
    rest = []
    for sentence in sentences:
        times = clock_times(sentence)
        for word in _WORD_TIME.finditer(sentence):
            minutes = frozenset({_WORDS[word.group(0).lower()]})
            times.append(ClockTime(word.group(0), word.start(), word.end(), "", minutes))
        per_sentence.append(tuple(times))
        rest.append(_blanked(sentence, times))
    written = tuple(dict.fromkeys(t.written for ts in per_sentence for t in ts))[:3]
    return ContextTimes(tuple(per_sentence), written, frozenset(numbers(" ".join(rest))))


def _blanked(text: str, times: Sequence[ClockTime]) -> str:
    """``text`` with each of ``times`` (found in it) left out."""
    for t in sorted(times, key=lambda t: -t.start):
        text = text[: t.start] + " " + text[t.end :]
    return text


class _KeepsTimes(Protocol):
    """What ``checked_times`` reads of a context: ``ContextText.clock_times`` (named so
    here, since ``_context`` imports this module)."""

    @property
    def clock_times(self) -> ContextTimes: ...


def checked_times(text: str, ctx: _KeepsTimes) -> tuple[str, list[TimeCheck]]:
    """``text`` without the clock times the context's times decide, and their checks (see
    the module docstring). The context's times are read only for a text that has one."""
    times = clock_times(text)
    if not times:
        return text, []
    there = ctx.clock_times
    if not any(there.per_sentence):
        return text, []
    checks: list[TimeCheck] = []
    decided: list[ClockTime] = []
    for t in times:
        found = tuple(i for i, ts in enumerate(there.per_sentence) if any(t.may_be(o) for o in ts))
        if not found and t.hour in there.other_numbers:
            continue  # "9 in the morning", "between 2 and 4 pm": the number check decides
        checks.append(TimeCheck(t.written, found, there.written))
        decided.append(t)
    return _blanked(text, decided), checks
