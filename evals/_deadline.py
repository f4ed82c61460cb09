"""A time limit for the judging of one row, which the offline judge checks between claims
(``kbgraph eval --row-timeout``): a thread cannot be stopped from outside, so the judge stops
itself. The limit lives in a context variable, so that the worker thread of each row
(``asyncio.to_thread`` copies the context) sees its own."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from kbgraph.errors import JudgeTimeoutError

_DEADLINE: ContextVar[tuple[float, float] | None] = ContextVar(
    "kbgraph_eval_deadline", default=None
)


@contextmanager
def deadline(seconds: float | None) -> Iterator[None]:
    """Within the block, :func:`check_deadline` raises once ``seconds`` have passed
    (``None``: no limit)."""
    if seconds is None:
        yield
        return
    token = _DEADLINE.set((time.monotonic() + max(0.0, seconds), seconds))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def check_deadline() -> None:
    """Raise :class:`JudgeTimeoutError` when the current limit has passed."""
    limit = _DEADLINE.get()
    if limit is not None and time.monotonic() > limit[0]:
        raise JudgeTimeoutError(
            f"judging did not finish within the row's {limit[1]:g} seconds; raise "
            "--row-timeout, or judge fewer or shorter answers per row."
        )


__all__ = ["check_deadline", "deadline"]
