"""What the facade refuses or remembers: deleting only an index folder, never chmod-ing a
folder it does not own, the query model the index was built with, and the chunking and
scan settings recorded in the index."""

from __future__ import annotations

import os
import shutil
import stat
import threading
import time
from pathlib import Path

import pytest
from langchain_core.embeddings import Embeddings

from kbgraph.errors import (
    ConfigError,
    IndexLockedError,
    IndexNotFoundError,
    KbgraphError,
    ModelMismatchError,
)
from kbgraph.graphs._searcher import SearcherRegistry
from kbgraph.retrieval import ChunkConfig, KnowledgeBase, ScanConfig
from kbgraph.retrieval._folder import file_lock
from kbgraph.testing import FakeEmbeddings


def _docs(root: Path) -> Path:
    files = {
        "guide/retry.md": "# Retry\n\nThe retry policy uses exponential backoff.\n",
        "guide/auth.md": "# Auth\n\nAPI keys rotate every 90 days. Tokens expire hourly.\n",
        "notes/東京.txt": "東京の天気は晴れです。\r\nThe Tokyo office handles billing.\r\n",
    }
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
    return root


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return _docs(tmp_path / "docs")


# -- delete ----------------------------------------------------------------------------


def test_delete_removes_an_index(folder: Path) -> None:
    kb = KnowledgeBase(folder, embedding="fake")
    kb.index()
    kb.delete()
    assert not (folder / ".kbgraph").exists()
    assert (folder / "guide/retry.md").exists()


@pytest.mark.parametrize("where", ["docs", "parent"])
def test_delete_refuses_the_documents_folder_or_its_parent(folder: Path, where: str) -> None:
    target = folder if where == "docs" else folder.parent
    kb = KnowledgeBase(folder, embedding=None, index_dir=target)
    with pytest.raises(ConfigError, match="refusing to delete"):
        kb.delete()
    assert (folder / "guide/retry.md").read_bytes().startswith(b"# Retry")


def test_delete_refuses_a_folder_that_is_not_an_index(folder: Path, tmp_path: Path) -> None:
    other = tmp_path / "photos"
    other.mkdir()
    (other / "holiday.jpg").write_bytes(b"\xff\xd8")
    (other / ".gitignore").write_bytes(b"*\n")  # the marker alone does not make an index
    kb = KnowledgeBase(folder, embedding=None, index_dir=other)
    with pytest.raises(ConfigError, match=r"not a kbgraph index.*holiday\.jpg"):
        kb.delete()
    assert (other / "holiday.jpg").exists()
    assert not (other / ".write.lock").exists()  # refused before taking any lock


def test_delete_refuses_an_index_holding_a_foreign_file(folder: Path) -> None:
    kb = KnowledgeBase(folder, embedding=None)
    kb.index()
    (folder / ".kbgraph" / "my-notes.md").write_text("mine")
    with pytest.raises(ConfigError, match=r"my-notes\.md"):
        kb.delete()
    assert (folder / ".kbgraph" / "my-notes.md").exists()


def test_delete_waits_for_a_running_writer(folder: Path) -> None:
    kb = KnowledgeBase(folder, embedding=None, lock_timeout=0.2)
    kb.index()
    with (
        file_lock(kb.layout.write_lock, "exclusive", 1, "index"),
        pytest.raises(IndexLockedError),
    ):
        kb.delete()
    assert kb.layout.current_name() is not None
    kb.delete()
    with pytest.raises(IndexNotFoundError):
        kb.delete()


def test_a_writer_that_waited_while_the_index_was_deleted_is_told(folder: Path) -> None:
    kb = KnowledgeBase(folder, embedding=None)
    kb.index()
    errors: list[Exception] = []
    waiting = threading.Event()

    def writer() -> None:
        waiting.set()
        try:
            with file_lock(kb.layout.write_lock, "exclusive", 30, "index"):
                pass  # won a lock on an unlinked file: it would guard nothing
        except IndexNotFoundError as exc:
            errors.append(exc)

    with file_lock(kb.layout.write_lock, "exclusive", 1, "delete index"):
        thread = threading.Thread(target=writer)
        thread.start()
        waiting.wait()
        time.sleep(0.3)  # let it open the lock file and start polling
        shutil.rmtree(kb.layout.root)
    thread.join(30)
    assert len(errors) == 1 and "no longer exists" in str(errors[0])


