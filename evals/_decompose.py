"""The claims of an answer or a reference, as the chosen judge sees them.

A judge that decomposes claims itself (``ClaimDecomposer``: the LLM judge, with a
Ragas-style prompt) is asked first; when it has no such step, or its call fails, the
regex splitter of ``kbgraph.evals._claims`` gives the claims, and ``method`` says which was used
(and why the decomposition failed), so that a report can be read with that in mind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ._claims import split_claims
from ._judges.base import ClaimDecomposer, Judge
from ._records import Claim

Method = Literal["llm", "regex"]


@dataclass(frozen=True, slots=True)
class Decomposition:
    claims: list[Claim]
    method: Method
    note: str = ""

    def describe(self) -> str:
        return f"{self.method} ({self.note})" if self.note else self.method


def decompose(judge: Judge, text: str, question: str | None = None) -> Decomposition:
    """``text``'s claims: the judge's decomposition if it offers one, else (or when it
    fails) :func:`kbgraph.evals._claims.split_claims`."""
    if isinstance(judge, ClaimDecomposer):
        try:
            return Decomposition(judge.decompose_claims(text, question), "llm")
        except Exception as error:  # any judge failure: the regex splitter still works
            note = f"the judge's decomposition failed: {type(error).__name__}: {error}"
            return Decomposition(split_claims(text), "regex", note[:300])
    return Decomposition(split_claims(text), "regex")


__all__ = ["Decomposition", "Method", "decompose"]
