"""Plain-text views of a finished chat-agent run, for ``kbgraph ask``: the node-by-node
decisions (from ``rag_retrieval_debug``), the numbered sources and the grounding verdict.
Pure functions of the final state, so they are easy to test and reuse."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kbgraph._base.citations import line_span
from kbgraph.errors import error_text

_MAX_DATA_CHARS = 240
MAX_LINE_CHARS = 400
"""Every line of a trace is at most this long: a chat model's reason or proposal can run
to thousands of characters (a looping small model), and the trace is read line by line."""
_ATTEMPT_CHARS = 160


def _decide(data: Mapping[str, Any]) -> str:
    return f"{data.get('decision', '?')}: {data.get('reason', '')}"


def _scope(data: Mapping[str, Any]) -> str:
    scope = data.get("scope") or {}
    parts = [f"kbs={_short(scope.get('knowledge_bases') or 'all')}"]
    if scope.get("paths"):
        parts.append(f"paths={_short(scope['paths'])}")
    if scope.get("kinds"):
        parts.append(f"kinds={_short(scope['kinds'])}")
    if scope.get("reason"):
        parts.append(f"({scope['reason']})")
    return " ".join(parts)


def _rewrite(data: Mapping[str, Any]) -> str:
    follow = f" (follow-up: {data.get('completed') or 'made standalone'})"
    return " | ".join(map(str, data.get("queries") or [])) + (
        follow if data.get("follow_up") else ""
    )


def _retrieve(data: Mapping[str, Any]) -> str:
    lists = len(data.get("lists") or [])
    text = f"{data.get('candidates', 0)} candidates from {lists} ranked lists"
    indexed = [kb for kb, info in (data.get("index") or {}).items() if info and info.get("indexed")]
    if indexed:
        text += f"; indexed {', '.join(indexed)} first"
    if data.get("errors"):
        errors = {kb: [error_text(e) for e in items] for kb, items in data["errors"].items()}
        text += f"; errors: {_short(errors)}"
    return text


def _rerank(data: Mapping[str, Any]) -> str:
    order = data.get("order") or []
    top = ", ".join(f"{o['chunk_id'][:8]}={o['score']}" for o in order[:3])
    return f"mode={data.get('mode')}; top: {top or 'none'}"


def _build(data: Mapping[str, Any]) -> str:
    dropped = len(data.get("dropped_for_budget") or [])
    sources = len(data.get("sources") or [])
    text = f"{sources} sources, ~{data.get('tokens')}/{data.get('budget')} tokens"
    return text + (f", {dropped} chunks left out for the budget" if dropped else "")


def _grounding(data: Mapping[str, Any]) -> str:
    verdict = "grounded" if data.get("grounded") else "not grounded"
    if data.get("retry"):
        then = f"; retrying with a wider scope ({data.get('retry_reason') or 'not grounded'})"
    elif not data.get("grounded") and data.get("retry_reason"):
        then = f"; no retry: {data['retry_reason']}"
    else:
        then = ""
    return f"{verdict}: {'; '.join(data.get('reasons') or [])}{then}"


SUMMARIES: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "decide_retrieve": _decide,
    "select_scope": _scope,
    "rewrite_query": _rewrite,
    "retrieve": _retrieve,
    "rerank": _rerank,
    "build_context": _build,
    "grounding_check": _grounding,
}


def _short(value: Any) -> str:
    return bounded(json.dumps(value, ensure_ascii=False, default=str), _MAX_DATA_CHARS)


def bounded(text: str, limit: int = MAX_LINE_CHARS) -> str:
    """``text`` on one line, cut to ``limit`` characters (ending in "…" when cut)."""
    line = re.sub(r"\s*[\r\n]+\s*", " ", str(text)).rstrip()
    return line if len(line) <= limit else line[: limit - 1] + "…"


def summarize_step(step: Mapping[str, Any]) -> str:
    """One line for one debug step; unknown nodes (or data shapes) show their data."""
    data = step.get("data") or {}
    summary = SUMMARIES.get(str(step.get("node")))
    try:
        text = summary(data) if summary else _short(data)
    except (KeyError, TypeError, AttributeError):
        text = _short(data)
    head = f"{step.get('node')} [attempt {step.get('attempt', 0)}, {step.get('path', '?')}"
    return bounded(f"{head}, {float(step.get('ms') or 0):.0f} ms] {text}")


def trace_lines(state: Mapping[str, Any]) -> list[str]:
    """The run, node by node: the subgraph's steps, its LLM fallbacks, then the answer."""
    debug = state.get("rag_retrieval_debug") or {}
    steps = list(debug.get("steps") or [])
    lines = [f"{i}. {summarize_step(step)}" for i, step in enumerate(steps, 1)]
    for fallback in debug.get("fallbacks") or []:
        lines.append(
            "   ! "
            + bounded(
                f"{fallback.get('node')} fell back to its heuristic "
                f"({fallback.get('stage')}): {fallback.get('error')}"
            )
        )
    for overruling in debug.get("overrulings") or []:
        lines.append(
            "   ! "
            + bounded(
                f"{overruling.get('node')} overruled the chat model: {overruling.get('reason')}"
            )
        )
    n = len(steps)
    mode = state.get("answer_mode", "?")
    error = state.get("answer_error")
    failed = f" chat model failed: {error}" if error else ""
    lines.append(bounded(f"{n + 1}. answer [{mode}]{failed}"))
    if state.get("answer_trimmed"):
        lines.append("   ! " + bounded(state["answer_trimmed"]))
    resolved = len(state.get("answer_citations") or [])
    unresolved = len(state.get("answer_unresolved") or [])
    lines.append(f"{n + 2}. extract_citations {resolved} markers resolved, {unresolved} unresolved")
    check = state.get("answer_check")
    if check:
        score = check.get("score")
        shown = "no claims" if score is None else f"score {float(score):.2f}"
        lines.append(
            f"{n + 3}. check_answer [{check.get('judge')}, {check.get('policy')}] {shown}, "
            f"{check.get('action')}, {float(check.get('ms') or 0):.0f} ms"
        )
        lines += [f"   ! {line}" for line in attempt_lines(check)]
    return lines


