"""Real processes: an indexer killed with SIGKILL at random moments never leaves an index
that fails to open, and the next `kbgraph index` completes; writers indexing different
versions of a folder while readers read never let a reader see a torn index."""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kbgraph.retrieval import KnowledgeBase
from kbgraph.retrieval._folder import IndexLayout
from kbgraph.retrieval._segments import normalize_newlines
from kbgraph.testing import FakeEmbeddings
from tests.integration._corpus import write_corpus

pytestmark = pytest.mark.integration
HERE = Path(__file__).parent
CHILD = HERE / "_index_child.py"
READER = HERE / "_reader_child.py"
ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _spawn(
    folder: Path, rebuild: bool = False, versions: tuple[int, ...] = ()
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(CHILD), str(folder), "rebuild" if rebuild else "update"]
        + [str(v) for v in versions],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )


def _cli_index(folder: Path) -> dict[str, object]:
    """`kbgraph index` as a user runs it, to completion. ``fake`` is the spec of the
    child's SlowFake (both are ``fake:bow-384``), so this run updates the index in place."""
    proc = subprocess.run(
        [sys.executable, "-m", "kbgraph", "index", str(folder), "--embedding", "fake", "--json"],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    data: dict[str, object] = json.loads(proc.stdout)
    return data


def _assert_index_sound(folder: Path) -> None:
    """Opens, validates, searches; chunks of files unchanged since indexing match bytes."""
    kb = KnowledgeBase(folder, embedding=FakeEmbeddings())
    try:
        kb.validate()
        results = kb.search("retry backoff latency", top_k=5)
        assert results
        files = kb.indexed_files()
        for r in results:
            path = folder / r.chunk.source
            raw = path.read_bytes() if path.exists() else b""
            if hashlib.sha256(raw).hexdigest() != files[r.chunk.source].sha256:
                continue  # rewritten or deleted after this generation was built
            span = normalize_newlines(raw[r.chunk.byte_start : r.chunk.byte_end].decode())
            assert span == r.chunk.text
    finally:
        kb.close()


def _kill_when(proc: subprocess.Popen[str], stage: str | None, delay: float) -> str:
    """SIGKILL ``delay`` seconds after ``stage`` first shows (or after spawn); return the
    last stage the child reported before it died: "start" when the kill came before the
    run began, "finished" when it came late."""
    assert proc.stdout is not None
    last = "start"
    if stage is None:
        time.sleep(delay)
    else:
        for line in proc.stdout:
            last = line.split()[0]
            if last in (stage, "finished"):
                break
        time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    rest, _ = proc.communicate(timeout=30)
    for line in rest.splitlines():
        last = line.split()[0] if line.strip() else last
    return last


# Kill delays aimed at the phases as measured (40 files, slow fake embedder): embedding
# lasts ~0.5 s, writing a generation ~12 ms, the whole run ~0.9 s after spawn.
_AIMS: dict[str | None, tuple[float, float]] = {
    "embed": (0.0, 0.45),
    "write": (0.0, 0.008),
    None: (0.3, 0.9),
}
_MID_RUN = {"scan", "load", "embed", "write"}


def test_kill_at_random_moments_leaves_an_index_that_opens(tmp_path: Path) -> None:
    """SIGKILL of ``kbgraph index`` at random moments never leaves an index that fails to
    open, and the next run completes it. Over 30 s (~70 s): each kill is a fresh CLI
    process (its imports and model load), and it keeps killing until 20 kills landed mid-run
    (4 while embedding, 4 while writing) because a kill that lands before or after the run
    proves nothing."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    write_corpus(folder, 0)
    first = _spawn(folder)
    assert first.wait(timeout=300) == 0, first.stderr.read() if first.stderr else ""
    rng = random.Random(1234)
    stages: list[str | None] = ["embed", "write", None]
    died_in: list[str] = []
    # Keep killing until 20 kills landed mid-run, at least 4 of them mid-embedding and 4
    # mid-write: a kill that came too early or too late proves nothing, and timing on a
    # loaded CI machine varies. The cap keeps a broken child from looping forever.
    for attempt in range(80):
        interrupted = [stage for stage in died_in if stage in _MID_RUN]
        if (
            len(interrupted) >= 20
            and interrupted.count("embed") >= 4
            and interrupted.count("write") >= 4
        ):
            break
        write_corpus(folder, attempt + 1, files=rng.randint(30, 45))
        proc = _spawn(folder, rebuild=attempt % 4 == 3)
        stage = stages[attempt % 3]
        died_in.append(_kill_when(proc, stage, rng.uniform(*_AIMS[stage])))
        _assert_index_sound(folder)
        # The next `kbgraph index` completes, brings the index up to date, and keeps it
        # (the kill must not have left anything that forces a rebuild).
        report = _cli_index(folder)
        assert report["rebuilt"] is False and report["staleFiles"] == 0, report
        _assert_index_sound(folder)
    interrupted = [stage for stage in died_in if stage in _MID_RUN]
    assert len(interrupted) >= 20, died_in
    assert interrupted.count("embed") >= 4 and interrupted.count("write") >= 4, died_in
    final = _spawn(folder)
    out, err = final.communicate(timeout=300)
    assert final.returncode == 0, err
    assert "finished" in out
    _assert_index_sound(folder)
    # What the killed writers left unpublished is gone; the kept versions stay (default 3).
    root = folder / ".kbgraph"
    leftovers = sorted(p.name for p in root.iterdir() if p.name.startswith("gen-"))
    published = sorted(IndexLayout(root).history_names())  # HISTORY ends with its checksum
    assert leftovers == published and 1 <= len(leftovers) <= 3, (leftovers, published)


def test_two_writers_and_readers_at_once(tmp_path: Path) -> None:
    """Two writers index different versions of the corpus (each rewrites the folder before
    each run) while readers open generation after generation and check that what they read
    is one generation: chunk texts from the file versions meta.json names, vectors that are
    the embedding of those texts, counts that agree (``_reader_child.py``)."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    write_corpus(folder, 0)
    assert _spawn(folder).wait(timeout=300) == 0
    stop = tmp_path / "stop"
    rounds = 4
    max_version = 2 * rounds
    readers = [
        subprocess.Popen(
            [sys.executable, str(READER), str(folder), str(stop), str(max_version)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=ENV,
        )
        for _ in range(3)
    ]
    odd = tuple(range(1, max_version + 1, 2))
    even = tuple(range(2, max_version + 1, 2))
    writers = [_spawn(folder, versions=odd), _spawn(folder, rebuild=True, versions=even)]
    for proc in writers:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        assert out.count("finished") == rounds, out
    stop.touch()
    for proc in readers:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        generations, checked = int(out.split()[1]), int(out.split()[3])
        # Each reader saw writers publish while it read (else it proved nothing).
        assert generations >= 2 and checked >= generations, out
    _assert_index_sound(folder)
