"""A hostile documents folder: every file that is not text is refused with its reason,
nothing blocks (a FIFO, a read that never ends), real non-UTF-8 text is still indexed, and
the folder is never changed."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from kbgraph.retrieval import KnowledgeBase
from kbgraph.retrieval._loaders import binary_reason
from kbgraph.retrieval._progress import ProgressEvent
from tests.faults.conftest import ROOT, cli, cli_process, snapshot, write_docs

pytestmark = [pytest.mark.faults, pytest.mark.timeout(60)]

FRENCH = "Le cœur a ses raisons que la raison ne connaît point. Où est l'hôtel ? Ça coûte 5 €.\n"
GERMAN = "Größere Straßen führen über die Brücke; die Maße sind in Metern angegeben.\n"


def random_binary_without_nul(size: int = 64 * 1024) -> bytes:
    """Random bytes with no NUL, whose first 8 KiB stay under the NUL-free sniff's 10 %
    control-byte threshold (about 9.8 % are control bytes): the case the sniff missed."""
    for seed in range(100):
        rng = random.Random(seed)
        data = bytes(rng.randrange(1, 256) for _ in range(size))
        if binary_reason(data) is None:
            return data
    raise AssertionError("no seed gave a sample under the sniff's threshold")


def hostile_files() -> dict[str, str | bytes]:
    return {
        "ok.md": "# Retry\n\nThe retry policy backs off exponentially.\n",
        "random.txt": random_binary_without_nul(),
        "latin1.txt": (FRENCH.replace("œ", "oe").replace("€", "EUR") * 40).encode("latin-1"),
        "cp1252.txt": (FRENCH.replace("\n", " \u201cquoted\u201d \u2013 done\r\n") * 40).encode(
            "cp1252"
        ),
        "german-latin1.md": (GERMAN * 40).encode("latin-1"),
        "nul.txt": b"text\0with a NUL\n",
        "empty.md": b"",
        "blank.md": b"  \n\t\n",
        ".env": "OPENAI_API_KEY=sk-secret\n",
        "keys/id_rsa": "-----BEGIN OPENSSH PRIVATE KEY-----\n",
        "big.txt": b"retry " * 400_000,  # 2.4 MB with --max-file-size 1000000
        "bad.pdf": b"%PDF-1.7\n garbage",
    }


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    folder = write_docs(tmp_path / "docs", hostile_files())
    os.mkfifo(folder / "pipe.md")
    os.symlink("/etc/passwd", folder / "passwd.md")
    os.symlink(folder / "ok.md", folder / "alias.md")
    (folder / "nested").mkdir()
    os.symlink(folder, folder / "nested" / "loop")  # a link loop, never followed
    return folder


EXPECTED = {
    "random.txt": "binary",
    "nul.txt": "binary",
    "empty.md": "empty",
    "blank.md": "empty",
    ".env": "secret",
    "keys/id_rsa": "secret",
    "big.txt": "too-large",
    "bad.pdf": "extract-failed",
    "pipe.md": "unreadable",
    "passwd.md": "symlink-outside",
}


def test_the_hostile_folder_is_indexed_in_a_real_process_without_hanging(hostile: Path) -> None:
    before = snapshot(hostile)
    args = ("index", str(hostile), "--embedding", "fake", "--max-file-size", "1000000")
    run = cli_process(*args, "--json", timeout=120)
    assert run.code == 0, run.stderr
    report = run.json()
    skipped = {s["path"]: s["reason"] for s in report["skipped"]}
    for path, reason in EXPECTED.items():
        assert skipped.get(path) == reason, (path, skipped)
    indexed = {"ok.md", "alias.md", "latin1.txt", "cp1252.txt", "german-latin1.md"}
    assert report["fileCount"] == len(indexed), report
    fallbacks = {w["path"] for w in report["warnings"] if w["reason"] == "decode-fallback"}
    assert fallbacks == {"latin1.txt", "cp1252.txt", "german-latin1.md"}
    again = cli_process(*args, "--json", timeout=120).json()
    assert again["embedded"] == 0 and again["reused"] == report["chunkCount"]
    assert snapshot(hostile) == before


def test_real_latin1_and_cp1252_text_is_searchable(hostile: Path) -> None:
    assert cli("index", str(hostile), "--embedding", "fake", "--max-file-size", "1000000").code == 0
    run = cli("search", str(hostile), "Straßen Brücke", "--mode", "bm25", "--json")
    assert run.json()["results"][0]["source"] == "german-latin1.md"
    run = cli("search", str(hostile), "hôtel raisons", "--mode", "bm25", "--top-k", "100", "--json")
    assert {r["source"] for r in run.json()["results"]} == {"latin1.txt", "cp1252.txt"}


def test_a_file_swapped_for_a_fifo_after_the_scan_never_blocks(tmp_path: Path) -> None:
    """The scan saw a regular file; before it is read it becomes a FIFO that no process
    writes: a plain open() would wait for a writer forever, holding the writer's lock."""
    folder = write_docs(tmp_path / "docs")
    victim = folder / "retry.md"

    def swap(event: ProgressEvent) -> None:
        if event.stage == "scan" and event.done == event.total:
            victim.unlink()
            os.mkfifo(victim)

    with KnowledgeBase(folder, embedding="fake") as kb:
        report = kb.index(progress=swap)
    assert {s.path: s.reason for s in report.skipped}["retry.md"] == "unreadable"
    assert report.stats.file_count == 3


