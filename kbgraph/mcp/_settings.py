"""What ``kbgraph mcp`` serves and may do: its knowledge bases, its models, its freshness
and write options. Built from the command's arguments (:meth:`McpSettings.from_folders`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kbgraph._server_options import paired_index_dirs
from kbgraph.errors import ConfigError

MAX_QUERY_CHARS = 10_000  # a question or a search phrase, never a document
MAX_TOP_K = 50
MAX_READ_LINES = 2_000  # lines one `read` returns (ask for the next ones with line_start)
# Characters one `read` returns: a 7.5 MB one-line file came back whole (its lines fit).
MAX_READ_CHARS = 100_000


@dataclass(frozen=True, slots=True)
class ServedBase:
    """One knowledge base: its name (the folder's name unless given; the ``kb`` argument
    of the tools), its folder, and its store (``None``: the folder index; else a
    PostgreSQL URL, never shown: it may hold a password)."""

    name: str
    folder: Path
    store: str | None = field(default=None, repr=False)
    index_dir: Path | None = None  # where the folder index lives; None: <folder>/.kbgraph

    @property
    def store_kind(self) -> str:
        return "folder" if self.store is None else "postgresql"


@dataclass(frozen=True, slots=True)
class McpSettings:
    """``embedding``: ``auto`` (each index's own model), a spec, or ``none`` (BM25 only).
    ``chat_model``: the spec ``ask`` answers with (``None``: an extractive answer), as for
    ``kbgraph ask``. ``allow_write``: serve the ``index`` tool. ``auto_index``: bring a
    stale index up to date before a search (writes the index, never a document);
    ``watch``: a file watcher keeps each index up to date (writes likewise). Without
    either, a search on a stale index says so in its result."""

    knowledge_bases: tuple[ServedBase, ...]
    embedding: str = "auto"
    chat_model: str | None = None
    allow_write: bool = False
    auto_index: bool = False
    watch: bool = False
    max_query_chars: int = MAX_QUERY_CHARS

    def __post_init__(self) -> None:
        if not self.knowledge_bases:
            raise ConfigError("no knowledge base to serve; pass at least one folder")
        names = [kb.name for kb in self.knowledge_bases]
        doubled = sorted({n for n in names if names.count(n) > 1})
        if doubled:
            raise ConfigError(
                f"two knowledge bases are named {doubled[0]!r}; serve folders of distinct "
                "names (a knowledge base is named after its folder)"
            )

    def cite(self, kb: str, source: str, start: int | None, end: int | None) -> str:
        """``source:start-end``; ``kb:source:start-end`` when several knowledge bases are
        served (a source is relative to its knowledge base folder)."""
        where = source if start is None else f"{source}:{start}-{start if end is None else end}"
        return f"{kb}:{where}" if len(self.knowledge_bases) > 1 else where

    @property
    def names(self) -> list[str]:
        return [kb.name for kb in self.knowledge_bases]

    def base(self, name: str) -> ServedBase:
        for kb in self.knowledge_bases:
            if kb.name == name:
                return kb
        raise ConfigError(
            f"no knowledge base named {name!r} here; known: {', '.join(self.names)} "
            "(list_knowledge_bases lists them)"
        )

    def chosen(self, name: str | None) -> tuple[ServedBase, ...]:
        """The knowledge base named ``name``, or all of them when ``None``."""
        return self.knowledge_bases if name is None else (self.base(name),)

    @classmethod
    def from_folders(
        cls,
        folders: Sequence[str | Path],
        *,
        store: str | None = None,
        index_dirs: Sequence[str | Path] = (),
        **options: object,
    ) -> McpSettings:
        """One knowledge base per folder, named after it (as the graphs name them).
        ``index_dirs``: none, or one per folder, in order (where ``kbgraph index
        --index-dir`` put each folder's index)."""
        bases = []
        dirs = paired_index_dirs(folders, index_dirs)
        for given, index_dir in zip(folders, dirs, strict=True):
            folder = Path(given).expanduser().resolve()
            if not folder.is_dir():
                raise ConfigError(f"{given} is not a folder; pass a knowledge base folder")
            bases.append(ServedBase(folder.name or "kb", folder, store or None, index_dir))
        return cls(knowledge_bases=tuple(bases), **options)  # type: ignore[arg-type]


__all__ = [
    "MAX_QUERY_CHARS",
    "MAX_READ_CHARS",
    "MAX_READ_LINES",
    "MAX_TOP_K",
    "McpSettings",
    "ServedBase",
]
