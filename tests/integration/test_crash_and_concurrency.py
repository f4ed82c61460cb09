"""Real processes: an indexer killed with SIGKILL at random moments never leaves an index
that fails to open, and writers and readers running together never see a torn index."""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from retrieval import KnowledgeBase
from retrieval.embeddings import FakeEmbeddings
from retrieval.segments import normalize_newlines

pytestmark = pytest.mark.integration
CHILD = Path(__file__).with_name("_index_child.py")
ROOT = Path(__file__).resolve().parents[2]


def _write_corpus(folder: Path, generation: int, files: int = 40) -> None:
    rng = random.Random(generation)
    words = [
        "retry",
        "backoff",
        "token",
        "cache",
        "index",
        "shard",
        "replica",
        "latency",
        "東京",
        "café",
        "naïve",
    ]
    for i in range(files):
        lines = [
            " ".join(rng.choice(words) for _ in range(12)) + f" file{i} gen{generation}"
            for _ in range(30)
        ]
        sep = "\r\n" if i % 3 == 0 else "\n"
        (folder / f"doc_{i:03d}.md").write_bytes(sep.join(lines).encode("utf-8"))


def _spawn(folder: Path, rebuild: bool = False) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, str(CHILD), str(folder), "rebuild" if rebuild else "update"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _assert_index_sound(folder: Path) -> None:
    """Opens, validates, searches; chunks of files unchanged since indexing match bytes."""
    kb = KnowledgeBase(folder, embedding=FakeEmbeddings())
    try:
        kb.validate()
        results = kb.search("retry backoff latency", top_k=5)
        assert results
        files = kb.indexed_files()
        for r in results:
            raw = (folder / r.chunk.source).read_bytes()
            if hashlib.sha256(raw).hexdigest() != files[r.chunk.source].sha256:
                continue  # rewritten after this generation was built
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
    folder = tmp_path / "corpus"
    folder.mkdir()
    _write_corpus(folder, 0)
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
        _write_corpus(folder, attempt + 1, files=rng.randint(30, 45))
        proc = _spawn(folder, rebuild=attempt % 4 == 3)
        stage = stages[attempt % 3]
        died_in.append(_kill_when(proc, stage, rng.uniform(*_AIMS[stage])))
        _assert_index_sound(folder)
    interrupted = [stage for stage in died_in if stage in _MID_RUN]
    assert len(interrupted) >= 20, died_in
    assert interrupted.count("embed") >= 4 and interrupted.count("write") >= 4, died_in
    final = _spawn(folder)
    out, err = final.communicate(timeout=300)
    assert final.returncode == 0, err
    assert "finished" in out
    _assert_index_sound(folder)
    leftovers = [p.name for p in (folder / ".kbgraph").iterdir() if p.name.startswith("gen-")]
    assert len(leftovers) == 1, leftovers


def _reader_loop(folder: Path, seconds: float) -> subprocess.Popen[str]:
    code = f"""
import time, sys
from retrieval import KnowledgeBase
from retrieval.embeddings import FakeEmbeddings
from retrieval.segments import normalize_newlines
from pathlib import Path
folder = Path({str(folder)!r})
kb = KnowledgeBase(folder, embedding=FakeEmbeddings())
end = time.monotonic() + {seconds}
n = 0
while time.monotonic() < end:
    for r in kb.search("retry backoff latency", top_k=5):
        raw = (folder / r.chunk.source).read_bytes()
        span = normalize_newlines(raw[r.chunk.byte_start:r.chunk.byte_end].decode())
        assert span == r.chunk.text, (r.chunk.source, r.chunk.byte_start)
    n += 1
print("searches", n)
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_two_writers_and_readers_at_once(tmp_path: Path) -> None:
    folder = tmp_path / "corpus"
    folder.mkdir()
    _write_corpus(folder, 0)
    assert _spawn(folder).wait(timeout=300) == 0
    readers = [_reader_loop(folder, 8.0) for _ in range(3)]
    writers = [_spawn(folder, rebuild=True) for _ in range(2)]
    for proc in writers + readers:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        if proc in readers:
            assert int(out.split()[-1]) > 0, out
    _assert_index_sound(folder)
