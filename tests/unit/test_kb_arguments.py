"""``KnowledgeBase``'s arguments are checked at the door: a wrong type is one ``ConfigError``
line saying what was given and what is allowed, never a ``TypeError`` from inside pathlib,
and a bool is not a number."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kbgraph.errors import ConfigError
from kbgraph.retrieval import ChunkConfig, KnowledgeBase, ScanConfig


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "größe.md").write_bytes("# Größe\r\n\r\nDie Größe des Caches.\r\n".encode())
    return docs


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (123, r"folder must be the path of a folder .*got int 123; e.g. KnowledgeBase\('docs/'\)"),
        (None, r"got NoneType None"),
        (b"docs", r"got bytes b'docs'"),
        ("", r"got str ''"),
        (["docs"], r"got list"),
    ],
    ids=["int", "none", "bytes", "empty", "list"],
)
def test_a_folder_that_is_no_path_is_a_config_error(value: object, says: str) -> None:
    """Regression (issue 20): ``KnowledgeBase(123)`` raised pathlib's bare TypeError."""
    with pytest.raises(ConfigError, match=says):
        KnowledgeBase(value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({"index_dir": 5}, r"index_dir must be the path of a folder .*got int 5"),
        ({"lock_timeout": True}, r"lock_timeout must be a number of seconds 0 or more .*bool"),
        ({"lock_timeout": -1}, r"lock_timeout must be .*got int -1"),
        ({"freshness_ttl": "2"}, r"freshness_ttl must be a number of seconds .*str '2'"),
        ({"freshness_ttl": float("nan")}, r"freshness_ttl must be"),
        ({"embedding_timeout": True}, r"embedding_timeout must be a number of seconds above 0"),
        ({"keep_versions": True}, r"keep_versions must be a whole number or None, got bool"),
        ({"keep_versions": 0}, r"keep_versions is 0; allowed: 1"),
        ({"store": 5}, r"store must be None .* as a str, got int"),
        ({"live": "yes"}, r"live must be True or False, got str 'yes'"),
        ({"scan": "**/*.md"}, r"scan must be a ScanConfig \(or a dict of its fields"),
        ({"chunking": {"chunk_sise": 100}}, r"no setting 'chunk_sise'.*did you mean 'chunk_size'"),
    ],
    ids=lambda v: next(iter(v)) if isinstance(v, dict) else None,
)
def test_other_arguments_of_the_wrong_kind_are_config_errors(
    folder: Path, arguments: dict[str, Any], says: str
) -> None:
    with pytest.raises(ConfigError, match=says):
        KnowledgeBase(folder, embedding=None, **arguments)


def test_settings_may_be_given_as_dicts(folder: Path) -> None:
    kb = KnowledgeBase(
        folder, embedding=None, chunking={"chunk_size": 100}, scan={"include": ["**/*.md"]}
    )
    assert kb.chunk_config == ChunkConfig(chunk_size=100)
    assert kb.scan_config == ScanConfig(include=("**/*.md",))
    assert kb.index().stats.file_count == 1
