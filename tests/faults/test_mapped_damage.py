"""Damage made to a generation's mapped files while a long-running reader has them open
(issue 42 holes 4 and 8): a shrunk file is an error naming it, never SIGBUS (in a child
process, which a signal would kill), and a BM25 column damaged in place after its first
check is refused as a fresh ``kbgraph search`` refuses it."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from kbgraph.errors import IndexCorruptError
from kbgraph.retrieval import KnowledgeBase
from tests.faults.conftest import ROOT, generation

pytestmark = [pytest.mark.faults]

_READER = """
import os, sys
from kbgraph.errors import IndexCorruptError
from kbgraph.retrieval import KnowledgeBase
folder, name = sys.argv[1], sys.argv[2]
with KnowledgeBase(folder, embedding="fake") as kb:
    assert kb.search("retry backoff", top_k=3, mode="hybrid")
    path = os.path.join(sys.argv[3], name)
    os.truncate(path, os.path.getsize(path) // 3)
    try:
        kb.search("retry backoff", top_k=3, mode="hybrid")
    except IndexCorruptError as exc:
        print("refused:", exc)
"""


@pytest.mark.parametrize("name", ["vectors.bin", "chunks.jsonl", "bm25/bm25.data.npy"])
def test_a_file_shrunk_under_a_reader_is_an_error_naming_it_not_a_signal(
    docs: Path, name: str
) -> None:
    KnowledgeBase(docs, embedding="fake").index()
    gen = generation(docs)
    done = subprocess.run(
        [sys.executable, "-c", _READER, str(docs), name, str(gen)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"},
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])  # -7: SIGBUS
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("refused:"), done.stdout
    assert name.rsplit("/", 1)[-1] in lines[0] and "truncated" in lines[0]


_RACE = """
import os, sys
from kbgraph.errors import IndexCorruptError
from kbgraph.retrieval import KnowledgeBase
from kbgraph.retrieval._folder import _mapped
folder, gen = sys.argv[1], sys.argv[2]
with KnowledgeBase(folder, embedding="fake") as kb:
    assert kb.search("retry backoff", top_k=3, mode="hybrid")
    # The file shrinks after the check before a search and while the search reads: the
    # window no check can close (the matrix rerun killed the MCP server this way).
    _mapped.MappedFiles.changed = lambda self: False
    for name in ("vectors.bin", "chunks.jsonl", "bm25/bm25.data.npy"):
        os.truncate(os.path.join(gen, name), 0)
    try:
        print(len(kb.search("retry backoff", top_k=3, mode="hybrid")))
    except IndexCorruptError as exc:
        print("refused:", exc)
"""


@pytest.mark.parametrize(("limit_mb", "survives"), [(None, True), ("0", False)])
def test_a_file_shrunk_while_a_search_reads_it_is_no_signal(
    docs: Path, limit_mb: str | None, survives: bool
) -> None:
    """The matrix rerun of hole 4: ``truncate`` racing the searches of a long-running MCP
    server killed it with SIGBUS (exit -7) after 13-50 calls. A generation up to
    KBGRAPH_IN_MEMORY_MAX_MB is read, not mapped; a mapped one (limit 0) holds leases, so
    the truncation waits for the lease to go and the next search is refused."""
    KnowledgeBase(docs, embedding="fake").index()
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"}
    if limit_mb is not None:
        env["KBGRAPH_IN_MEMORY_MAX_MB"] = limit_mb
    done = subprocess.run(
        [sys.executable, "-c", _RACE, str(docs), str(generation(docs))],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=env,
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])  # -7: SIGBUS
    if survives:
        assert int(done.stdout.strip()) == 3  # searched what was read at open
    else:  # opened again for this search: the first truncated file it reads is named
        assert done.stdout.startswith("refused:") and "chunks.jsonl" in done.stdout, done.stdout


_LOOP = """
import os, sys
from kbgraph.errors import IndexCorruptError
from kbgraph.retrieval import KnowledgeBase
folder, stop = sys.argv[1], sys.argv[2]
answered = refused = 0
with KnowledgeBase(folder, embedding="fake") as kb:
    assert kb.search("retry backoff", top_k=3, mode="vector")
    print("ready", flush=True)
    while not os.path.exists(stop):
        try:
            kb.search(f"retry backoff {answered + refused}", top_k=3, mode="vector")
            answered += 1
        except IndexCorruptError:
            refused += 1
    print(answered, refused)
    try:
        kb.search("retry backoff", top_k=3, mode="vector")
    except IndexCorruptError as exc:
        print("refused:", exc)
"""

_CHURN = """
import os, sys, time
path, cycles = sys.argv[1], int(sys.argv[2])
original = open(path, "rb").read()
for _ in range(cycles):
    os.truncate(path, 0)
    time.sleep(0.002)
    with open(path, "r+b") as fh:
        fh.write(original)
    time.sleep(0.002)
os.truncate(path, 0)
"""


@dataclass(frozen=True, slots=True)
class MappedIndex:
    """A folder indexed big enough that a search reads the maps long enough to be hit
    (3000 chunks, 4.6 MB of vectors), its generation's ``vectors.bin``, and the
    environment of a child that opens it mapped (KBGRAPH_IN_MEMORY_MAX_MB=0), so holding
    read leases: the one setup of the lease tests."""

    folder: Path
    vectors: Path
    env: dict[str, str]


@pytest.fixture
def mapped(tmp_path: Path) -> MappedIndex:
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(300):
        part = "retry backoff exponential number {} {} " + "lorem ipsum " * 20
        text = "".join(f"# Part {i}.{j}\n\n{part.format(i, j)}\n\n" for j in range(10))
        (folder / f"doc-{i:03d}.md").write_text(text, encoding="utf-8")
    KnowledgeBase(folder, embedding="fake").index()
    env = {
        "PYTHONPATH": str(ROOT),
        "PATH": "/usr/bin:/bin",
        "HF_HUB_OFFLINE": "1",
        "KBGRAPH_IN_MEMORY_MAX_MB": "0",
    }
    return MappedIndex(folder, generation(folder) / "vectors.bin", env)


def test_a_long_running_reader_outlives_a_truncation_racing_its_searches(
    tmp_path: Path, mapped: MappedIndex
) -> None:
    """Issue 42 hole 4 for a mapped generation (KBGRAPH_IN_MEMORY_MAX_MB=0): a reader
    searching in a loop while another process truncates and restores vectors.bin died of
    SIGBUS after ~26 searches (the probe's MCP server, exit -7). Under read leases the
    truncation waits until no search reads the maps; the reader lives, and a search once
    the file stays truncated is the one-line error naming it."""
    vectors, stop = mapped.vectors, tmp_path / "stop"
    reader = subprocess.Popen(
        [sys.executable, "-c", _LOOP, str(mapped.folder), str(stop)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=mapped.env,
    )
    try:
        assert reader.stdout is not None and reader.stdout.readline() == "ready\n"
        churn = subprocess.run(
            [sys.executable, "-c", _CHURN, str(vectors), "100"],
            timeout=120,
            cwd=ROOT,
            env=mapped.env,
        )
        assert churn.returncode == 0
        stop.touch()
        out, err = reader.communicate(timeout=120)
    finally:
        reader.kill()
        reader.wait()
    assert reader.returncode == 0, (reader.returncode, err[-2000:])  # -7: SIGBUS
    counts, final = out.strip().splitlines()
    answered, refused = map(int, counts.split())
    assert answered + refused > 0  # it searched while the file was truncated and restored
    assert final.startswith("refused:") and str(vectors) in final, final
    assert "\n" not in final


@pytest.mark.parametrize("mtime", ["new", "put back"])
def test_bm25_damage_after_the_first_check_is_refused_like_a_fresh_search(
    docs: Path, mtime: str
) -> None:
    """``put back``: the damage's mtime reset to the one before (``cp -p``, ``rsync -t``,
    ``touch -r``) was served with a score of 3e38 while a fresh search refused it: only
    the mtime was compared, and the ctime (which nobody can set) was not."""
    KnowledgeBase(docs, embedding="fake").index()
    data = generation(docs) / "bm25" / "bm25.data.npy"
    with KnowledgeBase(docs, embedding="fake") as kb:
        assert kb.search("retry", top_k=3, mode="bm25")  # the columns of 'retry' checked
        before = os.stat(data)
        array = np.load(data, mmap_mode="r+")
        array[:] = 3.0e38  # every score, in place: same size, new mtime
        array.flush()
        del array
        if mtime == "put back":
            os.utime(data, ns=(before.st_atime_ns, before.st_mtime_ns))
            assert os.stat(data).st_mtime_ns == before.st_mtime_ns
        with pytest.raises(IndexCorruptError, match="checksum"):
            kb.search("retry", top_k=3, mode="bm25")
    with KnowledgeBase(docs, embedding="fake") as fresh, pytest.raises(IndexCorruptError):
        fresh.search("retry", top_k=3, mode="bm25")


_VALIDATE = """
import os, subprocess, sys, time
from kbgraph.errors import IndexCorruptError
from kbgraph.retrieval import KnowledgeBase
from kbgraph.retrieval._folder._chunks import ChunkReader
folder, vectors = sys.argv[1], sys.argv[2]
check_offsets = ChunkReader.check_offsets
def truncating(self):
    # Another process truncates vectors.bin as the full check starts reading the maps,
    # and has time to finish unless something holds it back until the check is done.
    truncate = f"import os; os.truncate({vectors!r}, 0)"
    subprocess.Popen([sys.executable, "-c", truncate])
    time.sleep(1.0)
    return check_offsets(self)
ChunkReader.check_offsets = truncating
with KnowledgeBase(folder, embedding="fake") as kb:
    kb.validate()
    print("validated")
    time.sleep(0.5)
    try:
        kb.search("retry backoff", top_k=3, mode="vector")
    except IndexCorruptError as exc:
        print("refused:", exc)
"""


def test_a_full_check_holds_the_leases_while_it_reads_the_maps(mapped: MappedIndex) -> None:
    """``stats --validate`` (``KnowledgeBase.validate``) reads every file of the
    generation outside a search: a truncation then was let through at once and the check
    died of SIGBUS on vectors.bin. The check holds the leases like a search."""
    done = subprocess.run(
        [sys.executable, "-c", _VALIDATE, str(mapped.folder), str(mapped.vectors)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=mapped.env,
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])  # -7: SIGBUS
    validated, refused = done.stdout.strip().splitlines()
    assert validated == "validated"
    assert refused.startswith("refused:") and str(mapped.vectors) in refused, refused


_REINDEX = """
import os, subprocess, sys, time
from kbgraph.errors import IndexCorruptError
from kbgraph.retrieval import KnowledgeBase
from kbgraph.retrieval._folder._generation import IndexReader
folder, vectors = sys.argv[1], sys.argv[2]
chunk, started = IndexReader.chunk, []
def truncating(self, row):
    if not started:  # as the run reads the first reused file's rows
        truncate = f"import os; os.truncate({vectors!r}, 0)"
        started.append(subprocess.Popen([sys.executable, "-c", truncate]))
        time.sleep(1.0)
    return chunk(self, row)
IndexReader.chunk = truncating
try:
    KnowledgeBase(folder, embedding="fake").index()
    print("indexed")
except IndexCorruptError as exc:
    print("refused:", exc)
"""


def test_an_indexing_run_holds_the_leases_while_it_reuses_rows(mapped: MappedIndex) -> None:
    """An indexing run reads the previous generation's vectors to reuse them, outside any
    search: a truncation then was let through at once and the run died of SIGBUS. It
    holds the leases for each file's rows; the truncation waits, and the run stops with
    the error naming the file (the next run repairs it)."""
    changed = mapped.folder / "doc-000.md"
    changed.write_text("# Changed\n\nretry later\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", _REINDEX, str(mapped.folder), str(mapped.vectors)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=mapped.env,
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])  # -7: SIGBUS
    assert done.stdout.startswith("refused:") and str(mapped.vectors) in done.stdout, done.stdout


_SUMS = """
import os, sys
from kbgraph.retrieval import KnowledgeBase
from kbgraph.retrieval._folder import _mapped
folder, gen = sys.argv[1], sys.argv[2]
with KnowledgeBase(folder, embedding="fake") as kb:
    assert kb.search("retry", top_k=3, mode="bm25")
    _mapped.MappedFiles.changed = lambda self: False  # shrunk while a search reads it
    os.truncate(os.path.join(gen, "bm25", "bm25.sums.npy"), 0)
    # A term not searched yet: its column's checksum is read now.
    print(len(kb.search("tokens expire hourly", top_k=3, mode="bm25")))
"""


def test_the_bm25_column_checksums_of_an_index_in_memory_are_in_memory_too(
    docs: Path,
) -> None:
    """A generation held in memory still mapped bm25.sums.npy (read for each column a
    query reads first), so truncating it under a long-running reader was SIGBUS."""
    KnowledgeBase(docs, embedding="fake").index()
    done = subprocess.run(
        [sys.executable, "-c", _SUMS, str(docs), str(generation(docs))],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"},
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])  # -7: SIGBUS
    assert int(done.stdout.strip()) >= 1  # searched what was read at open


_OPEN_AND_SEARCH = """
import sys
from kbgraph.retrieval import KnowledgeBase
with KnowledgeBase(sys.argv[1], embedding="fake") as kb:
    print(len(kb.search("retry backoff", top_k=3)))
"""


@pytest.mark.parametrize("limit_mb", [None, "0"])
def test_a_fifo_planted_in_a_generation_does_not_hang_the_open(
    docs: Path, limit_mb: str | None
) -> None:
    """The checksums of a generation held in memory opened every entry of its folder,
    and an open of a FIFO waits for a writer forever; the leases of a mapped one opened
    every entry too. Only regular files are read."""
    KnowledgeBase(docs, embedding="fake").index()
    os.mkfifo(generation(docs) / "stray")
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"}
    if limit_mb is not None:
        env["KBGRAPH_IN_MEMORY_MAX_MB"] = limit_mb
    done = subprocess.run(
        [sys.executable, "-c", _OPEN_AND_SEARCH, str(docs)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env=env,
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert int(done.stdout.strip()) >= 1
