"""A real PostgreSQL 16 with pgvector for the tests, from the PyPI package ``pgserver``
(no Docker, no system packages): started once per test session in a temporary folder,
listening on a Unix socket only, stopped at the end.

Knowledge bases are keyed by their documents folder, and every test has its own
``tmp_path``, so tests share the server without seeing each other's rows; tests that need
a database of their own (other roles, no extension) create one with :func:`new_database`.
"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import psycopg


@contextmanager
def running_postgres(data_dir: Path) -> Iterator[str]:
    """The URL of a superuser connection to a fresh server in ``data_dir``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs: XDG_RUNTIME_DIR is not set
        import pgserver

        server = pgserver.get_server(data_dir, cleanup_mode="stop")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()


def socket_dir(url: str) -> str:
    return psycopg.conninfo.conninfo_to_dict(url)["host"]  # type: ignore[return-value]


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
    return f"postgresql://{user}{secret}@/{database}?host={quote(socket_dir(admin_url))}"
