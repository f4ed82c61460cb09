"""Chat model specs → LangChain chat models at temperature 0 (hosted ones through
``langchain-openai``).

=====================================  ==================================================
spec                                   model
=====================================  ==================================================
``None``, ``""``, ``"none"``           no model: every node takes its heuristic path
``openai:<model>``                     ``ChatOpenAI`` (``OPENAI_API_KEY``)
``azure_openai:<deployment>``          ``AzureChatOpenAI`` (``AZURE_OPENAI_ENDPOINT``,
                                       ``AZURE_OPENAI_API_KEY``, ``OPENAI_API_VERSION``)
``openai_compatible:<model>@<url>``    ``ChatOpenAI`` against any OpenAI-compatible server
                                       (Ollama, vLLM, LM Studio); the key is
                                       ``OPENAI_API_KEY`` or a placeholder
``gguf:<path>[?<options>]``           :class:`kbgraph.graphs._chat_models.ChatGGUF`: the GGUF
                                       file run in process by llama.cpp (``kbgraph[gguf]``);
                                       options ``threads``, ``n_ctx``, ``max_tokens``
``fake`` / ``fake:<reply>``            :class:`~kbgraph.graphs._chat_models.ScriptedChatModel` that
                                       answers every call with ``<reply>``
``<provider>:<model>``                 any other provider of LangChain's
                                       ``init_chat_model`` (``anthropic``, ``ollama``,
                                       ``mistralai``, ``google_genai`` …) whose
                                       integration package is installed
=====================================  ==================================================
"""

from __future__ import annotations

import os
from functools import lru_cache

from langchain_core.language_models import BaseChatModel

from kbgraph.errors import ConfigError
from kbgraph.retrieval._internal import init_integration

from ._chat_models import ChatGGUF, GGUFOptions, check_runtime_installed, parse_gguf_spec
from ._served import check_model

FAKE_REPLY = "This is a scripted reply from the fake chat model."
_SPECS = (
    "none, openai:<model>, azure_openai:<deployment>, openai_compatible:<model>@<url>, "
    "gguf:<path to a .gguf file>, fake, or <provider>:<model> for any provider of "
    "LangChain's init_chat_model"
)


def resolve_chat_model(
    spec: str | BaseChatModel | None,
    *,
    timeout: float | None = 60.0,
    served_as: str | None = None,
) -> BaseChatModel | None:
    """The chat model a spec names (a model instance is returned as is), or ``None``.
    ``served_as``: the setting a run's spec came from (``chat_model``,
    ``answer_check.judge``); in a process that serves requests, a spec naming a server or a
    file must then be one the server was started with
    (:func:`~kbgraph.graphs._served.check_model`: an ``openai_compatible`` URL gets the
    server's ``OPENAI_API_KEY``)."""
    if spec is None or isinstance(spec, BaseChatModel):
        return spec
    if served_as is not None:
        check_model(served_as, spec)
    spec = spec.strip()
    if spec.lower() in ("", "none"):
        return None
    provider, sep, rest = spec.partition(":")
    provider = provider.lower()
    if provider == "fake":
        from kbgraph._base.scripted_chat import ScriptedChatModel

        # Not cached: a scripted model records its calls, and runs must not share them.
        return ScriptedChatModel(default=rest if sep and rest else FAKE_REPLY)
    if not rest.strip():
        raise ConfigError(f"chat model spec {spec!r} names no model; allowed: {_SPECS}.")
    if provider == "gguf":
        return _gguf_model(parse_gguf_spec(rest), timeout)
    return _provider_model(provider, rest.strip(), timeout)


@lru_cache(maxsize=8)
def _gguf_model(options: GGUFOptions, timeout: float | None) -> BaseChatModel:
    check_runtime_installed()  # a ConfigError here; the model's validator would wrap it
    return ChatGGUF(
        model_path=options.path,
        threads=options.threads,
        n_ctx=options.n_ctx,
        max_tokens=options.max_tokens,
        timeout=timeout,
    )


@lru_cache(maxsize=32)
def _provider_model(provider: str, rest: str, timeout: float | None) -> BaseChatModel:
    # Imported here: langchain-openai costs half a second that runs without a model skip.
    from langchain_openai import AzureChatOpenAI, ChatOpenAI

    if provider == "openai":
        return ChatOpenAI(model=rest, temperature=0, timeout=timeout, max_retries=1)
    if provider == "azure_openai":
        return AzureChatOpenAI(azure_deployment=rest, temperature=0, timeout=timeout, max_retries=1)
    if provider == "openai_compatible":
        model, sep, base_url = rest.partition("@")
        if not sep or not model or not base_url.startswith(("http://", "https://")):
            raise ConfigError(
                f"openai_compatible spec needs <model>@<base url>, got {rest!r}; for example "
                "openai_compatible:llama3.1@http://localhost:11434/v1"
            )
        return ChatOpenAI(
            model=model,
            base_url=base_url,
            api_key=os.environ.get("OPENAI_API_KEY") or "not-needed",  # type: ignore[arg-type]
            temperature=0,
            timeout=timeout,
            max_retries=1,
        )
    built: BaseChatModel = init_integration("chat model", provider, rest, temperature=0)
    return built


__all__ = ["FAKE_REPLY", "resolve_chat_model"]
