"""``kbgraph mcp FOLDER...``: serve the knowledge bases of FOLDER(s) over MCP.

Over stdio by default (stdout carries the protocol only; logs and progress go to stderr).
``--http`` serves streamable HTTP at ``/mcp`` on loopback; the first line on stdout is the
URL (``--port 0`` picks a free port). A host other than loopback is refused unless
``--allow-remote``: there is no authentication, and whoever reaches the port reads the
documents. Bound to another address of the machine's, the server answers to the
machine's own names too; bound to every interface (``--host 0.0.0.0``, or ``::``, whose
dual-stack socket takes IPv4 clients too), to its names and addresses, and it prints a URL
with one of them. ``--workers N``
serves from N processes, statelessly (``_workers.py``); ``--stateless`` alone serves one
process so, for several servers behind a load balancer."""

from __future__ import annotations

import logging
import socket
import sys
from pathlib import Path

import click

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

from ._settings import McpSettings

DEFAULT_PORT = 8766


def _check_chat_model(chat_model: str | None, embedding: str) -> None:
    """Fail at start, not at the first ``ask``, on a spec that cannot work."""
    if chat_model is None and embedding.strip().lower() in ("auto", "none"):
        return
    from kbgraph.agents import check_specs

    check_specs(embedding, chat_model)


