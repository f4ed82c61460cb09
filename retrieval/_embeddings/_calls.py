"""Calling a provider: an ``Embeddings`` call bounded by a timeout, and its messages on
one line."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

_T = TypeVar("_T")


def one_line(text: str) -> str:
    """A provider's message on one line (servers answer with tracebacks and JSON spread
    over lines; a failure is one line on stderr)."""
    return " ".join(text.split())


def call_within(call: Callable[[], _T], timeout: float, who: str) -> _T:
    """``call()`` in a daemon thread; ``TimeoutError`` when it has not returned within
    ``timeout`` seconds (classified as a timed-out request: retried, then a failure)."""
    result: list[_T] = []
    error: list[BaseException] = []

    def work() -> None:
        try:
            result.append(call())
        except BaseException as exc:  # handed to the caller's thread
            error.append(exc)

    worker = threading.Thread(target=work, name="kbgraph-embed", daemon=True)
    worker.start()
    worker.join(timeout)
    if error:
        raise error[0]
    if not result:
        raise TimeoutError(f"{who} did not return within {timeout:g}s")
    return result[0]


__all__ = ["call_within", "one_line"]