# -- the index folder's mode -------------------------------------------------------------


def test_an_existing_empty_index_dir_keeps_its_mode(folder: Path, tmp_path: Path) -> None:
    shared = tmp_path / "shared-index"
    shared.mkdir(mode=0o755)
    os.chmod(shared, 0o755)
    KnowledgeBase(folder, embedding=None, index_dir=shared).index()
    assert stat.S_IMODE(shared.stat().st_mode) == 0o755
    assert (shared / ".gitignore").read_bytes() == b"*\n"


def test_a_created_index_dir_is_private(folder: Path, tmp_path: Path) -> None:
    KnowledgeBase(folder, embedding=None, index_dir=tmp_path / "new" / "idx").index()
    assert stat.S_IMODE((tmp_path / "new" / "idx").stat().st_mode) == 0o700


def test_a_folder_with_other_files_is_not_taken_over(folder: Path) -> None:
    os.chmod(folder, 0o755)
    kb = KnowledgeBase(folder, embedding=None, index_dir=folder)
    with pytest.raises(ConfigError, match="not a kbgraph index"):
        kb.index()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o755
    assert not (folder / ".gitignore").exists()


# -- the query model ---------------------------------------------------------------------


class _OtherModel(Embeddings):
    """Another model with the same vector size as ``fake`` (384)."""

    model = "other-384"

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return FakeEmbeddings().embed_documents([t[::-1] for t in texts])

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


@pytest.mark.parametrize("query_model", ["local", "object"])
def test_another_model_of_the_same_size_is_refused_at_search(
    folder: Path, query_model: str
) -> None:
    KnowledgeBase(folder, embedding="fake").index()
    embedding = "local" if query_model == "local" else _OtherModel()
    kb = KnowledgeBase(folder, embedding=embedding)
    for mode in ("vector", "hybrid"):
        with pytest.raises(ModelMismatchError) as caught:
            kb.search("retry policy", mode=mode)  # type: ignore[arg-type]
        message = str(caught.value)
        assert "fake:bow-384" in message and "--embedding fake" in message
    with pytest.raises(ModelMismatchError):
        kb.rank("retry policy", "vector", limit=3)
    # BM25 does not embed the query: the model does not matter there.
    assert kb.search("retry policy", mode="bm25")[0].chunk.source == "guide/retry.md"


def test_a_search_without_a_model_of_an_index_with_vectors_says_to_use_bm25(
    folder: Path,
) -> None:
    """Regression (issue 20): ``embedding=None`` (``--embedding none``) on an index built
    with a model said "this knowledge base has no embedding model (lexical only)", which
    reads as if the index had none, and did not say what would work."""
    KnowledgeBase(folder, embedding="fake").index()
    kb = KnowledgeBase(folder, embedding=None)
    for mode in ("vector", "hybrid", None):
        with pytest.raises(ModelMismatchError) as caught:
            kb.search("retry policy", mode=mode)  # type: ignore[arg-type]
        message = str(caught.value)
        assert "fake:bow-384" in message and "--mode bm25" in message
        assert "--embedding fake" in message
    assert kb.search("retry policy", mode="bm25")[0].chunk.source == "guide/retry.md"


