"""The judge seam: what every judge (LLM, offline, scripted) answers.

Three questions, because the four metrics need three kinds of judgement:

- ``judge_claims``: is each claim supported by, not supported by, or contradicted by a
  context? (faithfulness, context recall)
- ``judge_passages``: is each retrieved passage relevant to the question (and, when
  given, to the reference answer)? (context precision)
- ``judge_answer``: does an answer address the question? (answer relevance)

A judge may also decompose answers into claims (``ClaimDecomposer``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from kbgraph._base.faces import shown_as
from kbgraph.errors import JudgeError

from .._records import Claim, Judgement, Relevance, TokenUsage


@runtime_checkable
@shown_as("kbgraph.evals")
class Judge(Protocol):
    """A judge. Implementations must be safe to call from several threads at once."""

    @property
    def name(self) -> str:
        """Shown in reports: ``offline``, ``llm:<model>``, ``scripted`` …"""
        ...

    @property
    def usage(self) -> TokenUsage:
        """Tokens spent so far (zero for judges that use no LLM)."""
        ...

    def judge_claims(
        self, claims: Sequence[str], context: str, *, question: str | None = None
    ) -> list[Judgement]:
        """One judgement per claim, in order, each against the whole ``context``."""
        ...

    def judge_passages(
        self, question: str, passages: Sequence[str], *, reference: str | None = None
    ) -> list[Relevance]:
        """One relevance decision per passage, in order."""
        ...

    def judge_answer(self, question: str, answer: str) -> Relevance:
        """Whether ``answer`` addresses ``question`` (not whether it is true)."""
        ...


@runtime_checkable
@shown_as("kbgraph.evals")
class ClaimDecomposer(Protocol):
    """A judge that can also break an answer into self-contained claims itself (the LLM
    judge); the others use the regex splitter of ``kbgraph.evals._claims``."""

    def decompose_claims(self, answer: str, question: str | None = None) -> list[Claim]:
        """The claims of ``answer``, each with the source numbers it cites."""
        ...


__all__ = ["ClaimDecomposer", "Judge", "JudgeError"]
