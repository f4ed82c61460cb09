"""The on-disk index format of ARCHITECTURE.md: generations, files and locks."""

from ._chunks import ChunkReader, write_chunks
from ._generation import IndexReader, chunk_problem, read_meta, sound_vectors, write_generation
from ._layout import INDEX_DIR_NAME, REPAIR, IndexLayout, write_file_atomic
from ._lock import LockMode, file_lock
from ._meta import FORMAT_VERSION, EmbeddingMeta, FileRecord, IndexMeta, SkipRecord
from ._vectors import open_vectors, write_vectors

__all__ = [
    "FORMAT_VERSION",
    "INDEX_DIR_NAME",
    "REPAIR",
    "ChunkReader",
    "EmbeddingMeta",
    "FileRecord",
    "IndexLayout",
    "IndexMeta",
    "IndexReader",
    "LockMode",
    "SkipRecord",
    "chunk_problem",
    "file_lock",
    "open_vectors",
    "read_meta",
    "sound_vectors",
    "write_chunks",
    "write_file_atomic",
    "write_generation",
    "write_vectors",
]
