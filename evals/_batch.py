"""One evaluation run, end to end: agent and judge from specs, rows answered and scored,
each row's result appended to ``results.jsonl`` as it finishes, the gate checked, the report
files written. The CLI is a thin layer over :func:`run_evaluation`.

``resume=True`` keeps the rows a killed run finished (same data set and judge: ``run.json``)
and runs the others; the report is then the same as a run that was never interrupted.
With ``workers`` > 1 and a judge given as a spec (``offline``), rows are scored in that many
processes (``_pool``), so that the offline judge uses that many cores and a row's time
limit stops its judge for good.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbgraph.errors import ConfigError

from ._baseline import DEFAULT_TOLERANCE, Comparison, compare_summaries
from ._evaluators import default_evaluators
from ._judges import Judge, resolve_judge
from ._records import EvalResults, EvalRow, RowResult
from ._report import ReportFiles, dataset_fingerprint, summarize, write_report
from ._runner import Agent, Scorer, arun_dataset

ROWS_PER_WORKER = 20
"""Rows to score per worker process at least: starting one (imports, the judge's model)
costs a few seconds of CPU, what 20 rows of scoring cost."""

PROCESS_JUDGES = frozenset({"offline", "overlap"})
"""Judge specs scored in worker processes when ``workers`` > 1: CPU-bound, and built from
their spec alone in each process (an LLM judge waits on the network: threads do)."""


AgentFactory = Callable[[Path, str, str | None, Mapping[str, Any]], Agent]
"""Builds the agent that answers the rows without an answer, from the folder, the embedding
and chat model specs and further settings: ``kbgraph.agents.ChatAgent.prepared`` (the ready
chat agent) for ``kbgraph eval``. Handed in, since the agents sit above evals."""


@dataclass(frozen=True, slots=True)
class EvaluationOutcome:
    results: EvalResults
    summary: dict[str, Any]
    files: ReportFiles
    gate: Comparison | None = None


def run_evaluation(
    rows: Sequence[EvalRow],
    *,
    out_dir: Path,
    folder: Path | None = None,
    agent: Agent | None = None,
    agent_factory: AgentFactory | None = None,
    judge: Judge | str = "offline",
    embedding: str = "auto",
    chat_model: str | None = None,
    settings: Mapping[str, Any] | None = None,
    concurrency: int = 4,
    workers: int = 1,
    row_timeout: float | None = None,
    progress: bool = False,
    dataset: str = "",
    resume: bool = False,
    baseline: Mapping[str, Any] | None = None,
    baseline_source: str | None = None,
    tolerance: float = DEFAULT_TOLERANCE,
    minimums: Mapping[str, float] | None = None,
    row_minimums: Mapping[str, float] | None = None,
) -> EvaluationOutcome:
    """Answer every row that needs it (``agent``, else ``agent_factory``'s agent over
    ``folder`` with ``settings``: further ``RagSettings`` fields such as
    ``search``/``rerank`` for ``kbgraph.agents.ChatAgent.prepared``), score every
    metric with ``judge``, check the gate (``baseline`` within ``tolerance``, ``minimums``
    of the means, ``row_minimums`` of each row's score: ``compare_summaries``) and write
    the reports into ``out_dir``. ``embedding``: the knowledge base's model (``auto``: the
    one its index was built with) and the offline judge's (``auto``: the local model)."""
    from ._results_log import ResultsLog

    started = time.perf_counter()
    resolved = resolve_judge(judge, embeddings=_judge_embedding(embedding))
    fingerprint = dataset_fingerprint((r.id, r.question) for r in rows)
    log = ResultsLog(
        out_dir,
        {"dataset": dataset, "dataset_fingerprint": fingerprint, "judge": resolved.name},
    )
    done = log.start(resume=resume)
    todo = [row for row in rows if row.id not in done]
    if agent is None and folder is not None and any(row.needs_agent for row in todo):
        agent = _agent_over(folder, agent_factory, embedding, chat_model, settings)
    with ExitStack() as stack:
        workers = min(workers, len(todo) // ROWS_PER_WORKER)
        scorer = _scorer(stack, judge, _judge_embedding(embedding), workers)
        fresh = asyncio.run(
            arun_dataset(
                todo,
                default_evaluators(resolved),
                agent,
                concurrency=concurrency,
                row_timeout=row_timeout,
                progress=progress,
                on_result=log.append,
                scorer=scorer,
            )
        )
    by_id = {**done, **{r.row_id: r for r in fresh}}
    # Every row as results.jsonl holds it, whether scored now or before a resume: the same
    # report either way.
    results = EvalResults(RowResult.from_dict(by_id[row.id].to_dict()) for row in rows)
    summary = summarize(
        results,
        dataset=dataset,
        judge=resolved.name,
        agent=_describe_agent(folder, embedding, chat_model, agent, settings),
        usage=resolved.usage.to_dict(),
        seconds=round(time.perf_counter() - started, 1),
        resumed_rows=len(done),
    )
    gate = None
    if baseline is not None or minimums or row_minimums:
        gate = compare_summaries(
            summary,
            baseline,
            tolerance=tolerance,
            minimums=minimums,
            row_minimums=row_minimums,
            source=baseline_source,
        )
        summary["gate"] = gate.to_dict()
    files = write_report(out_dir, results, summary)
    return EvaluationOutcome(results, summary, files, gate)


def _judge_embedding(embedding: str) -> str:
    """The offline judge's embeddings for a run whose knowledge base uses ``embedding``:
    ``auto`` (whatever the index was built with) means the local model for the judge."""
    return "local" if embedding.strip().lower() == "auto" else embedding


def _scorer(stack: ExitStack, judge: Judge | str, embedding: str, workers: int) -> Scorer | None:
    """Worker processes for a CPU-bound judge spec, else ``None`` (threads)."""
    if workers <= 1 or not isinstance(judge, str) or judge.strip().lower() not in PROCESS_JUDGES:
        return None
    from ._pool import ProcessScorer

    return stack.enter_context(
        ProcessScorer(judge.strip().lower(), embedding=embedding, workers=workers)
    )


def _agent_over(
    folder: Path,
    factory: AgentFactory | None,
    embedding: str,
    chat_model: str | None,
    settings: Mapping[str, Any] | None,
) -> Agent:
    if factory is None:
        raise ConfigError(
            f"some rows have no answer and no agent answers them over {folder}: pass "
            "agent=, or agent_factory=kbgraph.agents.ChatAgent.prepared (the ready chat "
            "agent; `kbgraph eval --kb FOLDER` uses it)."
        )
    return factory(folder, embedding, chat_model, dict(settings or {}))


def _describe_agent(
    folder: Path | None,
    embedding: str,
    chat_model: str | None,
    agent: Agent | None,
    settings: Mapping[str, Any] | None,
) -> str:
    if folder is not None:
        model = chat_model or "none (extractive answers)"
        extra = f", settings {dict(settings)}" if settings else ""
        return f"chat agent over {folder} (embedding {embedding}, chat model {model}{extra})"
    return type(agent).__name__ if agent is not None else "pre-computed answers"


__all__ = [
    "PROCESS_JUDGES",
    "ROWS_PER_WORKER",
    "AgentFactory",
    "EvaluationOutcome",
    "run_evaluation",
]
