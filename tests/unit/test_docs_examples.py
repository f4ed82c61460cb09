"""Every example in the docs runs (issue 33): each fenced ``python`` and ``bash`` block of
README.md and of every page under docs/, in page order, offline.

A page runs in a scratch folder of its own holding ``docs/`` (a copy of ``examples/docs``
indexed beforehand with the ``fake`` embedding, which ``embedding="auto"`` then reuses);
its python blocks share one namespace (``my_chat_model`` a ``ScriptedChatModel``,
``my_embeddings`` a ``FakeEmbeddings``), its bash blocks run under ``bash -e`` with this
checkout's ``kbgraph`` first on ``PATH``. A block that cannot run offline carries
``<!-- skip: reason -->`` on the line before it: counted and listed, never silent. Blocks
marked ``<!-- example: NAME -->`` are run with assertions by test_readme_examples.py."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kbgraph.retrieval import KnowledgeBase
from kbgraph.testing import FakeEmbeddings, ScriptedChatModel
from tests.support.docs_pages import ROOT, Block, blocks, pages
from tests.support.langgraph_dev import offline_env

ANSWER = "Set max_attempts and backoff_ms in harbor.yaml [1]."
BLOCK_TIMEOUT = 180
PAGES = [p for p in pages() if blocks(p)]


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    docs = tmp_path_factory.mktemp("docs-template") / "docs"
    shutil.copytree(ROOT / "examples" / "docs", docs, ignore=shutil.ignore_patterns(".kbgraph"))
    with KnowledgeBase(docs, embedding="fake") as kb:
        kb.index()
    return docs


def _workdir(tmp_path: Path, indexed: Path) -> Path:
    shutil.copytree(indexed, tmp_path / "docs", symlinks=True)
    shutil.copytree(indexed, tmp_path / "examples" / "docs", symlinks=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "kbgraph"  # this checkout's CLI, whatever is installed
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m kbgraph "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    return tmp_path


def _run_bash(block: Block, workdir: Path) -> None:
    env = offline_env(
        PATH=f"{workdir / 'bin'}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}"
        + os.environ.get("PATH", ""),
        PYTHONPATH=str(ROOT),
        KBGRAPH_CACHE_DIR=str(workdir / "cache"),
        KBGRAPH_RUNS_DIR=str(workdir / "runs"),
    )
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", block.code], cwd=workdir, env=env,
        capture_output=True, text=True, timeout=BLOCK_TIMEOUT, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, (
        f"{block.where}: bash block exited {done.returncode}\n{block.code}\n"
        f"stdout: {done.stdout[-2000:]}\nstderr: {done.stderr[-2000:]}"
    )


def _run_python(block: Block, namespace: dict[str, Any]) -> None:
    try:
        exec(compile(block.code, block.where, "exec"), namespace)
    except Exception as exc:  # the block's own failure, named by where it is
        raise AssertionError(f"{block.where}: python block failed: {exc!r}\n{block.code}") from exc


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_block_of_the_page_runs(
    page: Path, indexed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _run_page(page, _workdir(tmp_path, indexed), monkeypatch)


def _copies_examples_docs(page: Path) -> bool:
    runnable = (b for b in blocks(page) if b.skip is None and b.example is None)
    return any(re.search(r"\bcp -r examples/docs\b", b.code) for b in runnable)


COPYING = [p for p in PAGES if _copies_examples_docs(p)]


@pytest.mark.parametrize("page", COPYING, ids=[str(p.relative_to(ROOT)) for p in COPYING])
def test_a_page_that_copies_examples_docs_leaves_its_index_behind(
    page: Path, indexed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After `make demo` (as the README says to run first) examples/docs holds an index of
    the local model: a page that copies the folder, then indexes the copy with another
    model, exited 7 on the index it had carried along. ``fake:64`` stands in for the local
    model here (another model, without loading one)."""
    workdir = _workdir(tmp_path, indexed)
    demo = workdir / "examples" / "docs"
    shutil.rmtree(demo / ".kbgraph")
    with KnowledgeBase(demo, embedding="fake:64") as kb:
        kb.index()
    _run_page(page, workdir, monkeypatch)


def test_some_page_copies_examples_docs() -> None:
    assert COPYING, "the test above checks no page: has the evaluate tutorial changed?"


def _run_page(page: Path, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(workdir)
    monkeypatch.setenv("KBGRAPH_CACHE_DIR", str(workdir / "cache"))
    namespace: dict[str, Any] = {
        "__name__": "docs_example",
        "my_chat_model": ScriptedChatModel(default=ANSWER),
        "my_embeddings": FakeEmbeddings(),
    }
    for block in blocks(page):
        if block.skip is not None or block.example is not None:
            continue
        if block.language == "python":
            _run_python(block, namespace)
        else:
            _run_bash(block, workdir)


def test_every_skip_says_why_and_is_counted(capsys: pytest.CaptureFixture[str]) -> None:
    every = [b for p in pages() for b in blocks(p)]
    skipped = [b for b in every if b.skip is not None]
    assert all(re.search(r"\w{3}", b.skip or "") for b in skipped), "a skip gives its reason"
    ran = [b for b in every if b.skip is None]
    with capsys.disabled():
        print(f"\ndocs examples: {len(ran)} run, {len(skipped)} skipped:")
        for block in skipped:
            print(f"  {block.where} ({block.language}): {block.skip}")
    # Skips are for what needs a key, a server, the reference data, minutes of CPU (the
    # benchmark commands of "Measured") or a process that does not end; every tutorial
    # has at least one block that runs.
    assert len(ran) >= 20, len(ran)
    for page in (ROOT / "docs" / "tutorials").glob("*.md"):
        assert any(b.skip is None for b in blocks(page)), f"{page.name} runs no example"


def test_the_events_page_lists_every_event_the_code_emits() -> None:
    emitted = set()
    for layer in ("graphs", "retrieval", "kbgraph"):
        for path in (ROOT / layer).rglob("*.py"):
            emitted |= set(re.findall(r'"(knowledge\.[a-z_]+\.[a-z_]+)"', path.read_text()))
    listed = (ROOT / "docs" / "reference" / "events.md").read_text(encoding="utf-8")
    assert emitted and {e for e in emitted if f"`{e}`" not in listed} == set()


def test_the_exit_codes_page_lists_every_exit_code() -> None:
    from kbgraph import _exit_codes as exit_codes

    codes = {0, 1, exit_codes.EXIT_USAGE, exit_codes.EXIT_INTERRUPTED, 6}
    codes |= {exit_codes.EXIT_STDOUT_CLOSED, *exit_codes.EXIT_CODES.values()}
    table = (ROOT / "docs" / "reference" / "exit-codes.md").read_text(encoding="utf-8")
    assert {c for c in codes if not re.search(rf"^\| {c} \|", table, re.M)} == set()


def test_the_front_page_is_short_and_links_only_to_files_that_exist() -> None:
    """README.md is the front page (at most 200 lines); the site's strict build checks the
    links between docs pages, this checks the README's (it is not part of the site)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme)
    local = [t for t in targets if "://" not in t]
    assert local and [t for t in local if not (ROOT / t).exists()] == []
