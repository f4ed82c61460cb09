"""PostgreSQL lost in the middle of ``kbgraph index --store``: the connection of a real
``kbgraph`` process is terminated by the server (``AdminShutdown``) while it reads the
embedding cache and while it copies rows in; each time the run fails with exit 1 and one
line on stderr (no traceback, no driver warning), and the next run completes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from tests.faults.conftest import ROOT, Run, one_line_reason, write_docs
from tests.support.postgres import new_database, url_for

pytestmark = [pytest.mark.faults, pytest.mark.timeout(90)]


def _docs(folder: Path, version: int, paragraphs: int = 1) -> Path:
    """40 notes; ``paragraphs`` of ~60 bytes each (many make many chunks to copy in)."""
    docs = {
        f"notes/n{i:02d}.md": f"# Note {i}\n\n"
        + "".join(
            f"retry backoff {i} paragraph {p} of version {version}.\n\n" for p in range(paragraphs)
        )
        for i in range(40)
    }
    return write_docs(folder, docs)  # type: ignore[arg-type]


def _start(folder: Path, url: str) -> subprocess.Popen[str]:
    args = ["index", str(folder), "--store", url, "--embedding", "fake", "--json", "--quiet"]
    return subprocess.Popen(
        [sys.executable, "-m", "kbgraph", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"},
    )


def _finish(proc: subprocess.Popen[str]) -> Run:
    out, err = proc.communicate(timeout=60)
    return Run(proc.returncode, out, err)


def _index(folder: Path, url: str) -> Run:
    return _finish(_start(folder, url))


@pytest.fixture
def database(pg_url: str) -> str:
    return url_for(pg_url, new_database(pg_url))


def _terminate_when_waiting(conn: psycopg.Connection[object], query: str) -> int:
    """Terminate the backend that waits for a lock while running ``query…``; its pid."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        row = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
            "AND query LIKE %s AND pid <> pg_backend_pid()",
            (query + "%",),
        ).fetchone()
        if row is not None:
            conn.execute("SELECT pg_terminate_backend(%s)", (row[0],))
            return int(row[0])
        time.sleep(0.05)
    raise AssertionError(f"no backend waited on {query!r}")


def test_a_connection_lost_while_reading_the_embedding_cache_is_one_line(
    tmp_path: Path, database: str
) -> None:
    """Regression (issue 24): AdminShutdown raised in the cache's get_many came out as a
    52-line traceback (exit 1 by accident)."""
    assert _index(_docs(tmp_path / "first", 0), database).code == 0  # the shared tables
    folder = _docs(tmp_path / "docs", 1)
    holder = psycopg.connect(database)  # a transaction that keeps the cache table locked
    try:
        holder.execute("LOCK TABLE kbgraph_embedding_cache IN ACCESS EXCLUSIVE MODE")
        proc = _start(folder, database)
        with psycopg.connect(database, autocommit=True) as admin:
            _terminate_when_waiting(admin, "SELECT hash, vector FROM kbgraph_embedding_cache")
    finally:
        holder.rollback()
        holder.close()
    run = _finish(proc)
    assert run.code == 1, run.stderr
    reason = one_line_reason(run)
    assert "lost PostgreSQL" in reason and "embedding cache" in reason, reason
    again = _index(folder, database)
    assert again.code == 0, again.stderr
    assert json.loads(again.stdout)["chunkCount"] == 40


def test_a_connection_lost_in_the_middle_of_a_copy_is_one_line(
    tmp_path: Path, database: str
) -> None:
    """Regression (issue 24): a server-side termination mid-COPY added psycopg's "error
    ignored terminating <psycopg.Copy [BAD]>" to the one-line reason."""
    # Rows enough (~600, ~400 KB) that the client is still writing when the server cuts
    # the connection: the write fails inside the COPY block and psycopg's clean-up fails
    # again, the case that logged "error ignored terminating" (a few rows fit in one
    # buffer and only fail at the end, which never logged it).
    folder = _docs(tmp_path / "docs", 0, paragraphs=150)
    first = _index(folder, database)
    assert first.code == 0, first.stderr
    rows = json.loads(first.stdout)["chunkCount"]
    _docs(folder, 1, paragraphs=150)  # every file changed: the next run copies every row in
    with psycopg.connect(database, autocommit=True) as admin:
        kb_id = admin.execute(
            "SELECT id FROM kbgraph_kbs WHERE folder = %s", (str(folder.resolve()),)
        ).fetchone()
        assert kb_id is not None
        table = f"kbgraph_kb{kb_id[0]}_chunks"
        admin.execute(
            "CREATE FUNCTION kbgraph_test_drop() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN PERFORM pg_terminate_backend(pg_backend_pid()); RETURN NEW; END $$"
        )
        admin.execute(
            f'CREATE TRIGGER drop_mid_copy BEFORE INSERT ON "{table}" '
            "FOR EACH ROW EXECUTE FUNCTION kbgraph_test_drop()"
        )
        run = _index(folder, database)
        admin.execute(f'DROP TRIGGER drop_mid_copy ON "{table}"')
    assert run.code == 1, run.stderr
    reason = one_line_reason(run)
    assert "lost PostgreSQL" in reason and "write the index" in reason, reason
    again = _index(folder, database)
    assert again.code == 0, again.stderr
    report = json.loads(again.stdout)
    assert (report["chunkCount"], report["embedded"]) == (rows, 0)
