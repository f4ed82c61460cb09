"""The paired rounds every A-versus-B benchmark runs (benchmarks/_paired.py): each side once a
round, the first side alternating, so neither always runs second on warm caches."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from _paired import alternate


def test_sides_take_turns_going_first() -> None:
    calls: list[str] = []

    def side(name: str) -> Callable[[], int]:
        def run() -> int:
            calls.append(name)
            return len(calls)

        return run

    got = alternate({"a": side("a"), "b": side("b")}, 4)
    assert calls == ["a", "b", "b", "a", "a", "b", "b", "a"]
    assert got == {"a": [1, 4, 5, 8], "b": [2, 3, 6, 7]}


def test_no_rounds_runs_nothing() -> None:
    assert alternate({"a": lambda: 1 / 0}, 0) == {"a": []}
