"""Session-wide fixtures: the PostgreSQL server of the tests that need a database."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.postgres import running_postgres


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """A superuser URL of a real PostgreSQL 16 + pgvector, started for this session. Its
    data folder is not under pytest's private (0700) temporary folder: run as root,
    pgserver starts the server as an unprivileged user, who must reach it."""
    data = Path(tempfile.mkdtemp(prefix="kbgraph-pg-"))
    try:
        with running_postgres(data) as url:
            yield url
    finally:
        shutil.rmtree(data, ignore_errors=True)
