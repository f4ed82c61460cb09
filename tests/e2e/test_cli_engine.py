"""The engine's CLI as a user runs it: real subprocesses, real local model."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kbgraph.retrieval._segments import normalize_newlines

pytestmark = pytest.mark.e2e
HTTPX_DOCS = Path(__file__).resolve().parents[3] / "shared" / "data" / "corpora" / "httpx-docs"


def kbgraph(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "kbgraph", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def _lines(path: Path, start: int, end: int) -> str:
    text = normalize_newlines(path.read_bytes().decode("utf-8"))
    return "\n".join(text.split("\n")[start - 1 : end])


@pytest.fixture(scope="module")
def httpx_docs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy in a temporary folder: the shared data stays read-only and unindexed."""
    if not HTTPX_DOCS.is_dir():
        pytest.skip(f"{HTTPX_DOCS} is missing (../shared beside the repo)")
    target = tmp_path_factory.mktemp("corpora") / "httpx-docs"
    shutil.copytree(HTTPX_DOCS, target)
    return target


def test_index_then_search_cites_lines_that_contain_the_text(httpx_docs: Path) -> None:
    """``kbgraph index`` then ``search`` in each mode on the real httpx docs, as a user runs
    them. Over 30 s (~70 s on 2 busy cores): it embeds the whole folder (24 files, over 100
    chunks) with the local model in a fresh process, the one full real index of the suite."""
    first = json.loads(kbgraph("index", str(httpx_docs), "--json").stdout)
    assert first["fileCount"] == 24 and first["chunkCount"] > 100
    assert first["embedded"] == first["chunkCount"] and first["reused"] == 0
    for key in ("indexSize", "lastIndexed", "staleFiles", "skipped"):
        assert key in first
    for query, mode in [
        ("How do I set a timeout?", "hybrid"),
        ("HTTP/2 support", "vector"),
        ("proxies environment variables", "bm25"),
    ]:
        out = json.loads(
            kbgraph(
                "search", str(httpx_docs), query, "--top-k", "5", "--mode", mode, "--json"
            ).stdout
        )
        assert len(out["results"]) == 5
        for r in out["results"]:
            assert set(r) >= {
                "text",
                "score",
                "source",
                "line_start",
                "line_end",
                "chunk_id",
                "section",
                "page",
                "ranks",
            }
            assert r["text"] in _lines(httpx_docs / r["source"], r["line_start"], r["line_end"])


def test_search_with_convex_fusion_and_weights(httpx_docs: Path) -> None:
    kbgraph("index", str(httpx_docs), "--json")
    args = ["search", str(httpx_docs), "How do I set a timeout?", "--mode", "hybrid", "--json"]
    convex = json.loads(
        kbgraph(
            *args, "--fusion", "convex", "--weight", "vector=0.7", "--weight", "bm25=0.3"
        ).stdout
    )["results"]
    assert len(convex) == 5 and all(set(r["ranks"]) <= {"vector", "bm25"} for r in convex)
    assert all(0.0 <= r["score"] <= 1.0 for r in convex)
    bad = kbgraph(*args, "--weight", "vectors=1", check=False)
    assert bad.returncode == 2 and "RANKER=W" in bad.stderr


def test_second_run_embeds_nothing_and_an_edit_only_its_chunks(httpx_docs: Path) -> None:
    kbgraph("index", str(httpx_docs), "--json")
    again = json.loads(kbgraph("index", str(httpx_docs), "--json").stdout)
    assert again["embedded"] == 0 and again["reused"] == again["chunkCount"]
    target = httpx_docs / "http2.md"
    target.write_text(target.read_text() + "\n\nA brand new closing paragraph about HTTP/2.\n")
    edited = json.loads(kbgraph("index", str(httpx_docs), "--json").stdout)
    assert 1 <= edited["embedded"] <= 3
    assert edited["reused"] == edited["chunkCount"] - edited["embedded"]


def test_stats_delete_and_exit_codes(httpx_docs: Path, tmp_path: Path) -> None:
    kbgraph("index", str(httpx_docs))
    stats = json.loads(kbgraph("stats", str(httpx_docs), "--json", "--validate").stdout)
    assert stats["staleFiles"] == 0 and stats["embedding"]["dims"] == 384
    empty = tmp_path / "empty"
    empty.mkdir()
    missing = kbgraph("search", str(empty), "anything", check=False)
    assert missing.returncode == 3
    assert missing.stderr.startswith("kbgraph: ") and len(missing.stderr.splitlines()) == 1
    bad = kbgraph("index", str(empty), "--embedding", "nonsense:thing", check=False)
    assert bad.returncode == 2 and "allowed" in bad.stderr.lower()
    (httpx_docs / ".kbgraph" / "CURRENT").write_text("gen-missing\n")
    corrupt = kbgraph("search", str(httpx_docs), "timeout", check=False)
    assert corrupt.returncode == 5
    deleted = json.loads(kbgraph("delete", str(httpx_docs), "--json").stdout)
    assert not Path(deleted["deleted"]).exists()


