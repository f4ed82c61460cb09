"""``chunks.jsonl`` (one chunk per line) and ``offsets.bin`` (u64 LE byte offset of each
line), so that chunk ``i`` is fetched in O(1) without parsing the file.

Every line carries ``check``: a checksum of all the record's other fields (its canonical
JSON), so that no field a reader serves (line numbers, byte span, section, page …) is
trusted unchecked; the chunk id itself hashes the source, span and text only, as it keys
vectors and the embedding cache. Lines of index format 1 have no ``check``.
"""

from __future__ import annotations

import json
import mmap
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from kbgraph.errors import IndexCorruptError

from .._fs import Read
from .._records import Chunk, json_checksum
from .._storage import REPAIR


def _size_of(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError as exc:
        raise IndexCorruptError(f"{path} cannot be read ({exc.strerror}); {REPAIR}") from None


def _check_types(chunk: Chunk) -> None:
    strings = (chunk.id, chunk.text, chunk.source)
    numbers = (chunk.line_start, chunk.line_end, chunk.byte_start, chunk.byte_end)
    if not all(isinstance(v, str) for v in strings) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in numbers
    ):
        raise TypeError("a field has the wrong type")


CHECK_KEY = "check"


def record_line(chunk: Chunk) -> bytes:
    """One line of chunks.jsonl: the chunk's fields and their checksum."""
    fields = chunk.to_dict()
    fields[CHECK_KEY] = json_checksum(fields)
    return json.dumps(fields, ensure_ascii=False).encode("utf-8") + b"\n"


def write_chunks(chunks_path: Path, offsets_path: Path, chunks: Iterable[Chunk]) -> int:
    offsets: list[int] = []
    position = 0
    with open(chunks_path, "wb") as fh:
        for chunk in chunks:
            line = record_line(chunk)
            offsets.append(position)
            fh.write(line)
            position += len(line)
        fh.flush()
        os.fsync(fh.fileno())
    with open(offsets_path, "wb") as fh:
        fh.write(np.asarray(offsets, dtype="<u8").tobytes())
        fh.flush()
        os.fsync(fh.fileno())
    return len(offsets)


class ChunkReader:
    """Random access to the chunks of one generation through a memory map."""

    def __init__(
        self,
        chunks_path: Path,
        offsets_path: Path,
        *,
        checked: bool = True,
        read: Read | None = None,
    ) -> None:
        """``checked``: lines carry their checksum (False only for index format 1);
        ``read``: how the files are read into memory rather than mapped (see
        :mod:`._mapped`)."""
        self.path = chunks_path
        self._checked = checked
        self._size = _size_of(chunks_path)
        try:
            raw = (read or Path.read_bytes)(offsets_path)
        except OSError as exc:
            raise IndexCorruptError(
                f"{offsets_path} cannot be read ({exc.strerror}); {REPAIR}"
            ) from None
        if len(raw) % 8:
            raise IndexCorruptError(
                f"{offsets_path}: length {len(raw)} is not a multiple of 8; {REPAIR}"
            )
        self._offsets = np.frombuffer(raw, dtype="<u8")
        if len(self._offsets) and int(self._offsets[-1]) >= self._size:
            raise IndexCorruptError(
                f"{offsets_path}: points past the end of {chunks_path.name}; {REPAIR}"
            )
        # The map holds its own handle of the file: closing ours now leaves no file object
        # for a reader that is never closed (a cached knowledge base at interpreter exit
        # would otherwise warn "unclosed file chunks.jsonl").
        self._map: mmap.mmap | bytes | None = None
        if self._size and read is not None:
            self._map = read(chunks_path)
            if len(self._map) != self._size:
                raise IndexCorruptError(f"{chunks_path}: changed size while read; {REPAIR}")
        elif self._size:
            with open(chunks_path, "rb") as fh:
                self._map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)

    def __len__(self) -> int:
        return len(self._offsets)

    def check_offsets(self) -> str | None:
        """What is wrong with offsets.bin, or None: one offset per line of chunks.jsonl,
        the first 0, each just after a newline, and the file ends with one."""
        offsets = self._offsets.astype(np.int64)
        if not len(offsets):
            return None if self._size == 0 else "no offsets for a non-empty chunks.jsonl"
        if offsets[0] != 0:
            return f"the first offset is {int(offsets[0])}, not 0"
        if np.any(np.diff(offsets) <= 0):
            return "offsets do not strictly increase"
        assert self._map is not None  # a non-empty file with offsets is mapped
        data = np.frombuffer(self._map, dtype=np.uint8)
        before = data[offsets[1:] - 1]
        if np.any(before != ord("\n")):
            bad = int(offsets[1:][np.flatnonzero(before != ord("\n"))[0]])
            return f"offset {bad} is not at the start of a line"
        if data[-1] != ord("\n"):
            return "chunks.jsonl does not end with a newline (truncated?)"
        lines = int(np.count_nonzero(data == ord("\n")))  # JSON escapes newlines in strings
        if lines != len(offsets):
            return f"chunks.jsonl has {lines} lines but offsets.bin {len(offsets)} offsets"
        return None

    def get(self, index: int) -> Chunk:
        """Chunk ``index``; a line that is not a chunk record is IndexCorruptError."""
        if self._map is None or not 0 <= index < len(self._offsets):
            raise IndexError(index)
        start = int(self._offsets[index])
        end = int(self._offsets[index + 1]) if index + 1 < len(self._offsets) else self._size
        try:
            fields = json.loads(self._map[start:end])
            check = fields.pop(CHECK_KEY, None)
            chunk = Chunk.from_dict(fields)
            _check_types(chunk)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise IndexCorruptError(
                f"{self.path}: line {index + 1} is not a chunk record "
                f"({type(exc).__name__}); {REPAIR}"
            ) from None
        if self._checked and check != json_checksum(fields):
            raise IndexCorruptError(
                f"{self.path}: line {index + 1} does not match its record checksum (a field "
                f"was changed since it was written); {REPAIR}"
            )
        return chunk

    def __iter__(self) -> Iterator[Chunk]:
        for i in range(len(self)):
            yield self.get(i)

    def close(self) -> None:
        if isinstance(self._map, mmap.mmap):
            self._map.close()
