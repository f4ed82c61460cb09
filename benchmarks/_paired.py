"""Paired rounds: two (or more) ways of doing the same work, run in turn on a shared
machine so that a drift in its speed (another process, a CPU's clock) falls on every side
alike. Which side goes first alternates too (A B, B A, A B …): the second of a pair runs
on warmer caches, and a fixed order would hand that to one side every time."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

T = TypeVar("T")


def alternate(sides: Mapping[str, Callable[[], T]], rounds: int) -> dict[str, list[T]]:
    """Each side's result, round by round: ``rounds`` rounds, every side once a round, the
    order of the sides reversed every other round."""
    names = list(sides)
    out: dict[str, list[T]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            out[name].append(sides[name]())
    return out


__all__ = ["alternate"]