def attempt_lines(check: Mapping[str, Any]) -> list[str]:
    """The chat model's answers that ``policy="repair"`` did not show, each with why; a
    repaired draft was shown, changed ("answer 1 not shown as written")."""
    out = []
    how = " as written" if check.get("action") == "repaired" else ""
    for i, attempt in enumerate(check.get("attempts") or [], 1):
        problems = "; ".join(attempt.get("problems") or [])
        if not problems:
            continue
        text = bounded(str(attempt.get("text") or ""), _ATTEMPT_CHARS)
        out.append(bounded(f"answer {i} not shown{how} ({problems}): {text!r}"))
    return out


def source_lines(citations: Sequence[Mapping[str, Any]]) -> list[str]:
    out = []
    for c in citations:
        page = f", page {c['page']}" if c.get("page") is not None else ""
        out.append(
            f"[{c['n']}] {c['source']}{page}, {line_span(c['line_start'], c['line_end'])} "
            f"(score {float(c.get('score') or 0):.2f})"
        )
    return out


_SKIPPED = "retrieval skipped:"


def verdict_lines(state: Mapping[str, Any]) -> list[str]:
    grounding = state.get("rag_grounding") or {}
    reasons = "; ".join(grounding.get("reasons") or [])
    if not state.get("rag_should_retrieve"):
        # DecideRetrieve's reason already starts "retrieval skipped:" (it must read on its
        # own in rag_grounding); say it once.
        parts = [r.strip() for r in grounding.get("reasons") or []]
        why = "; ".join(
            r[len(_SKIPPED) :].strip() if r.lower().startswith(_SKIPPED) else r for r in parts
        )
        return [f"Retrieval skipped: {why or 'not needed'}"]
    if state.get("rag_grounded"):
        return [f"Grounded: yes ({reasons})" if reasons else "Grounded: yes"]
    lines = [f"Grounded: no ({reasons})" if reasons else "Grounded: no"]
    # An answer that gave up lists the same guidance under "What to try:": said once.
    answer = str(state.get("answer") or "")
    lines += [f"  try: {g}" for g in grounding.get("guidance") or [] if g not in answer]
    return lines


