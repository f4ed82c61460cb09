"""LangChain's own provider registry for ``provider:model`` specs kbgraph has no builder
of its own for (anthropic, ollama, mistralai, google_genai, huggingface, bedrock …):
``langchain.chat_models.init_chat_model`` and ``langchain.embeddings.init_embeddings``
build the object when the provider's integration package is installed. A missing package
or an unknown provider is a :class:`~kbgraph.errors.ConfigError` that names what to
install or what is allowed, instead of LangChain's ImportError or ValueError."""

from __future__ import annotations

import re
from typing import Any, Literal

from kbgraph.errors import ConfigError

Kind = Literal["chat model", "embeddings"]
_PIP = re.compile(r"pip install (?:-U |--upgrade )?([A-Za-z0-9_.\-\[\]]+)")


def known_providers(kind: Kind) -> frozenset[str] | None:
    """The providers LangChain's initialiser knows (``None`` when this LangChain version
    does not say, then every name is tried): a spec naming another is refused when it is
    parsed, before any run depends on it."""
    try:
        if kind == "chat model":
            from langchain.chat_models import base
        else:
            from langchain.embeddings import base  # type: ignore[no-redef]
    except ImportError:
        return None
    providers = getattr(base, "_BUILTIN_PROVIDERS", None)
    return frozenset(providers) if isinstance(providers, dict) else None


def init_integration(kind: Kind, provider: str, model: str, **kwargs: Any) -> Any:
    """The LangChain chat model or embeddings of ``provider:model``, built by LangChain."""
    spec = f"{provider}:{model}"
    try:
        if kind == "chat model":
            from langchain.chat_models import init_chat_model

            return init_chat_model(model, model_provider=provider, **kwargs)
        from langchain.embeddings import init_embeddings

        return init_embeddings(model, provider=provider, **kwargs)
    except ImportError as exc:
        found = _PIP.search(str(exc))
        package = found[1].rstrip(".`'\"") if found else f"langchain-{provider.replace('_', '-')}"
        raise ConfigError(
            f"{kind} spec {spec!r} needs the package {package}, which is not installed: "
            f"pip install {package} (or use a spec kbgraph builds itself, such as "
            f"{'openai_compatible:<model>@<url>' if kind == 'chat model' else 'local'})"
        ) from exc
    except ValueError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(
            f"{kind} spec {spec!r} is not one LangChain can build ({first}); use a provider "
            f"of langchain's {'init_chat_model' if kind == 'chat model' else 'init_embeddings'} "
            "(anthropic, ollama, mistralai, google_genai, bedrock …) as provider:model"
        ) from exc


__all__ = ["Kind", "init_integration", "known_providers"]
