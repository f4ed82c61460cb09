"""What one search costs the PostgreSQL store in round trips and connections, and that the
cheaper path (no version question before a search, no transaction, pooled connections)
still answers from the newest version.

Round trips are counted by libpq's own protocol trace of every connection the process
holds to the server: each ``Sync`` (extended protocol) or ``Query`` (simple protocol) the
client sends is one exchange it waits for."""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
from psycopg.pq import Trace

from kbgraph.retrieval import KnowledgeBase, SearchConfig, SearchFilters
from kbgraph.retrieval._postgres._pool import READERS

pytestmark = pytest.mark.integration


def _docs(root: Path, n: int = 6, word: str = "backoff") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (root / f"d{i}.md").write_text(
            f"# Doc {i}\n\nRetry budget {i} uses exponential {word}.\n", encoding="utf-8"
        )
    return root


def _connections(kb: KnowledgeBase) -> list[psycopg.Connection]:
    """Every connection of this process to the server: the store's own and the pool's."""
    own = [kb.store._conn] if kb.store._conn is not None else []  # type: ignore[attr-defined]
    pooled = [p.conn for idle in READERS._idle.values() for p in idle]
    return [c for c in own + pooled if not c.closed]


@contextmanager
def _round_trips(conns: list[psycopg.Connection]) -> Iterator[list[int]]:
    """Counts the exchanges the client starts on ``conns`` while the block runs."""
    count: list[int] = []
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for i, conn in enumerate(conns):
            out = open(Path(tmp) / f"trace{i}", "w")  # noqa: SIM115 - closed below
            conn.pgconn.trace(out.fileno())
            conn.pgconn.set_trace_flags(Trace.SUPPRESS_TIMESTAMPS | Trace.REGRESS_MODE)
            files.append(out)
        try:
            yield count
        finally:
            for conn, out in zip(conns, files, strict=True):
                conn.pgconn.untrace()
                out.close()
        lines = [
            line.split("\t")
            for path in sorted(Path(tmp).iterdir())
            for line in path.read_text().splitlines()
        ]
        count.append(sum(1 for f in lines if f[0] == "F" and f[2] in ("Sync", "Query")))


@pytest.mark.parametrize(("mode", "expected"), [("bm25", 1), ("vector", 1), ("hybrid", 2)])
def test_one_search_is_one_round_trip_per_ranker(
    pg_url: str, tmp_path: Path, mode: str, expected: int
) -> None:
    """Regression: a search asked the store whether a newer version existed (two
    statements), began a snapshot transaction, looked up the query's document frequencies,
    ranked, fetched the chunks and rolled back: 7 round trips for BM25 alone."""
    kb = KnowledgeBase(_docs(tmp_path / "docs"), embedding="fake", store=pg_url)
    kb.index()
    for _ in range(3):  # warm: the snapshot is open, the connection pooled
        assert kb.search("exponential backoff budget", top_k=3, mode=mode)  # type: ignore[arg-type]
    with _round_trips(_connections(kb)) as count:
        hits = kb.search("exponential backoff budget", top_k=3, mode=mode)  # type: ignore[arg-type]
    assert hits and all("backoff" in h.chunk.text for h in hits)
    assert count == [expected]


def test_convex_fusion_scores_only_what_a_list_missed(pg_url: str, tmp_path: Path) -> None:
    """Each ranker's exact scores of its own list come with the list: the exact pass
    asks only for the other rankers' rows (one statement per ranker at most)."""
    kb = KnowledgeBase(_docs(tmp_path / "docs"), embedding="fake", store=pg_url)
    kb.index()
    config = SearchConfig(mode="hybrid", fusion="convex", top_k=3)
    kb.search("backoff", config=config)
    with _round_trips(_connections(kb)) as count:
        kb.search("backoff", config=config)
    assert count[0] <= 4  # two lists, at most two exact passes


def test_a_filtered_search_adds_one_round_trip_for_the_file_list(
    pg_url: str, tmp_path: Path
) -> None:
    kb = KnowledgeBase(_docs(tmp_path / "docs"), embedding="fake", store=pg_url)
    kb.index()
    only = SearchFilters(paths=("d1.md",))
    kb.search("backoff", top_k=3, mode="bm25", filters=only)
    with _round_trips(_connections(kb)) as count:
        hits = kb.search("backoff", top_k=3, mode="bm25", filters=only)
    assert [h.chunk.source for h in hits] == ["d1.md"]
    assert count == [2]


