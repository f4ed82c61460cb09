"""``kbgraph mcp FOLDER...``: serve the knowledge bases of FOLDER(s) over MCP.

Over stdio by default (stdout carries the protocol only; logs and progress go to stderr).
``--http`` serves streamable HTTP at ``/mcp`` on loopback; the first line on stdout is the
URL (``--port 0`` picks a free port). A host other than loopback is refused unless
``--allow-remote``: there is no authentication, and whoever reaches the port reads the
documents."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import click

from kbgraph._exit_codes import failing_as
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
@click.argument(
    "folders",
    nargs=-1,
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
)
@click.option(
    "--store",
    default=None,
    metavar="URL",
    envvar="KBGRAPH_STORE",
    help="Where the indexes live (default: the folder index; postgresql://...).",
)
@click.option(
    "--embedding",
    default="auto",
    show_default=True,
    metavar="SPEC",
    help="auto (each index's own model), a spec, or none (BM25 only).",
)
@click.option(
    "--chat-model",
    default=None,
    envvar="KBGRAPH_CHAT_MODEL",
    metavar="SPEC",
    help="The model `ask` answers with, as for `kbgraph ask` (openai:<model>, "
    "gguf:<path> ...). Without one the answer is extractive.",
)
@click.option("--http", "use_http", is_flag=True, help="Serve streamable HTTP, not stdio.")
@click.option("--host", default="127.0.0.1", show_default=True, help="With --http.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="With --http; 0 picks a free port.",
)
@click.option(
    "--allow-remote",
    is_flag=True,
    help="Allow a --host other than loopback (no authentication: anyone who reaches it "
    "reads the documents).",
)
@click.option(
    "--allow-host",
    "allow_hosts",
    multiple=True,
    metavar="NAME",
    help="Also answer to this Host name (repeatable); loopback names and --host always.",
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
    embedding: str,
    chat_model: str | None,
    use_http: bool,
    host: str,
    port: int,
    allow_remote: bool,
    allow_hosts: tuple[str, ...],
    allow_write: bool,
    auto_index: bool,
    watch: bool,
) -> None:
    """Serve FOLDER's knowledge base to MCP clients (search, read, stats, ask)."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="kbgraph mcp: %(message)s")
    # The SDK warns of every call of a tool it has not listed: the tool error says it.
    logging.getLogger("mcp.server.lowlevel.server").setLevel(logging.ERROR)
    settings = McpSettings.from_folders(
        folders,
        store=store,
        embedding=embedding,
        chat_model=chat_model,
        allow_write=allow_write,
        auto_index=auto_index,
        watch=watch,
    )
    _check_chat_model(chat_model, embedding)
    if not use_http:
        from ._transport import serve_stdio

        serve_stdio(settings)
        return
    _serve_http(settings, host, port, allow_remote, allow_hosts)


def _serve_http(
    settings: McpSettings, host: str, port: int, allow_remote: bool, allow_hosts: tuple[str, ...]
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
    click.echo(served_url(sock).rstrip("/") + MCP_PATH, nl=True)
    sys.stdout.flush()
    serve_http(settings, sock, allowed_hosts(host, allow_hosts))


__all__ = ["DEFAULT_PORT", "mcp"]
