"""The test servers' helper itself: a kept cluster (``running_cluster(keep=True)``, what
``benchmarks/bench_scale.py --pg-data`` builds a 1M-row database into once) is shut down
cleanly and kept, and the next start reuses its data instead of running initdb."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import psycopg
import pytest

from tests.support.pg_cluster import running_cluster
from tests.support.postgres import chosen_server

pytestmark = pytest.mark.integration


def test_a_kept_cluster_keeps_its_data_and_is_started_again() -> None:
    root = Path(tempfile.mkdtemp(prefix="kbgraph-kept-"))  # short: the socket's path
    try:
        with (
            running_cluster(chosen_server(), root, keep=True) as cluster,
            psycopg.connect(cluster.primary.url(), autocommit=True) as conn,
        ):
            conn.execute("CREATE TABLE kept (n int)")
            conn.execute("INSERT INTO kept VALUES (41)")
        assert (root / "primary" / "PG_VERSION").exists()
        assert not (root / "primary" / "postmaster.pid").exists()  # shut down, not killed
        settings = {"work_mem": "8MB"}  # a setting given at the next start applies
        with (
            running_cluster(chosen_server(), root, keep=True, settings=settings) as cluster,
            psycopg.connect(cluster.primary.url(), autocommit=True) as conn,
        ):
            assert conn.execute("SELECT n + 1 FROM kept").fetchone() == (42,)
            assert conn.execute("SHOW work_mem").fetchone() == ("8MB",)
        assert (root / "primary" / "PG_VERSION").exists()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_a_cluster_not_kept_is_removed() -> None:
    root = Path(tempfile.mkdtemp(prefix="kbgraph-gone-"))
    with running_cluster(chosen_server(), root) as cluster:
        assert cluster.primary.running()
    assert not root.exists()
