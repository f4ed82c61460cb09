"""Where a hard cut may fall without breaking what a reader sees as one character.

Python strings are code points, so a cut never splits a UTF-8 sequence; but a cut can still
separate a base letter from its combining accent, an emoji from its skin-tone modifier or
variation selector, the members of a ZWJ sequence, or the two halves of a flag. The rules
are the "extend" rules of Unicode grapheme clusters (UAX #29, GB9, GB9a, GB11, GB12/13),
reduced to what a chunk boundary needs.
"""

from __future__ import annotations

import unicodedata

_ZWJ = "\u200d"
_MARK_CATEGORIES = frozenset({"Mn", "Me", "Mc"})
# (first, last) code points that always attach to the character before them.
_EXTEND_RANGES: tuple[tuple[int, int], ...] = (
    (0x200C, 0x200D),  # ZWNJ, ZWJ
    (0xFE00, 0xFE0F),  # variation selectors
    (0x1F3FB, 0x1F3FF),  # emoji skin-tone modifiers
    (0xE0020, 0xE007F),  # tag characters (subdivision flags)
    (0xE0100, 0xE01EF),  # variation selectors supplement
    (0x1160, 0x11FF),  # Hangul jamo vowels and trailing consonants
    (0xD7B0, 0xD7FF),  # Hangul jamo extended-B
)


def extends_previous(ch: str) -> bool:
    """True when ``ch`` belongs to the cluster of the character before it (GB9, GB9a)."""
    code = ord(ch)
    if code < 0x300:
        return False
    if any(first <= code <= last for first, last in _EXTEND_RANGES):
        return True
    return unicodedata.category(ch) in _MARK_CATEGORIES


def _is_regional_indicator(ch: str) -> bool:
    return 0x1F1E6 <= ord(ch) <= 0x1F1FF


def is_safe_cut(text: str, pos: int) -> bool:
    """True when cutting ``text`` before ``text[pos]`` splits no grapheme cluster."""
    if pos <= 0 or pos >= len(text):
        return True
    if extends_previous(text[pos]) or text[pos - 1] == _ZWJ:
        return False
    if _is_regional_indicator(text[pos]) and _is_regional_indicator(text[pos - 1]):
        # Flags pair up from the left (GB12/13): a cut is safe after an even run.
        run = 0
        while pos - run - 1 >= 0 and _is_regional_indicator(text[pos - run - 1]):
            run += 1
        return run % 2 == 0
    return True


def last_safe_cut(text: str, lo: int, hi: int) -> int | None:
    """The largest safe cut in ``(lo, hi]``, or None when every position there is inside
    one cluster (a base character followed by hundreds of marks)."""
    for pos in range(hi, lo, -1):
        if is_safe_cut(text, pos):
            return pos
    return None


def first_safe_cut(text: str, lo: int, hi: int) -> int | None:
    """The smallest safe cut in ``[lo, hi)``, or None."""
    for pos in range(lo, hi):
        if is_safe_cut(text, pos):
            return pos
    return None
