"""``kbgraph eval retrieval``: retrieval quality on a BEIR-format data set.

    kbgraph eval retrieval BEIR_DIR [--mode bm25|vector|hybrid|graph]... [--embedding SPEC]
                 [--split test|train] [--fusion convex|rrf] [--json] [--out DIR] [--work-dir DIR]
                 [--fresh] [--keep-identical-ids] [--limit-queries N] [--quiet]

The index in the work folder is reused, so a repeat run only updates it; its ``index_s``
is then labelled ``incremental``. ``--fresh`` deletes the index (and its embedding cache)
first, so that ``index_s`` is the time of indexing the whole corpus.

Exit codes: 0 success, 1 failure, 2 usage or configuration error.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from kbgraph.errors import ConfigError, KbgraphError
from kbgraph.exit_codes import LiveChoice
from kbgraph.retrieval.config import FusionMethod

from ._report import markdown, write_results
from ._run import RunProgress, RunSettings, modes, run_beir, search_settings


@contextmanager
def _progress_bar(enabled: bool) -> Iterator[RunProgress]:
    """One tqdm bar per stage on stderr (stdout stays clean for ``--json``)."""
    if not enabled:
        yield lambda stage, done, total: None
        return
    from tqdm import tqdm

    bars: dict[str, Any] = {}

    def report(stage: str, done: int, total: int) -> None:
        bar = bars.get(stage)
        if bar is None:
            for other in bars.values():
                other.close()
            bar = bars[stage] = tqdm(total=total, desc=stage, file=sys.stderr, leave=False)
        bar.total = total
        bar.n = done
        bar.refresh()

    try:
        yield report
    finally:
        for bar in bars.values():
            bar.close()


def _command(
    ctx: click.Context, beir_dir: Path, modes: tuple[str, ...], options: dict[str, Any]
) -> str:
    """The command line that reproduces this run (options at their default left out)."""
    parts = [*ctx.command_path.split(), str(beir_dir)]
    for mode in modes:
        parts += ["--mode", mode]
    for name, value in options.items():
        if value is not None and value is not False:
            parts += [name] if value is True else [name, str(value)]
    return shlex.join(parts)


@click.command("retrieval")
@click.argument(
    "beir_dir", metavar="BEIR_DIR", type=click.Path(exists=True, file_okay=False, path_type=Path)
)
@click.option(
    "--mode",
    "modes",
    type=LiveChoice(modes),
    multiple=True,
    help="Repeat to run several (default: bm25, vector, hybrid, graph; bm25 and graph with "
    "--embedding none). A mode is a registered ranker (title too), hybrid, or graph (the "
    "whole subgraph, heuristic mode).",
)
@click.option(
    "--embedding",
    default="local",
    show_default=True,
    metavar="SPEC",
    help="local, fake, openai:<model>, ...; none for a BM25-only index.",
)
@click.option(
    "--split",
    default="test",
    show_default=True,
    metavar="SPLIT",
    help="The qrels file: qrels/<split>.tsv (test, train, dev).",
)
@click.option(
    "--fusion",
    type=click.Choice(["convex", "rrf"]),
    default="convex",
    show_default=True,
    help="How hybrid and graph fuse vector and BM25: convex (weights chosen on SciFact "
    "train) or rrf (plain equal-weight RRF, k = 60: the engine's default).",
)
@click.option("--json", "as_json", is_flag=True, help="Print {mode: metrics} as JSON.")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("eval-results"),
    show_default=True,
    help="Where the JSON and Markdown results go.",
)
@click.option(
    "--fresh",
    is_flag=True,
    help="Delete the work folder's index and embedding cache first: index_s then times "
    "indexing the whole corpus, not an incremental update.",
)
@click.option(
    "--keep-identical-ids",
    is_flag=True,
    help="Keep a retrieved document whose id is the query's id (BEIR drops it by default).",
)
@click.option(
    "--work-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder for the documents and the index, reused across runs "
    "(default: ~/.cache/kbgraph/beir/<data set>-<hash>).",
)
@click.option("--limit-queries", type=click.IntRange(1), default=None, help="First N queries.")
@click.option("--quiet", is_flag=True, help="No progress bars.")
@click.pass_context
def retrieval_command(
    ctx: click.Context,
    beir_dir: Path,
    modes: tuple[str, ...],
    embedding: str,
    split: str,
    fusion: FusionMethod,
    as_json: bool,
    out_dir: Path,
    work_dir: Path | None,
    fresh: bool,
    keep_identical_ids: bool,
    limit_queries: int | None,
    quiet: bool,
) -> None:
    """Index BEIR_DIR's corpus with the engine and score every query: nDCG@10, recall@10,
    recall@100, MRR@10, indexing time and query latency p50/p95 per mode."""
    spec = None if embedding.strip().lower() == "none" else embedding.strip()
    settings = RunSettings(
        embedding=spec,
        search=search_settings(fusion),
        limit_queries=limit_queries,
        ignore_identical_ids=not keep_identical_ids,
    )
    command = _command(
        ctx,
        beir_dir,
        modes,
        {
            "--embedding": None if embedding == "local" else embedding,
            "--split": None if split == "test" else split,
            "--fusion": None if fusion == "convex" else fusion,
            "--work-dir": work_dir,
            "--fresh": fresh,
            "--keep-identical-ids": keep_identical_ids,
            "--limit-queries": limit_queries,
        },
    )
    try:
        with _progress_bar(not quiet) as progress:
            run = run_beir(
                beir_dir, modes, split=split, settings=settings, work_dir=work_dir,
                fresh=fresh, progress=progress,
            )  # fmt: skip
        json_path, md_path = write_results(run, out_dir, command)
    except ConfigError as exc:
        click.echo(f"kbgraph eval retrieval: {exc}", err=True)
        sys.exit(2)
    except (KbgraphError, OSError) as exc:
        click.echo(f"kbgraph eval retrieval: {type(exc).__name__}: {exc}", err=True)
        sys.exit(1)
    if as_json:
        click.echo(json.dumps(run.summary(), indent=2))
    else:
        click.echo(markdown(run, command))
        click.echo(f"Wrote {json_path} and {md_path}")


__all__ = ["retrieval_command"]
