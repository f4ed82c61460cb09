"""``kbgraph``: one command group per layer. Thin: parse, call the library, print.

Exit codes: 0 success, 1 failure, 2 usage or configuration error (a bad option value
included), 3 no index, 4 index locked by another process, 5 index corrupt, 6 a regression
against the baseline (``kbgraph eval --baseline``), 7 the embedding model is not the one the
index was built with, 141 stdout closed early (``| head -1``: quietly, as after SIGPIPE).
"""

from __future__ import annotations

import importlib
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, ClassVar

import click

from kbgraph import __version__, _blas_env, _pydantic_env  # noqa: F401  (before numpy, pydantic)
from kbgraph.errors import (
    ConfigError,
)
from kbgraph.retrieval import (
    ChunkConfig,
    ScanConfig,
    SearchConfig,
    SearchFilters,
    SearchResult,
    hybrid_rankers,
    rankers,
    search_modes,
)
from kbgraph.retrieval._internal import search_kinds, spec_forms

from ._base.commands import index_dir_opt
from ._exit_codes import LiveChoice, emit_json, end_quietly, fail_cleanly, printable, stdout_closed


def _open_kb(
    folder: Path,
    embedding: str | None,
    index_dir: Path | None,
    lock_timeout: float,
    chunking: ChunkConfig | None = None,
    scan: ScanConfig | None = None,
    timeout: float | None = None,
    keep_versions: int | None = None,
    store: str | None = None,
    read_store: str | None = None,
) -> Any:
    from kbgraph.retrieval import KnowledgeBase
    from kbgraph.retrieval._internal import DEFAULT_TIMEOUT

    spec: str | None = embedding
    if embedding == "none":
        spec = None
    return KnowledgeBase(
        folder,
        embedding=spec if embedding else "auto",
        index_dir=index_dir,
        lock_timeout=lock_timeout,
        chunking=chunking,
        scan=scan,
        embedding_timeout=DEFAULT_TIMEOUT if timeout is None else timeout,
        keep_versions=keep_versions,
        store=store,
        read_store=read_store,
    )


keep_versions_opt = click.option(
    "--keep-versions",
    type=click.IntRange(1, 100),
    default=None,
    metavar="N",
    help="Index generations to keep for `kbgraph restore` (remembered). Default: the "
    "index's, else 3.",
)


folder_arg = click.argument("folder", type=click.Path(exists=True, file_okay=False, path_type=Path))
embedding_opt = click.option(
    "--embedding",
    default=None,
    metavar="SPEC",
    help=f"{', '.join(spec_forms())} or none (BM25 only); local is the packaged model. "
    "Default: for an existing index, the model it was built with; for a new one, local.",
)
lock_timeout_opt = click.option(
    "--lock-timeout",
    type=float,
    default=60.0,
    show_default=True,
    help="Seconds to wait for another kbgraph process holding the index.",
)
json_opt = click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
timeout_opt = click.option(
    "--timeout",
    type=click.FloatRange(0, 1e6, min_open=True),
    default=None,
    metavar="SECONDS",
    help="Seconds each request to a remote embedding provider may take (default 30); a "
    "request that times out is retried twice, then the command fails.",
)
store_opt = click.option(
    "--store",
    default=None,
    metavar="URL",
    envvar="KBGRAPH_STORE",
    help="Where the index lives: the folder index (default) or PostgreSQL with pgvector, "
    "postgresql://user@host:5432/dbname (env KBGRAPH_STORE; keep the password in PGPASSWORD "
    "or ~/.pgpass).",
)
read_store_opt = click.option(
    "--read-store",
    default=None,
    metavar="URL",
    envvar="KBGRAPH_READ_STORE",
    help="A PostgreSQL standby (read replica) of --store that searches go to first; writes "
    "go to --store (env KBGRAPH_READ_STORE). --store may also name several hosts, "
    "postgresql://user@primary,standby/db: searches then prefer a standby.",
)