@click.command("mcp")
@folders_argument
@store_option
@index_dirs_option
@embedding_option("auto (each index's own model), a spec, or none (BM25 only).")
@click.option(
    "--chat-model",
    default=None,
    envvar="KBGRAPH_CHAT_MODEL",
    metavar="SPEC",
    help="The model `ask` answers with, as for `kbgraph ask` (openai:<model>, "
    "gguf:<path> ...). Without one the answer is extractive.",
)
@click.option("--http", "use_http", is_flag=True, help="Serve streamable HTTP, not stdio.")
@host_option("With --http.")
@port_option(DEFAULT_PORT, "With --http; 0 picks a free port.")
@click.option(
    "--allow-remote",
    is_flag=True,
    help="Allow a --host other than loopback (no authentication: anyone who reaches it "
    "reads the documents).",
)
@allow_host_option("Also answer to this Host name (repeatable); loopback names and --host always.")
@click.option(
    "--workers",
    type=click.IntRange(1, 256),
    default=1,
    show_default=True,
    help="With --http: serve from this many processes (a process's Python work shares "
    "one core: about one per core). Above 1 the server is stateless (as --stateless).",
)
@click.option(
    "--stateless",
    is_flag=True,
    help="With --http: answer every request on its own, without an MCP session (JSON "
    "replies, no event stream), so that any process (a worker, or a server behind a load "
    "balancer) answers any request.",
)
@click.option("--allow-write", is_flag=True, help="Serve the `index` tool.")
@click.option(
    "--auto-index",
    is_flag=True,
    help="Bring a stale index up to date before a search (writes the index).",
)
@click.option(
    "--watch",
    is_flag=True,
    help="Keep each index up to date with a file watcher (writes the index).",
)
@failing_as("kbgraph mcp")
def mcp(
    folders: tuple[Path, ...],
    store: str | None,
    index_dirs: tuple[Path, ...],
    embedding: str,
    chat_model: str | None,
    use_http: bool,
    host: str,
    port: int,
    allow_remote: bool,
    allow_hosts: tuple[str, ...],
    workers: int,
    stateless: bool,
    allow_write: bool,
    auto_index: bool,
    watch: bool,
) -> None:
    """Serve the knowledge bases of FOLDERS (one per folder) to MCP clients (search,
    read, stats, ask)."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="kbgraph mcp: %(message)s")
    # The SDK warns of every call of a tool it has not listed: the tool error says it.
    logging.getLogger("mcp.server.lowlevel.server").setLevel(logging.ERROR)
    from ._transport import one_line_logs

    one_line_logs()
    settings = McpSettings.from_folders(
        folders,
        store=store,
        index_dirs=index_dirs,
        embedding=embedding,
        chat_model=chat_model,
        allow_write=allow_write,
        auto_index=auto_index,
        watch=watch,
    )
    _check_chat_model(chat_model, embedding)
    _check_workers(use_http, workers, stateless, watch)
    if not use_http:
        from ._transport import serve_stdio

        serve_stdio(settings)
        return
    _serve_http(settings, host, port, allow_remote, allow_hosts, workers, stateless)


def _check_workers(use_http: bool, workers: int, stateless: bool, watch: bool) -> None:
    """Refuse, before anything starts, what several processes cannot do."""
    if not use_http and (workers > 1 or stateless):
        raise ConfigError(
            "--workers and --stateless serve HTTP: pass --http (over stdio one client "
            "launches one process)"
        )
    if workers > 1 and watch:
        raise ConfigError(
            f"--watch with --workers {workers} would run {workers} watchers writing one "
            "index; run one `kbgraph watch FOLDER` beside the server instead"
        )


def _serve_http(
    settings: McpSettings,
    host: str,
    port: int,
    allow_remote: bool,
    allow_hosts: tuple[str, ...],
    workers: int = 1,
    stateless: bool = False,
) -> None:
    from kbgraph.inspector import allowed_hosts, is_loopback, listen, served_url

    from ._transport import MCP_PATH, serve_http

    if not is_loopback(host):
        if not allow_remote:
            raise ConfigError(
                f"--host {host} is not a loopback address: the server has no authentication "
                "and would serve the documents to anyone who reaches it; pass --allow-remote "
                "to do so anyway"
            )
        click.echo(f"kbgraph mcp: warning: listening on {host} without authentication", err=True)
    sock = listen(host, port)
    answered = allowed_hosts(host, allow_hosts)
    url = served_url(sock).rstrip("/") + MCP_PATH
    if host.strip().strip("[]") in WILDCARDS:
        # Bound to every interface: the SDK's Host check knows names, not the interface a
        # connection came in on, so the machine's own names and addresses are answered
        # too (else every remote client got 421), and the URL printed is one a client can
        # dial (``http://0.0.0.0:PORT`` is not).
        mine = machine_addresses(served_families(sock))
        answered = tuple(dict.fromkeys((*answered, *mine)))
        shown = next((a for a in mine if not is_loopback(a)), "127.0.0.1")
        shown = f"[{shown}]" if ":" in shown else shown
        url = f"http://{shown}:{sock.getsockname()[1]}{MCP_PATH}"
    elif not is_loopback(host):
        # Bound to one address of the machine's (only with --allow-remote): a client that
        # dials the machine by its name names it as Host, and got 421. Never for a loopback
        # bind, where any name but loopback's is a page's DNS name rebound to 127.0.0.1.
        answered = tuple(dict.fromkeys((*answered, *machine_names())))
    click.echo(url, nl=True)
    sys.stdout.flush()
    if workers == 1:
        serve_http(settings, sock, answered, stateless=stateless)
        return
    from ._transport import require_sdk
    from ._workers import serve_workers

    require_sdk()  # a missing SDK fails here, once, not in every worker
    serve_workers(settings, sock, answered, workers)


WILDCARDS = ("0.0.0.0", "::", "")
_PROBES = {socket.AF_INET: "192.0.2.1", socket.AF_INET6: "2001:db8::1"}  # RFC 5737 / 3849


def machine_names() -> tuple[str, ...]:
    """This machine's host name and fully qualified name, lower case (as the SDK compares
    a Host header), first seen first."""
    names = (socket.gethostname(), socket.getfqdn())
    return tuple(dict.fromkeys(name.lower() for name in names if name))


def served_families(sock: socket.socket) -> tuple[socket.AddressFamily, ...]:
    """The address families whose clients a socket bound to every interface accepts: an
    IPv6 one (``::``) also IPv4's when it is dual-stack (``IPV6_V6ONLY`` off, Linux's
    default), and those clients name the machine by its IPv4 address (a 421 before)."""
    if sock.family != socket.AF_INET6:
        return (socket.AF_INET,)
    try:
        v6_only = sock.getsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY)
    except OSError:
        v6_only = 1  # cannot tell: answer IPv6's addresses only, as before
    return (socket.AF_INET6,) if v6_only else (socket.AF_INET6, socket.AF_INET)


def machine_addresses(
    families: tuple[socket.AddressFamily, ...] = (socket.AF_INET,),
) -> tuple[str, ...]:
    """This machine's names and the addresses they resolve to, and for each of
    ``families`` the address it sends from toward other hosts (:func:`route_address`).
    Lower case, first seen first."""
    names = machine_names()
    found: list[str] = list(names)
    for name in names:
        try:
            found += [str(info[4][0]).lower() for info in socket.getaddrinfo(name, None)]
        except OSError:
            continue
    routed = (route_address(family) for family in families)
    found += [address.lower() for address in routed if address is not None]
    return tuple(dict.fromkeys(found))


def route_address(family: socket.AddressFamily) -> str | None:
    """The address of ``family`` this machine sends from toward other hosts (a UDP
    ``connect`` to a documentation address chooses it from the routing table; no packet
    is sent), or None without a route off the machine (its names are all there is)."""
    probe = socket.socket(family, socket.SOCK_DGRAM)
    try:
        probe.connect((_PROBES[family], 9))
        return str(probe.getsockname()[0])
    except OSError:
        return None
    finally:
        probe.close()


__all__ = [
    "DEFAULT_PORT",
    "machine_addresses",
    "machine_names",
    "mcp",
    "route_address",
    "served_families",
]
