"""Scoring in worker processes: the offline judge on as many cores as ``--concurrency``
offers, and a row's time limit that can stop a judge for good.

The offline judge is CPU-bound Python plus a small model; in threads, one core does all of
it (the GIL, and one model). Each worker process builds its own judge from the same spec
(``resolve_judge``), loads and warms its model before its first row, and scores one
record at a time (``runner.score_record``). A worker that runs past its row's time limit
(with ``TIMEOUT_GRACE`` to notice it itself) is killed and replaced: the row fails, the
batch goes on. Workers are started with ``spawn``: a forked copy of a process that holds
model threads can deadlock. (So a script that scores in processes needs the usual ``if
__name__ == "__main__":`` guard; ``kbgraph eval`` has it.)
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from kbgraph.errors import EvaluationError, JudgeTimeoutError

from ._records import EvalRecord, MetricResult

START_SECONDS = 300.0
"""How long a worker may take to import kbgraph and load its judge's model."""


def worker_count(concurrency: int) -> int:
    """Processes for ``concurrency`` rows in flight: no more than the machine's cores."""
    return max(1, min(concurrency, os.cpu_count() or 1))


def _serve(connection: Connection, judge: str, embedding: str) -> None:
    """A worker's loop: build the evaluators, warm the model, then score until told to stop."""
    from ._deadline import deadline
    from ._evaluators import default_evaluators
    from ._judges import resolve_judge
    from ._runner import score_record

    resolved = resolve_judge(judge, embeddings=embedding)
    warm = getattr(resolved, "vectors", None)
    if warm is not None:
        warm(["Load the model before the first row's clock starts."])
    evaluators = default_evaluators(resolved)
    connection.send(("ready", None))
    while True:
        try:
            message = connection.recv()
        except EOFError:  # the parent is gone (killed): nothing more to score
            return
        if message is None:
            return
        record, timeout = message
        try:
            with deadline(timeout):
                reply: tuple[str, Any] = ("ok", score_record(record, evaluators))
        except JudgeTimeoutError as error:
            reply = ("timeout", str(error))
        except Exception as error:  # reported as the row's failure, the worker goes on
            reply = ("error", f"{type(error).__name__}: {error}")
        connection.send(reply)


class _Worker:
    def __init__(self, judge: str, embedding: str) -> None:
        context = multiprocessing.get_context("spawn")
        self.connection, theirs = context.Pipe()
        self.process: BaseProcess = context.Process(
            target=_serve, args=(theirs, judge, embedding), daemon=True
        )
        self.process.start()
        theirs.close()
        self.ready = False

    def wait_ready(self) -> None:
        if self.ready:
            return
        if not self.connection.poll(START_SECONDS):
            raise EvaluationError(f"a scoring process did not start within {START_SECONDS:g} s")
        kind, _ = self._receive()
        self.ready = kind == "ready"

    def ask(self, record: EvalRecord, timeout: float | None) -> tuple[str, Any] | None:
        """The worker's reply, or ``None`` when it did not answer in time."""
        self.connection.send((record, timeout))
        wait = None if timeout is None else timeout + TIMEOUT_GRACE
        if not self.connection.poll(wait):
            return None
        return self._receive()

    def _receive(self) -> tuple[str, Any]:
        try:
            reply: tuple[str, Any] = self.connection.recv()
        except EOFError as exc:
            raise EvaluationError(
                f"a scoring process stopped (exit code {self.process.exitcode})"
            ) from exc
        return reply

    def stop(self, *, kill: bool = False) -> None:
        if kill:
            self.process.kill()
        else:
            try:
                self.connection.send(None)
            except OSError:
                self.process.kill()
        self.process.join(timeout=10)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.connection.close()


TIMEOUT_GRACE = 1.0
"""Seconds a worker gets past its row's limit to stop the judge itself, before it is
killed."""


class ProcessScorer:
    """A :data:`~kbgraph.evals._runner.Scorer` over ``workers`` processes, each with its own
    judge from ``judge`` (a spec: ``offline``) and ``embedding``. Use it as a context
    manager (``with ProcessScorer(...) as scorer:``), so that its processes stop."""

    def __init__(self, judge: str, *, embedding: str = "local", workers: int = 2) -> None:
        self.judge = judge
        self.embedding = embedding
        self.workers = max(1, workers)
        self._all: list[_Worker] = []
        self._idle: asyncio.Queue[_Worker] | None = None

    def __enter__(self) -> ProcessScorer:
        self._all = [_Worker(self.judge, self.embedding) for _ in range(self.workers)]
        return self

    def __exit__(self, *_: object) -> None:
        for worker in self._all:
            worker.stop()
        self._all = []

    async def __call__(self, record: EvalRecord, timeout: float | None) -> dict[str, MetricResult]:
        if not self._all:
            raise EvaluationError("ProcessScorer is used outside its `with` block")
        if self._idle is None:
            self._idle = asyncio.Queue()
            for worker in self._all:
                self._idle.put_nowait(worker)
        worker = await self._idle.get()
        try:
            await asyncio.to_thread(worker.wait_ready)
            reply = await asyncio.to_thread(worker.ask, record, timeout)
            if reply is None:
                # Past its limit and its grace: the only way to stop a judge for good.
                worker = self._replace(worker)
                raise JudgeTimeoutError(f"scoring did not finish within {timeout} seconds")
        except JudgeTimeoutError:
            raise
        except BaseException:  # a worker that died, or a cancelled row: start afresh
            worker = self._replace(worker)
            raise
        finally:
            self._idle.put_nowait(worker)
        kind, value = reply
        if kind == "timeout":
            raise JudgeTimeoutError(value)
        if kind == "error":
            raise EvaluationError(value)
        metrics: dict[str, MetricResult] = value
        return metrics

    def _replace(self, worker: _Worker) -> _Worker:
        worker.stop(kill=True)
        if worker not in self._all:  # the scorer is closing
            return worker
        fresh = _Worker(self.judge, self.embedding)
        self._all[self._all.index(worker)] = fresh
        return fresh


__all__ = ["START_SECONDS", "TIMEOUT_GRACE", "ProcessScorer", "worker_count"]
