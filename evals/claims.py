"""Split an answer into self-contained claims, each with the sources it cites.

Offline and deterministic: sentences (and list items) become claims; citation markers are
stripped from the text and kept as numbers; a list item is prefixed with the sentence that
introduces it (``"Harbor retries: - 429"`` → ``"Harbor retries: 429"``) so that it stands
alone; headings, questions, fillers ("Hope this helps.") and refusals ("I don't know") are not
claims (but "Did you know that X?" claims X).
An answer whose every sentence is a refusal, or that opens with a refusal and cites
nothing, has no claims — faithfulness is then undetermined rather than 0 or 1.

Markers are found by ``graphs.citations.find_markers`` (one grammar for the agent and the
evaluators): ``[1]``, ``[1, 2]``, ``[1][3]``, ``[1-3]``; not inside code, not a Markdown link.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from graphs.citations import find_markers

from ._text import content_words, numbers, split_blocks
from .records import Claim

_LOCATION = re.compile(
    r"\(\s*(?![^()\s]*://)[^()\s]+(?::\d+(?:\s*[-–]\s*\d+)?|\.[A-Za-z0-9]{1,5})\s*\)"
)
"""A source location such as ``(docs/faq.txt:13-16)`` or ``(docs/glossary.html)`` that
extractive answers print after a marker: part of the citation, not of the claim."""
_FENCE_LINE = re.compile(r"^\s*(```|~~~).*$", re.MULTILINE)
_LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
_HEADING = re.compile(r"^\s*#{1,6}\s")
_EMBEDDED_CLAIM = re.compile(
    r"^(?:and |so |but |well,? )?(?:did|do) you know(?: that|,)? "
    r"(?!(?:who|what|when|where|why|how|which|if|whether)\b)(?P<claim>.+?)\s*\?$",
    re.IGNORECASE,
)

REFUSAL_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\bi (?:do not|don't|dont) know\b",
        r"\bi (?:could not|couldn't|cannot|can't|was unable to|am unable to) (?:find|answer|tell)",
        r"\b(?:no|not enough) (?:relevant )?information\b",
        r"\b(?:sources?|context|documents?|knowledge bases?) (?:do|does) not (?:say|mention|"
        r"contain|cover|answer|specify|state)",
        r"\bnot (?:mentioned|covered|specified|stated) in the (?:sources?|context|documents?)",
        r"\bthere is no mention\b",
        r"\bi(?:'m| am) not sure\b",
        r"\bunable to (?:answer|find|determine)\b",
        r"\bnothing relevant found\b",
        # The same in the other languages the agent may answer in.
        r"\bje ne (?:sais|trouve) pas\b",
        r"\bno (?:lo )?sé\b",
        r"\b(?:weiß ich nicht|ich weiß (?:es )?nicht)\b",
        r"(?:わかりません|分かりません|見つかりませんでした)",
    )
)
"""Sentences that decline to answer. They make no claim about the documents."""

NON_CLAIM_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"^(?:sure|certainly|of course|great question)[.!,]?$",
        r"\bhope (?:this|that) helps\b",
        r"\blet me know if\b",
        r"^(?:why|what to try|sources?|references?|answer)\s*:$",
        r"^extractive answer\b",
        r"\bquoted from the best-matching sources\b",
    )
)
"""Sentences about the answer itself (fillers, section labels, the extractive header)."""


@dataclass(frozen=True, slots=True)
class _Sentence:
    text: str
    citations: tuple[int, ...]


def citation_numbers(text: str) -> tuple[int, ...]:
    """Source numbers named by the markers in ``text``, in order, without repeats."""
    return tuple(dict.fromkeys(n for m in find_markers(text) for n in m.numbers))


def strip_markers(text: str) -> str:
    """``text`` without citation markers (and the source locations printed after them), and
    without the space a marker leaves before punctuation (``"5 attempts [1]."`` →
    ``"5 attempts."``)."""
    pieces, last = [], 0
    for marker in find_markers(text):
        pieces.append(text[last : marker.start])
        last = marker.end
    stripped = _LOCATION.sub("", "".join(pieces) + text[last:])
    stripped = re.sub(r"\s+([.,;:!?。、！？])", r"\1", stripped)
    return re.sub(r"\s{2,}", " ", stripped).strip()


def is_refusal(sentence: str) -> bool:
    return any(p.search(sentence) for p in REFUSAL_PATTERNS)


def split_claims(answer: str) -> list[Claim]:
    """The claims of ``answer``; empty for a refusal or an answer without content."""
    sentences = _sentences(answer)
    if not sentences:
        return []
    if is_refusal(sentences[0].text) and not any(s.citations for s in sentences):
        return []
    claims: list[Claim] = []
    for sentence in sentences:
        text = sentence.text
        if is_refusal(text) or any(p.search(text) for p in NON_CLAIM_PATTERNS):
            continue
        if text.endswith("?"):
            # A question asserts nothing, except one that wraps a statement.
            embedded = _EMBEDDED_CLAIM.match(text)
            if embedded is None:
                continue
            text = embedded.group("claim")
        if not content_words(text) and not numbers(text):
            # Punctuation, or only function words ("Yes.") — nothing to check.
            if claims and sentence.citations:
                claims[-1] = _with_citations(claims[-1], sentence.citations)
            continue
        claims.append(Claim(text=text, citations=sentence.citations))
    return claims


def _sentences(answer: str) -> list[_Sentence]:
    """Sentences with markers stripped and list items made self-contained; a sentence that
    is only a marker (``"… attempts. [1]"``) gives its numbers to the sentence before."""
    text = _FENCE_LINE.sub("", answer.replace("\r\n", "\n"))
    out: list[_Sentence] = []
    intro: _Sentence | None = None
    for block in split_blocks(text):
        if _HEADING.match(block[0]):
            intro = None
            continue
        is_item = bool(_LIST_ITEM.match(block[0]))
        for index, raw in enumerate(block):
            cited = citation_numbers(raw)
            body = _clean(_LIST_ITEM.sub("", raw) if index == 0 else raw)
            if not body:
                if out and cited:
                    out[-1] = _Sentence(out[-1].text, _merge(out[-1].citations, cited))
                continue
            if is_item and index == 0 and intro is not None:
                body = f"{intro.text} {body}"
                cited = cited or intro.citations
            if not is_item and index == len(block) - 1 and body.endswith(":"):
                # "Harbor retries these codes:" introduces the list items that follow.
                intro = _Sentence(body, cited)
                continue
            out.append(_Sentence(body, cited))
        if not is_item:
            intro = intro if block[-1].rstrip().endswith(":") else None
    return out


def _clean(text: str) -> str:
    text = strip_markers(text)
    text = re.sub(r"(\*\*|__|`)", "", text)
    return text.strip()


def _merge(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(dict.fromkeys((*a, *b)))


def _with_citations(claim: Claim, more: tuple[int, ...]) -> Claim:
    return Claim(claim.text, _merge(claim.citations, more))


__all__ = [
    "NON_CLAIM_PATTERNS",
    "REFUSAL_PATTERNS",
    "citation_numbers",
    "is_refusal",
    "split_claims",
    "strip_markers",
]
