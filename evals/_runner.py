"""Batch runs: ask the agent every question of a data set with bounded concurrency, score
every row, and never let one row take the batch down.

A row whose agent run raises (or times out), whose scoring runs out of time, or that is not
a valid row of its data set becomes a failed row — every metric ``failed`` with the reason
— and the other rows carry on. An evaluator that raises fails that metric only.
Pre-computed rows (``answer`` given) are scored without the agent. Scoring runs in worker
threads (or processes: ``kbgraph.evals._pool``), so a slow judge does not block the agents'
event loop; each row's result is handed to ``on_result`` as soon as it is done.
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, runtime_checkable

from tqdm import tqdm

from kbgraph._base.faces import shown_as
from kbgraph.errors import ConfigError, JudgeTimeoutError

from ._bounds import (
    MAX_ANSWER_CHARS,
    MAX_QUESTION_CHARS,
    bound_passages,
    bound_text,
)
from ._deadline import deadline
from ._evaluators import Evaluator
from ._records import (
    AgentOutput,
    EvalRecord,
    EvalResults,
    EvalRow,
    MetricName,
    MetricResult,
    RowResult,
)


@runtime_checkable
@shown_as("kbgraph.evals")
class Agent(Protocol):
    """Anything that answers one question with the sources it used."""

    async def arun(self, question: str) -> AgentOutput: ...


@shown_as("kbgraph.evals")
class FunctionAgent:
    """An :class:`Agent` over a plain function (sync or async) returning an
    :class:`AgentOutput`, or just the answer text."""

    def __init__(self, fn: Callable[[str], AgentOutput | str | Awaitable[AgentOutput | str]]):
        self._fn = fn

    async def arun(self, question: str) -> AgentOutput:
        if asyncio.iscoroutinefunction(self._fn):
            result: Any = await self._fn(question)
        else:
            result = await asyncio.to_thread(self._fn, question)
        return result if isinstance(result, AgentOutput) else AgentOutput(answer=str(result))


Scorer = Callable[[EvalRecord, float | None], Awaitable[dict[str, MetricResult]]]
"""Scores one record within a time limit (seconds, or ``None``): every metric, or raises
``TimeoutError`` when the limit passes (``ThreadScorer`` here; ``kbgraph.evals._pool``'s
``ProcessScorer`` runs the offline judge on several cores)."""


class ThreadScorer:
    """Scores a record in a worker thread, so that a slow judge does not block the agents'
    event loop. The time limit is set for the judge to check (the offline judge stops
    between claims: ``kbgraph.evals._deadline``) and awaited for judges that do not; a
    thread cannot be stopped from outside, so such a judge may finish in the background
    after its row was reported failed."""

    def __init__(self, evaluators: Sequence[Evaluator]) -> None:
        self.evaluators = list(evaluators)
        # Not the loop's default executor: asyncio.run waits for that one's threads, so a
        # judge past its limit would hold the whole batch until it finished.
        self._pool = ThreadPoolExecutor(thread_name_prefix="kbgraph-eval")

    async def __call__(self, record: EvalRecord, timeout: float | None) -> dict[str, MetricResult]:
        def score() -> dict[str, MetricResult]:
            with deadline(timeout):
                return score_record(record, self.evaluators)

        work = asyncio.get_running_loop().run_in_executor(self._pool, score)
        if timeout is None:
            return await work
        return await asyncio.wait_for(work, timeout + TIMEOUT_GRACE)

    def close(self) -> None:
        """Stop taking work; a judge still running past its limit is left to finish."""
        self._pool.shutdown(wait=False, cancel_futures=True)


TIMEOUT_GRACE = 1.0
"""Seconds a judge that checks the limit itself gets to notice it and stop, before its row
is reported failed without it."""


async def arun_dataset(
    rows: Sequence[EvalRow],
    evaluators: Sequence[Evaluator],
    agent: Agent | None = None,
    *,
    concurrency: int = 4,
    row_timeout: float | None = None,
    progress: bool = False,
    on_result: Callable[[RowResult], None] | None = None,
    scorer: Scorer | None = None,
) -> EvalResults:
    """Results in the order of ``rows``. ``agent`` may be ``None`` when every row is
    pre-computed; ``concurrency`` bounds the rows in flight (agent and scoring);
    ``row_timeout`` bounds each row's answering and scoring together. ``on_result`` gets
    each row's result as soon as it is done (to append it to a file: a run that is killed
    keeps what it finished). ``scorer`` scores a record (default: :class:`ThreadScorer`
    over ``evaluators``). A row of the data set that is not valid (``EvalRow.error``)
    fails with that reason, and the others run."""
    if agent is None and any(row.needs_agent for row in rows):
        raise ConfigError(
            "some rows have no answer and no agent was given; pass an agent (--kb FOLDER) "
            "or give every row an 'answer' and 'contexts'."
        )
    threads = ThreadScorer(evaluators) if scorer is None else None
    score = scorer or threads
    assert score is not None
    names = [e.name for e in evaluators]
    gate = asyncio.Semaphore(max(1, concurrency))
    bar = tqdm(total=len(rows), desc="eval", unit="row", file=sys.stderr, disable=not progress)

    async def one(row: EvalRow) -> RowResult:
        async with gate:
            result = await _run_row(row, names, score, agent, row_timeout)
        if on_result is not None:
            on_result(result)
        bar.update(1)
        return result

    try:
        with bar:
            return EvalResults(await asyncio.gather(*(one(row) for row in rows)))
    finally:
        if threads is not None:
            threads.close()


def run_dataset(
    rows: Sequence[EvalRow],
    evaluators: Sequence[Evaluator],
    agent: Agent | None = None,
    **options: Any,
) -> EvalResults:
    """:func:`arun_dataset` from synchronous code."""
    return asyncio.run(arun_dataset(rows, evaluators, agent, **options))


async def _run_row(
    row: EvalRow,
    names: Sequence[MetricName],
    score: Scorer,
    agent: Agent | None,
    timeout: float | None,
) -> RowResult:
    started = time.perf_counter()
    if row.error is not None:
        return _failed(row, names, row.error, started)
    try:
        output = await _answer(row, agent, timeout)
    except Exception as error:  # the row fails, the batch goes on
        message = (
            f"the agent did not answer within {timeout} seconds"
            if isinstance(error, TimeoutError)
            else f"{type(error).__name__}: {error}"
        )
        return _failed(row, names, message, started)
    record, notes = _bounded_record(row, output)
    output = dataclasses.replace(output, answer=record.answer, passages=record.passages)
    left = None if timeout is None else max(0.0, timeout - (time.perf_counter() - started))
    try:
        metrics = await score(record, left)
    except Exception as error:  # a judge that timed out or a worker that died
        message = (
            f"scoring did not finish within the row's {timeout} seconds (--row-timeout)"
            if isinstance(error, TimeoutError)
            else f"scoring failed: {type(error).__name__}: {error}"
        )
        return _failed(row, names, message, started, output, notes)
    return RowResult(
        row.id,
        record.question,
        "ok",
        output.answer,
        output.passages,
        metrics,
        seconds=time.perf_counter() - started,
        reference=record.reference,
        gold_sources=row.gold_sources,
        notes=notes,
    )


def _bounded_record(row: EvalRow, output: AgentOutput) -> tuple[EvalRecord, tuple[str, ...]]:
    """The record a judge scores, every input cut to its bound (``kbgraph.evals._bounds``),
    and the notes saying what was cut."""
    notes: list[str] = []
    reference = row.reference
    record = EvalRecord(
        question=bound_text(row.question, MAX_QUESTION_CHARS, "the question", notes),
        answer=bound_text(output.answer, MAX_ANSWER_CHARS, "the answer", notes),
        passages=bound_passages(output.passages, notes),
        reference=None
        if reference is None
        else bound_text(reference, MAX_ANSWER_CHARS, "the reference", notes),
        gold_sources=row.gold_sources,
        context_note=row.context_note if row.precomputed else None,
    )
    return record, tuple(notes)


def _failed(
    row: EvalRow,
    names: Sequence[MetricName],
    message: str,
    started: float,
    output: AgentOutput | None = None,
    notes: tuple[str, ...] = (),
) -> RowResult:
    return RowResult(
        row.id,
        row.question,
        "failed",
        answer=None if output is None else output.answer,
        passages=() if output is None else output.passages,
        metrics={name: MetricResult(name, "failed", None, message) for name in names},
        error=message,
        seconds=time.perf_counter() - started,
        reference=row.reference,
        gold_sources=row.gold_sources,
        notes=notes,
    )


async def _answer(row: EvalRow, agent: Agent | None, timeout: float | None) -> AgentOutput:
    if row.precomputed:
        return AgentOutput(answer=row.answer or "", passages=row.contexts or ())
    assert agent is not None
    return await asyncio.wait_for(agent.arun(row.question), timeout)


def score_record(record: EvalRecord, evaluators: Sequence[Evaluator]) -> dict[str, MetricResult]:
    """Every metric of one record; an evaluator that raises fails its metric only (but a
    judge out of time fails the row: :class:`JudgeTimeoutError` passes through)."""
    out: dict[str, MetricResult] = {}
    for evaluator in evaluators:
        try:
            out[evaluator.name] = evaluator.evaluate(record)
        except JudgeTimeoutError:
            raise
        except Exception as error:
            out[evaluator.name] = MetricResult.failed(evaluator.name, error)
    return out


__all__ = [
    "TIMEOUT_GRACE",
    "Agent",
    "FunctionAgent",
    "Scorer",
    "ThreadScorer",
    "arun_dataset",
    "run_dataset",
    "score_record",
]
