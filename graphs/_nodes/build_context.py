"""BuildContext: the numbered, citation-tagged context and its citations.

The best ``top_k`` candidates (those at or above ``score_threshold``) are grouped by file;
overlapping or adjacent chunks of one file become one source spanning their lines, their
texts joined without repeating the overlap (byte spans say how much overlaps; the text is
checked, never assumed). Sources are numbered by score and added while the context fits
``context_budget_tokens``; a source that does not fit is cut at a line boundary (the first
always, later ones when at least half of their lines fit) or left out.

Tokens are estimated as characters / 4, the usual rule of thumb for English text with
OpenAI tokenizers; it avoids a tokenizer dependency and errs on the generous side for code.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from langgraph.runtime import Runtime

from kbgraph.retrieval import ContextEntry, render_context

from .._settings import RagSettings
from .._state import Candidate, Citation, RagState
from ._base import NodeDeps, StepRecorder

NODE = "build_context"
CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


@dataclass(frozen=True)
class Block:
    """One numbered source: a chunk, or several merged chunks of one file."""

    kb: str
    source: str
    line_start: int | None
    line_end: int | None
    text: str
    score: float
    id: str
    section: str | None
    page: int | None
    byte_start: int | None = None
    byte_end: int | None = None
    ids: tuple[str, ...] = field(default=())


def block_of(c: Candidate) -> Block:
    return Block(
        c["kb"], c["source"], c["line_start"], c["line_end"], c["text"], c["score"], c["chunk_id"],
        c.get("section"), c.get("page"), c.get("byte_start"), c.get("byte_end"), (c["chunk_id"],),
    )  # fmt: skip


def overlap_length(a: str, b: str, limit: int) -> int:
    """Length of the longest suffix of ``a`` that is a prefix of ``b``, at most ``limit``
    (Knuth–Morris–Pratt failure function over ``b + sep + tail of a``)."""
    m = min(limit, len(a), len(b))
    if m <= 0:
        return 0
    s = b[:m] + "\0" + a[-m:]
    fail = [0] * len(s)
    for i in range(1, len(s)):
        k = fail[i - 1]
        while k and s[i] != s[k]:
            k = fail[k - 1]
        fail[i] = k + 1 if s[i] == s[k] else k
    return fail[-1]


def _byte_overlap_text(a: Block, overlap_bytes: int) -> str | None:
    """The exact text of the last ``overlap_bytes`` bytes of ``a`` when its text maps to its
    bytes one to one (UTF-8, no CRLF folded), else ``None``."""
    raw = a.text.encode("utf-8", "surrogatepass")
    if a.byte_start is None or a.byte_end is None or len(raw) != a.byte_end - a.byte_start:
        return None
    try:
        return raw[len(raw) - overlap_bytes :].decode("utf-8")
    except UnicodeDecodeError:
        return None


def join(a: Block, b: Block) -> str | None:
    """The text of ``a`` followed by ``b`` (``b`` starts no earlier than ``a``), or ``None``
    when they neither overlap nor touch, or their texts do not line up (or either's lines
    are unknown: nothing says two such chunks are neighbours)."""
    if a.line_start is None or a.line_end is None or b.line_start is None or b.line_end is None:
        return None
    if a.byte_start is not None and a.byte_end is not None and b.byte_start is not None:
        b_end = b.byte_end if b.byte_end is not None else b.byte_start
        if b_end <= a.byte_end:
            return a.text if b.text in a.text else None
        overlap = a.byte_end - b.byte_start
        if overlap >= 0:
            exact = _byte_overlap_text(a, overlap)
            k = len(exact) if exact is not None and b.text.startswith(exact) else None
            k = overlap_length(a.text, b.text, overlap) if k is None else k
            return a.text + b.text[k:] if k or overlap == 0 else None
        gap = -overlap
        if gap <= 2 and b.line_start == a.line_end + 1 and not a.text.endswith("\n"):
            return f"{a.text}\n{b.text}"  # the gap is the line break (LF or CRLF)
        return None
    if b.line_start <= a.line_end:
        if b.line_end <= a.line_end and b.text in a.text:
            return a.text
        k = overlap_length(a.text, b.text, len(b.text))
        return a.text + b.text[k:] if k else None
    return None


def merge(a: Block, b: Block) -> Block | None:
    text = join(a, b)
    if text is None:
        return None
    best = a if a.score >= b.score else b
    ends = [e for e in (a.byte_end, b.byte_end) if e is not None]
    return replace(
        a,
        line_end=max(a.line_end or 0, b.line_end or 0),
        text=text,
        score=max(a.score, b.score),
        id=best.id,
        section=best.section,
        byte_end=max(ends) if len(ends) == 2 else None,
        ids=a.ids + b.ids,
    )


def merge_candidates(candidates: Sequence[Candidate]) -> list[Block]:
    """Blocks by score, best first; chunks of one file (and page) merged where they meet."""
    groups: dict[tuple[str, str, int | None], list[Block]] = {}
    for c in candidates:
        groups.setdefault((c["kb"], c["source"], c.get("page")), []).append(block_of(c))
    blocks: list[Block] = []
    for group in groups.values():
        group.sort(key=lambda b: (b.byte_start if b.byte_start is not None else -1,
                                  b.line_start or 0))  # fmt: skip
        current = group[0]
        for block in group[1:]:
            merged = merge(current, block)
            if merged is None:
                blocks.append(current)
                current = block
            else:
                current = merged
        blocks.append(current)
    return sorted(blocks, key=lambda b: -b.score)


def truncate(block: Block, lines: int) -> Block | None:
    """The block cut to its first ``lines`` lines, when its text lines are file lines (or
    its lines are unknown)."""
    parts = block.text.split("\n")
    if lines >= len(parts):
        return block
    if lines < 1:
        return None
    if block.line_start is None or block.line_end is None:  # unknown lines stay unknown
        return replace(block, text="\n".join(parts[:lines]), byte_end=None)
    if len(parts) != block.line_end - block.line_start + 1:
        return None
    return replace(
        block, text="\n".join(parts[:lines]), line_end=block.line_start + lines - 1,
        byte_end=None,
    )  # fmt: skip


def _labels(blocks: Sequence[Block]) -> list[str]:
    """Sources, prefixed ``kb:`` where the same path occurs in several knowledge bases."""
    kbs_of: dict[str, set[str]] = {}
    for b in blocks:
        kbs_of.setdefault(b.source, set()).add(b.kb)
    return [f"{b.kb}:{b.source}" if len(kbs_of[b.source]) > 1 else b.source for b in blocks]


def render_blocks(blocks: Sequence[Block], *, start: int = 1) -> str:
    """The context of ``blocks``, numbered from ``start``."""
    return render_context(
        [
            ContextEntry(label, b.line_start, b.line_end, b.score, b.text, b.page, b.section)
            for label, b in zip(_labels(blocks), blocks, strict=True)
        ],
        start=start,
    )


def block_of_citation(c: Citation) -> Block:
    """The block a citation was made from (what ``render_blocks`` shows of it again)."""
    chunk_id = str(c.get("chunk_id") or "")
    return Block(
        str(c.get("kb") or ""), c["source"], c["line_start"], c["line_end"], c["text"],
        float(c.get("score") or 0.0), chunk_id, c.get("section"), c.get("page"),
        ids=(chunk_id,),
    )  # fmt: skip


def fit_budget(blocks: Sequence[Block], budget: int) -> tuple[list[Block], list[str]]:
    """The blocks that fit ``budget`` tokens (cut where allowed) and the ids left out."""
    kept: list[Block] = []
    dropped: list[str] = []
    for block in blocks:
        if estimate_tokens(render_blocks([*kept, block])) <= budget:
            kept.append(block)
            continue
        lines = len(block.text.split("\n"))
        low, high, best = 1, lines - 1, None
        while low <= high:
            mid = (low + high) // 2
            cut = truncate(block, mid)
            if cut is not None and estimate_tokens(render_blocks([*kept, cut])) <= budget:
                best, low = cut, mid + 1
            else:
                high = mid - 1
        kept_lines = 0 if best is None else len(best.text.split("\n"))
        if best is not None and (not kept or 2 * kept_lines >= lines):
            kept.append(best)
        else:
            dropped.extend(block.ids)
    return kept, dropped


def citations_of(blocks: Sequence[Block]) -> list[Citation]:
    return [
        {
            "n": n, "chunk_id": b.id, "source": b.source, "kb": b.kb, "line_start": b.line_start,
            "line_end": b.line_end, "score": round(b.score, 6), "text": b.text.strip("\n"),
            "section": b.section, "page": b.page,
        }
        for n, b in enumerate(blocks, 1)
    ]  # fmt: skip


def build_context(
    state: RagState, runtime: Runtime[RagSettings], deps: NodeDeps | None = None
) -> dict[str, Any]:
    """Number the best sources into ``rag_context`` and ``rag_citations``."""
    rec = StepRecorder(NODE, state, runtime)
    settings = rec.settings
    candidates = list(state.get("rag_candidates") or [])
    threshold = settings.search.score_threshold
    passing = [c for c in candidates if threshold is None or c["score"] >= threshold]
    chosen = passing[: settings.search.top_k]
    blocks, dropped = fit_budget(merge_candidates(chosen), settings.context_budget_tokens)
    context = render_blocks(blocks)
    rec.data = {
        "chosen": [c["chunk_id"] for c in chosen],
        "below_threshold": len(candidates) - len(passing),
        "sources": [list(b.ids) for b in blocks],
        "dropped_for_budget": dropped,
        "tokens": estimate_tokens(context),
        "budget": settings.context_budget_tokens,
    }
    return {
        "rag_context": context,
        "rag_citations": citations_of(blocks),
        "rag_retrieval_debug": rec.update(),
    }


__all__ = [
    "CHARS_PER_TOKEN",
    "Block",
    "block_of_citation",
    "build_context",
    "citations_of",
    "estimate_tokens",
    "fit_budget",
    "join",
    "merge_candidates",
    "overlap_length",
    "render_blocks",
    "truncate",
]
