"""Judges behind one interface (``Judge``): an LLM judge over any LangChain chat model, an
offline judge (lexical evidence plus a local embedding model), the plain overlap baseline,
and a scripted judge for tests. ``resolve_judge`` turns a ``--judge`` value into one."""

from __future__ import annotations

from langchain_core.embeddings import Embeddings

from ._facts import FactKind, unstated_facts
from .base import ClaimDecomposer, Judge, JudgeError
from .llm import LLMJudge
from .offline import OfflineJudge
from .overlap import OverlapJudge, content_overlap
from .scripted import ScriptedJudge


def resolve_judge(spec: str | Judge, *, embeddings: Embeddings | str = "local") -> Judge:
    """``offline`` → :class:`OfflineJudge` over ``embeddings`` (``offline+verifier``: with
    the trained verifier whose weights ``make verifier`` writes); ``overlap`` → the baseline;
    any other string is a chat model spec for :class:`LLMJudge`; a judge is returned as is."""
    if not isinstance(spec, str):
        return spec
    key = spec.strip().lower()
    if key == "offline":
        return OfflineJudge(embeddings)
    if key == "offline+verifier":
        from ._verifier import Verifier

        return OfflineJudge(embeddings, verifier=Verifier())
    if key == "overlap":
        return OverlapJudge()
    return LLMJudge(spec)


__all__ = [
    "ClaimDecomposer",
    "FactKind",
    "Judge",
    "JudgeError",
    "LLMJudge",
    "OfflineJudge",
    "OverlapJudge",
    "ScriptedJudge",
    "content_overlap",
    "resolve_judge",
    "unstated_facts",
]
