"""Split an answer into self-contained claims, each with the sources it cites.

Offline and deterministic — the regex splitter of the offline judge, and the fallback of
an LLM judge's claim decomposition: sentences (and list items) become claims; citation
markers are stripped from the text and kept as numbers; a list item is prefixed with the
sentence that introduces it (``"Harbor retries: - 429"`` → ``"Harbor retries: 429"``) so
that it stands alone; headings, questions, fillers ("Hope this helps.") and refusals ("I
don't know") are not claims (but "Did you know that X?" claims X). Meta-framing is cut
("The article discusses how X." claims X; see ``kbgraph.evals._framing``). A hedge or refusal
clause beside a fact is cut out and the fact kept ("I am not sure, but Harbor makes 5
attempts." claims "Harbor makes 5 attempts."; see ``kbgraph.evals._hedges``). An answer with
nothing but refusals has no claims — faithfulness is then undetermined rather than 0 or 1.

Citations: a marker covers the uncited sentences of its paragraph or list item before it
(back to the previous marker), and ``"X [1], and Y [2]"`` is two claims, one per source.

Markers are found by ``kbgraph.graphs._citations.find_markers`` (one grammar for the agent and the
evaluators): ``[1]``, ``[1, 2]``, ``[1][3]``, ``[1-3]``; not inside code, not a Markdown link.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from kbgraph._base.citations import find_markers

from ._framing import is_frame_label, without_framing
from ._hedges import NON_CLAIM_PATTERNS, REFUSAL_PATTERNS, is_non_claim, is_refusal, without_hedges
from ._records import Claim
from ._text import content_words, numbers, split_blocks

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


def split_claims(answer: str) -> list[Claim]:
    """The claims of ``answer``; empty for a refusal or an answer without content."""
    claims: list[Claim] = []
    for sentence in _sentences(answer):
        text = sentence.text
        if is_non_claim(text):
            continue
        if text.endswith("?"):
            # A question asserts nothing, except one that wraps a statement.
            embedded = _EMBEDDED_CLAIM.match(text)
            if embedded is None:
                continue
            text = embedded.group("claim")
        kept = without_hedges(text)
        if kept is None:
            continue
        kept = without_framing(kept)
        if not content_words(kept) and not numbers(kept):
            # Punctuation, or only function words ("Yes.") — nothing to check.
            if claims and sentence.citations:
                claims[-1] = _with_citations(claims[-1], sentence.citations)
            continue
        claims.append(Claim(text=kept, citations=sentence.citations))
    return claims


def _sentences(answer: str) -> list[_Sentence]:
    """Sentences with markers stripped and list items made self-contained, each with the
    sources it cites (see :func:`_block_sentences`). The list items under a label that is
    not a claim ("Why:", "What to try:") are about the answer, not the documents: skipped."""
    text = _FENCE_LINE.sub("", answer.replace("\r\n", "\n"))
    out: list[_Sentence] = []
    intro: _Sentence | None = None
    skip_items = False
    for block in split_blocks(text, lines=True):
        if _HEADING.match(block[0]):
            intro, skip_items = None, False
            continue
        is_item = bool(_LIST_ITEM.match(block[0]))
        if is_item and skip_items:
            continue
        sentences = _block_sentences(block, is_item)
        if not sentences:
            continue
        if not is_item and sentences[-1].text.endswith(":"):
            # "Harbor retries these codes:" introduces the list items that follow.
            *sentences, intro = sentences
            skip_items = is_non_claim(intro.text)
            if is_frame_label(intro.text):
                # "Here is a summary of the article:" - the items stand on their own.
                intro = None
        elif not is_item:
            intro, skip_items = None, False
        if is_item and intro is not None and not skip_items:
            first = sentences[0]
            text = first.text if _stands_alone(first.text) else f"{intro.text} {first.text}"
            sentences[0] = _Sentence(text, first.citations or intro.citations)
        out.extend(sentences)
    return out


def _stands_alone(item: str) -> bool:
    """A list item that is a sentence of its own ("- The council rejected the plan.") does not
    need the sentence that introduces the list; a fragment ("- 408 and 429") does."""
    return item[:1].isupper() and item.endswith((".", "!", "?")) and len(item.split()) >= ITEM_WORDS


ITEM_WORDS = 4
"""A list item of at least this many words, capitalised and ending like a sentence, is one."""


def repeats(claims: Sequence[Claim]) -> dict[int, int]:
    """Claims that say again what an earlier claim said — the same content words, or all but
    one of at least ``REPEAT_WORDS`` — mapped to the first claim that said it."""
    seen: list[tuple[int, frozenset[str]]] = []
    out: dict[int, int] = {}
    for i, claim in enumerate(claims):
        words = frozenset(content_words(claim.text)) | frozenset(numbers(claim.text))
        earlier = next((j for j, other in seen if _same(words, other)), None)
        if earlier is not None:
            out[i] = earlier
        else:
            seen.append((i, words))
    return out


REPEAT_WORDS = 2
"""A claim of fewer content words and numbers than this repeats nothing ("Yes.")."""


def _same(a: frozenset[str], b: frozenset[str]) -> bool:
    if len(a) < REPEAT_WORDS or len(b) < REPEAT_WORDS:
        return False
    if a == b:
        return True
    small, large = sorted((a, b), key=len)
    return len(small) >= 5 and len(large - small) <= 1 and len(small - large) <= 1


def _block_sentences(block: list[str], is_item: bool) -> list[_Sentence]:
    """The sentences of one paragraph or list item. A marker covers the uncited sentences
    before it back to the previous marker, as a reader takes a citation at the end of a
    paragraph ("- A. B. [2]" cites [2] for A and B); a sentence that is only a marker
    gives its numbers to the sentence before; a sentence citing one source, then after a
    clause break another ("X [1], and Y [2]"), is two claims."""
    pieces: list[_Sentence] = []
    for index, raw in enumerate(block):
        for part in _split_at_markers(raw):
            cited = citation_numbers(part)
            body = _clean(_LIST_ITEM.sub("", part) if index == 0 and is_item else part)
            if body:
                pieces.append(_Sentence(body, cited))
            elif pieces and cited:
                pieces[-1] = _Sentence(pieces[-1].text, _merge(pieces[-1].citations, cited))
    for i in range(len(pieces) - 2, -1, -1):
        if not pieces[i].citations and pieces[i + 1].citations:
            pieces[i] = _Sentence(pieces[i].text, pieces[i + 1].citations)
    return pieces


_MARKER_CLAUSE_BREAK = re.compile(
    r"^\s*(?:[,;]\s*|\s+)(?:and|but|while|whereas|so|or|et|mais|und|aber|y|pero)?\s*",
    re.IGNORECASE,
)


def _split_at_markers(sentence: str) -> list[str]:
    """``"X [1], and Y [2]."`` → ``["X [1]", "Y [2]."]``: a split after a marker that a
    clause break (a comma or semicolon, or a conjunction) follows, when the rest cites a
    source of its own. Otherwise the sentence stays whole."""
    markers = find_markers(sentence)
    for marker, following in itertools.pairwise(markers):
        rest = sentence[marker.end : following.start]
        gap = _MARKER_CLAUSE_BREAK.match(rest)
        if gap is None or gap.end() == 0 or rest[: gap.end()].strip() == "":
            continue
        tail = rest[gap.end() :]
        if len(content_words(tail)) < 2:
            continue
        head, tail = sentence[: marker.end], sentence[marker.end + gap.end() :]
        return [head, *_split_at_markers(tail[0].upper() + tail[1:])]
    return [sentence]


def _clean(text: str) -> str:
    text = strip_markers(text)
    text = re.sub(r"(\*\*|__|`)", "", text)
    return text.strip()


def _merge(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(dict.fromkeys((*a, *b)))


def _with_citations(claim: Claim, more: tuple[int, ...]) -> Claim:
    return Claim(claim.text, _merge(claim.citations, more))


__all__ = [
    "ITEM_WORDS",
    "NON_CLAIM_PATTERNS",
    "REFUSAL_PATTERNS",
    "REPEAT_WORDS",
    "citation_numbers",
    "is_refusal",
    "repeats",
    "split_claims",
    "strip_markers",
]
