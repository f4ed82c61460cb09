"""Batch runs: ask the agent every question of a data set with bounded concurrency, score
every row, and never let one row take the batch down.

A row whose agent run raises (or times out) becomes a failed row — every metric
``failed`` with the error — and the other rows carry on. An evaluator that raises fails
that metric only. Pre-computed rows (``answer`` given) are scored without the agent.
Scoring runs in worker threads, so a slow judge does not block the agents' event loop.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from tqdm import tqdm

from kbgraph.errors import ConfigError

from .evaluators import Evaluator
from .records import AgentOutput, EvalRecord, EvalRow, MetricResult, RowResult


@runtime_checkable
class Agent(Protocol):
    """Anything that answers one question with the sources it used."""

    async def arun(self, question: str) -> AgentOutput: ...


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


async def arun_dataset(
    rows: Sequence[EvalRow],
    evaluators: Sequence[Evaluator],
    agent: Agent | None = None,
    *,
    concurrency: int = 4,
    row_timeout: float | None = None,
    progress: bool = False,
) -> list[RowResult]:
    """Results in the order of ``rows``. ``agent`` may be ``None`` when every row is
    pre-computed; ``concurrency`` bounds the rows in flight (agent and scoring)."""
    if agent is None and any(not row.precomputed for row in rows):
        raise ConfigError(
            "some rows have no answer and no agent was given; pass an agent (--kb FOLDER) "
            "or give every row an 'answer' and 'contexts'."
        )
    gate = asyncio.Semaphore(max(1, concurrency))
    bar = tqdm(total=len(rows), desc="eval", unit="row", file=sys.stderr, disable=not progress)

    async def one(row: EvalRow) -> RowResult:
        async with gate:
            result = await _run_row(row, evaluators, agent, row_timeout)
        bar.update(1)
        return result

    with bar:
        return list(await asyncio.gather(*(one(row) for row in rows)))


def run_dataset(
    rows: Sequence[EvalRow],
    evaluators: Sequence[Evaluator],
    agent: Agent | None = None,
    **options: Any,
) -> list[RowResult]:
    """:func:`arun_dataset` from synchronous code."""
    return asyncio.run(arun_dataset(rows, evaluators, agent, **options))


async def _run_row(
    row: EvalRow, evaluators: Sequence[Evaluator], agent: Agent | None, timeout: float | None
) -> RowResult:
    started = time.perf_counter()
    try:
        output = await _answer(row, agent, timeout)
    except Exception as error:  # the row fails, the batch goes on
        message = _describe(error, timeout)
        metrics: dict[str, MetricResult] = {
            e.name: MetricResult(e.name, "failed", None, message) for e in evaluators
        }
        return RowResult(
            row.id,
            row.question,
            "failed",
            error=message,
            metrics=metrics,
            seconds=time.perf_counter() - started,
            reference=row.reference,
            gold_sources=row.gold_sources,
        )
    record = EvalRecord(
        question=row.question,
        answer=output.answer,
        passages=output.passages,
        reference=row.reference,
        gold_sources=row.gold_sources,
    )
    metrics = await asyncio.to_thread(score_record, record, evaluators)
    return RowResult(
        row.id,
        row.question,
        "ok",
        output.answer,
        output.passages,
        metrics,
        seconds=time.perf_counter() - started,
        reference=row.reference,
        gold_sources=row.gold_sources,
    )


async def _answer(row: EvalRow, agent: Agent | None, timeout: float | None) -> AgentOutput:
    if row.precomputed:
        return AgentOutput(answer=row.answer or "", passages=row.contexts or ())
    assert agent is not None
    return await asyncio.wait_for(agent.arun(row.question), timeout)


def score_record(record: EvalRecord, evaluators: Sequence[Evaluator]) -> dict[str, MetricResult]:
    """Every metric of one record; an evaluator that raises fails its metric only."""
    out: dict[str, MetricResult] = {}
    for evaluator in evaluators:
        try:
            out[evaluator.name] = evaluator.evaluate(record)
        except Exception as error:
            out[evaluator.name] = MetricResult.failed(evaluator.name, error)
    return out


def _describe(error: BaseException, timeout: float | None) -> str:
    if isinstance(error, TimeoutError):
        return f"the agent did not answer within {timeout} seconds"
    return f"{type(error).__name__}: {error}"


__all__ = ["Agent", "FunctionAgent", "arun_dataset", "run_dataset", "score_record"]