def test_a_search_after_another_process_wrote_sees_the_new_version(
    pg_url: str, tmp_path: Path
) -> None:
    """The snapshot is no longer checked before each search: the search's own statement
    reports the newer version, and the search runs again on it."""
    folder = _docs(tmp_path / "docs")
    reader = KnowledgeBase(folder, embedding="fake", store=pg_url)
    reader.index()
    assert not reader.search("zeppelin", top_k=3, mode="bm25")
    (folder / "d2.md").write_text("# Doc 2\n\nThe zeppelin retry budget.\n", encoding="utf-8")
    KnowledgeBase(folder, embedding="fake", store=pg_url).index()  # another writer
    hits = reader.search("zeppelin", top_k=3, mode="bm25")
    assert [h.chunk.source for h in hits] == ["d2.md"]
    assert "zeppelin" in hits[0].chunk.text


def test_agents_of_one_process_share_the_search_connections(pg_url: str, tmp_path: Path) -> None:
    """Eight agents (threads), each with its own knowledge base object, searching two
    knowledge bases: the searches take pooled connections, so the server sees at most
    one search connection per search running at once, not one per object."""
    folders = [_docs(tmp_path / f"kb{i}") for i in range(2)]
    for folder in folders:
        KnowledgeBase(folder, embedding="fake", store=pg_url).index()
    READERS.discard_all()
    kbs = [KnowledgeBase(folders[i % 2], embedding="fake", store=pg_url) for i in range(8)]
    for kb in kbs:
        kb.search("backoff", top_k=2, mode="bm25")  # one after the other: one connection
    assert sum(len(idle) for idle in READERS._idle.values()) == 1
    errors: list[BaseException] = []

    def agent(kb: KnowledgeBase) -> None:
        try:
            for _ in range(20):
                assert kb.search("retry budget", top_k=2, mode="bm25")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=agent, args=(kb,)) for kb in kbs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert 1 <= sum(len(idle) for idle in READERS._idle.values()) <= len(kbs)


def test_a_forked_child_does_not_use_the_parents_connections(pg_url: str, tmp_path: Path) -> None:
    kb = KnowledgeBase(_docs(tmp_path / "docs"), embedding="fake", store=pg_url)
    kb.index()
    kb.search("backoff", top_k=2, mode="bm25")
    pid = os.fork()
    if pid == 0:  # the child: a search of its own, on a connection of its own
        try:
            ok = bool(KnowledgeBase(kb.folder, embedding="fake", store=pg_url).search("backoff"))
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert kb.search("backoff", top_k=2, mode="bm25")  # the parent's pooled one still works


def test_vectors_stay_in_their_rows(pg_url: str, tmp_path: Path) -> None:
    """Regression: pgvector's default storage let PostgreSQL move each vector of a wide row
    (a chunk's text and lexemes) to the TOAST table, and an exact scan fetched them one by
    one: 35 ms against 5.4 ms for 6,000 rows (``_schema.INLINE_MAX_DIMS``)."""
    kb = KnowledgeBase(_docs(tmp_path / "docs"), embedding="fake", store=pg_url)
    kb.index()
    chunks = kb.store.open().tables.chunks  # type: ignore[attr-defined]
    with psycopg.connect(pg_url) as conn:
        name = chunks.as_string(conn)
        storage = conn.execute(
            "SELECT attstorage FROM pg_attribute WHERE attrelid = %s::regclass "
            "AND attname = 'embedding'",
            (name,),
        ).fetchone()
    assert storage == ("p",)  # pgvector's default is "x": compressed or moved out of the row


def test_a_search_that_meets_a_newer_version_is_not_run_twice(pg_url: str, tmp_path: Path) -> None:
    """An incremental update keeps the tables: the search that first sees it ranks it as
    it is (one statement) and the snapshot reopens before the next search. Regression: it
    was run again on the reopened snapshot, doubling the work of every search that
    followed a write (what the load benchmark's agents did after each of the writer's runs).
    """
    folder = _docs(tmp_path / "docs")
    reader = KnowledgeBase(folder, embedding="fake", store=pg_url)
    reader.index()
    reader.search("budget", top_k=3, mode="bm25")
    (folder / "d3.md").write_text("# Doc 3\n\nThe dirigible retry budget.\n", encoding="utf-8")
    KnowledgeBase(folder, embedding="fake", store=pg_url).index()
    with _round_trips(_connections(reader)) as count:
        hits = reader.search("dirigible", top_k=3, mode="bm25")
    assert [h.chunk.source for h in hits] == ["d3.md"]
    assert count == [1]
    assert reader.search("dirigible", top_k=3, mode="bm25")  # reopened first, then searched
