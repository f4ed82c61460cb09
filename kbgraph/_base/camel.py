"""The JSON spelling of kbgraph's records, by pydantic aliases.

Citation records (search hits, the subgraph's candidates and citations, ``ask --json``,
LangChain ``Document`` metadata, MCP results, eval passages and gold sources, the
inspector's views) are snake_case, as their Python fields: ``line_start``, ``line_end``,
``chunk_id`` (a chunk's ``id`` outside the chunk record itself, by ``Field(alias=...)``).
The index's own files (``chunks.jsonl``, ``meta.json``) and its reports keep the camelCase
alias pydantic's ``to_camel`` derives (``line_start`` → ``lineStart``): a record opts in
with the :func:`camel` decorator. :func:`to_camel_dict` and :func:`from_camel` convert
through one cached ``TypeAdapter`` per class, which is faster than a hand-written dict
(pydantic-core does the work).

Citation records were camelCase before 0.2 (issue 43: a user's ``c["line_start"]`` read
``None``); what kbgraph reads back that a user or an older version wrote (state passed
into a graph, recorded runs, data sets, results files) goes through :func:`snake_keys`,
which renames the old keys and warns once with a ``DeprecationWarning``.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import ConfigDict, TypeAdapter, with_config
from pydantic.alias_generators import to_camel

T = TypeVar("T")

CAMEL = ConfigDict(alias_generator=to_camel, validate_by_name=True, validate_by_alias=True)


def camel(cls: type[T]) -> type[T]:
    """Mark a dataclass as serialised with camelCase aliases."""
    return with_config(CAMEL)(cls)


_ADAPTERS: dict[type[Any], TypeAdapter[Any]] = {}


def _adapter(cls: type[Any]) -> TypeAdapter[Any]:
    adapter = _ADAPTERS.get(cls)
    if adapter is None:  # a race builds two equal adapters; either one is kept
        adapter = _ADAPTERS[cls] = TypeAdapter(cls)
    return adapter


def to_camel_dict(record: object, *, exclude: set[str] | None = None) -> dict[str, Any]:
    """The record as a JSON-ready dict keyed by its aliases: camelCase for a :func:`camel`
    record, else the field names or their ``Field(alias=...)`` (``exclude``: field names)."""
    out: dict[str, Any] = _adapter(type(record)).dump_python(
        record, by_alias=True, mode="json", exclude=exclude
    )
    return out


def from_camel(cls: type[T], data: Mapping[str, Any] | bytes | str) -> T:
    """A record from its camelCase dict (or JSON text), validated."""
    adapter = _adapter(cls)
    if isinstance(data, bytes | str):
        value: T = adapter.validate_json(data)
        return value
    value = adapter.validate_python(data)
    return value


# The camelCase keys citation records had before 0.2, and their one spelling now.
OLD_CITATION_KEYS = {
    "chunkId": "chunk_id",
    "lineStart": "line_start",
    "lineEnd": "line_end",
    "byteStart": "byte_start",
    "byteEnd": "byte_end",
}
OLD_KEYS_REMOVED_IN = "0.3"


def snake_keys(value: T, what: str, *, stacklevel: int = 2) -> T:
    """``value`` (a JSON-like dict or list, at any depth) with the old camelCase citation
    keys renamed to snake_case; where both are given, the snake_case one wins. The same
    object when no old key is there (the common case costs a walk, not a copy); else a
    copy and one ``DeprecationWarning`` naming ``what`` (``stacklevel`` as for
    :func:`warnings.warn`, counted from the caller)."""
    found: set[str] = set()
    renamed = _renamed(value, found)
    if found:
        old = ", ".join(sorted(found))
        new = ", ".join(OLD_CITATION_KEYS[k] for k in sorted(found))
        warnings.warn(
            f"{what}: the camelCase keys {old} are deprecated since kbgraph 0.2 (read until "
            f"{OLD_KEYS_REMOVED_IN}); citation fields are snake_case now: {new}.",
            DeprecationWarning,
            stacklevel=stacklevel + 1,
        )
    out: T = renamed
    return out


def _renamed(value: Any, found: set[str]) -> Any:
    if isinstance(value, Mapping):
        items = {k: _renamed(v, found) for k, v in value.items()}
        old = [k for k in items if k in OLD_CITATION_KEYS]
        if not old and all(items[k] is v for k, v in value.items()):
            return value
        found.update(old)
        out = {k: v for k, v in items.items() if k not in OLD_CITATION_KEYS}
        for k in old:
            out.setdefault(OLD_CITATION_KEYS[k], items[k])
        return out
    if isinstance(value, list | tuple):
        members = [_renamed(v, found) for v in value]
        if all(a is b for a, b in zip(members, value, strict=True)):
            return value
        return type(value)(members) if isinstance(value, tuple) else members
    return value


__all__ = [
    "CAMEL",
    "OLD_CITATION_KEYS",
    "camel",
    "from_camel",
    "snake_keys",
    "to_camel_dict",
]
