"""One registry of named entries, in registration order, for the three kbgraph keeps
(rankers, file kinds, metrics): a name already taken is refused unless ``replace``, a
name not registered is refused on removal, and both errors say what is registered and
what to do. Each registry checks the shape of its own entries before it adds them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, TypeVar

from kbgraph.errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    """Entries by name; ``what`` names one in messages ("ranker", "file kind")."""

    def __init__(self, what: str, entries: dict[str, T] | None = None) -> None:
        self.what = what
        self._entries: dict[str, T] = dict(entries or {})

    def add(self, name: str, entry: T, *, replace: bool = False) -> T:
        """Register ``entry`` as ``name`` (the same entry again changes nothing)."""
        taken = self._entries.get(name)
        if taken is not None and taken is not entry and not replace:
            raise ConfigError(
                f"a {self.what} named {name!r} is registered already; pass replace=True to "
                "replace it, or choose another name"
            )
        self._entries[name] = entry
        return entry

    def remove(self, name: str) -> T:
        if name not in self._entries:
            raise ConfigError(
                f"no {self.what} named {name!r} is registered; registered: {self.listing()}"
            )
        return self._entries.pop(name)

    def __getitem__(self, name: str) -> T:
        return self._entries[name]

    def get(self, name: str) -> T | None:
        return self._entries.get(name) if isinstance(name, str) else None

    def names(self) -> tuple[str, ...]:
        return tuple(self._entries)

    def values(self) -> tuple[T, ...]:
        return tuple(self._entries.values())

    def listing(self) -> str:
        """The names, for a message ("vector, bm25, title"; "none")."""
        return ", ".join(self._entries) or "none"

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)


__all__ = ["Registry"]
