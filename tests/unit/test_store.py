"""The on-disk format: vectors.bin validation, chunks.jsonl + offsets.bin, generations."""

from __future__ import annotations

import json
import os
import stat
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from kbgraph.errors import IndexCorruptError, IndexLockedError
from kbgraph.retrieval import KnowledgeBase
from kbgraph.retrieval._folder import (
    ChunkReader,
    IndexLayout,
    file_lock,
    open_vectors,
    write_chunks,
    write_vectors,
)
from kbgraph.retrieval._records import Chunk
from kbgraph.retrieval._storage import IndexMeta, meta_bytes


def _vectors(n: int, d: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    v = rng.normal(size=(n, d)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_vectors_round_trip_through_memory_map(tmp_path: Path) -> None:
    path = tmp_path / "vectors.bin"
    data = _vectors(7, 5)
    write_vectors(path, data)
    raw = path.read_bytes()
    assert struct.unpack("<IIII", raw[:16]) == (0x52414756, 1, 5, 7)
    mm = open_vectors(path)
    assert isinstance(mm, np.memmap)
    np.testing.assert_array_equal(np.asarray(mm), data)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda b: b"XXXX" + b[4:], "bad magic"),
        (lambda b: b[:4] + struct.pack("<I", 9) + b[8:], "format version 9"),
        (lambda b: b[:-4], "header says"),
        (lambda b: b + b"\0" * 4, "header says"),
        (lambda b: b[:10], "shorter than the header"),
    ],
)
def test_vectors_header_is_validated(tmp_path: Path, mutate: object, message: str) -> None:
    path = tmp_path / "vectors.bin"
    write_vectors(path, _vectors(3, 4))
    path.write_bytes(mutate(path.read_bytes()))  # type: ignore[operator]
    with pytest.raises(IndexCorruptError, match=message):
        open_vectors(path)


def test_chunks_are_fetched_by_offset(tmp_path: Path) -> None:
    chunks = [
        Chunk(
            f"id{i}",
            f"text {i} — ünïcödé 東京\r\nline",
            "dir/ä.md",
            i + 1,
            i + 2,
            i,
            i + 9,
            "A > B" if i % 2 else None,
            None,
        )
        for i in range(50)
    ]
    write_chunks(tmp_path / "chunks.jsonl", tmp_path / "offsets.bin", chunks)
    reader = ChunkReader(tmp_path / "chunks.jsonl", tmp_path / "offsets.bin")
    assert len(reader) == 50
    assert reader.get(37) == chunks[37]
    assert list(reader) == chunks
    assert (tmp_path / "offsets.bin").stat().st_size == 50 * 8
    with pytest.raises(IndexError):
        reader.get(50)
    reader.close()


def test_layout_publishes_atomically_and_secures_files(tmp_path: Path) -> None:
    layout = IndexLayout(tmp_path / ".kbgraph")
    layout.ensure()
    assert layout.current_name() is None
    first = layout.new_generation()
    layout.publish(first)
    second = layout.new_generation()
    assert layout.current_name() == first.name  # unpublished generations are invisible
    layout.publish(second)
    assert layout.published() == [first.name, second.name]
    assert layout.prune(1) == [first.name]
    assert layout.current_name() == second.name
    assert not first.exists() and layout.published() == [second.name]
    assert (layout.root / ".gitignore").read_text() == "*\n"
    assert stat.S_IMODE(layout.root.stat().st_mode) == 0o700
    assert stat.S_IMODE(layout.current.stat().st_mode) == 0o600


def test_pointer_to_missing_generation_is_reported(tmp_path: Path) -> None:
    layout = IndexLayout(tmp_path / ".kbgraph")
    layout.ensure()
    layout.current.write_text("gen-1a-2b\n")
    with pytest.raises(IndexCorruptError, match="missing generation"):
        layout.current_name()


def test_exclusive_lock_times_out_with_a_clear_message(tmp_path: Path) -> None:
    lock = tmp_path / ".lock"
    with file_lock(lock, "shared", 1, "read"), file_lock(lock, "shared", 1, "read"):
        pass  # shared locks coexist (flock: per open file description)
    with (
        file_lock(lock, "exclusive", 1, "index"),
        pytest.raises(IndexLockedError, match="locked by another kbgraph process"),
        file_lock(lock, "exclusive", 0.2, "index"),
    ):
        pass


