"""Specs to LangChain ``Embeddings`` objects.

The OpenAI family is built on ``_openai``'s subclasses, which match every vector to its
input by the response's ``index``. Every remote client is built with ``max_retries=0``
(``BatchEmbedder`` retries, with backoff that honours Retry-After, and isolates bad inputs;
retries inside the client would multiply with ours) and
``check_embedding_ctx_length=False`` (otherwise langchain-openai tokenises with tiktoken,
which downloads its encodings at run time; ``BatchEmbedder`` caps input length instead)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from pydantic import SecretStr

from kbgraph.errors import ConfigError

from .._integrations import init_integration
from ._spec import (
    DEFAULT_FAKE_DIMS,
    PACKAGED_MODEL,
    EmbeddingSpec,
    is_embeddings,
    parse_spec,
    split_precision,
)

if TYPE_CHECKING:  # imported where an object is built: a BM25 search never loads them
    from langchain_core.embeddings import Embeddings

DEFAULT_TIMEOUT = 30.0  # seconds per remote request; a timed-out request is retried twice
# OpenAI-compatible servers (Ollama, vLLM, LM Studio) mostly ignore the key, but the OpenAI
# client refuses to start without one.
_DUMMY_KEY = "not-needed"


def _require_env(name: str, provider: str) -> str:
    value = os.environ.get(name, "").strip()
    if not value:
        raise ConfigError(
            f"{provider} embeddings need the environment variable {name}, which is not set: "
            "export it, or use the offline `local` embedding spec"
        )
    return value


def _remote_options(timeout: float) -> dict[str, Any]:
    return {"max_retries": 0, "check_embedding_ctx_length": False, "timeout": timeout}


def _build_openai(spec: EmbeddingSpec, timeout: float) -> Embeddings:
    from ._openai import IndexedOpenAIEmbeddings

    key = _require_env("OPENAI_API_KEY", "OpenAI")
    return IndexedOpenAIEmbeddings(
        model=spec.model, api_key=SecretStr(key), **_remote_options(timeout)
    )


def _build_azure(spec: EmbeddingSpec, timeout: float) -> Embeddings:
    from ._openai import IndexedAzureOpenAIEmbeddings

    endpoint = _require_env("AZURE_OPENAI_ENDPOINT", "Azure OpenAI")
    key = _require_env("AZURE_OPENAI_API_KEY", "Azure OpenAI")
    version = _require_env("OPENAI_API_VERSION", "Azure OpenAI")
    return IndexedAzureOpenAIEmbeddings(
        azure_deployment=spec.model,
        model=spec.model,
        azure_endpoint=endpoint,
        api_key=SecretStr(key),
        api_version=version,
        **_remote_options(timeout),
    )


def _build_compatible(spec: EmbeddingSpec, timeout: float) -> Embeddings:
    from ._openai import IndexedOpenAIEmbeddings

    key = os.environ.get("OPENAI_API_KEY", "").strip() or _DUMMY_KEY
    return IndexedOpenAIEmbeddings(
        model=spec.model, base_url=spec.base_url, api_key=SecretStr(key), **_remote_options(timeout)
    )


def embeddings_from_spec(spec: EmbeddingSpec, *, timeout: float = DEFAULT_TIMEOUT) -> Embeddings:
    """Build the ``Embeddings`` of a parsed spec."""
    if spec.provider == "fake":
        from .fake import FakeEmbeddings

        return FakeEmbeddings(spec.dims or DEFAULT_FAKE_DIMS)
    if spec.provider == "local":
        from ._local import LocalEmbeddings

        model, precision = split_precision(spec.model)
        return LocalEmbeddings(None if model == PACKAGED_MODEL else model, precision=precision)
    if spec.provider == "langchain" and spec.integration:
        built: Embeddings = init_integration("embeddings", spec.integration, spec.model)
        return built
    builders = {
        "openai": _build_openai,
        "azure_openai": _build_azure,
        "openai_compatible": _build_compatible,
    }
    try:
        return builders[spec.provider](spec, timeout)
    except ConfigError:
        raise
    except (ValueError, ImportError) as exc:
        raise ConfigError(
            f"could not set up {spec.provider} embeddings for {spec.model!r}: {exc}"
        ) from exc


def resolve_embeddings(spec: str | Embeddings, *, timeout: float = DEFAULT_TIMEOUT) -> Embeddings:
    """A LangChain ``Embeddings`` for a spec (``local``, ``local:<model name or path>``,
    ``openai:<model>``, ``azure_openai:<deployment>``, ``openai_compatible:<model>@<url>``,
    ``http(s)://host:port/v1#<model>``, ``fake``, ``fake:<dims>``). An ``Embeddings`` object
    is returned unchanged. ``timeout`` (seconds) applies to each remote request."""
    if is_embeddings(spec):
        return spec
    if not isinstance(spec, str):
        raise ConfigError(
            f"an embedding spec must be a string or a LangChain Embeddings, got "
            f"{type(spec).__name__}; use e.g. 'local'"
        )
    return embeddings_from_spec(parse_spec(spec), timeout=timeout)


def call_timeout_for(spec: str | Embeddings, timeout: float) -> float | None:
    """The bound for each call of the ``Embeddings`` a spec resolves to (``BatchEmbedder``
    runs it in a worker thread): None for the OpenAI family, whose clients kbgraph builds
    with ``timeout``, and for the in-process models (local, fake), which answer or fail;
    ``timeout`` for anything else (an ``Embeddings`` object, a LangChain integration),
    whose own client may wait forever."""
    if isinstance(spec, str):
        provider = parse_spec(spec).provider
        return timeout if provider == "langchain" else None
    from ._local import LocalEmbeddings
    from .fake import FakeEmbeddings

    if isinstance(spec, FakeEmbeddings | LocalEmbeddings):
        return None
    return timeout


__all__ = ["DEFAULT_TIMEOUT", "call_timeout_for", "embeddings_from_spec", "resolve_embeddings"]
