"""Read replicas, against a real primary and streaming standby (``pg_basebackup -R`` from
the test server's binaries, Unix sockets): searches go to the standby and writes to the
primary (a multi-host URL, or a separate read URL), ``stats`` says which server answered
and how far it is behind, a knowledge base that can reach only a standby never writes,
and a standby lost in the middle of a load leaves searches running on the primary.

The session's standby is synchronous (see ``tests/conftest.py``); the tests of a standby
that lags or goes away start a cluster of their own."""

from __future__ import annotations

import logging
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from kbgraph.errors import ReadOnlyStoreError
from kbgraph.retrieval import KnowledgeBase, SearchFilters
from tests.support.pg_cluster import PgCluster, PgNode, running_cluster, wait_for_replay
from tests.support.postgres import chosen_server, new_database

pytestmark = pytest.mark.integration
QUERY = "retry budget exponential backoff"


def _docs(root: Path, n: int = 6, word: str = "backoff") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (root / f"d{i}.md").write_text(f"# Doc {i}\n\nRetry budget {i} uses exponential {word}.\n")
    return root


def _version(url: str, folder: Path) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT version FROM kbgraph_kbs WHERE folder = %s", (str(folder),)
        ).fetchone()
    return int(row[0]) if row else 0


@pytest.fixture
def own_cluster(request: pytest.FixtureRequest) -> Iterator[PgCluster]:
    """A primary and an asynchronous standby of this test's own (``standby_settings`` from
    the test's ``standby_settings`` marker)."""
    marker = request.node.get_closest_marker("standby_settings")
    settings = marker.args[0] if marker else None
    root = Path(tempfile.mkdtemp(prefix="kbgraph-pg-replica-"))
    with running_cluster(chosen_server(), root, standbys=1, standby_settings=settings) as c:
        yield c


def _routes(cluster: PgCluster, database: str, how: str) -> dict[str, str]:
    """The store settings of one way to name a standby."""
    primary, standby = cluster.nodes[0], cluster.nodes[1]
    if how == "multi-host":
        return {"store": cluster.multi_host_url(database)}
    return {"store": primary.url(database), "read_store": standby.url(database)}


@pytest.mark.parametrize("how", ["multi-host", "read-store"])
def test_searches_go_to_the_standby_and_writes_to_the_primary(
    pg_cluster: PgCluster, pg_standby: PgNode, tmp_path: Path, how: str
) -> None:
    database = new_database(pg_cluster.primary.url())
    routes = _routes(pg_cluster, database, how)
    folder = _docs(tmp_path / "docs")
    kb = KnowledgeBase(folder, embedding="fake", **routes)
    report = kb.index().to_dict()
    assert report["server"]["standby"] is True  # the report is read back from the standby
    assert _version(pg_cluster.primary.url(database), folder) == 1
    assert kb.search(QUERY, top_k=3)[0].chunk.source.startswith("d")
    server = kb.stats().to_dict()["server"]
    assert server["standby"] is True and server["address"] == _address(pg_standby, database)
    # synchronous (remote_apply): commits are replayed; other WAL (a checkpoint, autovacuum)
    # may still wait a moment
    assert server["replayLagSeconds"] >= 0.0 and server["replayLagBytes"] >= 0
    assert server["pgvector"] and isinstance(server["pgvectorLacks"], list)
    # an edit goes to the primary and, synchronous, is searchable on the standby at once
    (folder / "d0.md").write_text("# Doc 0\n\nThe zeppelin quota is twelve.\n")
    assert kb.index().embedded == 1
    assert kb.search("zeppelin quota", top_k=1, mode="bm25")[0].chunk.source == "d0.md"


def _address(node: PgNode, database: str) -> str:
    return f"postgresql://postgres@[{node.socket}:{node.port}]/{database}"


