"""Bad arguments to the Python API are one ``ConfigError`` saying what is allowed (never a
coercion, a multi-line ValidationError, an AttributeError or a TypeError), and what the
CLI prints about hostile file names stays one line per file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kbgraph.errors import ConfigError
from kbgraph.retrieval import KnowledgeBase
from tests.faults.conftest import cli, cli_process, write_docs

pytestmark = [pytest.mark.faults, pytest.mark.timeout(60)]


@pytest.fixture
def kb(docs: Path) -> Any:
    with KnowledgeBase(docs, embedding="fake") as kb:
        kb.index()
        yield kb


CALLS: dict[str, tuple[Callable[[Any], object], str]] = {
    "search top_k str": (lambda kb: kb.search("retry", top_k="5"), "top_k"),
    "search top_k float": (lambda kb: kb.search("retry", top_k=5.0), "top_k"),
    "as_retriever top_k 0": (lambda kb: kb.as_retriever(top_k=0), "from 1 to 1000"),
    "restore None": (lambda kb: kb.restore(None), "version"),
    "restore float": (lambda kb: kb.restore(1.0), "version"),
    "KnowledgeBase None": (lambda kb: KnowledgeBase(None), "folder"),  # type: ignore[arg-type]
}


@pytest.mark.parametrize("call", list(CALLS))
def test_a_bad_argument_is_one_config_error(kb: Any, call: str) -> None:
    """Regression (issue 24, hole 11): `search(top_k="5")` and `5.0` were coerced to 5,
    `restore(None)` was an AttributeError (and, before, `as_retriever(top_k=0)` a
    multi-line pydantic ValidationError, `KnowledgeBase(None)` a TypeError)."""
    function, said = CALLS[call]
    with pytest.raises(ConfigError) as raised:
        function(kb)
    message = str(raised.value)
    assert said in message and "\n" not in message, message


def test_restore_takes_a_row_number_as_an_int(kb: Any, docs: Path) -> None:
    (docs / "retry.md").write_text("# Retry\n\nA second version.\n")
    kb.index()
    assert kb.restore(2).name == kb.versions()[0].name


def test_file_names_with_a_newline_are_printed_on_one_line(tmp_path: Path) -> None:
    """Regression (issue 24, hole 11): a skipped file whose name holds a newline was
    printed raw, one file over two lines."""
    folder = write_docs(
        tmp_path / "docs",
        {
            "ok.md": "# Retry\n\nretry policy\n",
            "bad\nname.txt": b"\0binary\0",
            "two\nlines.md": "# Two\n\nretry twice\n",
        },
    )
    run = cli("index", str(folder), "--embedding", "fake")
    assert run.code == 0, run.stderr
    skipped = [line for line in run.stdout.splitlines() if "skipped" in line]
    assert len(skipped) == 1, run.stdout
    assert skipped[0].startswith("  skipped bad\\nname.txt: binary"), run.stdout
    found = cli("search", str(folder), "retry twice", "--mode", "bm25", "--top-k", "1")
    assert found.stdout.splitlines()[0].startswith("[1] two\\nlines.md:"), found.stdout


def test_quiet_indexing_of_a_broken_pdf_prints_nothing_on_stderr(tmp_path: Path) -> None:
    """Regression (issue 24, hole 11): pypdf's "EOF marker not found" reached stderr under
    --quiet; it now goes into the file's skip reason. A real process: logging's last
    resort writes to the process's stderr, which an in-process CliRunner does not capture."""
    folder = write_docs(tmp_path / "docs", {"ok.md": "# A\n\ntext\n", "bad.pdf": b"%PDF-1.7\n x"})
    run = cli_process("index", str(folder), "--embedding", "fake", "--quiet", "--json")
    assert run.code == 0 and run.stderr == "", run.stderr
    skip = {s["path"]: s for s in run.json()["skipped"]}["bad.pdf"]
    assert skip["reason"] == "extract-failed" and "EOF marker not found" in skip["detail"]
