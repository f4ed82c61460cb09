"""What an inspector shows: its knowledge bases, where recorded runs and eval reports are,
and the per-process token its write actions need.

``kbgraph inspect FOLDER...`` builds one from its arguments; the app mounted in
``langgraph dev`` builds one from the environment (:meth:`InspectorConfig.from_env`):
``KBGRAPH_INSPECT_FOLDERS`` (folders separated by ``os.pathsep``; else ``KBGRAPH_FOLDER``,
the folders the graphs search when a run names none), ``KBGRAPH_STORE``,
``KBGRAPH_RUNS_DIR`` and ``KBGRAPH_INSPECT_EVALS`` (else ``./eval-results``)."""

from __future__ import annotations

import ipaddress
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbgraph._base.allow_lists import listed
from kbgraph._base.hosts import LOOPBACK_HOSTS
from kbgraph._server_options import paired_index_dirs
from kbgraph.errors import ConfigError
from kbgraph.graphs import RagSettings
from kbgraph.graphs._internal import FOLDER_ENV, runs_dir

FOLDERS_ENV = "KBGRAPH_INSPECT_FOLDERS"
EVALS_ENV = "KBGRAPH_INSPECT_EVALS"
STORE_ENV = "KBGRAPH_STORE"
DEFAULT_EVALS = Path("eval-results")


@dataclass(frozen=True, slots=True)
class InspectedBase:
    """One knowledge base the inspector shows: its name (as the graphs name it: the
    folder's name unless given), its folder and its store (``None``: the folder index)."""

    name: str
    folder: Path
    store: str | None = field(default=None, repr=False)  # a URL may hold a password
    index_dir: Path | None = None  # where the folder index lives; None: <folder>/.kbgraph

    def spec(self) -> dict[str, str]:
        """The knowledge base as the graphs' settings name it (``RagSettings``)."""
        return {
            "name": self.name,
            "folder": str(self.folder),
            **({"store": self.store} if self.store else {}),
            **({"index_dir": str(self.index_dir)} if self.index_dir else {}),
        }


@dataclass(frozen=True, slots=True)
class InspectorConfig:
    knowledge_bases: tuple[InspectedBase, ...]
    runs_dir: Path
    eval_dirs: tuple[Path, ...] = ()
    embedding: str = "auto"
    # The Host names answered, exactly (any port): loopback names and those given (the
    # address the server was bound to), and the address a request came in on. ``any_host``
    # answers every name: a DNS name rebound to 127.0.0.1 then reads everything.
    allowed_hosts: tuple[str, ...] = LOOPBACK_HOSTS
    any_host: bool = False
    # Runs of this process's LangGraph server can be shown by thread id (when mounted).
    threads: bool = False
    token: str = field(default_factory=lambda: secrets.token_urlsafe(32), repr=False)

    def base(self, name: str) -> InspectedBase:
        for kb in self.knowledge_bases:
            if kb.name == name:
                return kb
        known = ", ".join(kb.name for kb in self.knowledge_bases) or "none"
        raise ConfigError(f"no knowledge base named {name!r} here; known: {known}")

    @classmethod
    def from_folders(
        cls,
        folders: Sequence[str | Path],
        *,
        store: str | None = None,
        runs: Path | None = None,
        evals: Sequence[Path] = (),
        embedding: str = "auto",
        index_dirs: Sequence[str | Path] = (),
        **options: object,
    ) -> InspectorConfig:
        """Folders named as the graphs name them (a name used twice is a ``ConfigError``).
        ``evals``: ``kbgraph eval`` output folders, or folders holding them; none given:
        ``./eval-results`` when it exists. ``index_dirs``: none, or one per folder, in
        order (:func:`~kbgraph._server_options.paired_index_dirs`)."""
        dirs = paired_index_dirs(folders, index_dirs)
        specs: list[Any] = [
            {
                "folder": str(f),
                **({"store": store} if store else {}),
                **({"index_dir": str(d)} if d is not None else {}),
            }
            for f, d in zip(folders, dirs, strict=True)
        ]
        resolved = RagSettings(knowledge_bases=specs).resolved_knowledge_bases()
        bases = tuple(
            InspectedBase(
                kb.name, Path(kb.folder), kb.store, Path(kb.index_dir) if kb.index_dir else None
            )
            for kb in resolved
        )
        for kb in bases:
            if not kb.folder.is_dir():
                raise ConfigError(f"{kb.folder} is not a folder; pass a knowledge base folder")
        chosen = tuple(Path(e).expanduser().resolve() for e in evals)
        if not chosen and DEFAULT_EVALS.is_dir():
            chosen = (DEFAULT_EVALS.resolve(),)
        return cls(
            knowledge_bases=bases,
            runs_dir=runs if runs is not None else runs_dir(),
            eval_dirs=chosen,
            embedding=embedding,
            **options,  # type: ignore[arg-type]
        )

    @classmethod
    def from_env(cls) -> InspectorConfig:
        """The configuration of the app mounted in a LangGraph server (see the module)."""
        named = FOLDERS_ENV if os.environ.get(FOLDERS_ENV, "").strip() else FOLDER_ENV
        folders = listed(named, sep=os.pathsep)
        evals = [Path(p) for p in listed(EVALS_ENV, sep=os.pathsep)]
        return cls.from_folders(
            folders,
            store=os.environ.get(STORE_ENV, "").strip() or None,
            evals=evals,
            threads=True,
        )


def is_loopback(host: str) -> bool:
    """Whether an address to listen on is loopback only: ``localhost`` or a loopback IP
    address (``127.0.0.2``, ``[::1]``). Never a test of a Host header: ``127.evil.com`` is
    a DNS name (see :class:`kbgraph.inspector._guard.Guard`)."""
    name = host.strip().lower()
    name = name[1:-1] if name.startswith("[") and name.endswith("]") else name
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


__all__ = [
    "DEFAULT_EVALS",
    "EVALS_ENV",
    "FOLDERS_ENV",
    "InspectedBase",
    "InspectorConfig",
    "is_loopback",
]
