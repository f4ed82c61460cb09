"""``kbgraph watch FOLDER``: keep an index up to date while the folder changes.

One line per run that changed the index (what changed, chunks embedded, time) on stdout,
or one JSON object per line with ``--json``; failures and the retry delay on stderr. Ctrl-C
(or SIGTERM) stops it cleanly; a run interrupted by a kill leaves the last published index,
which opens and searches as before.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Any

import click

from kbgraph.retrieval._internal import DEBOUNCE_MS, FolderWatcher, WatchRun

from ._exit_codes import fail_cleanly, printable
from .cli import (
    _open_kb,
    embedding_opt,
    folder_arg,
    index_dir_opt,
    json_opt,
    keep_versions_opt,
    lock_timeout_opt,
    read_store_opt,
    store_opt,
)


def _clock() -> str:
    return time.strftime("%H:%M:%S")


def describe_run(run: WatchRun) -> str:
    """The line printed for one run."""
    if run.error is not None:
        return (
            f"{_clock()}  index run failed after {run.seconds:.2f} s: "
            f"{type(run.error).__name__}: {run.error}; the last good index is still served; "
            f"retrying in {run.retry_in or 0:.0f} s"
        )
    data = run.report.to_dict() if run.report is not None else {}
    embedded, reused = data.get("embedded", 0), data.get("reused", 0)
    failed = data.get("failedEmbeddings", 0)
    refused = f", {failed} refused by the provider" if failed else ""
    return (
        f"{_clock()}  {run.changes.describe()} · {_count(embedded, 'chunk')} embedded, "
        f"{reused} reused{refused} · {run.seconds:.2f} s · "
        f"{_count(data.get('fileCount', 0), 'file')}, {_count(data.get('chunkCount', 0), 'chunk')}"
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _printer(as_json: bool) -> Any:
    def on_run(run: WatchRun) -> None:
        if run.ok and not run.changes:
            return  # nothing the index holds changed (a file it does not include ...)
        if as_json:
            click.echo(json.dumps(run.to_dict(), ensure_ascii=False))
        elif run.ok:
            click.echo(printable(describe_run(run)))
        else:
            click.echo(printable(describe_run(run)), err=True)

    return on_run


@click.command()
@folder_arg
@embedding_opt
@index_dir_opt
@lock_timeout_opt
@store_opt
@read_store_opt
@json_opt
@click.option(
    "--debounce",
    type=click.IntRange(50, 60_000),
    default=DEBOUNCE_MS,
    show_default=True,
    metavar="MS",
    help="Longest time a burst of changes is gathered into one index run.",
)
@keep_versions_opt
@fail_cleanly
def watch(
    folder: Path,
    embedding: str | None,
    index_dir: Path | None,
    lock_timeout: float,
    store: str | None,
    read_store: str | None,
    as_json: bool,
    debounce: int,
    keep_versions: int | None,
) -> None:
    """Watch FOLDER and index what changes, until Ctrl-C.

    The first run catches up with changes made while nothing watched; after that every
    burst of changes (a save, a `git checkout`) is one incremental run with the index's own
    include/exclude rules. When a run fails (the embedding provider is down) the last good
    index stays in place and the run is tried again later."""
    kb = _open_kb(
        folder,
        embedding,
        index_dir,
        lock_timeout,
        keep_versions=keep_versions,
        store=store,
        read_store=read_store,
    )
    watcher = FolderWatcher(
        kb, ignore=kb.store.index_dir, on_run=_printer(as_json), debounce_ms=debounce
    )

    def stop(signum: int, _frame: FrameType | None) -> None:
        watcher.stop(timeout=0)  # the run in progress finishes, then the loop ends

    previous = signal.signal(signal.SIGTERM, stop)
    # Started in the background of a shell (`cmd &`, nohup), the process inherits SIGINT
    # ignored, and Python then leaves it so: Ctrl-C must stop a watcher however it started.
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    click.echo(f"kbgraph: watching {kb.folder} (Ctrl-C stops)", err=True)
    try:
        watcher.run()
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
        kb.close()
    click.echo("kbgraph: watch stopped", err=True)
    sys.stdout.flush()
