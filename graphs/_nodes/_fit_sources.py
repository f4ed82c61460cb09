"""Numbered sources cut down to a chat model's context window.

The answer and GroundingCheck send ``rag_context`` to the model. When the model declares a
window (``ChatGGUF`` does) and the prompt would not fit, the context is shown with fewer
sources: the last ones go first (they ranked lowest), each keeping its number, so an
``[N]`` in the reply still names ``rag_citations[N]``; when not even the first source fits,
it is cut to its first lines (its line range shrinks with it). Nothing is trimmed for a
model without a declared window.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

from kbgraph._base.context_window import Fit, largest_fitting

from .._state import Citation
from .build_context import Block, block_of_citation, render_blocks, truncate

Build = Callable[[str], list[BaseMessage]]


@dataclass(frozen=True, slots=True)
class SourcesFit:
    """The prompt to send, the context it holds and what of the sources that shows: the
    numbers of the sources in full, and the source cut to its first lines (``cut``: its
    number and new last line)."""

    messages: list[BaseMessage]
    context: str
    shown: list[int]
    total: int
    cut: tuple[int, int] | None = None
    prompt_tokens: int | None = None
    limit: int | None = None

    @property
    def trimmed(self) -> bool:
        return self.cut is not None or len(self.shown) < self.total

    @property
    def empty(self) -> bool:
        """No source fits, not even cut: the model would see none."""
        return self.total > 0 and not self.shown and self.cut is None

    def describe(self) -> str:
        """One line for ``rag_retrieval_debug`` and the answer's record."""
        shown = f"sources {_ranges(self.shown)} of {self.total}" if self.shown else "no source"
        cut = f", source {self.cut[0]} cut to line {self.cut[1]}" if self.cut else ""
        return (
            f"context trimmed to fit the model's window of {self.limit} tokens: {shown} "
            f"shown in full{cut} ({self.prompt_tokens} tokens)"
        )


def fit_sources(
    model: BaseChatModel,
    context: str,
    citations: Sequence[Citation],
    build: Build,
    *,
    reserve: int = 0,
) -> SourcesFit | None:
    """``build(context)`` when it fits the model's window; else ``build`` of the context
    with fewer sources (see the module docstring). ``None`` when not even the prompt
    without sources fits."""
    numbers = [int(c.get("n") or i) for i, c in enumerate(citations, 1)]
    start = numbers[0] if numbers else 1
    total = len(citations)

    def with_sources(k: int) -> str:
        if k == total:
            return context
        return render_blocks([block_of_citation(c) for c in citations[:k]], start=start)

    fit = largest_fitting(model, lambda k: build(with_sources(k)), total, reserve=reserve)
    if fit is None:
        return None
    if fit.kept > 0 or not citations:
        return _result(fit, with_sources(fit.kept), total, numbers[: fit.kept], None)
    first = block_of_citation(citations[0])

    def with_lines(k: int) -> str:
        return render_blocks([_first_lines(first, k + 1)], start=start)

    lines = len(first.text.split("\n"))
    cut = largest_fitting(model, lambda k: build(with_lines(k)), lines - 1, reserve=reserve)
    if cut is None:
        return _result(fit, "", total, [], None)
    shown = _first_lines(first, cut.kept + 1)
    # Lines unknown (a store's document): say which line of its text the cut kept.
    last_line = shown.line_end if shown.line_end is not None else cut.kept + 1
    return _result(cut, with_lines(cut.kept), total, [], (start, last_line))


def _first_lines(block: Block, count: int) -> Block:
    cut = truncate(block, count)
    if cut is not None:
        return cut
    # Text lines that are not file lines one to one (merged chunks): cut the text, keep
    # the range, which still contains it.
    return replace(block, text="\n".join(block.text.split("\n")[:count]))


def _result(
    fit: Fit, context: str, total: int, shown: list[int], cut: tuple[int, int] | None
) -> SourcesFit:
    return SourcesFit(fit.messages, context, shown, total, cut, fit.prompt_tokens, fit.limit)


def _ranges(numbers: Sequence[int]) -> str:
    if len(numbers) > 1 and numbers[-1] - numbers[0] == len(numbers) - 1:
        return f"{numbers[0]}-{numbers[-1]}"
    return ", ".join(str(n) for n in numbers)


__all__ = ["SourcesFit", "fit_sources"]
