"""A PostgreSQL search behind a table lock gives up after the lock timeout with an error
naming the cause (issue 42 hole 7): without ``lock_timeout`` / ``statement_timeout`` on
search connections it waited as long as the lock was held (20 s via the CLI, 40 s via MCP
in the fault matrix)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from kbgraph.errors import ConfigError, DatabaseTimeoutError
from kbgraph.retrieval import KnowledgeBase
from kbgraph.retrieval._postgres._pool import READERS, search_timeouts

pytestmark = pytest.mark.integration


def _chunks_table(pg_url: str, folder: Path) -> str:
    """The chunks table of the knowledge base of ``folder`` (by its id: the cluster holds the
    tables of every test that ran before on this worker, and ``kbgraph_kb10_chunks`` sorts
    before ``kbgraph_kb9_chunks`` by name)."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        (kb_id,) = conn.execute(
            "SELECT id FROM kbgraph_kbs WHERE folder = %s", (str(folder.resolve()),)
        ).fetchone() or (None,)
        assert kb_id is not None, f"no knowledge base row for {folder}"
        rows = conn.execute(
            "SELECT schemaname, tablename FROM pg_tables WHERE tablename = %s",
            (f"kbgraph_kb{kb_id}_chunks",),
        ).fetchall()
    assert len(rows) == 1, rows
    return f"{rows[0][0]}.{rows[0][1]}"


def test_a_search_behind_a_table_lock_fails_with_a_timeout_error(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KBGRAPH_PG_LOCK_TIMEOUT_MS", "300")
    READERS.discard_all()  # connections opened before carry the old settings
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nExponential backoff retries.\n", encoding="utf-8")
    kb = KnowledgeBase(docs, embedding="fake", store=pg_url)
    kb.index()
    schema, table = _chunks_table(pg_url, docs).split(".")
    locked, release = threading.Event(), threading.Event()

    def hold_lock() -> None:
        with psycopg.connect(pg_url) as conn:
            conn.execute(
                sql.SQL("LOCK TABLE {}.{} IN ACCESS EXCLUSIVE MODE").format(
                    sql.Identifier(schema), sql.Identifier(table)
                )
            )
            locked.set()
            release.wait(30)
            conn.rollback()

    holder = threading.Thread(target=hold_lock)
    holder.start()
    try:
        assert locked.wait(10)
        with pytest.raises(DatabaseTimeoutError, match="locked by another session"):
            kb.search("exponential backoff", top_k=3, mode="bm25")
    finally:
        release.set()
        holder.join()
        READERS.discard_all()
    assert kb.search("exponential backoff", top_k=3, mode="bm25")  # the lock gone: it works


def test_the_search_timeouts_have_defaults_and_refuse_a_non_number(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("KBGRAPH_PG_STATEMENT_TIMEOUT_MS", raising=False)
    monkeypatch.delenv("KBGRAPH_PG_LOCK_TIMEOUT_MS", raising=False)
    assert search_timeouts() == (5000, 1000)
    monkeypatch.setenv("KBGRAPH_PG_LOCK_TIMEOUT_MS", "1s")
    with pytest.raises(ConfigError, match="KBGRAPH_PG_LOCK_TIMEOUT_MS='1s'"):
        search_timeouts()


@pytest.mark.parametrize("table", ["kbgraph_kbs", "files"])
def test_a_search_behind_a_lock_on_the_knowledge_base_rows_fails_with_a_timeout_error(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table: str
) -> None:
    # The reads each search starts with (its version in kbgraph_kbs; at the first search,
    # the files table too) go through the store's own connection, which had no timeouts:
    # behind a lock on either table a search waited as long as the lock was held (30 s by
    # hand, `kbgraph search --store`), while a lock on the chunks table was a timeout.
    monkeypatch.setenv("KBGRAPH_PG_LOCK_TIMEOUT_MS", "300")
    READERS.discard_all()
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nExponential backoff retries.\n", encoding="utf-8")
    KnowledgeBase(docs, embedding="fake", store=pg_url).index()
    schema, chunks = _chunks_table(pg_url, docs).split(".")
    name = "kbgraph_kbs" if table == "kbgraph_kbs" else chunks.replace("_chunks", "_files")
    kb = KnowledgeBase(docs, embedding="fake", store=pg_url)  # opened before the lock
    locked, release = threading.Event(), threading.Event()

    def hold_lock() -> None:
        with psycopg.connect(pg_url) as conn:
            conn.execute(
                sql.SQL("LOCK TABLE {}.{} IN ACCESS EXCLUSIVE MODE").format(
                    sql.Identifier(schema), sql.Identifier(name)
                )
            )
            locked.set()
            release.wait(10)
            conn.rollback()

    holder = threading.Thread(target=hold_lock)
    holder.start()
    try:
        assert locked.wait(10)
        started = time.monotonic()
        with pytest.raises(DatabaseTimeoutError, match="locked by another session"):
            kb.search("exponential backoff", top_k=3, mode="bm25")
        assert time.monotonic() - started < 5
    finally:
        release.set()
        holder.join()
        READERS.discard_all()
    assert kb.search("exponential backoff", top_k=3, mode="bm25")  # the lock gone: it works