def test_a_knowledge_base_that_reaches_only_a_standby_never_writes(
    pg_cluster: PgCluster, pg_standby: PgNode, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    database = new_database(pg_cluster.primary.url())
    folder = _docs(tmp_path / "docs")
    KnowledgeBase(folder, embedding="fake", store=pg_cluster.primary.url(database)).index()
    reader = KnowledgeBase(folder, embedding="fake", store=pg_standby.url(database))
    with pytest.raises(ReadOnlyStoreError) as info:
        reader.index()
    message = str(info.value)
    assert "is a standby (read-only)" in message and "--read-store" in message
    assert "\n" not in message
    # stale: the freshness check (auto-index) searches the index as it is and says why
    (folder / "d1.md").write_text("# Doc 1\n\nThe dirigible quota is nine.\n")
    with caplog.at_level(logging.WARNING, logger="kbgraph.retrieval"):
        assert reader.ensure_fresh() is None
    assert "is a standby" in caplog.text and "searching it as it is" in caplog.text
    assert _version(pg_cluster.primary.url(database), folder) == 1  # nothing was written
    assert reader.search("dirigible", top_k=1, mode="bm25") == []  # the index as it was
    assert reader.search(QUERY, top_k=1)
    # a standby with no index yet: nothing to search, the refusal is the answer
    fresh = KnowledgeBase(_docs(tmp_path / "new"), embedding="fake", store=pg_standby.url())
    with pytest.raises(ReadOnlyStoreError):
        fresh.ensure_fresh()


def test_live_mode_on_a_standby_stops_with_what_to_do(
    pg_cluster: PgCluster, pg_standby: PgNode, tmp_path: Path
) -> None:
    database = new_database(pg_cluster.primary.url())
    folder = _docs(tmp_path / "docs")
    KnowledgeBase(folder, embedding="fake", store=pg_cluster.primary.url(database)).index()
    kb = KnowledgeBase(folder, embedding="fake", store=pg_standby.url(database), live=True)
    try:
        deadline = time.monotonic() + 30
        while kb.live and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not kb.live  # the watcher's first run was refused: it stopped
        with pytest.raises(ReadOnlyStoreError, match="standby"):
            kb.ensure_fresh()  # live mode reports the refusal that stopped the watcher
        assert kb.search(QUERY, top_k=1)  # searches go on
    finally:
        kb.close()


@pytest.mark.parametrize("how", ["multi-host", "read-store"])
def test_a_standby_lost_mid_load_searches_go_on_on_the_primary(
    own_cluster: PgCluster, tmp_path: Path, how: str
) -> None:
    folder = _docs(tmp_path / "docs", 30)
    routes = _routes(own_cluster, "postgres", how)
    writer = KnowledgeBase(folder, embedding="fake", **routes)
    writer.index()
    agents = [KnowledgeBase(folder, embedding="fake", **routes) for _ in range(4)]
    assert all(a.stats().server["standby"] for a in agents)
    errors: list[BaseException] = []
    answered = [0] * len(agents)
    stop = threading.Event()

    def agent(i: int) -> None:
        while not stop.is_set():
            try:
                hits = agents[i].search(
                    QUERY, top_k=3, filters=SearchFilters(paths=("d1*",)) if i % 2 else None
                )
                assert hits
                answered[i] += 1
            except BaseException as exc:  # every failure is the test's finding
                errors.append(exc)

    threads = [threading.Thread(target=agent, args=(i,)) for i in range(len(agents))]
    for t in threads:
        t.start()
    time.sleep(0.5)
    before = sum(answered)
    own_cluster.nodes[1].stop("immediate")  # the standby's machine is gone
    time.sleep(1.5)
    stop.set()
    for t in threads:
        t.join()
    assert errors == []
    assert before > 0 and sum(answered) > before + len(agents)
    server = agents[0].stats().server
    assert server["standby"] is False and server["address"].endswith(":5432]/postgres")


@pytest.mark.standby_settings({"recovery_min_apply_delay": "1500ms"})
def test_a_lagging_standby_reports_its_lag_and_a_writer_reads_its_own_writes(
    own_cluster: PgCluster, tmp_path: Path
) -> None:
    folder = _docs(tmp_path / "docs")
    url = own_cluster.multi_host_url()
    elsewhere = KnowledgeBase(folder, embedding="fake", store=own_cluster.primary.url())
    writer = KnowledgeBase(folder, embedding="fake", store=url)
    other = KnowledgeBase(folder, embedding="fake", store=url)
    writer.index()
    assert writer.search(QUERY, top_k=1) and other.search(QUERY, top_k=1)
    # Every commit reaches the standby 1.5 s late. The writer's next read waits for its own
    # write; without that it would search the version before it.
    (folder / "d2.md").write_text("# Doc 2\n\nThe airship quota is seven.\n")
    writer.index()
    assert writer.search("airship", top_k=1, mode="bm25")[0].chunk.source == "d2.md"
    # A write from elsewhere reaches the standby at once and is replayed 1.5 s later; until
    # then the standby says how far behind it is. (A plain insert: an index run's DDL locks,
    # replayed at once, would hold the standby's readers until the commit is replayed.)
    with psycopg.connect(own_cluster.primary.url(), autocommit=True) as conn:
        conn.execute("CREATE TABLE lag_probe (x int)")
        wait_for_replay(own_cluster.primary.url(), own_cluster.nodes[1].url())
        conn.execute("INSERT INTO lag_probe VALUES (1)")
    wait_for_replay(own_cluster.primary.url(), own_cluster.nodes[1].url(), position="receive")
    lagging = other.stats().server
    assert lagging["standby"] is True
    assert lagging["replayLagBytes"] > 0 and lagging["replayLagSeconds"] > 0
    # A knowledge base indexed elsewhere is searched on the standby once it is replayed.
    (folder / "d3.md").write_text("# Doc 3\n\nThe blimp quota is three.\n")
    elsewhere.index()
    deadline = time.monotonic() + 20
    while not other.search("blimp", top_k=1, mode="bm25") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert other.search("blimp", top_k=1, mode="bm25")[0].chunk.source == "d3.md"
    assert other.stats().server["replayLagBytes"] == 0
