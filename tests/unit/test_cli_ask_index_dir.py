"""``kbgraph ask --index-dir``, as ``index`` and ``search`` take it: after ``kbgraph index
FOLDER --index-dir X``, ``ask`` searched (and built) a second index in FOLDER/.kbgraph. In
process (click's runner), with the ``fake`` embedding model the index was built with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from kbgraph.cli import main
from kbgraph.errors import ConfigError
from kbgraph.graphs._settings import resolved_specs, spec_of


def kbgraph(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], prog_name="kbgraph")


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "nf2"
    folder.mkdir()
    (folder / "retry.md").write_text(
        "# Retry\n\nSet max_attempts in harbor.yaml to change the number of retries.\n",
        encoding="utf-8",
    )
    return folder


def test_ask_uses_the_index_in_index_dir_and_writes_nothing_in_the_folder(
    docs: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "idx"
    built = kbgraph("index", docs, "--index-dir", elsewhere, "--embedding", "fake", "--quiet")
    assert built.exit_code == 0, built.output
    before = sorted(p.relative_to(elsewhere) for p in elsewhere.rglob("*"))

    # --embedding auto: the model of the index it finds; FOLDER/.kbgraph would be a new
    # index, of the local model.
    asked = kbgraph("ask", docs, "How do I change the number of retries?", "--index-dir",
                    elsewhere, "--json")  # fmt: skip
    assert asked.exit_code == 0, asked.output
    data = json.loads(asked.stdout)
    assert [c["source"] for c in data["rag_citations"]][:1] == ["retry.md"]
    assert not (docs / ".kbgraph").exists()
    assert sorted(p.relative_to(elsewhere) for p in elsewhere.rglob("*")) == before
    assert "indexed" not in asked.stderr  # the index was fresh: nothing built again


def test_a_knowledge_base_spec_keeps_its_index_dir(tmp_path: Path) -> None:
    [kb] = resolved_specs([{"folder": str(tmp_path), "index_dir": "idx"}])
    assert kb.index_dir == str(Path("idx").resolve())
    assert spec_of(kb)["index_dir"] == kb.index_dir
    with pytest.raises(ConfigError, match="drop 'index_dir'"):
        resolved_specs([{"retriever": "pkg.mod:store", "index_dir": "idx"}])
