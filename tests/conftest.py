"""Session-wide fixtures: the PostgreSQL servers of the tests that need a database."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.pg_cluster import PgCluster, PgNode, running_cluster
from tests.support.postgres import chosen_server, make_synchronous, new_database


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PgCluster]:
    """A real PostgreSQL + pgvector (``tests.support.postgres.chosen_server``), started for
    this session. Its data folder is not under pytest's private (0700) temporary folder:
    run as root, the server runs as an unprivileged user, who must reach it."""
    with running_cluster(chosen_server(), Path(tempfile.mkdtemp(prefix="kbgraph-pg-"))) as c:
        yield c


@pytest.fixture(scope="session")
def pg_url(pg_cluster: PgCluster) -> str:
    """A superuser URL of the session's primary."""
    return pg_cluster.primary.url()


@pytest.fixture(scope="session")
def pg_standby(pg_cluster: PgCluster) -> PgNode:
    """A streaming standby of the session's primary, started by the first test that asks.
    Synchronous, with ``synchronous_commit = remote_apply``: a commit on the primary returns
    once the standby shows it, so a search right after an index run sees that run (as with
    one server); tests of a standby that lags or goes away start a cluster of their own."""
    standby = pg_cluster.add_standby()
    make_synchronous(pg_cluster.primary.url())
    return standby


@pytest.fixture(scope="session")
def pg_replica_url(pg_cluster: PgCluster, pg_standby: PgNode) -> str:
    """The primary and its standby in one libpq multi-host URL: searches go to the
    standby, writes to the primary. A database of its own (so its embedding cache starts
    empty, as the primary's did for the tests that ran there)."""
    return pg_cluster.multi_host_url(new_database(pg_cluster.primary.url()))


@pytest.fixture(scope="session")
def pg_older_url() -> Iterator[str]:
    """PostgreSQL 16 + pgvector 0.6 (``pgserver``), started by the first test that asks:
    a server without halfvec and iterative index scans, whose tables and
    searches take the paths of an older pgvector."""
    with running_cluster("pgserver", Path(tempfile.mkdtemp(prefix="kbgraph-pg16-"))) as c:
        yield c.primary.url()
