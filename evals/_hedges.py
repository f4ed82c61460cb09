"""Refusals, hedges and fillers: the parts of an answer that assert nothing about the
documents, and how to cut them out of a sentence without losing the fact beside them.

"I am not sure, but Harbor makes 5 attempts." asserts that Harbor makes 5 attempts: a
hedge in front of a fact does not take the fact back, and a judge that dropped the whole
sentence would let a made-up number through unchecked. So a sentence is cut into clauses
(at commas, semicolons, colons, dashes and before "but" / "however" / "although"); the
clauses that are refusals or hedges go, and the rest is the claim. Only a sentence that
is nothing but refusals, hedges and connectives is dropped whole.
"""

from __future__ import annotations

import re

REFUSAL_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\bi (?:do not|don't|dont) know\b",
        r"\bi (?:could not|couldn't|cannot|can't|was unable to|am unable to) (?:find|answer|tell|"
        r"provide|say|confirm|determine)",
        # "No information about the card is stored." is a fact, not a refusal: only the
        # speaker's own lack of information counts.
        r"\b(?:there is|there's|i have|i found|i could find|i can find|we have) (?:no|not enough)"
        r" (?:relevant |specific |further )?(?:information|details)\b",
        r"^\W*(?:no|not enough) (?:relevant |specific )?(?:information|details) "
        r"(?:found|available|given|provided)\b",
        r"\b(?:sources?|context|documents?|docs|knowledge bases?|texts?|passages?) "
        r"(?:do|does|did) not (?:say|mention|contain|cover|answer|specify|state|include|provide)",
        r"\b(?:sources?|context|documents?|docs|knowledge bases?|texts?|passages?) "
        r"(?:don't|doesn't|didn't) (?:say|mention|contain|cover|answer|specify|state|include)",
        r"\bnot (?:mentioned|covered|specified|stated|provided|given|available) in the "
        r"(?:sources?|context|documents?|docs|knowledge bases?)",
        r"\b(?:has|have) not been (?:provided|given|specified|mentioned|disclosed)\b",
        r"\bthere is no mention\b",
        r"\bi(?:'m| am) not (?:sure|certain|aware)\b",
        r"\bnot (?:sure|certain) (?:whether|if|about)\b",
        r"\bi (?:do not|don't) have (?:access|information|the (?:exact|specific|precise)|"
        r"specific|details|enough|real-time|any)",
        r"\bas an ai(?: language)? model\b",
        r"\bi(?:'m| am) (?:sorry|afraid)\b",
        r"\bunable to (?:answer|find|determine|provide|confirm)\b",
        r"\bnothing relevant found\b",
        r"\bhard to say\b",
        # The same in the other languages the agent may answer in.
        r"\bje ne (?:sais|trouve) pas\b",
        r"\bje ne suis pas (?:sûr|certain)",
        r"\bno (?:lo )?sé\b",
        r"\b(?:weiß ich nicht|ich weiß (?:es )?nicht|ich bin (?:mir )?nicht sicher)\b",
        r"(?:わかりません|分かりません|見つかりませんでした)",
    )
)
"""Clauses that decline to answer or hedge. They make no claim about the documents."""

NON_CLAIM_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"^(?:sure|certainly|of course|great question)[.!,]?$",
        r"\bhope (?:this|that) helps\b",
        r"\blet me know if\b",
        r"^(?:why|what to try|sources?|references?|answer|notes?)\s*:$",
        r"^extractive answer\b",
        r"\bquoted from the best-matching sources\b",
        # The agent's own advice when it found nothing (prompts/agent_*.txt).
        r"^try other words\b",
        r"^ask again with\b",
        r"^i stopped before finishing\b",
    )
)
"""Sentences about the answer itself (fillers, section labels, the agent's advice)."""

CONNECTIVES: frozenset[str] = frozenset({
    "but", "however", "although", "though", "yet", "still", "unfortunately", "sadly",
    "nevertheless", "nonetheless", "that said", "having said that", "and", "so", "also",
    "instead", "rather", "anyway", "well", "while", "regrettably", "alas",
    "mais", "cependant", "toutefois", "pero", "aber", "jedoch",
})  # fmt: skip
"""Words that join a hedge to a fact and mean nothing once the hedge is gone."""

_CLAUSE_BREAK = re.compile(
    r"(\s*[,;:]\s+|\s+[—–-]\s+|\s*\(\s*|\s*\)\s*|\s+(?=(?:but|however|although|though|yet)\b))",
    re.IGNORECASE,
)
_LEADING_CONNECTIVE = re.compile(
    r"^(?:(?:" + "|".join(sorted(map(re.escape, CONNECTIVES), key=len, reverse=True)) + r")"
    r"\b[,\s]*)+",
    re.IGNORECASE,
)


_OPENING_CONNECTIVE = re.compile(
    r"^(?:however|but|unfortunately|sadly|that said|nevertheless|nonetheless|regrettably)"
    r"\b,?\s+(?=\S)",
    re.IGNORECASE,
)


def is_refusal(text: str) -> bool:
    """``text`` contains a refusal or hedge somewhere."""
    return any(p.search(text) for p in REFUSAL_PATTERNS)


def is_non_claim(text: str) -> bool:
    return any(p.search(text) for p in NON_CLAIM_PATTERNS)


def without_hedges(sentence: str) -> str | None:
    """``sentence`` with its refusal and hedge clauses cut out; ``None`` when nothing that
    could be a claim is left (the sentence only declines, hedges or connects)."""
    if not is_refusal(sentence):
        # "However, Harbor makes 5 attempts." after a dropped refusal: the connective
        # pointed at the refusal and means nothing in the claim.
        return _capitalised(_OPENING_CONNECTIVE.sub("", sentence))
    pieces = _CLAUSE_BREAK.split(sentence)
    # split() with one group alternates text and separators: keep each kept clause with
    # the separator before it, so that "408, 429 and 503" keeps its comma.
    kept: list[str] = []
    for index in range(0, len(pieces), 2):
        clause = pieces[index]
        if not clause.strip() or is_refusal(clause):
            continue
        separator = pieces[index - 1] if index and kept else ""
        kept.append(separator + clause)
    remainder = _LEADING_CONNECTIVE.sub("", "".join(kept).strip()).strip(" ,;:—–-")
    if not _has_words(remainder):
        return None
    remainder = _capitalised(remainder)
    if sentence.rstrip().endswith((".", "!", "。")) and not remainder.endswith((".", "!", "。")):
        remainder += "."
    return remainder


def _capitalised(text: str) -> str:
    return text[0].upper() + text[1:] if text[:1].islower() else text


def _has_words(text: str) -> bool:
    words = re.findall(r"\w+", text.lower())
    return any(w not in CONNECTIVES for w in words)


__all__ = [
    "CONNECTIVES",
    "NON_CLAIM_PATTERNS",
    "REFUSAL_PATTERNS",
    "is_non_claim",
    "is_refusal",
    "without_hedges",
]
