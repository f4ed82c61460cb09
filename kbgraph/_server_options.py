"""The options the two servers (``kbgraph mcp``, ``kbgraph inspect``) share, written once:
the folders they serve, where the indexes live (the store, and each folder index's folder
when it is not ``FOLDER/.kbgraph``), the interface, the port and the extra Host names they
answer to. Each server passes its own default port and words where they differ."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click

from kbgraph.errors import ConfigError

F = TypeVar("F", bound=Callable[..., Any])

folders_argument = click.argument(
    "folders",
    nargs=-1,
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
)
store_option = click.option(
    "--store",
    default=None,
    metavar="URL",
    envvar="KBGRAPH_STORE",
    help="Where the indexes live (default: the folder index; postgresql://...).",
)


index_dirs_option = click.option(
    "--index-dir",
    "index_dirs",
    multiple=True,
    type=click.Path(file_okay=False, path_type=Path),
    metavar="DIR",
    help="Where the index of a FOLDER lives, when `kbgraph index --index-dir` put it "
    "elsewhere than FOLDER/.kbgraph: one per FOLDER, in the same order.",
)


def paired_index_dirs(
    folders: Sequence[str | Path], index_dirs: Sequence[str | Path]
) -> list[Path | None]:
    """Each folder's index folder: none given, each its own ``.kbgraph`` (``None``); else
    exactly one per folder, in order (a ``ConfigError`` otherwise: a second folder must
    not quietly share, or miss, the first one's index)."""
    if not index_dirs:
        return [None] * len(folders)
    if len(index_dirs) != len(folders):
        raise ConfigError(
            f"{len(index_dirs)} --index-dir for {len(folders)} folders: give one per FOLDER, "
            "in the same order, or none (each folder's index in FOLDER/.kbgraph)"
        )
    return [Path(d).expanduser().resolve() for d in index_dirs]


def host_option(help: str) -> Callable[[F], F]:
    return click.option("--host", default="127.0.0.1", show_default=True, help=help)


def port_option(default: int, help: str) -> Callable[[F], F]:
    return click.option(
        "--port", type=click.IntRange(0, 65535), default=default, show_default=True, help=help
    )


def allow_host_option(help: str) -> Callable[[F], F]:
    return click.option("--allow-host", "allow_hosts", multiple=True, metavar="NAME", help=help)


def embedding_option(help: str) -> Callable[[F], F]:
    return click.option("--embedding", default="auto", show_default=True, metavar="SPEC", help=help)


__all__ = [
    "allow_host_option",
    "embedding_option",
    "folders_argument",
    "host_option",
    "index_dirs_option",
    "paired_index_dirs",
    "port_option",
    "store_option",
]
