"""Damage made to a generation's mapped files while a long-running reader has them open
(issue 42 holes 4 and 8): a shrunk file is an error naming it, never SIGBUS (in a child
process, which a signal would kill), and a BM25 column damaged in place after its first
check is refused as a fresh ``kbgraph search`` refuses it."""

from __future__ import annotations

import os
import subprocess
import sys
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
    print(len(kb.search("retry backoff", top_k=3, mode="hybrid")))
"""


@pytest.mark.parametrize(("limit_mb", "survives"), [(None, True), ("0", False)])
def test_a_file_shrunk_while_a_search_reads_it_is_no_signal_for_an_index_in_memory(
    docs: Path, limit_mb: str | None, survives: bool
) -> None:
    """The matrix rerun of hole 4: ``truncate`` racing the searches of a long-running MCP
    server killed it with SIGBUS (exit -7) after 13-50 calls. A generation up to
    KBGRAPH_IN_MEMORY_MAX_MB is read, not mapped; a mapped one (limit 0) still dies, as
    the docs say."""
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
    if survives:
        assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
        assert int(done.stdout.strip()) == 3  # searched what was read at open
    else:
        assert done.returncode == -7, (done.returncode, done.stderr[-2000:])  # SIGBUS


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