@pytest.mark.skipif(sys.platform == "win32", reason="flock: POSIX")
def test_a_lock_held_through_portalocker_excludes_ours_and_back(tmp_path: Path) -> None:
    """Locks are taken with ``fcntl.flock`` itself (portalocker imported importlib.metadata
    on every cold search); a kbgraph process that still locks through portalocker must
    keep excluding this one, and the other way round, in another process."""
    lock = tmp_path / ".lock"
    lock.touch()
    holder = subprocess.Popen(
        [sys.executable, "-c", _PORTALOCKER_HOLDER, str(lock)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(IndexLockedError), file_lock(lock, "exclusive", 0.2, "index"):
            pass
        with pytest.raises(IndexLockedError), file_lock(lock, "shared", 0.2, "read"):
            pass
    finally:
        holder.kill()
        holder.wait()
    with file_lock(lock, "shared", 1, "read"):
        probe = subprocess.run(
            [sys.executable, "-c", _PORTALOCKER_TRY, str(lock)], capture_output=True, text=True
        )
    assert probe.stdout.strip() == "refused", probe.stderr


_PORTALOCKER_HOLDER = """
import sys, time, portalocker
handle = open(sys.argv[1], "r+b")
portalocker.lock(handle, portalocker.LOCK_EX | portalocker.LOCK_NB)
print("held", flush=True)
time.sleep(60)
"""
_PORTALOCKER_TRY = """
import sys, portalocker
handle = open(sys.argv[1], "r+b")
try:
    portalocker.lock(handle, portalocker.LOCK_EX | portalocker.LOCK_NB)
    print("won")
except portalocker.exceptions.LockException:
    print("refused")
"""


# -- IndexReader.validate ---------------------------------------------------------------


def _built(tmp_path: Path) -> tuple[KnowledgeBase, Path]:
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(6):
        (docs / f"d{i}.md").write_text(f"# Doc {i}\n\nretry backoff token {i} 東京\n" * 3)
    kb = KnowledgeBase(docs, embedding="fake")
    kb.index()
    kb.validate()
    generation = kb.layout.generation(kb.layout.current_name() or "")
    kb.close()
    return kb, generation


def _rewrite_vectors(generation: Path, change: Callable[[np.ndarray], None]) -> None:
    vectors = np.array(open_vectors(generation / "vectors.bin"))
    change(vectors)
    write_vectors(generation / "vectors.bin", vectors)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda v: v.__setitem__(2, v[2] * 1.5), r"vector 2 has length 1\.5"),
        (lambda v: v.__setitem__(0, 0.0), "vector 0 has length 0"),  # zero, yet not failed
    ],
)
def test_validate_checks_every_vector_norm(
    tmp_path: Path, change: Callable[[np.ndarray], None], message: str
) -> None:
    kb, generation = _built(tmp_path)
    _rewrite_vectors(generation, change)
    with pytest.raises(IndexCorruptError, match=message):
        kb.validate()


def _reseal_meta(generation: Path, meta: dict[str, object]) -> None:
    """Write an edited meta.json with its checksum, as a crafted index would."""
    meta.pop("checksum", None)
    (generation / "meta.json").write_bytes(meta_bytes(IndexMeta.model_validate(meta)))


def test_validate_accepts_a_zero_vector_of_a_failed_embedding(tmp_path: Path) -> None:
    kb, generation = _built(tmp_path)
    _rewrite_vectors(generation, lambda v: v.__setitem__(3, 0.0))
    meta = json.loads((generation / "meta.json").read_text())
    meta["failed_embeddings"] = [3]
    _reseal_meta(generation, meta)
    kb.validate()


def test_validate_checks_offsets_point_at_line_starts(tmp_path: Path) -> None:
    kb, generation = _built(tmp_path)
    offsets = np.frombuffer((generation / "offsets.bin").read_bytes(), dtype="<u8").copy()
    offsets[2] += 1
    (generation / "offsets.bin").write_bytes(offsets.tobytes())
    with pytest.raises(IndexCorruptError, match="not at the start of a line"):
        kb.validate()


def test_validate_checks_lines_and_offsets_agree(tmp_path: Path) -> None:
    kb, generation = _built(tmp_path)
    with open(generation / "chunks.jsonl", "ab") as fh:
        fh.write(b'{"stray": "line"}\n')
    with pytest.raises(IndexCorruptError, match=r"lines but offsets\.bin"):
        kb.validate()


def test_validate_checks_counts_of_meta_and_file_spans(tmp_path: Path) -> None:
    kb, generation = _built(tmp_path)
    meta = json.loads((generation / "meta.json").read_text())
    first = sorted(meta["files"])[0]
    meta["files"][first]["chunk_end"] -= 1
    _reseal_meta(generation, meta)
    with pytest.raises(IndexCorruptError, match="chunk span of"):
        kb.validate()


_COUNT_OPENS = """
import collections, json, sys
from pathlib import Path
from kbgraph.retrieval._folder import IndexLayout
from kbgraph.retrieval._folder._generation import IndexReader
generation = sys.argv[2]
opens = collections.Counter()
def count(event, args):
    if event == "open" and isinstance(args[0], str) and args[0].startswith(generation):
        opens[args[0][len(generation) + 1 :]] += 1
sys.addaudithook(count)
IndexReader(IndexLayout(Path(sys.argv[1])), lock_timeout=5.0).close()
print(json.dumps(opens))
"""


def test_a_generation_held_in_memory_is_read_once_at_open(tmp_path: Path) -> None:
    """Each file is read by its loader, which hands the bytes it keeps to MappedFiles for
    their checksum: the checksums once read every file a second time (twice the I/O of
    an open, and the checksum of bytes other than those kept)."""
    _, generation = _built(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", _COUNT_OPENS, str(generation.parent), str(generation)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    opens = json.loads(done.stdout)
    files = {str(p.relative_to(generation)) for p in generation.rglob("*") if p.is_file()}
    assert set(opens) == files  # every file read (checksummed), none more than once
    assert set(opens.values()) == {1}, opens
