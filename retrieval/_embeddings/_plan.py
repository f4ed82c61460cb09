"""How a run's texts are cut into batches before anything is embedded, and which of them
the model's input cuts: by token count for a model that tokenizes here (each text
tokenized once, :mod:`._tokens`), else by characters, longest first."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ._tokens import TokenBatched, token_batches

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings


@runtime_checkable
class InputLimited(Protocol):
    """An ``Embeddings`` that knows its own input limit (a token count), so that the
    truncation warning is about what the model really cuts, not a character guess."""

    def over_input_limit(self, texts: Sequence[str]) -> list[bool]:
        """For each text: would the model truncate it?"""
        ...

    def input_limit(self) -> str:
        """The limit in words for a warning, e.g. ``"256 tokens"``."""
        ...


@dataclass(frozen=True, slots=True)
class BatchPlan:
    """``texts``: the run's texts as sent (cut to the character cap); ``items``: what each
    call is given, the texts or the model's own tokens; ``batches``: positions, in the order
    they run; ``cut``: per text, longer than what the model reads; ``encode``: embeds a
    list of items (None: the ``Embeddings``' own ``embed_documents``)."""

    texts: list[str]
    items: Sequence[Any]
    batches: list[list[int]]
    cut: list[bool]
    encode: Callable[[list[Any]], object] | None = None


def make_plan(
    embeddings: Embeddings, texts: Sequence[str], *, max_chars: int, batch_size: int
) -> BatchPlan:
    """The batches of ``texts``: by token count when the model hands out its tokenizer
    (rows × longest ≤ ``MAX_BATCH_TOKENS``, at most ``batch_size`` rows), else
    ``batch_size`` texts at a time, longest first."""
    prepared = [text[:max_chars] for text in texts]
    too_long = [len(text) > max_chars for text in texts]
    encoder = embeddings.token_encoder() if isinstance(embeddings, TokenBatched) else None
    if encoder is not None:
        tokens = encoder.tokenize(prepared)
        batches = token_batches([len(t.ids) for t in tokens], max_rows=batch_size)
        cut = [chars or t.cut for chars, t in zip(too_long, tokens, strict=True)]
        return BatchPlan(prepared, tokens, batches, cut, encoder.encode_tokens)
    order = length_order(prepared)
    batches = [order[start : start + batch_size] for start in range(0, len(order), batch_size)]
    if isinstance(embeddings, InputLimited) and prepared:
        over = embeddings.over_input_limit(prepared)
        too_long = [a or b for a, b in zip(too_long, over, strict=True)]
    return BatchPlan(prepared, prepared, batches, too_long)


def length_order(texts: Sequence[str]) -> list[int]:
    """Positions of ``texts``, longest first (ties in their order). A transformer pads
    every text of a batch to the batch's longest; sentence-transformers sorts by length
    only within one call, so batches cut from the caller's order would each pay for their
    own longest text. Sorting the whole run first makes batches of similar lengths."""
    return sorted(range(len(texts)), key=lambda i: -len(texts[i]))


__all__ = ["BatchPlan", "InputLimited", "length_order", "make_plan"]
