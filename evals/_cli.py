"""``kbgraph eval``: score a data set, compare with a baseline, measure the judges.

    kbgraph eval DATASET --kb FOLDER [--judge offline|<model spec>] [--concurrency N]
                 [--baseline FILE] [--min METRIC=VALUE ...] [--min-each METRIC=VALUE ...]
                 [--out DIR] [--resume]
                 [--row-timeout S] [--top-k N] [--mode M] [--rerank R] [--settings FILE]
                 [--embedding SPEC] [--chat-model SPEC] [--json]
    kbgraph eval meta [--limit N] [--judge offline|<model spec> ...] [--benchmark B ...]
                      [--heldout DIR]

``eval`` is a group whose first argument is either a subcommand (``run``, ``meta``,
``retrieval`` from ``kbgraph.evals._beir``, and any other added with ``eval_group.add_command`` or
``eval_group.lazy``) or a data-set path, which runs ``run``.

Exit codes: 0 success (rows that failed are reported, and counted by the gate), 1 failure,
2 usage or configuration error (a data set that cannot be read, a missing ``--kb``, a
baseline of other rows, a ``--resume`` of other rows), 6 a gate failed: a regression
against ``--baseline``, a metric's mean below its ``--min``, or a row's score below (or
without) its ``--min-each``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kbgraph._base.commands import DefaultCommandGroup
from kbgraph._exit_codes import LiveChoice, failing_as
from kbgraph.retrieval import search_modes

from ._baseline import (
    DEFAULT_TOLERANCE,
    REGRESSION_EXIT_CODE,
    check_comparable,
    format_comparison,
    load_summary,
    parse_minimums,
)
from ._datasets import bundled_dataset_path, load_dataset
from ._metrics import metric_names
from ._report import below_minimum_lines, dataset_fingerprint

if TYPE_CHECKING:
    from ._meta import Benchmark

# The choices of `eval meta --benchmark`, spelt out so that `--help` does not import the
# meta-evaluation; tests/unit/test_eval_meta.py holds them equal to meta.ALL_BENCHMARKS.
META_BENCHMARKS = (
    "wikieval", "halueval", "begin", "ragtruth", "lfqa", "attributionbench", "faithbench", "summac"
)  # fmt: skip


fail_cleanly = failing_as("kbgraph eval")


@click.group(
    cls=DefaultCommandGroup,
    lazy={"retrieval": ("kbgraph.evals._beir._command", "retrieval_command")},
    invoke_without_command=False,
    no_args_is_help=True,
    subcommand_metavar="DATASET|COMMAND [ARGS]...",
    context_settings={"help_option_names": ["-h", "--help"]},
)
def eval_group() -> None:
    """Evaluate RAG answers: `kbgraph eval DATASET --kb FOLDER [OPTIONS]`, or a subcommand.

    `kbgraph eval DATASET ...` is `kbgraph eval run DATASET ...` (its options: `kbgraph eval
    run --help`)."""


@eval_group.command("run")
@click.argument("dataset", metavar="DATASET")
@click.option(
    "--kb",
    "folder",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Folder the chat agent answers from (not needed for pre-computed rows).",
)
@click.option(
    "--judge",
    default="offline",
    show_default=True,
    metavar="offline|SPEC",
    help="offline (no LLM, no network) or a chat model spec such as "
    "openai:gpt-4o-mini or openai_compatible:<model>@<url>.",
)
@click.option(
    "--concurrency",
    type=click.IntRange(1, 64),
    default=4,
    show_default=True,
    help="Rows in flight at once; the offline judge scores them in up to this many "
    "processes (at most one per CPU core).",
)
@click.option(
    "--baseline",
    type=click.Path(dir_okay=False, path_type=Path),
    help="An earlier summary.json; exit 6 on a regression beyond --tolerance.",
)
@click.option(
    "--tolerance",
    type=float,
    default=DEFAULT_TOLERANCE,
    show_default=True,
    help="With --baseline: how far a metric's mean may drop below the baseline's before "
    "the gate fails (exit 6).",
)
@click.option(
    "--min",
    "minimums",
    multiple=True,
    metavar="METRIC=VALUE",
    help="Exit 6 when METRIC's mean is below VALUE (repeatable; METRIC: a registered "
    "metric, e.g. faithfulness, or gold_source_recall).",
)
@click.option(
    "--min-each",
    "row_minimums",
    multiple=True,
    metavar="METRIC=VALUE",
    help="Exit 6 when any row's METRIC is below VALUE, or has no score (a failed row, an "
    "undetermined metric): one made-up fact in one answer fails it (repeatable; METRIC "
    "as for --min).",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("eval-results"),
    show_default=True,
    help="Folder for results.jsonl, summary.json, report.md, scores.png and run.json.",
)
@click.option(
    "--resume",
    is_flag=True,
    help="Keep the rows a killed run already finished in --out, and run the others.",
)
@click.option(
    "--embedding",
    default="auto",
    show_default=True,
    metavar="SPEC",
    help="Embeddings of the knowledge base and of the offline judge (auto: the model the "
    "knowledge base's index was built with, the local model for the judge and for a new "
    "index).",
)
@click.option(
    "--chat-model",
    default=None,
    metavar="SPEC",
    help="The agent's chat model (default: none, extractive answers).",
)
@click.option("--top-k", type=click.IntRange(1, 1000), default=None, help="Chunks retrieved.")
@click.option(
    "--mode",
    type=LiveChoice(search_modes),
    default=None,
    help="Retrieval mode (default: hybrid when the index has vectors).",
)
@click.option(
    "--rerank",
    type=click.Choice(["heuristic", "llm", "none", "cross_encoder"]),
    default=None,
    help="How the subgraph reranks (default heuristic).",
)
@click.option(
    "--settings",
    "settings_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="A JSON or TOML file of the agent's settings (RagSettings fields, as in a "
    "LangGraph context); --top-k, --mode and --rerank override it.",
)
@click.option("--limit", type=click.IntRange(1), default=None, help="Only the first N rows.")
@click.option(
    "--row-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Seconds per row, answering and judging together; a row past it fails.",
)
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option("--json", "as_json", is_flag=True, help="Print summary.json to stdout.")
@fail_cleanly
def run_command(
    dataset: str,
    folder: Path | None,
    judge: str,
    concurrency: int,
    baseline: Path | None,
    tolerance: float,
    minimums: tuple[str, ...],
    row_minimums: tuple[str, ...],
    out_dir: Path,
    resume: bool,
    embedding: str,
    chat_model: str | None,
    top_k: int | None,
    mode: str | None,
    rerank: str | None,
    settings_file: Path | None,
    limit: int | None,
    row_timeout: float | None,
    quiet: bool,
    as_json: bool,
) -> None:
    """Answer and score every row of DATASET (JSON lines; `bundled` for the Harbor set)."""
    from ._batch import run_evaluation
    from ._pool import worker_count

    path = bundled_dataset_path() if dataset == "bundled" else Path(dataset)
    rows = load_dataset(path, on_error="row")[:limit]
    if folder is None and any(row.needs_agent for row in rows):
        raise click.UsageError(
            "some rows have no 'answer', so the chat agent must answer them: pass --kb "
            "FOLDER (the documents to answer from), or give every row 'answer' and 'contexts'."
        )
    floors = parse_minimums(minimums)
    row_floors = parse_minimums(row_minimums, option="--min-each")
    settings = agent_settings(settings_file, top_k=top_k, mode=mode, rerank=rerank)
    previous = load_summary(baseline) if baseline else None
    if previous is not None:
        # Fail before a long run, not after it.
        check_comparable(
            {
                "rows": {"total": len(rows)},
                "dataset": str(path),
                "dataset_fingerprint": dataset_fingerprint((r.id, r.question) for r in rows),
            },
            previous,
        )
    outcome = run_evaluation(
        rows,
        folder=folder,
        # The ready chat agent, given by `kbgraph eval` (kbgraph.agents, above evals).
        agent_factory=click.get_current_context().obj,
        judge=judge,
        embedding=embedding,
        chat_model=chat_model,
        settings=settings,
        concurrency=concurrency,
        workers=worker_count(concurrency),
        row_timeout=row_timeout,
        progress=not quiet,
        out_dir=out_dir,
        dataset=str(path),
        resume=resume,
        baseline=previous,
        baseline_source=str(baseline) if baseline else None,
        tolerance=tolerance,
        minimums=floors,
        row_minimums=row_floors,
    )
    gate = outcome.gate
    if as_json:
        data = dict(outcome.summary)
        if gate is not None:
            data["baseline"] = gate.to_dict()
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))
    else:
        click.echo(format_summary(outcome.summary))
        click.echo(
            f"\nWrote {outcome.files.results}, {outcome.files.summary}, "
            f"{outcome.files.markdown}"
            + (
                f", {outcome.files.chart}"
                if outcome.files.chart
                else " (no chart: pip install 'kbgraph[eval]')"
            )
        )
        if gate is not None:
            click.echo(format_comparison(gate))
            why = below_minimum_lines(
                outcome.results, floors, outcome.files.markdown, row_minimums=row_floors
            )
            for line in why:
                click.echo(line)
    failed = outcome.summary["rows"]["failed"]
    if failed:
        click.echo(f"kbgraph eval: {failed} row(s) failed; see report.md", err=True)
    if gate is not None and not gate.ok:
        sys.exit(REGRESSION_EXIT_CODE)


def agent_settings(
    path: Path | None, *, top_k: int | None, mode: str | None, rerank: str | None
) -> dict[str, Any]:
    """The chat agent's settings: the file's (JSON, or TOML by its ``.toml`` suffix), then
    the options. Unknown fields are refused when the agent is built (``RagSettings``)."""
    settings: dict[str, Any] = {}
    if path is not None:
        settings = _read_settings(path)
    search = dict(settings.get("search") or {})
    if top_k is not None:
        search["top_k"] = top_k
    if mode is not None:
        search["mode"] = mode
    if search:
        settings["search"] = search
    if rerank is not None:
        settings["rerank"] = rerank
    return settings


def _read_settings(path: Path) -> dict[str, Any]:
    from kbgraph.errors import ConfigError

    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix.lower() == ".toml":
            import tomllib

            data: Any = tomllib.loads(text)
        else:
            data = json.loads(text)
    except (ValueError, json.JSONDecodeError) as exc:
        raise ConfigError(f"--settings {path}: not valid {path.suffix or 'JSON'} ({exc})") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"--settings {path}: give an object of RagSettings fields")
    for owned in ("knowledge_bases", "embedding", "chat_model"):
        if owned in data:
            raise ConfigError(
                f"--settings {path}: {owned!r} comes from --kb, --embedding and --chat-model; "
                "remove it from the file."
            )
    return data


def format_summary(summary: dict[str, Any]) -> str:
    rows = summary["rows"]
    lines = [
        f"{rows['total']} rows ({rows['ok']} ok, {rows['failed']} failed), "
        f"judge {summary.get('judge')}",
        "",
    ]
    names = metric_names()
    widths = [max(len(_SHORT.get(n, n)), 6) for n in names]
    heads = " ".join(f"{_SHORT.get(n, n):>{w}}" for n, w in zip(names, widths, strict=True))
    lines.append(f"{'id':<14} {heads}  status")
    for row in summary["per_row"]:
        cells = (_num(row.get(n)) for n in names)
        row_cells = " ".join(f"{c:>{w}}" for c, w in zip(cells, widths, strict=True))
        lines.append(f"{row['id']:<14} {row_cells}  {row['status']}")
    lines.append("")
    for name in (*names, "gold_source_recall"):
        s = summary[name]
        extra = (
            f", {s['n_undetermined']} undetermined, {s['n_failed']} failed"
            if "n_failed" in s
            else ""
        )
        lines.append(f"{name:<20} mean {_num(s['mean']):>6}  ({s['n_scored']} scored{extra})")
    return "\n".join(lines)


_SHORT = {  # the text table's column heads, where a metric's name is long
    "context_recall": "ctx recall",
    "context_precision": "ctx prec",
    "answer_relevance": "relevance",
    "answer_correctness": "correctness",
}


def _num(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


@eval_group.command("meta")
@click.option(
    "--limit",
    type=click.IntRange(2),
    default=None,
    help="At most N items per benchmark split (sampled evenly, labels kept).",
)
@click.option(
    "--judge",
    "judges",
    multiple=True,
    default=("offline",),
    show_default=True,
    metavar="offline|SPEC",
    help="Repeat to compare several judges.",
)
@click.option(
    "--data",
    "data_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder with wikieval/, halueval/, begin/ "
    "(default $KBGRAPH_EVAL_DATA or ../shared/data/evals).",
)
@click.option(
    "--summedits",
    "summedits_dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="Also SummEdits: the data/summedits folder of github.com/salesforce/factualNLG "
    "(Apache-2.0; not shipped).",
)
@click.option(
    "--embedding",
    default="local",
    show_default=True,
    metavar="SPEC",
    help="Embeddings of the offline judge (local: the packaged model).",
)
@click.option(
    "--benchmark",
    "benchmarks",
    multiple=True,
    type=click.Choice(META_BENCHMARKS),
    help="Only these benchmarks (repeatable; default wikieval, halueval and begin). "
    "ragtruth, lfqa, attributionbench, faithbench and summac are the held-out test sets "
    "of --heldout: they run only when named.",
)
@click.option(
    "--heldout",
    "heldout_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder with ragtruth/, lfqa_verification/, attributionbench/, faithbench/, "
    "summac/ (default $KBGRAPH_HELDOUT_DATA or ../shared/data/heldout). Test sets: report on "
    "them, never tune on them.",
)
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Parallel judge calls (for LLM judges).",
)
@click.option("--quiet", is_flag=True, help="No progress bar.")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@fail_cleanly
def meta_command(
    limit: int | None,
    judges: tuple[str, ...],
    data_dir: Path | None,
    summedits_dir: Path | None,
    embedding: str,
    benchmarks: tuple[Benchmark, ...],
    heldout_dir: Path | None,
    workers: int,
    quiet: bool,
    as_json: bool,
) -> None:
    """Agreement of the judges with human labels (WikiEval, HaluEval, BEGIN, and SummEdits
    with --summedits), next to a plain content-word-overlap baseline. Named with
    --benchmark, the held-out test sets too (RAGTruth per task, LFQA-Verification,
    AttributionBench per subset, FaithBench, SummaC per subset), with balanced accuracy at
    0.5, AUROC within answer-length quartiles, two more floors and published figures."""
    from ._judges import resolve_judge
    from ._meta import BENCHMARKS, format_table, run_meta

    resolved = [resolve_judge(spec, embeddings=embedding) for spec in judges]
    results = run_meta(
        resolved,
        data_dir=data_dir,
        limit=limit,
        workers=workers,
        progress=not quiet,
        benchmarks=benchmarks or BENCHMARKS,
        summedits=summedits_dir,
        heldout_dir=heldout_dir,
    )
    if as_json:
        click.echo(json.dumps([r.to_dict() for r in results], ensure_ascii=False, indent=2))
        return
    click.echo(format_table(results))
    for judge in resolved:
        if judge.usage.calls:
            click.echo(f"{judge.name}: {judge.usage.to_dict()}")


__all__ = ["DefaultCommandGroup", "agent_settings", "eval_group", "format_summary"]