@pytest.fixture
def small_docs(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    (docs / "guide").mkdir(parents=True)
    (docs / "guide" / "retry.md").write_text(
        "# Retry\n\nThe retry policy uses exponential backoff with jitter.\n" * 20
    )
    (docs / "notes.txt").write_bytes(b"caf\xe9 au lait, cr\xe8me br\xfbl\xe9e\n")
    (docs / "node_modules" / "pkg").mkdir(parents=True)
    for i in range(30):
        (docs / "node_modules" / "pkg" / f"f{i}.md").write_text("vendored")
    return docs


def test_delete_refuses_the_documents_folder(small_docs: Path) -> None:
    kbgraph("index", str(small_docs), "--embedding", "none")
    refused = kbgraph("delete", str(small_docs), "--index-dir", str(small_docs), check=False)
    assert refused.returncode == 2 and "refusing to delete" in refused.stderr
    assert len(refused.stderr.splitlines()) == 1
    assert (small_docs / "guide" / "retry.md").exists()
    deleted = json.loads(kbgraph("delete", str(small_docs), "--json").stdout)
    assert deleted["deleted"].endswith(".kbgraph") and (small_docs / "guide").is_dir()


@pytest.mark.parametrize(
    ("args", "option", "allowed"),
    [
        (["index", "{docs}", "--chunk-size", "5"], "--chunk-size 5", "at least 16"),
        (["index", "{docs}", "--max-file-size", "0"], "--max-file-size 0", "more than 0"),
        (["search", "{docs}", "retry", "--rrf-k", "0"], "--rrf-k 0", "at least 1"),
    ],
)
def test_bad_option_values_are_one_line_and_exit_2(
    small_docs: Path, args: list[str], option: str, allowed: str
) -> None:
    kbgraph("index", str(small_docs), "--embedding", "fake")
    proc = kbgraph(*[a.format(docs=small_docs) for a in args], check=False)
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert option in proc.stderr and allowed in proc.stderr
    assert "validation error" not in proc.stderr.lower()


def test_recorded_chunking_is_kept_by_later_commands(small_docs: Path) -> None:
    first = json.loads(
        kbgraph(
            "index", str(small_docs), "--embedding", "fake", "--chunk-size", "1000", "--json"
        ).stdout
    )
    stats = json.loads(kbgraph("stats", str(small_docs), "--json").stdout)
    assert stats["staleFiles"] == 0 and stats["chunkCount"] == first["chunkCount"]
    again = json.loads(kbgraph("index", str(small_docs), "--json").stdout)
    assert not again["rebuilt"] and again["embedded"] == 0
    assert again["chunkCount"] == first["chunkCount"]


def test_index_json_reports_skips_once_per_folder_and_warnings_apart(small_docs: Path) -> None:
    data = json.loads(kbgraph("index", str(small_docs), "--embedding", "fake", "--json").stdout)
    assert {(s["path"], s["reason"]) for s in data["skipped"]} == {
        ("node_modules/", "excluded-dir")
    }
    assert [(w["path"], w["reason"]) for w in data["warnings"]] == [
        ("notes.txt", "decode-fallback")
    ]
    assert data["fileCount"] == 2


def test_searching_with_another_model_exits_7(small_docs: Path) -> None:
    kbgraph("index", str(small_docs), "--embedding", "fake")
    # local and fake both give 384-dim vectors: only the model identity tells them apart
    proc = kbgraph("search", str(small_docs), "retry", "--embedding", "local", check=False)
    assert proc.returncode == 7, proc.stderr
    assert "fake:bow-384" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    bm25 = kbgraph("search", str(small_docs), "retry", "--embedding", "local", "--mode", "bm25")
    assert "guide/retry.md" in bm25.stdout


def test_index_quiet_writes_no_progress_bars(small_docs: Path) -> None:
    """Progress bars go to stderr, also when it is a log file; --quiet turns them off as on
    the eval commands (index had no way to)."""
    shown = kbgraph("index", str(small_docs), "--embedding", "fake", "--rebuild")
    assert "load:" in shown.stderr and "100%" in shown.stderr
    quiet = kbgraph("index", str(small_docs), "--embedding", "fake", "--rebuild", "--quiet")
    assert quiet.stderr == "" and quiet.stdout.startswith("Indexed 2 files")


@pytest.fixture
def many_docs(tmp_path: Path) -> Path:
    """300 short pages indexed without a model: a search for "retry" prints more than a
    pipe's 64 KiB buffer with --top-k 300."""
    docs = tmp_path / "many"
    docs.mkdir()
    for i in range(300):
        (docs / f"page-{i}.md").write_text(
            f"# Retry {i}\n\nThe retry policy backs off exponentially after attempt {i}, and "
            "waits longer every time it fails, up to a cap of thirty seconds — café.\n",
            encoding="utf-8",
        )
    kbgraph("index", str(docs), "--embedding", "none", "--quiet")
    return docs


def _into_a_closed_pipe(*args: str) -> subprocess.CompletedProcess[str]:
    """``kbgraph ARGS`` writing into a pipe whose reader has already gone."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [sys.executable, "-m", "kbgraph", *args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(write_end)


@pytest.mark.parametrize(
    "args",
    [["search", "{docs}", "retry"], ["search", "{docs}", "retry", "--json"], ["--help"]],
    ids=["search", "search-json", "help"],
)
def test_a_closed_stdout_ends_quietly_with_141(many_docs: Path, args: list[str]) -> None:
    """Regression (issue 20): `kbgraph search … | head -1` printed "kbgraph: BrokenPipeError:
    [Errno 32] Broken pipe" and exited 1. Now as a Unix tool killed by SIGPIPE: nothing on
    stderr, 141 (128 + 13), the help included (click's own handling exited 1)."""
    proc = _into_a_closed_pipe(*[a.format(docs=many_docs) for a in args])
    assert (proc.returncode, proc.stderr) == (141, "")


def test_search_piped_into_head(many_docs: Path) -> None:
    """As a user types it: the output outgrows the pipe's buffer, so the search is still
    writing when `head -1` has its line and exits."""
    script = '"$0" -m kbgraph search "$1" retry --top-k 300 | head -1; echo "${PIPESTATUS[0]}"'
    proc = subprocess.run(
        ["bash", "-c", script, sys.executable, str(many_docs)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    first, status = proc.stdout.splitlines()
    assert first.startswith("[1] page-") and status == "141"
    assert proc.stderr == ""
