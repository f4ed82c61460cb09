"""The on-disk index format of ARCHITECTURE.md: generations, files and locks."""

from ._ann import ANN_MIN_ROWS, AnnIndex, write_ann
from ._chunks import ChunkReader, write_chunks
from ._generation import IndexReader, chunk_problem, read_meta, sound_vectors, write_generation
from ._layout import INDEX_DIR_NAME, REPAIR, IndexLayout, write_file_atomic
from ._lock import LockMode, file_lock
from ._meta import FORMAT_VERSION, EmbeddingMeta, FileRecord, IndexMeta, SkipRecord, meta_bytes
from ._vectors import open_vectors, write_vectors
from ._versions import (
    DEFAULT_KEEP_VERSIONS,
    VersionInfo,
    check_keep,
    list_versions,
    resolve_version,
    restore_version,
)

__all__ = [
    "ANN_MIN_ROWS",
    "DEFAULT_KEEP_VERSIONS",
    "FORMAT_VERSION",
    "INDEX_DIR_NAME",
    "REPAIR",
    "AnnIndex",
    "ChunkReader",
    "EmbeddingMeta",
    "FileRecord",
    "IndexLayout",
    "IndexMeta",
    "IndexReader",
    "LockMode",
    "SkipRecord",
    "VersionInfo",
    "check_keep",
    "chunk_problem",
    "file_lock",
    "list_versions",
    "meta_bytes",
    "open_vectors",
    "read_meta",
    "resolve_version",
    "restore_version",
    "sound_vectors",
    "write_ann",
    "write_chunks",
    "write_file_atomic",
    "write_generation",
    "write_vectors",
]