def describe_server(server: dict[str, Any]) -> str:
    """``stats``' line about the database server that answered."""
    role = "primary"
    if server["standby"]:
        lag = f"{server['replayLagSeconds']} s / {server['replayLagBytes']} B"
        role = f"standby, replay {lag} behind"
    lacks = "; lacks " + "; ".join(server["pgvectorLacks"]) if server["pgvectorLacks"] else ""
    return (
        f"{server['address']} ({role}; PostgreSQL {server['postgres']}, pgvector "
        f"{server['pgvector']}{lacks})"
    )


class OneLineUsageError(click.UsageError):
    """Click's usage error (a missing argument, a value outside a choice or range) shown
    as every other failure is: one ``kbgraph:`` line on stderr, exit 2."""

    def show(self, file: IO[Any] | None = None) -> None:
        command = self.ctx.command_path if self.ctx is not None else "kbgraph"
        message = " ".join(self.format_message().split()).rstrip(".")
        click.echo(f"kbgraph: {message}; see `{command} --help`", file=file, err=True)


def _one_line(exc: click.UsageError) -> click.UsageError:
    if isinstance(exc, click.exceptions.NoArgsIsHelpError):  # a bare `kbgraph`: the help
        return exc
    return OneLineUsageError(exc.format_message(), exc.ctx)


def _end_if_stdout_closed() -> None:
    """Usage text or output that met a closed stdout ends as the commands do: quietly,
    exit 141 (click's own handling would exit 1)."""
    if stdout_closed():
        end_quietly()


