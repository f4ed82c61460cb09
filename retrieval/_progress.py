"""Progress reporting: library code never prints; it calls a callback that the CLI turns
into a progress bar and the subgraph into ``knowledge.index.*`` stream events."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

Stage = Literal["scan", "load", "embed", "write", "done"]


@dataclass(frozen=True, slots=True)
class ProgressEvent:
    stage: Stage
    done: int
    total: int
    message: str = ""


ProgressCallback = Callable[[ProgressEvent], None]


def ignore_progress(event: ProgressEvent) -> None:
    """The default callback."""


__all__ = ["ProgressCallback", "ProgressEvent", "Stage", "ignore_progress"]
