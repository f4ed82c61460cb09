"""Why a chat model's answer must not be shown as the answer (``answer_check.policy =
"repair"``): it loops (one sentence, or one long run of words, said again and again), it
was cut off at the model's token limit, it cites no source while sources exist, or the
answer check scored it below its threshold. A small model does each of these on real
questions ("The permanent session lifetime is 30 seconds" 43 times, no ``[N]`` at all),
and each reads worse than quotes of the sources would. A capable model's answer has none
of them, so it is never replaced."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage

from kbgraph._base.loops import quoted, repetition

MAX_CLAIM_PROBLEMS = 3
_CUT_OFF = frozenset({"length", "max_tokens", "model_length_limit"})


def cut_off(message: AIMessage | None) -> bool:
    """Whether the model stopped at its token limit (OpenAI and llama.cpp say
    ``finish_reason="length"``, Anthropic ``stop_reason="max_tokens"``, Ollama
    ``done_reason="length"``)."""
    if message is None:
        return False
    meta: Mapping[str, Any] = message.response_metadata or {}
    return any(str(meta.get(k) or "") in _CUT_OFF for k in ("finish_reason", "stop_reason",
                                                             "done_reason"))  # fmt: skip


ACTING_CAUSES = frozenset({"wrong_citation", "unstated_fact"})
"""Unsupported claims that make repair act whatever the score: a claim its cited source
does not make, or a fact no source states (issue 42: an answer scored 0.68, above 0.5,
while "999 times" was in no cited source, and was only flagged), the judge contradicting
it or not ("9 times" where the source says 4 is both)."""


def answer_problems(
    text: str,
    *,
    message: AIMessage | None,
    sources: int,
    cited: int,
    score: float | None,
    threshold: float,
    claims: Sequence[Mapping[str, Any]] = (),
) -> list[str]:
    """Each reason the answer must not be shown (empty: it may). ``sources``: how many
    sources the model was given; ``cited``: how many ``[N]`` markers of the answer name
    one of them; ``score``: the answer check's (``None``: not checked, or no claim);
    ``claims``: the check's claims (a wrong citation or an unstated fact is a problem)."""
    problems: list[str] = []
    looped = repetition(text)
    if looped:
        problems.append(looped)
    if cut_off(message):
        problems.append("it was cut off at the chat model's token limit")
    if sources and not cited:
        problems.append(f"it cites none of the {sources} sources")
    if score is not None and score < threshold:
        shown = math.floor(score * 100) / 100  # 0.4997 is below 0.50: never print "0.50"
        problems.append(f"the answer check scored it {shown:.2f}, below {threshold:.2f}")
    stated = [
        f"{quoted(str(c.get('text') or ''))}: {c.get('reason') or c.get('cause')}"[:200]
        for c in claims
        if not c.get("supported") and c.get("cause") in ACTING_CAUSES
    ]
    problems += list(dict.fromkeys(stated))[:MAX_CLAIM_PROBLEMS]
    return problems


__all__ = ["ACTING_CAUSES", "answer_problems", "cut_off"]
