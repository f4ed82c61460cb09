"""Read leases on a memory-mapped generation (retrieval/_folder/_leases.py): a writer
waits for the searches in flight, the generation is then opened again, and where no lease
can be had the reason is kept (issue 42 hole 4)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kbgraph.errors import IndexCorruptError
from kbgraph.retrieval import KnowledgeBase
from kbgraph.retrieval._folder import IndexLayout
from kbgraph.retrieval._folder._generation import IndexReader
from kbgraph.retrieval._folder._leases import POLL_SECONDS, take_leases

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="file leases are Linux's")

_OPEN_FOR_WRITING = "import os, sys; os.close(os.open(sys.argv[1], os.O_RDWR))"


@pytest.fixture
def mapped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KBGRAPH_IN_MEMORY_MAX_MB", "0")  # every generation mapped
    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(20):
        (folder / f"d{i}.md").write_text(f"# Doc {i}\n\nretry backoff {i}\n", encoding="utf-8")
    KnowledgeBase(folder, embedding="fake").index()
    return folder


def _reader(folder: Path) -> IndexReader:
    return IndexReader(IndexLayout(folder / ".kbgraph"), lock_timeout=5.0)


def _writer(path: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", _OPEN_FOR_WRITING, str(path)])


def test_a_writer_waits_for_the_search_in_flight_then_the_generation_is_broken(
    mapped: Path,
) -> None:
    reader = _reader(mapped)
    try:
        vectors = reader.path / "vectors.bin"
        assert reader.mapped.leases is not None, reader.mapped.unprotected
        with reader.reading():  # a search in flight
            writer = _writer(vectors)
            time.sleep(10 * POLL_SECONDS)
            assert writer.poll() is None  # held back while the maps are read
        assert writer.wait(timeout=30) == 0  # let go once the search is done
        assert reader.outdated
        with (
            pytest.raises(IndexCorruptError, match="opened it for writing") as caught,
            reader.reading(),
        ):
            pass
        assert str(vectors) in str(caught.value) and "\n" not in str(caught.value)
    finally:
        reader.close()


def test_a_writer_on_an_idle_reader_waits_one_poll_and_the_next_search_reopens(
    mapped: Path,
) -> None:
    with KnowledgeBase(mapped, embedding="fake") as kb:
        assert kb.search("retry backoff", top_k=3)
        vectors = next((mapped / ".kbgraph").glob("gen-*/vectors.bin"))
        start = time.monotonic()
        assert _writer(vectors).wait(timeout=30) == 0
        assert time.monotonic() - start < 30  # not the kernel's 45 s lease-break time
        # Opened for writing but unchanged: the generation opens again and searches on.
        assert kb.search("retry backoff", top_k=3)


def test_a_file_open_for_writing_is_refused_at_open_naming_it(mapped: Path) -> None:
    vectors = next((mapped / ".kbgraph").glob("gen-*/vectors.bin"))
    with open(vectors, "r+b"), pytest.raises(IndexCorruptError, match="open for writing") as caught:
        _reader(mapped)
    assert str(vectors) in str(caught.value)
    _reader(mapped).close()  # closed again: it opens


def test_a_generation_held_in_memory_takes_no_lease(
    mapped: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KBGRAPH_IN_MEMORY_MAX_MB")
    reader = _reader(mapped)
    try:
        assert reader.mapped.in_memory and reader.mapped.leases is None
    finally:
        reader.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs another user to be")
def test_a_file_of_another_user_takes_no_lease_and_says_why(tmp_path: Path) -> None:
    path = tmp_path / "vectors.bin"
    path.write_bytes(b"x" * 64)
    path.chmod(0o644)
    tmp_path.chmod(0o755)
    script = (  # imported as root: the interpreter's own folders may be closed to nobody
        "import os, sys; from pathlib import Path;"
        "from kbgraph.retrieval._folder._leases import take_leases;"
        "os.setgid(65534); os.setuid(65534);"
        "leases, why = take_leases([Path(sys.argv[1])]); print(leases is None, why)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("True") and "does not own" in done.stdout


def test_leases_are_let_go_when_the_reader_closes(tmp_path: Path) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(b"x" * 64)
    leases, why = take_leases([path])
    assert leases is not None, why
    leases.close()
    start = time.monotonic()
    assert _writer(path).wait(timeout=30) == 0
    assert time.monotonic() - start < 10  # no lease left to break


def test_a_reader_closed_while_searched_keeps_its_leases_until_the_search_ends(
    mapped: Path,
) -> None:
    """A long-running reader closes its old snapshot when it opens a newer one, while
    another thread may still be searching the old: letting the leases go at close let a
    truncation through under that search."""
    reader = _reader(mapped)
    vectors = reader.path / "vectors.bin"
    with reader.reading():  # a search in another thread, still running
        reader.close()
        writer = _writer(vectors)
        time.sleep(10 * POLL_SECONDS)
        assert writer.poll() is None
    assert writer.wait(timeout=30) == 0


_FORKED = """
import os, subprocess, sys, time
from pathlib import Path
from kbgraph.retrieval._folder import IndexLayout
from kbgraph.retrieval._folder._generation import IndexReader
reader = IndexReader(IndexLayout(Path(sys.argv[1])), lock_timeout=5.0)
vectors = str(reader.path / "vectors.bin")
pid = os.fork()
if pid == 0:  # the child searches; the parent, idle, would let a shared lease go at once
    with reader.reading():
        writer = subprocess.Popen([sys.executable, "-c", sys.argv[2], vectors])
        time.sleep(0.5)
        print("held" if writer.poll() is None else "let through", flush=True)
    writer.wait()
    os._exit(0)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def test_a_forked_child_holds_leases_of_its_own(mapped: Path) -> None:
    """A child forked after the open (a pre-forking server) inherits descriptors that
    share the parent's leases, which the parent lets go by its own searches: the child
    takes its own, so a writer waits for the child's search too."""
    done = subprocess.run(
        [sys.executable, "-c", _FORKED, str(mapped / ".kbgraph"), _OPEN_FOR_WRITING],
        capture_output=True,
        text=True,
        timeout=60,
        env={
            **os.environ,
            "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
            "KBGRAPH_IN_MEMORY_MAX_MB": "0",
        },
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "held"
