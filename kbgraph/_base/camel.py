"""camelCase JSON for the records kbgraph prints and stores, by pydantic aliases.

Python fields stay snake_case; every JSON form (``kbgraph ... --json``, ``chunks.jsonl``,
LangChain ``Document`` metadata) uses the camelCase alias pydantic's ``to_camel`` derives
(``line_start`` → ``lineStart``), or an explicit ``Field(alias=...)`` where the JSON name
is not the field's (a chunk's ``id`` is ``chunkId`` outside the chunk record itself). A
record opts in with the :func:`camel` decorator; :func:`to_camel_dict` and
:func:`from_camel` convert through one cached ``TypeAdapter`` per class, which is faster
than a hand-written dict (pydantic-core does the work).
"""

from __future__ import annotations

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
    """The record as a JSON-ready dict with camelCase keys (``exclude``: field names)."""
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


__all__ = ["CAMEL", "camel", "from_camel", "to_camel_dict"]
