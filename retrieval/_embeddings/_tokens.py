"""Batches by token count, for a model that tokenizes on this machine (the local ONNX
path): each text is tokenized once, its tokens both order the batches and are what the
model runs on, and whether the model's input cuts it is counted from the same tokens.

A transformer pads every row of a batch to the batch's longest row, and its attention costs
grow with the square of that length; memory grows with rows × longest. A cap on the padded
tokens of a batch (rows × longest) rather than on its rows keeps both bounded: long texts go
a few at a time, short ones many at a time, and little is padded as the texts are sorted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar, runtime_checkable

import numpy as np

_T = TypeVar("_T")

# Padded tokens per batch (rows × longest row): 4 rows of 256, 32 of 32. Small enough that
# the activations of one batch stay a few MB, large enough for the matrix products to
# run at full speed.
MAX_BATCH_TOKENS = 1024


@dataclass(frozen=True, slots=True)
class Tokens:
    """One text as the model reads it: ``ids`` (special tokens included, already cut to
    the model's input), ``type_ids`` beside them, and ``length``: the tokens the text had
    before any cut (> ``len(ids)`` when the model's input cut it)."""

    ids: np.ndarray
    type_ids: np.ndarray
    length: int

    @property
    def cut(self) -> bool:
        return self.length > len(self.ids)


@runtime_checkable
class TokenEncoder(Protocol):
    """A model that can be given its own tokens: texts are tokenized once, batched by
    their token counts, then encoded from those tokens."""

    def tokenize(self, texts: Sequence[str]) -> list[Tokens]:
        """Each text's tokens, cut to the model's input."""
        ...

    def encode_tokens(self, batch: Sequence[Tokens]) -> np.ndarray:
        """float32 ``(len(batch), d)``: one row per item, in order."""
        ...


@runtime_checkable
class TokenBatched(Protocol):
    """An ``Embeddings`` that may hand out a :class:`TokenEncoder` (None: it cannot, e.g.
    the local model on its torch path)."""

    def token_encoder(self) -> TokenEncoder | None: ...


def cut_to(values: Sequence[_T], special: Sequence[int], limit: int) -> list[_T]:
    """``values`` (a text's ids, or their types) cut to ``limit`` as the tokenizer's own
    truncation of one sequence cuts them: the text's end goes, the template's trailing
    special tokens (``[SEP]``, flagged in ``special``) stay."""
    if len(values) <= limit:
        return list(values)
    trailing = 0
    while trailing < min(len(special), limit) and special[len(special) - 1 - trailing]:
        trailing += 1
    return [*values[: limit - trailing], *values[len(values) - trailing :]]


def token_batches(
    lengths: Sequence[int], *, max_tokens: int = MAX_BATCH_TOKENS, max_rows: int | None = None
) -> list[list[int]]:
    """Positions of ``lengths`` in batches, longest first (ties in their order): a batch
    takes texts while its rows × its longest row stay ≤ ``max_tokens`` and its rows ≤
    ``max_rows``; a text longer than ``max_tokens`` goes alone."""
    if max_tokens < 1 or (max_rows is not None and max_rows < 1):
        raise ValueError("max_tokens and max_rows must be ≥ 1")
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    rows: list[int] = []
    for i in order:
        full = max_rows is not None and len(rows) >= max_rows
        # Longest first: the batch's first row is its longest.
        if rows and (full or (len(rows) + 1) * max(lengths[rows[0]], 1) > max_tokens):
            batches.append(rows)
            rows = []
        rows.append(i)
    if rows:
        batches.append(rows)
    return batches


def padded(batch: Sequence[Tokens], pad_id: int) -> dict[str, np.ndarray]:
    """The model's inputs for a batch: ids padded with ``pad_id`` to the longest row, the
    attention mask (1 on real tokens) and the token types, int64 ``(rows, longest)``."""
    longest = max((len(t.ids) for t in batch), default=0)
    ids = np.full((len(batch), longest), pad_id, dtype=np.int64)
    mask = np.zeros((len(batch), longest), dtype=np.int64)
    types = np.zeros((len(batch), longest), dtype=np.int64)
    for row, tokens in enumerate(batch):
        n = len(tokens.ids)
        ids[row, :n] = tokens.ids
        mask[row, :n] = 1
        types[row, :n] = tokens.type_ids
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


__all__ = [
    "MAX_BATCH_TOKENS",
    "TokenBatched",
    "TokenEncoder",
    "Tokens",
    "cut_to",
    "padded",
    "token_batches",
]