def test_a_read_that_never_ends_is_given_up_after_the_timeout() -> None:
    """A descriptor whose read blocks (a pipe whose writer stays silent, as a hung network
    mount would) is abandoned after the timeout instead of blocking the run."""
    from kbgraph.retrieval._loaders._load import read_with_timeout

    read_end, write_end = os.pipe()
    try:
        started = time.monotonic()
        assert read_with_timeout(read_end, 0.3) is None
        assert time.monotonic() - started < 5
    finally:
        os.close(write_end)  # the abandoned reader sees end of file and closes its end
    for thread in threading.enumerate():
        if thread.name == "kbgraph-read":
            thread.join(5)


def test_a_file_its_user_could_not_read_is_indexed_once_its_permissions_are_fixed() -> None:
    """Regression (issue 20): a file skipped as unreadable was remembered with its size and
    mtime, which a chmod does not change, so it stayed skipped until it was edited, and the
    freshness check called the folder fresh. A real user who cannot read the file (as
    root, a child that drops to ``nobody``: root reads any file whatever its mode)."""
    top = Path(tempfile.mkdtemp(prefix="kbgraph-unreadable-"))  # not under pytest's 0700 tmp
    try:
        docs = {
            "open.md": "# Open\n\nAnyone may read this page.\n",
            "locked.md": "# Quokka\n\nThe quokka lives on Rottnest Island.\n",
        }
        folder, warm = write_docs(top / "docs", docs), write_docs(top / "warm", docs)
        if os.geteuid() == 0:
            top.chmod(0o755)
            for path in [folder, *folder.rglob("*")]:
                os.chown(path, 65534, 65534)
        proc = subprocess.run(
            [sys.executable, "-m", "tests.faults._unreadable_child", str(folder), str(warm)],
            capture_output=True,
            text=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            timeout=60,
        )
        assert proc.returncode == 0, proc.stderr
        seen = json.loads(proc.stdout)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    assert seen["first_skipped"] == {"locked.md": "unreadable"} and seen["first_files"] == 1
    assert seen["fresh_while_locked"]
    assert seen["after"] == seen["before"]  # the chmod changed neither size nor mtime
    assert not seen["fresh_after_chmod"]
    assert seen["second_skipped"] == {} and seen["second_files"] == 2
    assert seen["found"] == ["locked.md"]
