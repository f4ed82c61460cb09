"""The options the two servers (``kbgraph mcp``, ``kbgraph inspect``) share, written once:
the folders they serve, where the indexes live, the interface, the port and the extra Host
names they answer to. Each server passes its own default port and words where they differ."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

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
    "port_option",
    "store_option",
]
