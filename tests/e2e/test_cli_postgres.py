"""The engine's CLI with ``--store postgresql://...``: real subprocesses, the real local
model, the session's real PostgreSQL. The shared corpus is indexed in place: a database
store writes nothing into the documents folder."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kbgraph.retrieval._segments import normalize_newlines
from tests.e2e.test_cli_engine import HTTPX_DOCS, kbgraph
from tests.support.pg_cluster import PgCluster, PgNode
from tests.support.postgres import new_database

pytestmark = pytest.mark.e2e
SECRET = "pw-Zq8!x"


def _lines(path: Path, start: int, end: int) -> str:
    text = normalize_newlines(path.read_bytes().decode("utf-8"))
    return "\n".join(text.split("\n")[start - 1 : end])


def test_index_search_stats_delete_in_postgres(pg_url: str) -> None:
    """The CLI's whole life cycle on PostgreSQL with the real httpx docs. Over 30 s (~40
    s): it embeds the folder with the local model once (the second index reuses every
    vector, which is what it checks), and each command is a fresh process."""
    if not HTTPX_DOCS.is_dir():
        pytest.skip(f"{HTTPX_DOCS} is missing (../shared beside the repo)")
    docs, store = str(HTTPX_DOCS), ("--store", pg_url)
    first = json.loads(kbgraph("index", docs, *store, "--json").stdout)
    assert first["fileCount"] > 10 and first["embedded"] == first["chunkCount"] > 0
    assert not (HTTPX_DOCS / ".kbgraph").exists()
    again = json.loads(kbgraph("index", docs, *store, "--json").stdout)
    assert (again["embedded"], again["reused"]) == (0, first["chunkCount"])
    found = kbgraph("search", docs, "how do I set a timeout?", *store, "--json", "--top-k", "5")
    results = json.loads(found.stdout)["results"]
    assert len(results) == 5
    for r in results:
        assert r["text"] in _lines(HTTPX_DOCS / r["source"], r["line_start"], r["line_end"])
    assert any("timeout" in r["text"].lower() for r in results)
    stats = json.loads(kbgraph("stats", docs, *store, "--validate", "--json").stdout)
    assert stats["chunkCount"] == first["chunkCount"] and stats["staleFiles"] == 0
    deleted = kbgraph("delete", docs, *store).stdout
    # Regression: said "Deleted postgresql://..." as if the database had gone.
    assert deleted.startswith("Deleted the index of ") and " from postgresql://" in deleted
    gone = kbgraph("search", docs, "timeout", *store, check=False)
    assert gone.returncode == 3 and "no index" in gone.stderr
    # Regression: the hint was `kbgraph index FOLDER`, which builds a folder index instead.
    assert "--store" in gone.stderr


def test_an_unreachable_database_is_one_line_exit_1_without_the_password(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\n\ntext\n")
    url = f"postgresql://kb:{SECRET}@127.0.0.1:1/kb"
    proc = kbgraph("index", str(tmp_path), "--store", url, "--embedding", "fake", check=False)
    assert proc.returncode == 1
    assert proc.stderr.startswith("kbgraph: cannot connect to PostgreSQL at postgresql://kb@")
    assert proc.stderr.count("\n") == 1 and SECRET not in proc.stderr + proc.stdout


def test_a_standby_answers_searches_and_refuses_index_and_watch(
    pg_cluster: PgCluster, pg_standby: PgNode, tmp_path: Path
) -> None:
    """--read-store sends searches to the standby; `stats` says so; `index` and `watch`
    pointed at the standby stop at once (exit 2) saying where writes go."""
    database = new_database(pg_cluster.primary.url())
    primary, standby = pg_cluster.primary.url(database), pg_standby.url(database)
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# A\n\nThe zeppelin quota is twelve.\n")
    routes = ("--store", primary, "--read-store", standby)
    kbgraph("index", str(folder), *routes, "--embedding", "fake", "--quiet")
    found = kbgraph("search", str(folder), "zeppelin", *routes, "--json")
    assert json.loads(found.stdout)["results"][0]["source"] == "a.md"
    stats = json.loads(kbgraph("stats", str(folder), *routes, "--json").stdout)
    assert (
        stats["server"]["standby"] is True and str(pg_standby.socket) in stats["server"]["address"]
    )
    text = kbgraph("stats", str(folder), *routes).stdout
    assert "server: postgresql://postgres@[" in text
    assert re.search(r"\(standby, replay [\d.]+ s / \d+ B behind", text)
    for command in ("index", "watch"):
        refused = kbgraph(command, str(folder), "--store", standby, check=False)
        assert refused.returncode == 2, refused.stderr
        last = refused.stderr.splitlines()[-1]  # watch says first that it watches
        assert last.startswith("kbgraph: PostgreSQL at postgresql://postgres@[")
        assert "is a standby (read-only)" in last and "--read-store" in last
