"""``kbgraph inspect FOLDER...``: serve the inspector on loopback until Ctrl-C.

The first line on stdout is the URL to open (``--port 0`` picks a free port; the URL says
which). A host other than a loopback address needs ``--host`` and prints a warning: the
inspector shows the documents' text to whoever can reach it. Whatever the interface, only
exact Host names are answered (loopback names, the ``--host`` address, ``--allow-host``
names, the address a connection came in on): a DNS name rebound to 127.0.0.1 gets 421.
Logs go to stderr.
"""

from __future__ import annotations

import socket
from pathlib import Path

import click

from kbgraph._base.hosts import LOOPBACK_HOSTS
from kbgraph._exit_codes import failing_as
from kbgraph._server_options import (
    allow_host_option,
    embedding_option,
    folders_argument,
    host_option,
    index_dirs_option,
    port_option,
    store_option,
)
from kbgraph.errors import ConfigError

from ._config import InspectorConfig, is_loopback

DEFAULT_PORT = 8765
_EVERY_INTERFACE = ("", "0.0.0.0", "::", "[::]")


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port``; a ``ConfigError`` saying what to pass when
    the address is taken (also ``kbgraph mcp --http``'s)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(
            f"cannot listen on {host}:{port} ({exc.strerror}); "
            "pick another --port (0: any free one)"
        ) from exc
    sock.listen(128)
    return sock


def allowed_hosts(host: str, extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The Host names answered: loopback names, the address listened on (not a wildcard:
    the guard answers to the address each connection came in on) and ``--allow-host``'s."""
    bound = () if host.strip() in _EVERY_INTERFACE else (host.strip().strip("[]").lower(),)
    named = tuple(name.strip().lower() for name in extra if name.strip())
    return tuple(dict.fromkeys((*LOOPBACK_HOSTS, *bound, *named)))


def served_url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/"


@click.command("inspect")
@folders_argument
@store_option
@index_dirs_option
@host_option("Interface to listen on; anything but loopback prints a warning.")
@allow_host_option(
    "Also answer to this Host name (repeatable), e.g. the machine's name with "
    "--host 0.0.0.0. Loopback names and the --host address are always answered."
)
@port_option(DEFAULT_PORT, "0 picks a free port.")
@click.option(
    "--eval",
    "evals",
    multiple=True,
    metavar="DIR",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="A `kbgraph eval --out` folder, or a folder of them (repeatable). "
    "Default: ./eval-results when it exists.",
)
@click.option(
    "--runs",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    metavar="DIR",
    help="Recorded runs (default: $KBGRAPH_RUNS_DIR, else the cache's runs/).",
)
@embedding_option("auto (each index's own model), or a spec; none searches BM25 only.")
@failing_as("kbgraph inspect")
def inspect(
    folders: tuple[Path, ...],
    store: str | None,
    index_dirs: tuple[Path, ...],
    host: str,
    allow_hosts: tuple[str, ...],
    port: int,
    evals: tuple[Path, ...],
    runs: Path | None,
    embedding: str,
) -> None:
    """Open a local web app over FOLDER's index: search lab, sources, index, runs, evals."""
    try:
        import uvicorn

        from ._app import create_app
    except ImportError as exc:
        raise ConfigError(
            f"kbgraph inspect needs Starlette and uvicorn ({exc}); pip install 'kbgraph[inspect]'"
        ) from exc
    loopback = is_loopback(host)
    config = InspectorConfig.from_folders(
        folders,
        store=store,
        runs=runs,
        evals=evals,
        embedding=embedding,
        index_dirs=index_dirs,
        allowed_hosts=allowed_hosts(host, allow_hosts),
    )
    if not loopback:
        click.echo(
            f"kbgraph inspect: warning: listening on {host}: anyone who can reach this machine "
            "can read the indexed documents and restore index versions through it",
            err=True,
        )
    sock = listen(host, port)
    click.echo(served_url(sock))
    server = uvicorn.Server(uvicorn.Config(create_app(config), log_level="warning"))
    server.run(sockets=[sock])


__all__ = ["DEFAULT_PORT", "allowed_hosts", "inspect", "listen", "served_url"]
