"""What the ``repair`` policy keeps of a draft before it asks for anything new: the
draft's sentences, less those said again, an unfinished last one and those the answer
check found unsupported; a sentence whose claim another source supports (``wrong
citation``) or that cites nothing gets the number of the source that supports it. Each
dropped sentence is recorded with why (``answer_check["dropped"]``), so the person sees
it. A small model's correct first sentence ("The default leeway ... is 5 [1].") followed
by a loop was thrown away whole and replaced by quotes that lacked the fact."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from typing_extensions import TypedDict

from kbgraph._base.citations import find_markers
from kbgraph._base.text import words
from kbgraph.evals import AnswerCheck

_MARKER = re.compile(r"\s*\[\d+\]")
# A full stop ends a sentence only before a space or the line's end ("retry.max_attempts"
# is one word); the [N] markers after it stay with it.
_SENTENCE = re.compile(r"\S.*?(?:[.!?]+(?:\s*\[\d+\])*(?=\s|$)|$)", re.MULTILINE)
_ENDED = re.compile(r"[.!?:)\]`\"']\s*(?:\[\d+\]\s*)*$")
# A sentence that announces what follows ("Here's how to do it:"): shown last, it
# announces nothing (what followed was dropped), and the answer ends on a dangling colon.
_ANNOUNCES = re.compile(r":\s*(?:\[\d+\]\s*)*$")


class DroppedPart(TypedDict):
    """A sentence of the model's draft left out of the answer shown, and why."""

    text: str
    why: str


@dataclass
class Repaired:
    """The kept sentences joined (``""``: nothing kept), what was dropped, and the source
    numbers given to kept sentences that cited none or a source that does not support them
    (in order, once each)."""

    text: str
    dropped: list[DroppedPart] = field(default_factory=list)
    cited: list[int] = field(default_factory=list)


def sentences(text: str) -> list[str]:
    """The sentences of ``text`` with their ``[N]`` markers, in order."""
    return [m.group(0).strip() for m in _SENTENCE.finditer(text) if m.group(0).strip()]


def _key(sentence: str) -> str:
    return " ".join(words(_MARKER.sub("", sentence)))


def repair_draft(
    text: str, check: AnswerCheck, citations: Sequence[Mapping[str, Any]], *, cut: bool
) -> Repaired:
    """The draft with only what its sources support (see the module docstring); ``cut``:
    the model stopped at its token limit."""
    out = Repaired("")
    kept: list[str] = []
    drafted: list[str] = []  # each kept sentence as the draft wrote it
    seen: set[str] = set()
    parts = sentences(text)
    for i, sentence in enumerate(parts):
        key = _key(sentence)
        if not key:
            continue
        if key in seen:
            out.dropped.append({"text": sentence, "why": "said again"})
            continue
        seen.add(key)
        last = i == len(parts) - 1
        if last and (cut or not _ENDED.search(sentence)):
            out.dropped.append({"text": sentence, "why": "unfinished (cut off)"})
            continue
        fixed = _supported(sentence, check, citations)
        if isinstance(fixed, str):
            kept.append(fixed)
            drafted.append(sentence)
        else:
            out.dropped.append({"text": sentence, "why": fixed[0]})
    while kept and _ANNOUNCES.search(kept[-1]):
        kept.pop()
        out.dropped.append({"text": drafted.pop(), "why": "announces what was dropped"})
    out.text = " ".join(kept)
    for shown, written in zip(kept, drafted, strict=True):
        out.cited += [n for n in sorted(_numbers(shown) - _numbers(written)) if n not in out.cited]
    out.dropped = _repeats_share_why(out.dropped, kept)
    return out


def _repeats_share_why(dropped: list[DroppedPart], kept: Sequence[str]) -> list[DroppedPart]:
    """A repeat is "said again" only where its first copy is shown: a repeat of a sentence
    dropped for a reason is dropped for that reason (the person read "said again" of a
    sentence that appears nowhere in the answer)."""
    shown = {_key(s) for s in kept}
    first_why: dict[str, str] = {}
    for part in dropped:
        if part["why"] != "said again":
            first_why.setdefault(_key(part["text"]), part["why"])
    return [
        {"text": part["text"], "why": first_why.get(_key(part["text"]), part["why"])}
        if part["why"] == "said again" and _key(part["text"]) not in shown
        else part
        for part in dropped
    ]


def _supported(
    sentence: str, check: AnswerCheck, citations: Sequence[Mapping[str, Any]]
) -> str | tuple[str]:
    """The sentence (cited by its supporting source where it named another or none), or
    a 1-tuple saying why it is dropped."""
    key = _key(sentence)
    claims = [c for c in check["claims"] if _key(c["text"]) and _key(c["text"]) in key]
    source: int | None = None
    for claim in claims:
        if claim["supported"]:
            source = source or _number_of(claim.get("evidence"), citations)
        elif claim.get("cause") == "wrong_citation":
            source = _best_source(claim["text"], citations)
            sentence = _MARKER.sub("", sentence)
        else:
            reason = str(claim.get("reason") or "the sources do not support it")
            return (f"not supported: {reason}"[:200],)
    if source is not None and not _MARKER.search(sentence):
        sentence = _cited(sentence, source)
    return sentence


def _numbers(sentence: str) -> set[int]:
    return {n for marker in find_markers(sentence) for n in marker.numbers}


def _number_of(chunk_id: Any, citations: Sequence[Mapping[str, Any]]) -> int | None:
    for citation in citations:
        if chunk_id is not None and citation.get("chunk_id") == chunk_id:
            return int(citation["n"])
    return None


def _best_source(claim: str, citations: Sequence[Mapping[str, Any]]) -> int | None:
    """The source sharing the most words (of three letters or more) with ``claim``, as the
    answer check's ``evidence_of`` picks among the sources a claim was judged against."""
    wanted = set(words(claim, min_len=3))
    if not citations or not wanted:
        return None
    best = max(citations, key=lambda c: len(wanted & set(words(str(c.get("text")), min_len=3))))
    return int(best["n"])


def _cited(sentence: str, n: int) -> str:
    """``sentence`` with ``[n]`` before its final full stop."""
    body = sentence.rstrip()
    end = len(body.rstrip(".!?"))
    return f"{body[:end]} [{n}]{body[end:]}"


__all__ = ["DroppedPart", "Repaired", "repair_draft", "sentences"]