class LayeredGroup(click.Group):
    """Commands of the upper layers (``ask``, ``eval``) load on first use, so that the
    engine commands start without importing LangGraph. Usage errors of every command are
    one line (:class:`OneLineUsageError`)."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as exc:
            raise _one_line(exc) from None
        except BrokenPipeError:  # `kbgraph --help | head -1`
            _end_if_stdout_closed()
            raise

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            raise _one_line(exc) from None
        except BrokenPipeError:  # a command's own `--help`, or output outside fail_cleanly
            _end_if_stdout_closed()
            raise

    lazy: ClassVar[dict[str, tuple[str, str]]] = {
        "ask": ("kbgraph.agents._ask", "ask"),
        "eval": ("kbgraph.agents._eval", "eval_group"),
        "inspect": ("kbgraph.inspector._command", "inspect"),
        "mcp": ("kbgraph.mcp._command", "mcp"),
        "watch": ("kbgraph._watch", "watch"),
        "versions": ("kbgraph._versions", "versions"),
        "restore": ("kbgraph._versions", "restore"),
    }

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy and cmd_name not in self.commands:
            module_name, attr = self.lazy[cmd_name]
            try:
                module = importlib.import_module(module_name)
            except ImportError as exc:
                raise click.ClickException(f"`{cmd_name}` is unavailable: {exc}") from exc
            self.add_command(getattr(module, attr), name=cmd_name)
        return super().get_command(ctx, cmd_name)


@click.group(cls=LayeredGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="kbgraph")
def main() -> None:
    """Local-first retrieval for LangGraph agents, with line-exact citations."""


def parse_weights(pairs: tuple[str, ...]) -> dict[str, float]:
    """``("vector=0.7", "bm25=0.3")`` → ``{"vector": 0.7, "bm25": 0.3}``; a ranker is any
    registered one (``kbgraph.retrieval.rankers()``)."""
    weights: dict[str, float] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        try:
            if not sep or name.strip() not in ranker_names():
                raise ValueError
            weights[name.strip()] = float(value)
        except ValueError:
            raise ConfigError(
                f"--weight {pair!r} is not RANKER=W; rankers: {', '.join(ranker_names())} "
                "(e.g. vector=0.7)"
            ) from None
    return weights


def ranker_names() -> list[str]:
    return [r.name for r in rankers()]


@main.command()
@folder_arg
@embedding_opt
@index_dir_opt
@lock_timeout_opt
@timeout_opt
@store_opt
@read_store_opt
@json_opt
@click.option(
    "--rebuild",
    is_flag=True,
    help="Ignore the previous index (the cache is kept); needed to change the embedding "
    "model of an existing index.",
)
@click.option(
    "--strategy",
    type=click.Choice(["fixed_size", "sentence", "paragraph", "recursive", "markdown", "code"]),
    default=None,
    help="Chunking strategy. Default: what the index was built with, else recursive.",
)
@click.option(
    "--chunk-size",
    type=int,
    default=None,
    help="Target characters per chunk (>= 16). Default: the index's, else 500.",
)
@click.option(
    "--overlap",
    type=int,
    default=None,
    help="Characters shared by neighbouring chunks. Default: the index's, else 50.",
)
@click.option("--include", multiple=True, metavar="GLOB", help="Replace the include list.")
@click.option("--exclude", multiple=True, metavar="GLOB", help="Add to the exclude list.")
@click.option(
    "--max-file-size",
    type=int,
    default=None,
    help="Skip files larger than this many bytes. Default: the index's, else 10 MiB.",
)
@click.option(
    "--trust-hard-links",
    is_flag=True,
    help="Index a file with several names (hard links) even when another name is one the "
    "scan leaves out (a secret, in .git, outside the folder); without it such a file is "
    "skipped as hard-link. For a folder hard-linked from a cache.",
)
@keep_versions_opt
@click.option("--quiet", is_flag=True, help="No progress bars.")
@fail_cleanly
def index(
    folder: Path,
    embedding: str | None,
    index_dir: Path | None,
    lock_timeout: float,
    timeout: float | None,
    store: str | None,
    read_store: str | None,
    as_json: bool,
    rebuild: bool,
    strategy: str | None,
    chunk_size: int | None,
    overlap: int | None,
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    max_file_size: int | None,
    trust_hard_links: bool,
    keep_versions: int | None,
    quiet: bool,
) -> None:
    """Index FOLDER (incrementally: only new or changed text is embedded).

    Without chunking or file options the index keeps the settings it was built with; any
    of --strategy, --chunk-size, --overlap (the others at their defaults) or of --include,
    --exclude, --max-file-size, --trust-hard-links changes them, and a chunking change
    rebuilds the index."""
    chunk_opts = {"strategy": strategy, "chunk_size": chunk_size, "overlap": overlap}
    chunk_given = {k: v for k, v in chunk_opts.items() if v is not None}
    chunking = ChunkConfig.model_validate(chunk_given) if chunk_given else None
    scan = None
    if include or exclude or max_file_size is not None or trust_hard_links:
        base = ScanConfig()
        scan = ScanConfig(
            include=include or base.include,
            exclude=base.exclude + exclude,
            max_file_bytes=base.max_file_bytes if max_file_size is None else max_file_size,
            trust_hard_links=trust_hard_links,
        )
    kb = _open_kb(
        folder,
        embedding,
        index_dir,
        lock_timeout,
        chunking,
        scan,
        timeout,
        keep_versions,
        store,
        read_store,
    )
    from ._progress import TqdmProgress  # imported here: tqdm is for indexing only

    with TqdmProgress(enabled=not quiet) as progress:
        report = kb.index(progress=progress, rebuild=rebuild, allow_model_change=False)
    data = report.to_dict()
    if not data["fileCount"]:
        _warn_empty(folder, data)
    if data["truncated"]:
        _warn_truncated(data["truncated"])
    if as_json:
        emit_json(data)
        return
    click.echo(
        f"Indexed {data['fileCount']} files, {data['chunkCount']} chunks "
        f"({data['embedded']} embedded, {data['reused']} reused) into "
        f"{kb.store.location} [{data['indexSize'] / 1e6:.1f} MB]"
    )
    _echo_skipped(data["skipped"])
    for warning in data["warnings"]:
        if warning["reason"] == "no-documents":
            continue  # said on stderr already
        line = f"  warning {warning['path']}: {warning['reason']} ({warning['detail']})"
        click.echo(printable(line))


def _warn_truncated(count: int) -> None:
    """Say on stderr, with ``--json`` too, how many chunks of the index the model's input
    cut, counted over the whole index: a vector reused from the previous version or the
    embedding cache is as cut as when it was made (before, a re-index said none)."""
    many = count != 1
    chunks, are, their = ("chunks", "are", "their") if many else ("chunk", "is", "its")
    click.echo(
        f"kbgraph: warning: {count} {chunks} of the index {are} longer than the model's input: "
        f"only {their} beginning is embedded ({their} whole text is searched by keyword); "
        "index again with a smaller --chunk-size to embed all of it",
        err=True,
    )


def _warn_empty(folder: Path, data: dict[str, Any]) -> None:
    """Say on stderr, and in ``data["warnings"]`` (``--json``), that the index holds no
    document: an empty folder (or one whose files were all left out) indexed and searched
    without a word, and every search quietly found nothing."""
    detail = (
        f"{folder} holds no document kbgraph reads: searches find nothing; add files, or "
        "check --include / --exclude (kbgraph index --json lists what was skipped)"
    )
    click.echo(printable(f"kbgraph: warning: {detail}"), err=True)
    data.setdefault("warnings", []).append(
        {"path": ".", "reason": "no-documents", "detail": detail}
    )


# Left out by the user's patterns or by design: counted, not listed (they can be many);
# `--json` lists every one.
_ROUTINE = ("not-included", "excluded", "excluded-dir")


def _echo_skipped(skipped: list[dict[str, str]]) -> None:
    counts = Counter(s["reason"] for s in skipped if s["reason"] in _ROUTINE)
    if counts:
        parts = ", ".join(f"{n} {reason}" for reason, n in sorted(counts.items()))
        click.echo(f"  left out by the include/exclude patterns: {parts} (--json lists them)")
    for s in skipped:
        if s["reason"] not in _ROUTINE:
            detail = f" ({s['detail']})" if s.get("detail") else ""
            click.echo(printable(f"  skipped {s['path']}: {s['reason']}{detail}"))


@main.command()
@folder_arg
@click.argument("query")
@click.option(
    "--top-k",
    type=click.IntRange(1, 1000),
    default=5,
    show_default=True,
    help="How many results to show.",
)
@click.option(
    "--mode",
    type=LiveChoice(search_modes),
    default=None,
    help="hybrid or one ranker (any registered). Default: hybrid when the index has vectors, "
    "else bm25.",
)
@click.option(
    "--path",
    "paths",
    multiple=True,
    metavar="GLOB|PREFIX",
    help="Only files matching (before ranking).",
)
@click.option(
    "--kind",
    "kinds",
    multiple=True,
    type=LiveChoice(search_kinds),
    help="Only files of this kind, code language or test role (test, non-test); repeatable.",
)
@click.option("--threshold", type=float, default=None, help="Minimum score.")
@click.option(
    "--fusion",
    type=click.Choice(["rrf", "convex"]),
    default="rrf",
    show_default=True,
    help="How hybrid fuses: rrf (ranks) or convex (normalised scores, weighted).",
)
@click.option(
    "--rrf-k",
    type=int,
    default=60,
    show_default=True,
    help="With --fusion rrf: the k of 1/(k + rank); a larger k weighs the top ranks less.",
)
@click.option(
    "--weight",
    "weights",
    multiple=True,
    metavar="RANKER=W",
    help="Ranker weight in fusion, e.g. --weight vector=0.7 --weight bm25=0.3; weighing a "
    "ranker hybrid leaves out by default adds it (--weight title=0.5).",
)
@embedding_opt
@index_dir_opt
@lock_timeout_opt
@timeout_opt
@store_opt
@read_store_opt
@json_opt
@fail_cleanly
def search(
    folder: Path,
    query: str,
    top_k: int,
    mode: str | None,
    paths: tuple[str, ...],
    kinds: tuple[str, ...],
    threshold: float | None,
    fusion: str,
    rrf_k: int,
    weights: tuple[str, ...],
    embedding: str | None,
    index_dir: Path | None,
    lock_timeout: float,
    timeout: float | None,
    store: str | None,
    read_store: str | None,
    as_json: bool,
) -> None:
    """Search the index of FOLDER for QUERY."""
    kb = _open_kb(
        folder, embedding, index_dir, lock_timeout, timeout=timeout, store=store,
        read_store=read_store,
    )  # fmt: skip
    config = SearchConfig(
        mode=mode,
        top_k=top_k,
        fusion=fusion,  # type: ignore[arg-type]
        rrf_k=rrf_k,
        weights={**hybrid_rankers({}), **parse_weights(weights)},
        score_threshold=threshold,
    )
    filters = SearchFilters(paths=paths, kinds=kinds)
    results = kb.search(query, filters=filters, config=config)
    out: dict[str, Any] = {"results": [r.to_dict() for r in results]}
    if not results and not kb.stats().to_dict()["fileCount"]:
        _warn_empty(folder, out)
    if as_json:
        emit_json(out)
        return
    if not results:
        click.echo("No results.")
    shown = shown_score(results, config)
    for n, r in enumerate(results, 1):
        c = r.chunk
        where = f"{c.source}:{c.line_start}-{c.line_end}"
        extra = f" § {c.section}" if c.section else ""
        header = printable(f"[{n}] {where}{extra}  score {shown(r.score)}")
        click.echo(click.style(header, bold=True))
        click.echo("    " + printable(c.text.strip(), lines=True).replace("\n", "\n    "))


def shown_score(results: list[SearchResult], config: SearchConfig) -> Callable[[float], str]:
    """How ``search`` prints a score, saying which one it is. A hybrid RRF score (0.0325)
    is shown on the scale ``kbgraph ask`` and the subgraph use: over the best one possible,
    first in every ranked list (so 1.00 is the top), the raw RRF beside it."""
    rankers = {name for r in results for name in r.ranks}
    if config.mode is not None or config.fusion != "rrf" or not rankers:
        kind = config.mode or config.fusion
        return lambda score: f"{score:.4f} ({kind})"
    best = sum(config.weights.get(name, 1.0) for name in rankers) / (config.rrf_k + 1)
    return lambda score: f"{score / best:.2f} (RRF {score:.4f}; 1.00 = first in every list)"


@main.command()
@folder_arg
@embedding_opt
@index_dir_opt
@lock_timeout_opt
@store_opt
@read_store_opt
@json_opt
@click.option("--validate", is_flag=True, help="Also read and check every index file.")
@fail_cleanly
def stats(
    folder: Path,
    embedding: str | None,
    index_dir: Path | None,
    lock_timeout: float,
    store: str | None,
    read_store: str | None,
    as_json: bool,
    validate: bool,
) -> None:
    """Show the index stats of FOLDER."""
    kb = _open_kb(folder, embedding, index_dir, lock_timeout, store=store, read_store=read_store)
    if validate:
        kb.validate()
    data = kb.stats().to_dict()
    if as_json:
        emit_json(data)
        return
    server = data.pop("server")
    for key, value in data.items():
        click.echo(f"{key}: {value}")
    if server:
        click.echo(f"server: {describe_server(server)}")


@main.command()
@folder_arg
@index_dir_opt
@lock_timeout_opt
@store_opt
@read_store_opt
@json_opt
@fail_cleanly
def delete(
    folder: Path,
    index_dir: Path | None,
    lock_timeout: float,
    store: str | None,
    read_store: str | None,
    as_json: bool,
) -> None:
    """Delete the index of FOLDER (the documents are not touched). Refuses a folder that
    is not recognisably a kbgraph index, and waits for a running `kbgraph index`; with
    --store, drops the knowledge base's tables from the database."""
    kb = _open_kb(folder, "none", index_dir, lock_timeout, store=store, read_store=read_store)
    root = kb.store.location
    kb.delete()
    if as_json:
        emit_json({"deleted": str(root), "folder": str(kb.folder)})
    elif kb.store.index_dir is None:  # a database: only this folder's knowledge base went
        click.echo(f"Deleted the index of {kb.folder} from {root}")
    else:
        click.echo(f"Deleted {root}")


if __name__ == "__main__":  # pragma: no cover
    main()


# The options and helpers below ``main`` are shared with the other command modules
# (kbgraph/_versions.py, kbgraph/_watch.py); ``main`` is the entry point.
__all__ = ["describe_server", "main", "parse_weights"]
