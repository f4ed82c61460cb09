"""What both agents share: the chat model of a run, the names of its knowledge bases, and
the citation-extraction step that ends every run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel

from kbgraph.graphs import RagSettings, extract_citations, resolve_chat_model


def model_for(override: BaseChatModel | None, settings: RagSettings) -> BaseChatModel | None:
    """The model a graph was built with, else the one ``settings.chat_model`` names."""
    if override is not None:
        return override
    return resolve_chat_model(
        settings.chat_model, timeout=settings.llm_timeout_seconds, served_as="chat_model"
    )


def kb_names(settings: RagSettings, *, described: bool = False) -> str:
    """The knowledge bases for prompts: ``docs, notes`` (or ``docs (API docs), notes``)."""
    kbs = settings.resolved_knowledge_bases()
    if not kbs:
        return "(no knowledge base configured)"
    if described:
        return ", ".join(
            f"{kb.name} ({kb.description})" if kb.description else kb.name for kb in kbs
        )
    return ", ".join(kb.name for kb in kbs)


def citation_update(answer: str, citations: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The ``answer_*`` keys for ``answer`` cited against ``citations``."""
    report = extract_citations(answer, citations)
    return {
        "answer_citations": report.citations,
        "answer_unresolved": report.unresolved,
        "answer_uncited": report.uncited,
    }


__all__ = ["citation_update", "kb_names", "model_for"]
