"""The search connections of one process: a pool shared by every knowledge base and agent
(thread) of the process that searches the same servers.

A search takes an idle connection (or opens one), runs its statements in autocommit (each
statement sees one committed version; the ranking checks that they all saw the same one)
and gives it back. Opening a connection costs a round trip, authentication and a backend
process on the server; before the pool, each ``KnowledgeBase`` held its own, used by one
thread at a time, so the agents of one process queued on it.

Settings a search needs (``hnsw.ef_search``, ``hnsw.iterative_scan``) are session
settings remembered per connection and sent only when they change, so that the common
search sends one statement and nothing else. A connection that failed is closed, and so
is every idle one to the same servers (a lost server takes them all).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import sql

from kbgraph.errors import ConfigError

from ._servers import Servers, in_recovery

FAILBACK_S = 30.0
"""Searches that went to the primary because no standby answered try a standby again
after this many seconds (at the next search)."""
MAX_IDLE = 64
"""Idle connections kept per set of servers: as many as the agents of a process search at
once, up to this; more are opened when needed and closed when given back. At 16, 64
agents searching back to back opened a connection (a server process) for most searches:
111 searches/s against 184 at 32 agents (``benchmarks/bench_load.py``)."""
SESSION_SQL = (
    "SELECT set_config('jit', 'off', false), set_config('statement_timeout', %s, false),"
    " set_config('lock_timeout', %s, false)"
)
"""Sent once per connection (one round trip). A search is a short indexed query: LLVM
compilation, which the planner starts above a cost that a BM25 aggregation's misestimated
rows can reach, costs more than the whole query. The timeouts bound a search that waits:
without them a search queued behind a table lock (an ``ALTER``, a ``VACUUM FULL``, a
migration) waited as long as the lock was held, and so did every agent searching."""
STATEMENT_TIMEOUT_MS = 5000
"""Default longest search statement (``KBGRAPH_PG_STATEMENT_TIMEOUT_MS``; 0: no limit)."""
LOCK_TIMEOUT_MS = 1000
"""Default longest wait of a search for a lock (``KBGRAPH_PG_LOCK_TIMEOUT_MS``; 0: no
limit)."""


def search_timeouts() -> tuple[int, int]:
    """The statement and lock timeouts of search connections, in milliseconds: the
    environment's ``KBGRAPH_PG_STATEMENT_TIMEOUT_MS`` / ``KBGRAPH_PG_LOCK_TIMEOUT_MS`` or the
    defaults."""
    return (
        _milliseconds("KBGRAPH_PG_STATEMENT_TIMEOUT_MS", STATEMENT_TIMEOUT_MS),
        _milliseconds("KBGRAPH_PG_LOCK_TIMEOUT_MS", LOCK_TIMEOUT_MS),
    )


def start_session(conn: psycopg.Connection[Any]) -> None:
    """:data:`SESSION_SQL` with :func:`search_timeouts`, on a new connection that searches
    read through: the pool's, and the store's own for the reads each search starts with
    (its version in ``kbgraph_kbs``), which a lock on that table held 30 s without them."""
    statement_ms, lock_ms = search_timeouts()
    conn.execute(SESSION_SQL, (str(statement_ms), str(lock_ms)))


def _milliseconds(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit():
        raise ConfigError(
            f"{name}={raw!r} is not a number of milliseconds; set a whole number "
            f"(0: no limit) or unset it for the default {default}"
        )
    return int(raw)


@dataclass
class PooledConnection:
    """A search connection and what is known of it without asking the server."""

    conn: psycopg.Connection[Any]
    standby: bool
    since: float = field(default_factory=time.monotonic)
    settings: dict[str, str] = field(default_factory=dict)

    def set(self, name: str, value: int | str) -> None:
        """``SET name = value`` for this session, sent only when it changes."""
        if self.settings.get(name) == str(value):
            return
        self.conn.execute(sql.SQL("SET {} = {}").format(sql.SQL(name), sql.Literal(value)))
        self.settings[name] = str(value)

    def usable(self) -> bool:
        return not self.conn.closed and not self.conn.broken


class ReaderPool:
    """Idle search connections by the servers they go to (a process's whole pool)."""

    def __init__(self) -> None:
        self._idle: dict[tuple[str, str], list[PooledConnection]] = {}
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._inherited: list[object] = []  # a forked child's copy of its parent's pool

    @staticmethod
    def _key(servers: Servers) -> tuple[str, str]:
        return (servers.write.url, servers.read.url if servers.read else "")

    def take(self, servers: Servers) -> PooledConnection:
        with self._lock:
            self._forget_parent()
            idle = self._idle.get(self._key(servers), [])
            while idle:
                pooled = idle.pop()
                if pooled.usable() and not fails_back(servers, pooled.standby, pooled.since):
                    return pooled
                pooled.conn.close()
        conn = servers.reader()
        try:
            standby = in_recovery(conn)
            start_session(conn)
        except BaseException:
            conn.close()
            raise
        return PooledConnection(conn, standby)

    def give(self, servers: Servers, pooled: PooledConnection) -> None:
        if not pooled.usable() or pooled.conn.info.transaction_status != 0:  # IDLE
            pooled.conn.close()
            return
        with self._lock:
            idle = self._idle.setdefault(self._key(servers), [])
            if len(idle) < MAX_IDLE and os.getpid() == self._pid:
                idle.append(pooled)
                return
        pooled.conn.close()

    def discard(self, servers: Servers) -> None:
        """Close every idle connection to ``servers`` (one of them failed)."""
        with self._lock:
            idle = self._idle.pop(self._key(servers), [])
        for pooled in idle:
            pooled.conn.close()

    def discard_all(self) -> None:
        """Close every idle connection (tests; a process that wants its sockets back)."""
        with self._lock:
            idle, self._idle = self._idle, {}
        for pooled in (p for group in idle.values() for p in group):
            pooled.conn.close()

    def _forget_parent(self) -> None:
        """A forked child must not use its parent's sockets: it starts an empty pool. The
        parent's connections are kept referenced, never closed here: closing (or a garbage
        collector finishing them) would end the parent's sessions on the shared sockets."""
        if os.getpid() != self._pid:
            self._inherited.append(self._idle)
            self._idle, self._pid = {}, os.getpid()

    @contextmanager
    def connection(self, servers: Servers) -> Iterator[PooledConnection]:
        pooled = self.take(servers)
        try:
            yield pooled
        except BaseException:
            if pooled.usable():  # a statement failed (or the ranking was stale): reusable
                self.give(servers, pooled)
            else:
                pooled.conn.close()
                self.discard(servers)
            raise
        self.give(servers, pooled)


def fails_back(servers: Servers, standby: bool, since: float) -> bool:
    """A connection made at ``since`` (monotonic) to the primary while searches prefer a
    standby, for long enough to try a standby again."""
    return not standby and servers.prefers_standby and time.monotonic() - since > FAILBACK_S


READERS = ReaderPool()

__all__ = [
    "FAILBACK_S",
    "LOCK_TIMEOUT_MS",
    "MAX_IDLE",
    "READERS",
    "STATEMENT_TIMEOUT_MS",
    "PooledConnection",
    "ReaderPool",
    "fails_back",
    "search_timeouts",
    "start_session",
]
