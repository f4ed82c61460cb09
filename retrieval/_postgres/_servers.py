"""Which server a connection goes to: writes to the primary, searches to a standby when the
store names one, and what the server that answered is.

A store URL may name several hosts (libpq's multi-host form,
``postgresql://kb@db1:5432,db2:5432/kb``): reads then ask for a standby
(``target_session_attrs=prefer-standby``: the standbys first, the primary when none
answers) unless the URL says otherwise, and writes ask for the primary (``read-write``). A
separate read URL (``read_store``: a replica, a pool of replicas behind one address) is
tried first for reads, then the store URL. A writer that reaches a standby anyway (a URL
naming only a standby) is refused before it writes anything: ``ReadOnlyStoreError``.
"""

from __future__ import annotations

import time
from typing import Any

import psycopg

from kbgraph.errors import DatabaseUnavailableError, ReadOnlyStoreError

from ._connect import Database, _host
from ._features import PgVector

_REPLAY_POLL_S = 0.01
PREFER_STANDBY = "prefer-standby"
READ_WRITE = "read-write"


def address(conn: psycopg.Connection[Any]) -> str:
    """The server a connection reached, as a URL without password."""
    info = conn.info
    return f"postgresql://{info.user}@{_host(info.host, str(info.port))}/{info.dbname}"


def in_recovery(conn: psycopg.Connection[Any]) -> bool:
    row = conn.execute("SELECT pg_is_in_recovery()").fetchone()
    if not conn.autocommit:
        conn.rollback()
    return bool(row and row[0])


def wait_for_replay(conn: psycopg.Connection[Any], lsn: str, timeout: float) -> bool:
    """Wait (up to ``timeout`` s) until the standby of ``conn`` has replayed WAL position
    ``lsn``; False when it has not by then (the read goes on, older by that much)."""
    deadline = time.monotonic() + timeout
    while True:
        row = conn.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (lsn,)).fetchone()
        if row is None or row[0] is None or row[0] or time.monotonic() >= deadline:
            return bool(row and row[0])
        time.sleep(_REPLAY_POLL_S)


_SERVER_SQL = """
SELECT pg_is_in_recovery(),
       CASE WHEN NOT pg_is_in_recovery() THEN NULL
            WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0.0
            ELSE extract(epoch FROM now() - pg_last_xact_replay_timestamp())::float8 END,
       CASE WHEN pg_is_in_recovery()
            THEN pg_wal_lsn_diff(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn())::bigint
       END,
       current_setting('server_version'),
       (SELECT extversion FROM pg_extension WHERE extname = 'vector')
"""


def server_info(conn: psycopg.Connection[Any]) -> dict[str, Any]:
    """Which server answered, whether it is a standby and how far its replay is behind
    what it received (seconds since the last replayed commit while WAL waits, else 0;
    None on a primary), its PostgreSQL and pgvector and what that pgvector lacks."""
    row = conn.execute(_SERVER_SQL).fetchone()
    assert row is not None
    standby, lag_s, lag_bytes, version, vector = row
    pgvector = PgVector(str(vector or ""))
    return {
        "address": address(conn),
        "standby": bool(standby),
        "replayLagSeconds": None if lag_s is None else round(float(lag_s), 3),
        "replayLagBytes": None if lag_bytes is None else int(lag_bytes),
        "postgres": str(version),
        "pgvector": pgvector.version or None,
        "pgvectorLacks": pgvector.lacks() if pgvector.version else [],
    }


class Servers:
    """The store URL (the primary, or a multi-host URL naming it and its standbys) and an
    optional read URL."""

    def __init__(self, url: str, read_url: str | None = None) -> None:
        self.write = Database.parse(url)
        self.read = Database.parse(read_url) if read_url else None

    @property
    def location(self) -> str:
        if self.read is None:
            return self.write.location
        return f"{self.write.location} (searches: {self.read.location})"

    @property
    def prefers_standby(self) -> bool:
        """Searches should go to a standby: a read URL, or several hosts to choose from."""
        return self.read is not None or (
            self.write.hosts > 1 and self.write.session_attrs in (None, PREFER_STANDBY)
        )

    def writer(self) -> psycopg.Connection[Any]:
        """A connection to the primary; ``ReadOnlyStoreError`` when the URL reaches a
        standby (nothing has been written then)."""
        conn = self.write.connect(session_attrs=READ_WRITE)
        try:
            standby = in_recovery(conn)
        except psycopg.Error as exc:
            conn.close()
            raise DatabaseUnavailableError(
                f"lost PostgreSQL at {self.write.location} ({self.write.reason(exc)})"
            ) from None
        if standby:
            where = address(conn)
            conn.close()
            raise ReadOnlyStoreError(
                f"PostgreSQL at {where} is a standby (read-only): an index run "
                "writes to the primary. Point --store (or the knowledge base's 'store') at "
                "the primary, or at several hosts (postgresql://user@primary,standby/db), and "
                "the standby at --read-store ('read_store'); searches go on from the standby"
            )
        return conn

    def reader(self, *, autocommit: bool = True) -> psycopg.Connection[Any]:
        """A connection for searches: the read URL, else (or when it does not answer) the
        store URL, a standby among its hosts first."""
        candidates = [db for db in (self.read, self.write) if db is not None]
        failures: list[str] = []
        for db in candidates:
            attrs = PREFER_STANDBY if db.session_attrs is None else None
            try:
                return db.connect(autocommit=autocommit, session_attrs=attrs)
            except DatabaseUnavailableError as exc:
                failures.append(str(exc))
        raise DatabaseUnavailableError("; and ".join(failures))


__all__ = [
    "PREFER_STANDBY",
    "READ_WRITE",
    "Servers",
    "address",
    "in_recovery",
    "server_info",
    "wait_for_replay",
]
