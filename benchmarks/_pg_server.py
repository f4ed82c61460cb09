"""The PostgreSQL server of a benchmark (``tests/support/postgres.py``) as its processes
see it: CPU seconds of every process of it, their memory, its versions, and the statements
it ran while a callable ran (its log, ``log_statement = 'all'``). Read through ``/proc``
(psutil): the server must run on this machine, as this user or with root's rights."""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import psutil
import psycopg

VERSIONS = (
    "SELECT current_setting('server_version'), "
    "(SELECT extversion FROM pg_extension WHERE extname = 'vector')"
)
STATEMENT = re.compile(r"LOG:  (?:statement|execute [^:]*): *(\w*)", re.IGNORECASE)


def data_directory(conn: psycopg.Connection) -> Path:
    row = conn.execute("SHOW data_directory").fetchone()
    return Path(str(row[0] if row else ""))


def postmaster(url: str) -> psutil.Process:
    with psycopg.connect(url, autocommit=True) as conn:
        pid_file = data_directory(conn) / "postmaster.pid"
    return psutil.Process(int(pid_file.read_text().split()[0]))


def server_times(root: psutil.Process) -> tuple[float, dict[int, float]]:
    """Seconds of CPU of the whole server (reaped children included), and of each live
    client backend (its process title names the ``[local]`` socket connection)."""
    t = root.cpu_times()
    total = t.user + t.system + t.children_user + t.children_system
    backends: dict[int, float] = {}
    for child in root.children(recursive=True):
        try:
            ct, title = child.cpu_times(), " ".join(child.cmdline())
        except psutil.NoSuchProcess:
            continue
        total += ct.user + ct.system
        if "[local]" in title:
            backends[child.pid] = ct.user + ct.system
    return total, backends


def server_pss(root: psutil.Process) -> int:
    """Proportional set size of all the server's processes (shared buffers counted once)."""
    total = 0
    for proc in (root, *root.children(recursive=True)):
        try:
            total += proc.memory_full_info().pss
        except psutil.NoSuchProcess:
            continue
    return total


def server_versions(url: str) -> dict[str, str]:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(VERSIONS).fetchone() or ("?", "?")
    return {"PostgreSQL": str(row[0]), "pgvector": str(row[1])}


def count_statements(url: str, run: Callable[[], object]) -> Counter[str] | None:
    """The statements the server logged while ``run`` ran, by first word; None without a
    log to read."""
    with psycopg.connect(url, autocommit=True) as conn:
        log = data_directory(conn) / "log"  # pg_ctl -l of tests/support/pg_cluster.py
        if not log.is_file():
            return None
        conn.execute("ALTER SYSTEM SET log_statement = 'all'")
        conn.execute("SELECT pg_reload_conf()")
        time.sleep(0.3)  # the idle backends read the new setting on their next command
        start = log.stat().st_size
        run()
        time.sleep(0.3)
        with log.open("rb") as f:
            f.seek(start)
            text = f.read().decode(errors="replace")
        conn.execute("ALTER SYSTEM RESET log_statement")
        conn.execute("SELECT pg_reload_conf()")
    return Counter(m.group(1).upper() for m in STATEMENT.finditer(text))


def settle(url: str) -> None:
    """The steady state a server reaches after a bulk load: tables vacuumed and analysed,
    dirty pages written, so no autovacuum or checkpoint runs inside a timed pass."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE)")
        conn.execute("CHECKPOINT")
