"""Clock times: "9 pm", "9pm", "9 p.m.", "9:00 PM" and "21:00" are one time of day, and
"12.30am" (British usage) is "12:30 am".

The number reader sees digits, so a time written another way than its source writes it
was an unstated number: "12.30 am" against "12.30am" (FRANK's CNN/DM summaries, people
marked both sentences correct), "9 pm" against "21:00", "9:00 pm" against "9 pm" ("00 pm
is in no source"); and a wrong time was let pass: "9 pm" where the source says "9 am"
(the same 9, and "pm" / "am" read as two ordinary words).

A clock time is hours and minutes with a colon ("21:00", "9:30", "1:30:00"), an hour with
am or pm ("9 pm", "9pm", "9 p.m."), or hours and minutes with a colon or a dot and am or
pm ("12.30am"; a dot without am or pm is a decimal: "12.30" may be a price). Each reads as
the minutes after midnight it may mean (:func:`readings`): "9 pm" and "21:00" are 1260,
"9:30" without am or pm is 570 or 1290, since a twelve-hour clock leaves the half of the
day unsaid. The context's "noon", "midday" and "midnight" are times too; a claim's are
not checked (they are words, and the judge reads words).

A claim's time is *stated* when one of the context's times may be the same minute; it is
then taken out of the claim before its numbers are checked, so that its digits are not
checked again. When the context writes times and none may be the claim's, the time is an
unstated fact, named as the claim writes it ("1:24 PM is in no source", not "24 PM");
when the context writes none, the time stays for the number check ("at 9 pm" against "at
9 in the evening" keeps its 9).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ._context import ContextText

_TIME = re.compile(
    r"(?<![\w.:])(?:(\d{1,2})(?:[:.]([0-5]\d))?\s?([ap])\.?\s?m\b\.?"
    r"|(\d{1,2}):([0-5]\d)(?::[0-5]\d)?(?![\w:]|\.\d))",
    re.IGNORECASE,
)
"""An hour with am / pm (and minutes after a colon or a dot), or hours and minutes after
a colon (seconds allowed)."""
_WORDS = {"noon": 720, "midday": 720, "midnight": 0}
_WORD_TIME = re.compile(rf"\b(?:{'|'.join(_WORDS)})\b", re.IGNORECASE)
DAY = 24 * 60


@dataclass(frozen=True, slots=True)
class ClockTime:
    """A time as the text writes it, where, and the minutes after midnight it may mean."""

    written: str
    start: int
    end: int
    readings: frozenset[int]


def readings(hour: int, minute: int, half: str | None) -> frozenset[int]:
    """The minutes after midnight that ``hour``:``minute`` may mean; ``half`` is ``"a"`` or
    ``"p"`` for am / pm, ``None`` for a time written without (a twelve-hour reading too
    when the hour allows it: "9:30" is 09:30 or 21:30; "21:00" is 21:00 only). Empty for
    an hour no clock has ("13 pm", "25:00")."""
    if half is not None:
        if not 1 <= hour <= 12:
            return frozenset()
        base = (hour % 12) * 60 + minute
        return frozenset({base + (12 * 60 if half.lower() == "p" else 0)})
    if hour > 24 or (hour == 24 and minute):
        return frozenset()
    at = (hour * 60 + minute) % DAY
    return frozenset({at, (at + 12 * 60) % DAY}) if 1 <= hour <= 12 else frozenset({at})


def clock_times(text: str) -> list[ClockTime]:
    """The clock times ``text`` writes, in order (see the module docstring)."""
    out = []
    for match in _TIME.finditer(text):
        hour, minute, half, hour24, minute24 = match.groups()
        if hour is not None:
            at = readings(int(hour), int(minute or 0), half)
        else:
            at = readings(int(hour24), int(minute24), None)
        if at:
            out.append(ClockTime(_written(match.group(0)), match.start(), match.end(), at))
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


@lru_cache(maxsize=64)
def _context_times(ctx: ContextText) -> tuple[tuple[frozenset[int], tuple[str, ...]], ...]:
    """Per sentence of the context, the minutes its times may mean and the times as
    written."""
    out = []
    for sentence in ctx.sentences:
        times = [(t.readings, t.written) for t in clock_times(sentence)]
        times += [(frozenset({_WORDS[w.lower()]}), w) for w in _WORD_TIME.findall(sentence)]
        found = frozenset(m for minutes, _ in times for m in minutes)
        out.append((found, tuple(written for _, written in times)))
    return tuple(out)


def checked_times(text: str, ctx: ContextText) -> tuple[str, list[TimeCheck]]:
    """``text`` without its clock times, and each time's check, when the context writes
    times; else ``text`` as it is and no check (see the module docstring)."""
    times = clock_times(text)
    if not times:
        return text, []
    there = _context_times(ctx)
    if not any(minutes for minutes, _ in there):
        return text, []
    written = tuple(dict.fromkeys(w for _, ws in there for w in ws))[:3]
    checks = [
        TimeCheck(t.written, tuple(i for i, (m, _) in enumerate(there) if m & t.readings), written)
        for t in times
    ]
    for t in reversed(times):
        text = text[: t.start] + " " + text[t.end :]
    return text, checks
