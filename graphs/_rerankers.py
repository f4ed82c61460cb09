"""Rerankers users already have, adapted to the subgraph's :class:`Reranker` protocol
(``rerank(query, candidates) -> one score per candidate``) when the graph is built:

=============================================  ============================================
what ``build_rag_graph(reranker=...)`` takes   how it scores
=============================================  ============================================
an object with ``rerank(query, candidates)``   as is (kbgraph's own protocol)
a cross-encoder: ``.predict(pairs)``           ``predict([(query, text), ...])``, e.g. a
(sentence-transformers ``CrossEncoder``)       sentence-transformers ``CrossEncoder``
a LangChain ``BaseDocumentCompressor``         ``compress_documents(docs, query)``: its
                                               ``relevance_score`` metadata, else its order;
                                               documents it drops score 0
a callable ``(query, texts) -> scores``        called with the candidates' texts
``"cross_encoder:<folder>"``                   a local sentence-transformers cross-encoder
                                               loaded from the folder, offline
=============================================  ============================================

Anything else is a :class:`~kbgraph.errors.ConfigError` at build time, not a silent
fallback at run time. The Rerank node uses the reranker when ``rerank="cross_encoder"``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.documents import BaseDocumentCompressor, Document

from kbgraph.errors import ConfigError

from ._nodes import Reranker
from ._state import Candidate

SPEC_PREFIX = "cross_encoder:"
_ACCEPTED = (
    "an object with rerank(query, candidates), a cross-encoder with .predict(pairs) "
    "(sentence-transformers CrossEncoder), a LangChain BaseDocumentCompressor, a callable "
    "(query, texts) -> scores, or 'cross_encoder:<folder of a local cross-encoder>'"
)
ScoreFn = Callable[[str, list[str]], Sequence[float]]


@dataclass(frozen=True)
class CrossEncoderReranker:
    """Scores (query, chunk text) pairs with a cross-encoder's ``predict``."""

    model: Any

    def rerank(self, query: str, candidates: Sequence[Candidate]) -> list[float]:
        scores = self.model.predict([(query, c["text"]) for c in candidates])
        return [float(s) for s in scores]


@dataclass(frozen=True)
class CompressorReranker:
    """A LangChain document compressor (Cohere rerank, a cross-encoder reranker, an LLM
    filter ...). Each candidate goes in as a ``Document`` tagged with its position; what
    comes back is scored by its ``relevance_score`` metadata when every returned document
    has one, else by its order (1 for the first, down to above 0); dropped ones score 0."""

    compressor: BaseDocumentCompressor

    def rerank(self, query: str, candidates: Sequence[Candidate]) -> list[float]:
        docs = [
            Document(page_content=c["text"], metadata={"source": c["source"], "_kbgraph_i": i})
            for i, c in enumerate(candidates)
        ]
        kept = list(self.compressor.compress_documents(docs, query))
        relevance = [d.metadata.get("relevance_score") for d in kept]
        given = [float(r) for r in relevance if isinstance(r, int | float)]
        by_order = len(given) != len(kept)
        scores = [0.0] * len(candidates)
        for pos, doc in enumerate(kept):
            i = doc.metadata.get("_kbgraph_i")
            if not isinstance(i, int) or not 0 <= i < len(candidates):
                raise ValueError("the compressor returned a document it was not given")
            scores[i] = 1.0 - pos / (len(kept) + 1) if by_order else given[pos]
        return scores


@dataclass(frozen=True)
class CallableReranker:
    """A plain function ``(query, texts) -> scores``."""

    fn: ScoreFn

    def rerank(self, query: str, candidates: Sequence[Candidate]) -> list[float]:
        return [float(s) for s in self.fn(query, [c["text"] for c in candidates])]


def load_cross_encoder(folder: str | Path) -> CrossEncoderReranker:
    """A sentence-transformers cross-encoder saved in ``folder`` (``CrossEncoder.save``, or
    a Hugging Face model folder with a sequence-classification head), loaded offline."""
    path = Path(folder).expanduser().resolve()
    if not (path / "config.json").is_file():
        raise ConfigError(
            f"cross-encoder folder {path} has no config.json; pass the folder of a saved "
            "sentence-transformers CrossEncoder (CrossEncoder.save(folder)) or of a Hugging "
            "Face sequence-classification model"
        )
    try:
        from sentence_transformers import CrossEncoder
    except ImportError as exc:  # pragma: no cover - the local extra is missing
        raise ConfigError(
            "cross_encoder:<folder> needs sentence-transformers: pip install 'kbgraph[local]'"
        ) from exc
    try:
        return CrossEncoderReranker(CrossEncoder(str(path), local_files_only=True))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"could not load the cross-encoder in {path}: {exc}") from exc


def as_reranker(obj: object) -> Reranker | None:
    """``obj`` as a :class:`Reranker` (see the module docstring), ``None`` for ``None``;
    a :class:`ConfigError` saying what is accepted for anything else."""
    if obj is None:
        return None
    if isinstance(obj, str):
        if not obj.startswith(SPEC_PREFIX) or not obj[len(SPEC_PREFIX) :].strip():
            raise ConfigError(f"reranker spec {obj!r} is not valid; allowed: {_ACCEPTED}")
        return load_cross_encoder(obj[len(SPEC_PREFIX) :].strip())
    if isinstance(obj, type):
        raise ConfigError(f"reranker {obj.__name__} is a class; pass an instance of it")
    if isinstance(obj, BaseDocumentCompressor):
        return CompressorReranker(obj)
    if isinstance(obj, Reranker) and callable(obj.rerank):
        return obj
    if callable(getattr(obj, "predict", None)):
        return CrossEncoderReranker(obj)
    if callable(obj):
        return CallableReranker(_checked_score_fn(obj))
    raise ConfigError(f"a {type(obj).__name__} cannot rerank; allowed: {_ACCEPTED}")


def _checked_score_fn(fn: Callable[..., Any]) -> ScoreFn:
    """``fn`` when it can be called as ``fn(query, texts)``."""
    try:
        inspect.signature(fn).bind("query", [])
    except TypeError as exc:
        raise ConfigError(
            f"reranker function {getattr(fn, '__name__', fn)!r} cannot be called as "
            f"fn(query, texts) -> scores ({exc}); allowed: {_ACCEPTED}"
        ) from exc
    except ValueError:  # no signature to inspect (a builtin): trust it
        pass
    return fn


__all__ = [
    "CallableReranker",
    "CompressorReranker",
    "CrossEncoderReranker",
    "as_reranker",
    "load_cross_encoder",
]
