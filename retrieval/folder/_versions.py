"""Earlier generations of an index: listing them and making one current again.

Every published generation is recorded in ``HISTORY`` (oldest first, the current one last);
a writer keeps the last ``keep_versions`` of them after a successful publish and removes the
rest (and any folder of a writer that died before publishing). Restoring publishes an
existing generation again, atomically, exactly as a writer publishes a new one: it moves to
the end of the history and becomes ``CURRENT``. A reader that opened a generation keeps its
files open, so removing that generation later never breaks it (POSIX unlink semantics).
"""

from __future__ import annotations

from kbgraph.errors import ConfigError, IndexCorruptError, KbgraphError

from ..storage import DEFAULT_KEEP_VERSIONS, MAX_KEEP_VERSIONS, VersionInfo, check_keep
from ._generation import IndexReader, read_meta
from ._layout import IndexLayout
from ._lock import file_lock


def describe_version(layout: IndexLayout, name: str, current: str | None) -> VersionInfo:
    try:
        meta = read_meta(layout.generation(name) / "meta.json")
    except KbgraphError as exc:
        return VersionInfo(name, name == current, problem=str(exc))
    model = f"{meta.embedding.provider}:{meta.embedding.model}" if meta.embedding else None
    return VersionInfo(
        name, name == current, meta.indexed_at, meta.file_count, meta.chunk_count, model
    )


def list_versions(layout: IndexLayout) -> list[VersionInfo]:
    """The kept generations, newest first (the current one is normally the first)."""
    current = layout.current_name()
    return [describe_version(layout, name, current) for name in reversed(layout.published())]


def resolve_version(names: list[str], wanted: str) -> str:
    """A generation named by ``wanted``: its name, a unique prefix of it (``gen-18a7``), or
    its row in ``kbgraph versions`` (1 = newest). ``names`` are newest first."""
    text = wanted.strip()
    if text.isdigit() and 1 <= int(text) <= len(names):
        return names[int(text) - 1]
    matches = [n for n in names if n == text] or [n for n in names if n.startswith(text)]
    if len(matches) == 1 and text.startswith("gen-"):
        return matches[0]
    listed = ", ".join(f"{i} = {n}" for i, n in enumerate(names, 1)) or "none"
    why = "matches several" if len(matches) > 1 else "is not one of the kept generations"
    raise ConfigError(
        f"version {wanted!r} {why}; give a row number, a generation name or a unique prefix "
        f"of one (kept: {listed}); `kbgraph versions FOLDER` lists them"
    )


def restore_version(layout: IndexLayout, wanted: str, *, lock_timeout: float) -> VersionInfo:
    """Make a kept generation current again, atomically; it is checked before (it opens,
    and its files agree with each other)."""
    with file_lock(layout.write_lock, "exclusive", lock_timeout, "restore index"):
        names = list(reversed(layout.published()))
        name = resolve_version(names, wanted)
        try:
            IndexReader(layout, lock_timeout=lock_timeout, name=name).close()
        except IndexCorruptError as exc:
            raise IndexCorruptError(f"cannot restore {name}: {exc}") from exc
        with file_lock(layout.lock, "exclusive", lock_timeout, "restore index"):
            layout.publish(layout.generation(name))
        return describe_version(layout, name, name)


__all__ = [
    "DEFAULT_KEEP_VERSIONS",
    "MAX_KEEP_VERSIONS",
    "VersionInfo",
    "check_keep",
    "list_versions",
    "resolve_version",
    "restore_version",
]
