"""Nothing is read from outside the folder, whatever happens between the scan and the read:
a real process swaps files for links to a file outside while runs index the folder, a
folder on a file's path becomes a link, a file grows to a gigabyte; and no other kbgraph
index is ever indexed as documents."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kbgraph.retrieval import KnowledgeBase
from kbgraph.retrieval._progress import ProgressEvent
from tests.faults.conftest import INDEX, ROOT, cli, write_docs

pytestmark = [pytest.mark.faults, pytest.mark.timeout(120)]
SECRET = "TOPSECRET-OUTSIDE-THE-FOLDER"
VICTIMS = 60

# Swaps each victim file for a link to the secret and back, as fast as it can, until the
# stop file appears: four renames per victim and cycle, all within one file system.
SWAPPER = textwrap.dedent(
    """
    import os, sys
    folder, stash, stop = sys.argv[1:4]
    names = sorted(n for n in os.listdir(folder) if n.startswith("victim"))
    print("ready", flush=True)
    while not os.path.exists(stop):
        for n in names:
            live, file, link = (os.path.join(folder, n), os.path.join(stash, n + ".file"),
                                os.path.join(stash, n + ".link"))
            os.rename(live, file)
            os.rename(link, live)
            os.rename(live, link)
            os.rename(file, live)
    """
)


def _indexed_text(folder: Path) -> bytes:
    """The text of every chunk of every generation kept (not only the live one)."""
    return b"".join(p.read_bytes() for p in (folder / INDEX).glob("gen-*/chunks.jsonl"))


def test_a_racing_swapper_never_gets_a_file_outside_the_folder_indexed(tmp_path: Path) -> None:
    """Regression (issue 24, hole 1): `victim.md` replaced by a link to a file outside the
    folder between the scan and the read was followed, and search served that file. Here
    a real process swaps 60 files for such links and back while 15 runs index the folder."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(f"{SECRET}\n" * 20)
    folder = write_docs(
        tmp_path / "docs",
        {f"victim{i:02d}.md": f"# Victim {i}\n\nplain text {i}\n" for i in range(VICTIMS)},
    )
    stash = tmp_path / "stash"
    stash.mkdir()
    for i in range(VICTIMS):
        os.symlink(outside / "secret.txt", stash / f"victim{i:02d}.md.link")
    stop = tmp_path / "stop"
    swapper = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(folder), str(stash), str(stop)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert swapper.stdout is not None and swapper.stdout.readline().strip() == "ready"
        skipped: set[str] = set()
        with KnowledgeBase(folder, embedding=None) as kb:
            for _ in range(15):
                report = kb.index()
                skipped |= {s.reason for s in report.skipped}
                found = kb.search(SECRET, mode="bm25", top_k=50)
                assert not any(SECRET in r.chunk.text for r in found)
                assert SECRET.encode() not in _indexed_text(folder)
    finally:
        stop.touch()
        swapper.wait(timeout=30)
    assert swapper.returncode == 0
    assert skipped <= {"unreadable", "symlink-outside"}, skipped


def test_a_folder_swapped_for_a_link_after_the_scan_is_not_followed(tmp_path: Path) -> None:
    """A folder on the file's path (not the file itself) becomes a link out of the folder
    between the scan and the read."""
    outside = write_docs(tmp_path / "outside", {"guide/a.md": f"# A\n\n{SECRET}\n"})
    folder = write_docs(tmp_path / "docs", {"guide/a.md": "# A\n\nplain\n", "b.md": "# B\n\nb\n"})

    def swap(event: ProgressEvent) -> None:
        if event.stage == "scan" and event.done == event.total:
            (folder / "guide").rename(tmp_path / "moved")
            os.symlink(outside / "guide", folder / "guide")

    with KnowledgeBase(folder, embedding=None) as kb:
        report = kb.index(progress=swap)
        assert {s.path: s.reason for s in report.skipped}.get("guide/a.md") == "unreadable"
        assert not kb.search(SECRET, mode="bm25")
    assert SECRET.encode() not in _indexed_text(folder)


GROWER = textwrap.dedent(
    """
    import json, os, sys
    from kbgraph.retrieval import KnowledgeBase, ScanConfig
    folder = sys.argv[1]
    def grow(event):
        if event.stage == "scan" and event.done == event.total:
            os.truncate(os.path.join(folder, "grows.txt"), 1 << 30)  # sparse: 1 GiB of zeros
    with KnowledgeBase(folder, embedding=None, scan=ScanConfig(max_file_bytes=1_000_000)) as kb:
        report = kb.index(progress=grow)
    # VmHWM, not getrusage's ru_maxrss: Linux carries the parent's peak over exec into
    # ru_maxrss, so a child of a big pytest process reported the parent's ~1 GiB.
    with open("/proc/self/status") as fh:
        peak_mib = next(int(l.split()[1]) for l in fh if l.startswith("VmHWM:")) / 1024
    print(json.dumps({"skipped": {s.path: s.reason for s in report.skipped}, "peak": peak_mib}))
    """
)


def test_a_file_grown_to_a_gigabyte_after_the_scan_is_not_read(tmp_path: Path) -> None:
    """Regression (issue 24, hole 1): a file that grew past --max-file-size between the
    scan and the read was read whole (peak RSS 1,088 MB) before being skipped."""
    folder = write_docs(tmp_path / "docs", {"grows.txt": "small at scan time\n", "a.md": "# A\n"})
    proc = subprocess.run(
        [sys.executable, "-c", GROWER, str(folder)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=90,
    )
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    assert seen["skipped"] == {"grows.txt": "too-large"}, seen
    assert seen["peak"] < 500, seen  # MiB; reading the file whole would take 1,024 more


def test_another_kbgraph_index_is_never_indexed(tmp_path: Path) -> None:
    """Regression (issue 24, hole 8): `docs/sub/.kbgraph/gen-*/meta.json` was result #1
    for "engine_version format_version chunk_count". A nested index, and an index folder
    of another name (another folder's --index-dir), are skipped and reported."""
    folder = write_docs(
        tmp_path / "docs",
        {"sub/page.md": "# Page\n\nretry backoff\n", "top.md": "# Top\n\nretry policy\n"},
    )
    assert cli("index", str(folder / "sub"), "--embedding", "fake").code == 0
    other = write_docs(tmp_path / "other", {"o.md": "# O\n\nother folder\n"})
    index_dir = folder / "indexes" / "other"
    assert cli("index", str(other), "--embedding", "fake", "--index-dir", str(index_dir)).code == 0
    run = cli("index", str(folder), "--embedding", "fake", "--json")
    assert run.code == 0, run.stderr
    report = run.json()
    skipped = {s["path"]: s for s in report["skipped"]}
    assert skipped["sub/.kbgraph/"]["reason"] == "excluded-dir"
    assert skipped["indexes/other/"]["reason"] == "excluded-dir"
    assert "kbgraph index" in skipped["sub/.kbgraph/"]["detail"]
    assert report["fileCount"] == 2
    found = cli("search", str(folder), "engine_version format_version chunk_count", "--json")
    sources = [r["source"] for r in found.json()["results"]]
    assert not any(".kbgraph" in s or s.startswith("indexes/") for s in sources), sources
