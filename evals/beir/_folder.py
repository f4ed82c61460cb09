"""The folder the engine indexes for a BEIR run: one Markdown file ``<doc_id>.md`` per document,
``# title`` then the text, kept in a work folder that is reused across runs. As a Markdown
heading the title becomes every chunk's ``section``, which the engine indexes with the
chunk (as it does for a user's docs), so a chunk from the middle of an abstract still
carries what the paper is about.

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
from urllib.parse import quote

from ._load import Document

CACHE_ENV = "KBGRAPH_CACHE_DIR"
DOCS_DIR = "docs"
SUFFIX = ".md"
INDEX_DIR = "index"
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")


def default_work_dir(beir_dir: str | Path) -> Path:
    """``$KBGRAPH_CACHE_DIR`` (else ``$XDG_CACHE_HOME/kbgraph``, else ``~/.cache/kbgraph``)
    ``/beir/<data set folder name>-<hash of its absolute path>``."""
    root = Path(beir_dir).expanduser().resolve()
    base = os.environ.get(CACHE_ENV) or ""
    if base:
        cache = Path(base).expanduser()
    else:
        xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        cache = Path(xdg).expanduser() / "kbgraph"
    digest = hashlib.sha256(str(root).encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return cache / "beir" / f"{root.name}-{digest}"


def file_name(doc_id: str) -> str:
    """``<doc_id>.md``; an id that is not a plain file name (``/``, spaces, a leading dot,
    non-ASCII) is percent-encoded, so that every id gets its own file."""
    name = doc_id if _SAFE_NAME.fullmatch(doc_id) else quote(doc_id, safe="")
    return f"{name}{SUFFIX}"


def document_text(doc: Document) -> str:
    """What the engine indexes for a document: ``# title``, a blank line, its text."""
    title = " ".join(doc.title.split())
    return f"# {title}\n\n{doc.text}" if title else doc.text


def write_corpus(corpus: Mapping[str, Document], folder: Path) -> dict[str, str]:
    """Write every document into ``folder``; remove the files of documents no longer in the
    corpus. Returns ``{file name: doc id}``."""
    folder.mkdir(parents=True, exist_ok=True)
    names: dict[str, str] = {}
    for doc_id, doc in corpus.items():
        name = file_name(doc_id)
        names[name] = doc_id
        data = document_text(doc).encode("utf-8", "surrogatepass")
        path = folder / name
        try:
            if path.stat().st_size == len(data) and path.read_bytes() == data:
                continue
        except FileNotFoundError:
            pass
        tmp = path.with_name(f".{name}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    for stale in folder.glob(f"*{SUFFIX}"):
        if stale.name not in names:
            stale.unlink()
    return names


__all__ = [
    "CACHE_ENV",
    "DOCS_DIR",
    "INDEX_DIR",
    "default_work_dir",
    "document_text",
    "file_name",
    "write_corpus",
]
