"""``kbgraph versions FOLDER`` and ``kbgraph restore FOLDER GEN``: the generations an index
keeps, and making one of them current again."""

from __future__ import annotations

from pathlib import Path

import click

from kbgraph.retrieval import describe_store
from kbgraph.retrieval._internal import is_database, no_versions

from ._exit_codes import emit_json, fail_cleanly, printable
from .cli import _open_kb, folder_arg, index_dir_opt, json_opt, lock_timeout_opt, store_opt


def _folder_index_only(folder: Path, store: str | None) -> None:
    """A database keeps the live version only: say so before connecting to it (an
    unreachable server would otherwise be the answer)."""
    if is_database(store):
        raise no_versions(folder.resolve(), describe_store(store))


@click.command()
@folder_arg
@index_dir_opt
@lock_timeout_opt
@store_opt
@json_opt
@fail_cleanly
def versions(
    folder: Path, index_dir: Path | None, lock_timeout: float, store: str | None, as_json: bool
) -> None:
    """List the index generations FOLDER keeps, newest first (the current one is marked).
    `kbgraph restore FOLDER N` makes row N current again. A PostgreSQL index (--store)
    keeps only its live version."""
    _folder_index_only(folder, store)
    kb = _open_kb(folder, "none", index_dir, lock_timeout, store=store)
    rows = kb.versions()
    if as_json:
        emit_json({"versions": [v.to_dict() for v in rows], "keepVersions": kb.keep_versions})
        return
    click.echo("  #  generation                 indexed (UTC)              files  chunks  model")
    for n, v in enumerate(rows, 1):
        mark = "*" if v.current else " "
        if v.problem:
            click.echo(printable(f"{mark}{n:>2}  {v.name:<26} unreadable: {v.problem}"))
            continue
        click.echo(
            f"{mark}{n:>2}  {v.name:<26} {v.indexed_at or '?':<25} {v.file_count:>6} "
            f"{v.chunk_count:>7}  {v.embedding or 'none (BM25 only)'}"
        )
    click.echo(f"(* current; the last {kb.keep_versions} are kept)")


@click.command()
@folder_arg
@click.argument("generation")
@index_dir_opt
@lock_timeout_opt
@store_opt
@json_opt
@fail_cleanly
def restore(
    folder: Path,
    generation: str,
    index_dir: Path | None,
    lock_timeout: float,
    store: str | None,
    as_json: bool,
) -> None:
    """Make a kept index generation of FOLDER current again, atomically. GENERATION is a
    row number of `kbgraph versions` (1 = newest), a generation name or a unique prefix of
    one. The next `kbgraph index` updates the folder from there."""
    _folder_index_only(folder, store)
    kb = _open_kb(folder, "none", index_dir, lock_timeout, store=store)
    info = kb.restore(generation)
    if as_json:
        emit_json(info.to_dict())
        return
    click.echo(
        f"Restored {info.name} ({info.indexed_at}, {info.file_count} files, "
        f"{info.chunk_count} chunks) as the current index of {kb.folder}"
    )
