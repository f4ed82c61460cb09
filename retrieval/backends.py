"""Which store a location names, opened: the folder index or PostgreSQL. Above the storage
seam (``kbgraph.retrieval.storage``), which knows neither implementation; the one module
above it that knows the stores (``tests/unit/test_layers.py`` holds the rule)."""

from __future__ import annotations

from pathlib import Path

from kbgraph.errors import ConfigError

from .folder import FolderStore, IndexLayout
from .storage import IndexStore, is_database


def describe_store(store: str | None) -> str:
    """For reports and logs: ``folder``, or the database URL without its password."""
    if not is_database(store):
        return "folder"
    from .postgres import Database

    return Database.parse(str(store).strip()).location


def folder_layout(folder: Path, store: IndexStore) -> IndexLayout:
    """The folder index's files in the store's index folder (``ConfigError`` for a store
    without one, a database)."""
    if store.index_dir is None:
        raise ConfigError(f"the index of {folder} lives in {store.location}, not in a folder")
    return IndexLayout(store.index_dir)


def open_store(
    folder: Path,
    store: str | None,
    index_dir: Path | None,
    lock_timeout: float,
    read_store: str | None = None,
) -> IndexStore:
    """``store`` None or ``folder``: the folder index (in ``index_dir``, default
    ``<folder>/.kbgraph``); ``postgresql://...``: that database (its primary, or several
    hosts), searched at ``read_store`` when given (a standby)."""
    read = (read_store or "").strip() or None
    if read is not None and not (is_database(store) and is_database(read)):
        raise ConfigError(
            "read_store (--read-store) is a PostgreSQL URL of a standby that searches go to; "
            "it needs a PostgreSQL store (--store postgresql://... naming the primary)"
        )
    if store is None or store.strip() in ("", "folder"):
        return FolderStore(folder, index_dir, lock_timeout)
    if is_database(store):
        if index_dir is not None:
            raise ConfigError(
                "index_dir is for the folder index; a PostgreSQL store keeps the index in the "
                "database: leave --index-dir out"
            )
        from .postgres import PostgresStore

        return PostgresStore(store.strip(), folder, read_url=read)
    raise ConfigError(
        "store must be 'folder' (the index beside the documents, the default) or a "
        "PostgreSQL URL (postgresql://user@host:5432/dbname); got a value of neither form"
    )


__all__ = ["IndexLayout", "describe_store", "folder_layout", "open_store"]
