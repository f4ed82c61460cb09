"""The folder index beside the documents (``<folder>/.kbgraph``): the on-disk format of
ARCHITECTURE.md (generations, files, locks, versions), its rankers and its store."""

from .._fs import write_file_atomic
from ._ann import ANN_MIN_ROWS, AnnIndex, write_ann
from ._chunks import ChunkReader, write_chunks
from ._generation import IndexReader, chunk_problem, read_meta, write_generation
from ._layout import INDEX_DIR_NAME, IndexLayout
from ._lock import LockMode, file_lock
from ._query import FolderRanking, folder_ranking
from ._store import (
    FolderPrevious,
    FolderSnapshot,
    FolderStore,
    FolderWriter,
    no_index,
    recorded_settings,
)
from ._vectors import open_vectors, write_vectors
from ._versions import (
    VersionInfo,
    check_keep,
    list_versions,
    resolve_version,
    restore_version,
)

__all__ = [
    "ANN_MIN_ROWS",
    "INDEX_DIR_NAME",
    "AnnIndex",
    "ChunkReader",
    "FolderPrevious",
    "FolderRanking",
    "FolderSnapshot",
    "FolderStore",
    "FolderWriter",
    "IndexLayout",
    "IndexReader",
    "LockMode",
    "VersionInfo",
    "check_keep",
    "chunk_problem",
    "file_lock",
    "folder_ranking",
    "list_versions",
    "no_index",
    "open_vectors",
    "read_meta",
    "recorded_settings",
    "resolve_version",
    "restore_version",
    "write_ann",
    "write_chunks",
    "write_file_atomic",
    "write_generation",
    "write_vectors",
]
