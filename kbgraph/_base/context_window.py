"""Fit a prompt into a chat model's context window by sending less retrieved text.

A model that declares its window (LangChain's ``model.profile["max_input_tokens"]``, as
``ChatGGUF`` does with ``n_ctx - max_tokens``) gets prompts that fit it: the caller builds
the prompt from the first ``k`` units of its material (sources, passages, lines) and
:func:`largest_fitting` finds the largest ``k`` that fits, counting tokens with the model's
own ``get_num_tokens_from_messages``. A model that declares no window gets everything, as
before: its server is the judge of what fits.

Counting costs a tokenizer pass, so a prompt is first checked against a bound that needs no
tokenizer: a token covers at least one byte of text in byte-level BPE and SentencePiece
vocabularies, so a prompt of fewer UTF-8 bytes (plus a few tokens per message for the chat
template) than the window fits without counting.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage

# Tokens a chat template adds around one message (role markers, separators): a generous
# bound for the no-count check only.
_TEMPLATE_TOKENS_PER_MESSAGE = 16
# Room to keep free for the JSON-only instruction a structured call's second try adds to its
# prompt (one sentence and the schema's field skeleton).
JSON_RESERVE_TOKENS = 128


@dataclass(frozen=True, slots=True)
class Fit:
    """The prompt built from the first ``kept`` of ``total`` units. ``prompt_tokens`` is
    the counted length (``None`` when it fitted without counting); ``limit`` is the window
    it had to fit (``None``: the model declares none)."""

    kept: int
    total: int
    messages: list[BaseMessage]
    prompt_tokens: int | None = None
    limit: int | None = None

    @property
    def trimmed(self) -> bool:
        return self.kept < self.total


def input_token_limit(model: BaseChatModel) -> int | None:
    """The longest prompt ``model`` declares it takes, in tokens, or ``None``."""
    profile = getattr(model, "profile", None) or {}
    limit = profile.get("max_input_tokens")
    return int(limit) if isinstance(limit, int) and limit > 0 else None


def byte_bound(messages: Sequence[BaseMessage]) -> int:
    """An upper bound of the prompt's tokens that needs no tokenizer."""
    return (
        sum(len(m.text.encode("utf-8")) + _TEMPLATE_TOKENS_PER_MESSAGE for m in messages)
        + _TEMPLATE_TOKENS_PER_MESSAGE
    )


def prompt_tokens(
    model: BaseChatModel, messages: list[BaseMessage], limit: int
) -> tuple[bool, int | None]:
    """Whether ``messages`` fit ``limit`` tokens, and their counted length (``None`` when
    the byte bound settled it)."""
    if byte_bound(messages) <= limit:
        return True, None
    counted = model.get_num_tokens_from_messages(messages)
    return counted <= limit, counted


def largest_fitting(
    model: BaseChatModel,
    build: Callable[[int], list[BaseMessage]],
    total: int,
    *,
    reserve: int = 0,
) -> Fit | None:
    """The prompt ``build(k)`` for the largest ``k`` in ``0..total`` that fits the model's
    window less ``reserve`` tokens (room for a longer variant of the same prompt, such as a
    JSON-only instruction added on a retry); ``None`` when not even ``build(0)`` fits.
    ``build`` must grow with ``k``. Binary search: about log2(total) counts when it must
    trim, none or one when everything fits."""
    limit = input_token_limit(model)
    full = build(total)
    if limit is None:
        return Fit(total, total, full)
    budget = max(0, limit - reserve)
    ok, counted = prompt_tokens(model, full, budget)
    if ok:
        return Fit(total, total, full, counted, budget)
    best: Fit | None = None
    low, high = 0, total - 1
    while low <= high:
        mid = (low + high) // 2
        messages = build(mid)
        ok, counted = prompt_tokens(model, messages, budget)
        if ok:
            best, low = Fit(mid, total, messages, counted, budget), mid + 1
        else:
            high = mid - 1
    return best


def first_lines(text: str, count: int) -> str:
    """The first ``count`` lines of ``text`` (a unit for :func:`largest_fitting` over plain
    text), marked as cut when lines were left out."""
    lines = text.split("\n")
    if count >= len(lines):
        return text
    return "\n".join([*lines[:count], "[… the rest was cut to fit the model's context window]"])


__all__ = [
    "JSON_RESERVE_TOKENS",
    "Fit",
    "byte_bound",
    "first_lines",
    "input_token_limit",
    "largest_fitting",
    "prompt_tokens",
]
