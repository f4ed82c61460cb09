"""Connecting to PostgreSQL: the URL, its redaction, and one-line errors.

The password of a URL never appears in a message, a repr or an exception: every text the
driver gives back is scrubbed of it (and of the whole URL) before it is raised.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote

import psycopg
from psycopg import errors as pg_errors
from psycopg.conninfo import conninfo_to_dict

from kbgraph.errors import (
    ConfigError,
    DatabaseSetupError,
    DatabaseTimeoutError,
    DatabaseUnavailableError,
)

CONNECT_TIMEOUT_S = 10
URL_FORM = "postgresql://user[:password]@host[:port]/dbname"


class _AbortedCopyNoise(logging.Filter):
    """psycopg logs "error ignored terminating <psycopg.Copy [BAD]>" when a COPY (or a
    pipeline) is cut by the error that ends the run, which kbgraph reports on its own
    line; through logging's last resort that second message reached stderr."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("error ignored terminating")


logging.getLogger("psycopg").addFilter(_AbortedCopyNoise())


@dataclass(frozen=True)
class Database:
    """A PostgreSQL URL, parsed once; ``location`` is the URL without its password."""

    url: str = field(repr=False)
    location: str
    secrets: tuple[str, ...] = field(repr=False)
    hosts: int = 1  # a libpq multi-host URL names several (a primary and its standbys)
    session_attrs: str | None = None  # the URL's own target_session_attrs

    @classmethod
    def parse(cls, url: str) -> Database:
        try:
            params = conninfo_to_dict(url)
        except psycopg.ProgrammingError:
            # The driver's reason quotes the URL, password included: say only what is wanted.
            raise ConfigError(
                f"the store is not a valid PostgreSQL URL; use {URL_FORM} (the password may "
                "also come from PGPASSWORD or ~/.pgpass)"
            ) from None
        port = str(params.get("port") or "")
        if port and not all(p.strip().isdigit() or not p.strip() for p in port.split(",")):
            raise ConfigError(f"the store's port must be a number; use {URL_FORM}")
        password = str(params.get("password") or "")
        secrets = tuple(s for s in {password, quote(password), unquote(password), url} if s)
        hosts = len(str(params.get("host") or params.get("hostaddr") or "").split(","))
        attrs = params.get("target_session_attrs")
        return cls(url, _location(params), secrets, hosts, str(attrs) if attrs else None)

    def scrub(self, text: str) -> str:
        for secret in sorted(self.secrets, key=len, reverse=True):
            text = text.replace(secret, "***")
        return text

    def reason(self, exc: BaseException) -> str:
        """The driver's message on one line, without the password."""
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        return self.scrub("; ".join(lines) or type(exc).__name__)

    def connect(
        self, *, autocommit: bool = True, session_attrs: str | None = None
    ) -> psycopg.Connection[Any]:
        """A connection; ``session_attrs`` (libpq's ``target_session_attrs``: which of the
        URL's hosts to choose) applies when the URL names several hosts."""
        extra: dict[str, Any] = {}
        if session_attrs and self.hosts > 1:
            extra["target_session_attrs"] = session_attrs
        try:
            return psycopg.connect(
                self.url, autocommit=autocommit, connect_timeout=CONNECT_TIMEOUT_S, **extra
            )
        except psycopg.OperationalError as exc:
            raise DatabaseUnavailableError(
                f"cannot connect to PostgreSQL at {self.location} ({self.reason(exc)}); check "
                "that the server runs and that host, port, database, user and password are right"
            ) from None
        except psycopg.Error as exc:
            raise ConfigError(
                f"cannot use the store {self.location} ({self.reason(exc)}); use {URL_FORM}"
            ) from None

    @contextmanager
    def errors(self, doing: str) -> Iterator[None]:
        """Driver errors while ``doing`` something become one-line kbgraph errors."""
        try:
            yield
        except psycopg.errors.InsufficientPrivilege as exc:
            raise DatabaseSetupError(
                f"PostgreSQL at {self.location} refused to {doing}: {self.reason(exc)}; grant "
                "the user the privilege (CREATE on the schema to index, SELECT to search) or "
                "use a user that has it"
            ) from None
        except pg_errors.LockNotAvailable as exc:
            raise DatabaseTimeoutError(
                f"PostgreSQL at {self.location} gave up trying to {doing}: a table it needs "
                f"is locked by another session ({self.reason(exc)}); wait for that session "
                "(a migration, VACUUM FULL, an index run) or raise KBGRAPH_PG_LOCK_TIMEOUT_MS"
            ) from None
        except pg_errors.QueryCanceled as exc:
            raise DatabaseTimeoutError(
                f"PostgreSQL at {self.location} stopped trying to {doing}: the statement ran "
                f"past its time limit ({self.reason(exc)}); check the server's load, or raise "
                "KBGRAPH_PG_STATEMENT_TIMEOUT_MS"
            ) from None
        except (
            psycopg.OperationalError,
            psycopg.InterfaceError,
            pg_errors.SerializationFailure,
        ) as exc:
            # InterfaceError: the connection was already closed by an earlier loss.
            # SerializationFailure: a standby cancelled the query to replay the primary's
            # changes (a recovery conflict); a new attempt succeeds.
            raise DatabaseUnavailableError(
                f"lost PostgreSQL at {self.location} while trying to {doing} "
                f"({self.reason(exc)}); check the server and run the command again"
            ) from None
        except psycopg.Error as exc:
            raise DatabaseSetupError(
                f"PostgreSQL at {self.location} failed to {doing}: {self.reason(exc)}"
            ) from None


def ensure_vector_extension(db: Database, conn: psycopg.Connection[Any]) -> None:
    """``CREATE EXTENSION IF NOT EXISTS vector``, with a message that says what to do when
    the server lacks pgvector or the user may not install it."""
    installed = conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone()
    if installed:
        return
    available = conn.execute(
        "SELECT 1 FROM pg_available_extensions WHERE name = 'vector'"
    ).fetchone()
    if not available:
        raise DatabaseSetupError(
            f"PostgreSQL at {db.location} has no pgvector (the `vector` extension is not "
            "available on the server); install pgvector 0.5 or later on the server, or choose "
            "a server that has it"
        )
    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except pg_errors.InsufficientPrivilege:
        database = conn.info.dbname
        raise DatabaseSetupError(
            f"the `vector` extension is not installed in database {database} at {db.location} "
            "and this user may not install it; as a superuser run `CREATE EXTENSION vector;` "
            f"in database {database}"
        ) from None
    except pg_errors.UniqueViolation:
        pass  # another process created it at the same moment


def _location(params: dict[str, Any]) -> str:
    user = params.get("user") or ""
    hosts = str(params.get("host") or "localhost").split(",")
    ports = str(params.get("port") or "").split(",")
    ports = ports * len(hosts) if len(ports) == 1 else ports  # one port for every host
    where = ",".join(_host(h, p) for h, p in zip(hosts, ports, strict=False))
    database = params.get("dbname") or user or ""
    return f"postgresql://{user + '@' if user else ''}{where}/{database}"


def _host(host: str, port: str) -> str:
    where = f"{host}:{port}" if port else host
    return f"[{where}]" if where.startswith("/") else where  # a Unix socket folder


__all__ = ["CONNECT_TIMEOUT_S", "URL_FORM", "Database", "ensure_vector_extension"]
