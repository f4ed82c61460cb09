"""The folder the engine indexes for a BEIR run: one file per document, kept in a work folder
that is reused across runs. Two layouts (:data:`DocFormat`):

- ``md``: ``<doc_id>.md`` holding ``# title``, a blank line, the text. As a Markdown
  heading the title becomes every chunk's ``section``, which the engine indexes with the
  chunk (as it does for a user's docs), so a chunk from the middle of an abstract still
  carries what the paper is about (the first chunk holds the heading line too).
- ``txt``: ``<doc_id>.txt`` holding the title, a blank line, the text: plain prose, the
  title only in the first chunk.

Files are written only when their content changed, so their size and modification time
stay the same from one run to the next and the engine's incremental indexing reuses every
chunk and vector without reading the files again (a second run embeds nothing).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Literal
from urllib.parse import quote

from kbgraph._base.cache import CACHE_ENV, cache_root

from ._load import Document

DOCS_DIR = "docs"
INDEX_DIR = "index"
DocFormat = Literal["md", "txt"]
DOC_FORMATS: tuple[DocFormat, ...] = ("md", "txt")
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")


def default_work_dir(beir_dir: str | Path) -> Path:
    """``$KBGRAPH_CACHE_DIR`` (else ``$XDG_CACHE_HOME/kbgraph``, else ``~/.cache/kbgraph``)
    ``/beir/<data set folder name>-<hash of its absolute path>``."""
    root = Path(beir_dir).expanduser().resolve()
    digest = hashlib.sha256(str(root).encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return cache_root() / "beir" / f"{root.name}-{digest}"


def file_name(doc_id: str, doc_format: DocFormat = "md") -> str:
    """``<doc_id>.md`` (or ``.txt``); an id that is not a plain file name (``/``, spaces, a
    leading dot, non-ASCII) is percent-encoded, so that every id gets its own file."""
    name = doc_id if _SAFE_NAME.fullmatch(doc_id) else quote(doc_id, safe="")
    return f"{name}.{doc_format}"


def document_text(doc: Document, doc_format: DocFormat = "md") -> str:
    """What the engine indexes for a document: the title (``# title`` for ``md``), a blank
    line, its text."""
    title = " ".join(doc.title.split())
    if not title:
        return doc.text
    return f"# {title}\n\n{doc.text}" if doc_format == "md" else f"{title}\n\n{doc.text}"


def write_corpus(
    corpus: Mapping[str, Document], folder: Path, doc_format: DocFormat = "md"
) -> dict[str, str]:
    """Write every document into ``folder``; remove the files of documents no longer in the
    corpus (and those of the other format). Returns ``{file name: doc id}``."""
    folder.mkdir(parents=True, exist_ok=True)
    names: dict[str, str] = {}
    for doc_id, doc in corpus.items():
        name = file_name(doc_id, doc_format)
        names[name] = doc_id
        data = document_text(doc, doc_format).encode("utf-8", "surrogatepass")
        path = folder / name
        try:
            if path.stat().st_size == len(data) and path.read_bytes() == data:
                continue
        except FileNotFoundError:
            pass
        tmp = path.with_name(f".{name}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    for suffix in DOC_FORMATS:
        for stale in folder.glob(f"*.{suffix}"):
            if stale.name not in names:
                stale.unlink()
    return names


__all__ = [
    "CACHE_ENV",
    "DOCS_DIR",
    "DOC_FORMATS",
    "INDEX_DIR",
    "DocFormat",
    "default_work_dir",
    "document_text",
    "file_name",
    "write_corpus",
]
