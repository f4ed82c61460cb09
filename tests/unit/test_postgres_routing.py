"""Read replicas without a server: how store URLs are read (several hosts, a read URL),
where searches and writes are routed, what a pgvector version lacks, and how a standby's
URL travels from the subgraph's settings to the knowledge base it opens."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("psycopg")

from kbgraph.cli import describe_server
from kbgraph.errors import ConfigError
from kbgraph.graphs._searcher import SearcherRegistry
from kbgraph.graphs._settings import RagSettings, spec_of
from kbgraph.retrieval import KnowledgeBase
from kbgraph.retrieval._postgres import Database
from kbgraph.retrieval._postgres._features import PgVector
from kbgraph.retrieval._postgres._servers import Servers

MULTI = "postgresql://kb:Sekret-42@db1:5432,db2:5433/kb"


@pytest.mark.parametrize(
    ("url", "location", "hosts"),
    [
        ("postgresql://kb@db1/kb", "postgresql://kb@db1/kb", 1),
        (MULTI, "postgresql://kb@db1:5432,db2:5433/kb", 2),
        ("postgresql://kb@db1,db2:6432/kb", "postgresql://kb@db1,db2:6432/kb", 2),  # db1: 5432
        (
            "postgresql://kb@/kb?host=/run/a,/run/ü&port=5432,5433",
            "postgresql://kb@[/run/a:5432],[/run/ü:5433]/kb",
            2,
        ),
    ],
)
def test_a_url_names_its_hosts_without_the_password(url: str, location: str, hosts: int) -> None:
    db = Database.parse(url)
    assert (db.location, db.hosts) == (location, hosts)
    assert "Sekret" not in db.location + repr(db)


@pytest.mark.parametrize(
    ("url", "read", "prefers"),
    [
        ("postgresql://kb@db1/kb", None, False),
        (MULTI, None, True),
        (MULTI + "?target_session_attrs=prefer-standby", None, True),
        (MULTI + "?target_session_attrs=read-write", None, False),  # the user's choice
        ("postgresql://kb@db1/kb", "postgresql://kb@replica/kb", True),
    ],
)
def test_searches_prefer_a_standby_when_one_is_named(
    url: str, read: str | None, prefers: bool
) -> None:
    servers = Servers(url, read)
    assert servers.prefers_standby is prefers
    assert "Sekret" not in servers.location
    if read:
        assert servers.location.endswith("(searches: postgresql://kb@replica/kb)")


def test_a_read_url_needs_a_database_store(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="read_store"):
        KnowledgeBase(tmp_path, store=None, read_store="postgresql://kb@replica/kb")
    with pytest.raises(ConfigError, match="read_store"):
        KnowledgeBase(tmp_path, store="postgresql://kb@db/kb", read_store="replica")


@pytest.mark.parametrize(
    ("version", "lacks"),
    [
        ("0.8.6", []),
        ("0.7.4", ["iterative index scans"]),
        ("0.6.2", ["iterative index scans", "halfvec"]),
        ("0.5.1", ["iterative index scans", "halfvec"]),
    ],
)
def test_what_an_older_pgvector_lacks(version: str, lacks: list[str]) -> None:
    said = PgVector(version).lacks()
    assert [text.split(" (")[0] for text in said] == lacks
    assert all("(0." in text for text in said)  # each names the version that brings it


def test_stats_line_of_a_standby() -> None:
    server: dict[str, Any] = {
        "address": "postgresql://kb@db2:5433/kb",
        "standby": True,
        "replayLagSeconds": 0.25,
        "replayLagBytes": 4096,
        "postgres": "16.2",
        "pgvector": "0.6.2",
        "pgvectorLacks": PgVector("0.6.2").lacks(),
    }
    line = describe_server(server)
    assert line.startswith("postgresql://kb@db2:5433/kb (standby, replay 0.25 s / 4096 B behind")
    assert "lacks iterative index scans" in line


def test_a_read_store_is_masked_in_reprs_and_reaches_the_knowledge_base(tmp_path: Path) -> None:
    read = "postgresql://ro:Sekret-42@replica:5432/kb"
    kbs = [{"name": "a", "folder": str(tmp_path), "store": MULTI, "read_store": read}]
    settings = RagSettings(knowledge_bases=kbs)
    assert "Sekret" not in repr(settings)
    [kb] = settings.resolved_knowledge_bases()
    assert (kb.store, kb.read_store) == (MULTI, read)
    assert spec_of(kb)["read_store"] == read
    opened: list[dict[str, Any]] = []

    def factory(folder: str, embedding: str | None, /, **options: Any) -> Any:
        opened.append(options)
        return object()

    registry = SearcherRegistry(factory)  # type: ignore[arg-type]
    first = registry.open(kb.folder, "fake", None, kb.store, kb.read_store)
    assert registry.open(kb.folder, "fake", None, kb.store) is not first  # another route
    assert opened[0] == {"store": MULTI, "read_store": read}