@pytest.mark.parametrize(("built", "wanted"), [("fake", "fake:64"), ("fake", None), (None, "fake")])
def test_index_refuses_another_model_unless_allowed_or_rebuilt(
    folder: Path, built: str | None, wanted: str | None
) -> None:
    """Regression (issue 20): ``kbgraph index --embedding OTHER`` re-embedded the whole index
    with one "Indexed" line; the CLI and the watcher now call ``index`` with
    ``allow_model_change=False``."""
    KnowledgeBase(folder, embedding=built).index()
    before = KnowledgeBase(folder).versions()
    kb = KnowledgeBase(folder, embedding=wanted)
    with pytest.raises(ModelMismatchError, match=r"--rebuild") as caught:
        kb.index(allow_model_change=False)
    assert "does not rebuild an index with another model" in str(caught.value)
    assert KnowledgeBase(folder).versions() == before  # nothing written
    report = kb.index(rebuild=True, allow_model_change=False)
    assert report.rebuilt
    assert not kb.index(allow_model_change=False).rebuilt  # its own model from then on
    KnowledgeBase(folder, embedding=built).index()  # a plain index() is explicit: it may


def test_the_same_model_as_spec_or_object_searches(folder: Path) -> None:
    KnowledgeBase(folder, embedding="fake").index()
    for embedding in ("fake", FakeEmbeddings(), "auto"):
        kb = KnowledgeBase(folder, embedding=embedding)
        assert kb.search("API keys rotate", top_k=1, mode="vector")[0].chunk.source == (
            "guide/auth.md"
        )


def test_a_model_mismatch_is_a_kbgraph_error() -> None:
    assert issubclass(ModelMismatchError, KbgraphError)


def test_auto_on_an_index_built_from_an_object_asks_for_that_object(folder: Path) -> None:
    KnowledgeBase(folder, embedding=_OtherModel()).index()
    kb = KnowledgeBase(folder)  # "auto": no spec was recorded
    assert kb.is_fresh()  # freshness needs no model
    assert kb.search("retry policy", mode="bm25")
    with pytest.raises(ConfigError, match=r"Embeddings object .*other-384.*pass the same"):
        kb.search("retry policy", mode="vector")
    (folder / "guide/new.md").write_text("# New\n\nSomething new to embed.\n")
    with pytest.raises(ConfigError, match="pass the same Embeddings object"):
        kb.index()
    again = KnowledgeBase(folder, embedding=_OtherModel())
    report = again.index()
    assert not report.rebuilt and report.embedded >= 1
    assert again.search("retry policy", mode="vector")


# -- recorded chunking and scan settings ----------------------------------------------------


def test_recorded_chunking_is_reused_unless_given(folder: Path) -> None:
    built = KnowledgeBase(folder, embedding="fake", chunking=ChunkConfig(chunk_size=1000))
    built.index()
    kb = KnowledgeBase(folder, embedding="fake")
    assert kb.chunk_config == ChunkConfig(chunk_size=1000)
    assert kb.stats().stale_files == 0
    assert kb.ensure_fresh() is None
    again = kb.index()
    assert not again.rebuilt and again.embedded == 0
    changed = KnowledgeBase(folder, embedding="fake", chunking=ChunkConfig())
    assert changed.stale_files() is None  # the settings differ: everything is stale
    assert changed.index().rebuilt


def test_the_subgraphs_searcher_does_not_rebuild_a_custom_chunked_index(folder: Path) -> None:
    KnowledgeBase(folder, embedding="fake", chunking=ChunkConfig(chunk_size=1000)).index()
    registry = SearcherRegistry()
    try:
        assert registry.open(folder, "fake").ensure_fresh() is None
    finally:
        registry.close_all()


def test_recorded_scan_settings_are_reused(folder: Path) -> None:
    only_md = ScanConfig(include=("**/*.md",))
    KnowledgeBase(folder, embedding=None, scan=only_md).index()
    kb = KnowledgeBase(folder, embedding=None)
    assert kb.scan_config == only_md
    assert kb.stats().stale_files == 0
    assert kb.stats().file_count == 2


def test_a_corrupt_index_can_still_be_opened_for_deletion(folder: Path) -> None:
    KnowledgeBase(folder, embedding="fake", chunking=ChunkConfig(chunk_size=1000)).index()
    (folder / ".kbgraph" / "CURRENT").write_text("gen-missing\n")
    kb = KnowledgeBase(folder, embedding=None)
    kb.delete()
    assert not (folder / ".kbgraph").exists()