_ACTIONS = {
    "regenerated": "the first answer was written again (it had unsupported claims)",
    "replaced": "the answer was replaced by quotes of the sources (its score was below {t})",
}
_REPAIRED = {
    "regenerated": "the first answer was written again ({why})",
    "replaced": "the answer was replaced by quotes of the sources ({why})",
}


def check_lines(state: Mapping[str, Any]) -> list[str]:
    """The answer check: its score, what it did, and each sentence the sources do not
    support (nothing when no check ran)."""
    check = state.get("answer_check")
    if not check:
        return []
    if check.get("error") and check.get("score") is None:
        return [f"Answer check ({check.get('judge')}): not checked: {check['error']}"]
    claims = check.get("claims") or []
    if check.get("score") is None:
        return [f"Answer check ({check.get('judge')}): {check.get('reason')}"]
    supported = sum(1 for c in claims if c.get("supported"))
    lines = [
        f"Answer check ({check.get('judge')}): {supported} of {len(claims)} claims supported "
        f"by the sources (score {float(check['score']):.2f})"
    ]
    attempts = check.get("attempts") or []
    why = "; ".join(attempts[0].get("problems") or []) if attempts else ""
    action = (_REPAIRED if why else _ACTIONS).get(str(check.get("action")))
    if why and check.get("action") == "repaired":
        action = _repair_line(check)
    if action:
        lines.append(bounded(f"  {action.format(t=check.get('threshold'), why=why)}"))
    lines += _dropped_lines(check.get("dropped") or [])
    return lines + _unsupported_lines(claims)


def _repair_line(check: Mapping[str, Any]) -> str:
    """What repair did to the draft, then what was wrong with the draft as written: "it
    cites none of the 5 sources" read as if said of the answer shown, which cites [1]."""
    done = []
    if check.get("dropped"):
        done.append("without what its sources do not support")
    added = " ".join(f"[{n}]" for n in check.get("added_citations") or [])
    if added:
        done.append(f"with {added} added where it cited no supporting source")
    return f"the draft was shown {' and '.join(done) or 'as written'}; as written, {{why}}"


def _dropped_lines(dropped: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each sentence of the draft left out of the answer shown, once, with why."""
    counts = Counter((str(d.get("why")), str(d.get("text"))) for d in dropped)
    return [
        bounded(f"  dropped ({why}{f', {n} times' if n > 1 else ''}): {text}")
        for (why, text), n in counts.items()
    ]


def _unsupported_lines(claims: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each unsupported claim once, with how often the answer made it (a looping answer
    makes one claim dozens of times)."""
    counts: Counter[tuple[str, str]] = Counter()
    for claim in claims:
        if not claim.get("supported"):
            how = "contradicted" if claim.get("verdict") == "contradicted" else "not supported"
            # A fact the sources do not state is named: "8443 is in no cited source".
            why = f" — {claim.get('reason')}" if claim.get("cause") == "unstated_fact" else ""
            counts[(how, f"{claim.get('text')}{why}")] += 1
    return [
        bounded(f"  {how}{f' ({n} times)' if n > 1 else ''}: {text}")
        for (how, text), n in counts.items()
    ]


def unresolved_lines(state: Mapping[str, Any]) -> list[str]:
    return [
        f"Unresolved marker {u['marker']} at {u['start']}: {u['reason']}"
        for u in state.get("answer_unresolved") or []
    ]


__all__ = [
    "MAX_LINE_CHARS",
    "SUMMARIES",
    "attempt_lines",
    "bounded",
    "check_lines",
    "source_lines",
    "summarize_step",
    "trace_lines",
    "unresolved_lines",
    "verdict_lines",
]
