"""The engine commands' answers to a user who names the wrong thing: another embedding model
than the index's, a store that keeps no versions. In-process (click's runner), with the
``fake`` embedding model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from kbgraph.cli import main


def kbgraph(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], prog_name="kbgraph")


def one_line(result: Result) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kbgraph: "), result.stderr
    return lines[0]


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "retry.md").write_bytes(b"# Retry\r\n\r\nThe retry policy backs off.\r\n")
    (folder / "größe.md").write_text("# Größe\n\nDie Größe des Caches.\n", encoding="utf-8")
    return folder


def test_search_without_a_model_on_an_index_with_vectors_says_to_use_bm25(docs: Path) -> None:
    """Regression (issue 20): it said "this knowledge base has no embedding model (lexical
    only)" with exit 2, as if the index had none."""
    assert kbgraph("index", docs, "--embedding", "fake", "--quiet").exit_code == 0
    refused = kbgraph("search", docs, "retry", "--embedding", "none")
    assert refused.exit_code == 7
    line = one_line(refused)
    assert "fake:bow-384" in line and "--mode bm25" in line and "--embedding fake" in line
    bm25 = kbgraph("search", docs, "retry", "--embedding", "none", "--mode", "bm25", "--json")
    assert json.loads(bm25.stdout)["results"][0]["source"] == "retry.md"


@pytest.mark.parametrize(
    ("built", "other"), [("fake", "fake:64"), ("fake", "none"), ("none", "fake")]
)
def test_index_with_another_model_is_refused_without_rebuild(
    docs: Path, built: str, other: str
) -> None:
    """Regression (issue 20): `kbgraph index D --embedding fake` on an index of another model
    re-embedded everything and printed one "Indexed" line."""
    assert kbgraph("index", docs, "--embedding", built, "--quiet").exit_code == 0
    before = kbgraph("versions", docs, "--json").stdout
    refused = kbgraph("index", docs, "--embedding", other, "--quiet")
    assert refused.exit_code == 7
    line = one_line(refused)
    assert "--rebuild" in line and "Leave --embedding out" in line
    assert kbgraph("versions", docs, "--json").stdout == before  # nothing was written
    rebuilt = kbgraph("index", docs, "--embedding", other, "--rebuild", "--quiet", "--json")
    assert rebuilt.exit_code == 0 and json.loads(rebuilt.stdout)["rebuilt"]
    again = kbgraph("index", docs, "--quiet", "--json")  # the index's model from then on
    assert again.exit_code == 0 and not json.loads(again.stdout)["rebuilt"]


@pytest.mark.timeout(60)  # before the fix it rebuilt the index, then watched forever
def test_watch_with_another_model_stops_with_exit_7(docs: Path) -> None:
    """The watcher's first run would have rebuilt the index with the other model."""
    assert kbgraph("index", docs, "--embedding", "fake", "--quiet").exit_code == 0
    refused = kbgraph("watch", docs, "--embedding", "none")
    assert refused.exit_code == 7
    assert "--rebuild" in refused.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("command", [["versions"], ["restore", "2"]])
@pytest.mark.parametrize("given", ["option", "env"])
def test_versions_of_a_postgresql_index_say_it_keeps_the_live_version(
    docs: Path, command: list[str], given: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression (issue 20): `kbgraph versions D --store URL` said only "No such option:
    --store" (and with KBGRAPH_STORE set, listed the folder's generations, or none). Said
    before connecting: no server is needed to know it."""
    url = "postgresql://kb:s3cret@db.invalid:5432/kb"
    args = [command[0], docs, *command[1:]]
    if given == "option":
        args += ["--store", url]
    else:
        monkeypatch.setenv("KBGRAPH_STORE", url)
    refused = kbgraph(*args)
    assert refused.exit_code == 2
    line = one_line(refused)
    assert "keeps only the live version" in line and "back the database up" in line
    assert "postgresql://kb@db.invalid:5432/kb" in line and "s3cret" not in line


def test_index_trust_hard_links_indexes_a_file_of_several_names(docs: Path, tmp_path: Path) -> None:
    """No command-line option set ``scan.trust_hard_links``: a folder hard-linked from a
    cache could not be indexed from the CLI (every such file was ``hard-link``)."""
    import os

    cache = tmp_path / "cache.md"
    cache.write_text("# Cached\n\nA page linked in from a package cache.\n")
    os.link(cache, docs / "cached.md")
    plain = kbgraph("index", docs, "--embedding", "fake", "--quiet", "--json")
    assert plain.exit_code == 0, plain.output
    assert {"path": "cached.md", "reason": "hard-link"}.items() <= next(
        s for s in json.loads(plain.stdout)["skipped"] if s["path"] == "cached.md"
    ).items()
    args = ("index", docs, "--embedding", "fake", "--quiet", "--json", "--trust-hard-links")
    trusted = kbgraph(*args)
    assert trusted.exit_code == 0, trusted.output
    assert json.loads(trusted.stdout)["fileCount"] == 3
    assert "--trust-hard-links" in kbgraph("index", "--help").output
