"""How passages are shown to a judge."""

from __future__ import annotations

from collections.abc import Sequence

from .._records import Passage


def join_passages(passages: Sequence[Passage]) -> str:
    """Passages as one context string, each under its number and source, so that an LLM
    judge can tell them apart and the offline judge sees plain text between headers."""
    blocks = []
    for p in passages:
        header = f"[{p.n}]" if p.source is None else f"[{p.n}] {p.source}"
        blocks.append(f"{header}\n{p.text.strip()}")
    return "\n\n".join(blocks)


__all__ = ["join_passages"]
