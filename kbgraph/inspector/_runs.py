"""The Runs view: a run of the subgraph or the chat agent as a timeline.

A run comes from a recorded file (:mod:`kbgraph.graphs._recording`) or, when the inspector
is mounted in a LangGraph server, from a thread of that server (its latest state, asked
in process through ``langgraph_sdk.get_client()``). Either way the view is built from the
final state alone: each node's debug step (its one-line decision, path, time and data),
the model fallbacks and the overrulings of that node, then the queries, the numbered
context, the answer with its resolved ``[N]`` markers and the answer check (each claim with
its verdict and evidence). Keys a state does not have are left out, so a state recorded
before a key existed (``answer_check``, ``overrulings``) still shows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from kbgraph.agents._internal import summarize_step
from kbgraph.errors import ConfigError, KbgraphError
from kbgraph.graphs import RagSettings
from kbgraph.graphs._internal import knowledge_base_specs, message_dict

from ._html import Html, badge, el, json_block, link, number, table

T = TypeVar("T")
# What a record of the wrong shape raises in code written for the right one.
MALFORMED = (TypeError, AttributeError, ValueError, KeyError, IndexError)


def well_formed(what: str, build: Callable[[], T]) -> T:
    """``build()``, a view of a record read from disk or a server; a record of another
    shape than the one written (a hand-edited ``"state": [1, 2]``) is a ``ConfigError``
    naming it (a 400 page), never a 500."""
    try:
        return build()
    except MALFORMED as exc:
        raise ConfigError(
            f"{what} is not a well-formed record ({type(exc).__name__}: {exc}); "
            "the other records still show"
        ) from exc


def _question(messages: Sequence[Any]) -> str:
    for message in reversed(list(messages)):
        item = message_dict(message)
        if item["role"] in ("human", "user"):
            return str(item["content"])
    return ""


def thread_record(
    thread_id: str, state: Mapping[str, Any], thread: Mapping[str, Any] | None
) -> dict[str, Any]:
    """A LangGraph server thread's latest state as a run record."""
    values = dict(state.get("values") or {})
    meta = dict((thread or {}).get("metadata") or {})
    return {
        "id": thread_id,
        "graph": meta.get("graph_id") or "?",
        "thread_id": thread_id,
        "created": state.get("created_at") or (thread or {}).get("updated_at"),
        "question": _question(values.get("messages") or []),
        "knowledge_bases": [],
        "settings": None,
        "state": values,
    }


def context_knowledge_bases(context: Mapping[str, Any]) -> list[dict[str, str]]:
    """``{name, folder}`` of the folders a run's context names (as the graphs name them);
    none when the context does not name them validly."""
    try:
        specs = knowledge_base_specs(context.get("knowledge_bases") or [])
        resolved = RagSettings(knowledge_bases=specs).resolved_knowledge_bases()  # type: ignore[arg-type]
    except (KbgraphError, ValueError):
        return []
    return [{"name": kb.name, "folder": kb.folder} for kb in resolved if kb.folder]


def _matches(item: Mapping[str, Any], node: Any, attempt: Any) -> bool:
    return item.get("node") == node and int(item.get("attempt") or 0) == int(attempt or 0)


def timeline(state: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One entry per node step, then the answer and its check when the run has them."""
    debug = state.get("rag_retrieval_debug") or {}
    fallbacks = list(debug.get("fallbacks") or [])
    overrulings = list(debug.get("overrulings") or [])
    out: list[dict[str, Any]] = []
    for step in debug.get("steps") or []:
        node, attempt = step.get("node"), step.get("attempt", 0)
        out.append(
            {
                "node": node,
                "attempt": attempt,
                "path": step.get("path"),
                "ms": step.get("ms"),
                "summary": summarize_step(step).split("] ", 1)[-1],
                "data": step.get("data") or {},
                "fallbacks": [f for f in fallbacks if _matches(f, node, attempt)],
                "overrulings": [o for o in overrulings if _matches(o, node, attempt)],
            }
        )
    if state.get("answer") is not None:
        error = state.get("answer_error")
        out.append(
            {
                "node": "answer",
                "path": state.get("answer_mode"),
                "summary": f"{state.get('answer_mode')}"
                + (f"; chat model failed: {error}" if error else ""),
                "data": {},
            }
        )
    check = state.get("answer_check")
    if isinstance(check, Mapping):
        claims = list(check.get("claims") or [])
        held = sum(1 for c in claims if c.get("supported"))
        out.append(
            {
                "node": "answer_check",
                "path": check.get("judge"),
                "summary": f"score {number(check.get('score'), 2)}: {held} of {len(claims)} "
                "claims supported",
                "data": {},
            }
        )
    return out


def run_view(record: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON twin of a run page."""
    state = record.get("state") or {}
    debug = state.get("rag_retrieval_debug") or {}
    return {
        **{
            k: record.get(k)
            for k in (
                "id",
                "graph",
                "created",
                "thread_id",
                "run_id",
                "question",
                "knowledge_bases",
                "settings",
            )
        },
        "timeline": timeline(state),
        "queries": state.get("rag_queries") or [],
        "scope": state.get("rag_scope"),
        "citations": state.get("rag_citations") or [],
        "context": state.get("rag_context") or "",
        "grounding": state.get("rag_grounding"),
        "answer": state.get("answer"),
        "answer_mode": state.get("answer_mode"),
        "answer_citations": state.get("answer_citations") or [],
        "answer_unresolved": state.get("answer_unresolved") or [],
        "answer_check": state.get("answer_check"),
        "fallbacks": debug.get("fallbacks") or [],
        "overrulings": debug.get("overrulings") or [],
        "messages": [message_dict(m) for m in state.get("messages") or []],
    }


SourceLink = Any  # Callable[[Mapping], str | None]: a citation's source-view URL, if served


def render_timeline(items: Sequence[Mapping[str, Any]]) -> Html:
    entries = []
    for i, item in enumerate(items, 1):
        head = el(
            "div",
            el("span", i, class_="step-n"),
            el("strong", item.get("node")),
            badge(f"attempt {item['attempt']}") if item.get("attempt") else None,
            badge(item.get("path") or "", "path"),
            el("span", f"{float(item['ms']):.0f} ms", class_="ms") if item.get("ms") else None,
            class_="step-head",
        )
        extras = [
            el("p", badge("fallback", "warn"), f" {f.get('stage')}: {f.get('error')}")
            for f in item.get("fallbacks") or []
        ] + [
            el(
                "p",
                badge("overruled", "warn"),
                f" {o.get('proposal')} → {o.get('decision')} (evidence: {o.get('evidence')})",
            )
            for o in item.get("overrulings") or []
        ]
        data = json_block(item["data"], "data") if item.get("data") else None
        entries.append(el("li", head, el("p", item.get("summary")), extras, data))
    return el("ol", entries, class_="timeline")


def render_citations(citations: Sequence[Mapping[str, Any]], source_link: SourceLink) -> Html:
    blocks = []
    for c in citations:
        lines = (
            f"lines {c.get('line_start')}-{c.get('line_end')}"
            if c.get("line_start")
            else "lines unknown"
        )
        where = f"{c.get('source')}" + (f", page {c['page']}" if c.get("page") else "")
        href = source_link(c)
        label = link(href, where, ", ", lines) if href else el("span", where, ", ", lines)
        blocks.append(
            el(
                "li",
                el(
                    "div",
                    el("strong", f"[{c.get('n')}] "),
                    label,
                    " ",
                    badge(f"score {number(c.get('score'), 2)}"),
                    class_="cite-head",
                ),
                el("pre", el("code", c.get("text") or "")),
                id=f"cite-{c.get('n')}",
            )
        )
    return el("ol", blocks, class_="citations")


def render_answer(answer: str, markers: Sequence[Mapping[str, Any]]) -> Html:
    """The answer with each resolved ``[N]`` linked to its source block."""
    parts: list[Any] = []
    at = 0
    for m in sorted(markers, key=lambda m: int(m.get("start") or 0)):
        start, end = int(m.get("start") or 0), int(m.get("end") or 0)
        if start < at or end > len(answer):
            continue
        parts += [answer[at:start], link(f"#cite-{m.get('n')}", answer[start:end])]
        at = end
    parts.append(answer[at:])
    return el("div", el("p", parts), class_="answer")


def render_check(check: Mapping[str, Any], citations: Sequence[Mapping[str, Any]]) -> Html:
    by_chunk = {str(c.get("chunk_id")): c.get("n") for c in citations}
    rows = []
    for claim in check.get("claims") or []:
        evidence = claim.get("evidence")
        n = by_chunk.get(str(evidence)) if evidence else None
        rows.append(
            [
                claim.get("text"),
                badge("supported", "ok") if claim.get("supported") else badge("unsupported", "bad"),
                " ".join(f"[{c}]" for c in claim.get("citations") or []) or "—",
                link(f"#cite-{n}", f"[{n}] {evidence}") if n else (evidence or "—"),
            ]
        )
    others = {k: v for k, v in check.items() if k not in ("claims", "score", "judge")}
    return el(
        "section",
        el("p", f"Score {number(check.get('score'), 2)}, judge {check.get('judge') or '?'}"),
        table(["claim", "verdict", "cites", "evidence"], rows),
        json_block(others, "more") if others else None,
        class_="check",
    )


def render_overrulings(items: Sequence[Mapping[str, Any]]) -> Html:
    rows = [
        [
            o.get("node"),
            o.get("attempt"),
            str(o.get("proposal")),
            str(o.get("evidence")),
            str(o.get("decision")),
        ]
        for o in items
    ]
    return table(["node", "attempt", "proposal", "evidence", "decision"], rows)


def render_run(view: Mapping[str, Any], source_link: SourceLink) -> Html:
    citations = view.get("citations") or []
    grounding = view.get("grounding") or {}
    verdict = (
        badge("grounded", "ok")
        if grounding.get("grounded")
        else badge("not grounded", "bad")
        if grounding
        else None
    )
    sections: list[Any] = [
        el("p", el("strong", "Question: "), view.get("question") or "—"),
        el(
            "p",
            badge(view.get("graph") or "?"),
            " ",
            verdict,
            " ",
            el("span", view.get("created") or "", class_="muted"),
            f" · thread {view['thread_id']}" if view.get("thread_id") else "",
        ),
        el("h2", "Timeline"),
        render_timeline(view.get("timeline") or []),
    ]
    if view.get("overrulings"):
        sections += [el("h2", "Overrulings"), render_overrulings(view["overrulings"])]
    if view.get("queries"):
        sections += [el("h2", "Queries"), el("ol", [el("li", q) for q in view["queries"]])]
    if view.get("answer") is not None:
        sections += [
            el("h2", "Answer"),
            render_answer(str(view["answer"]), view.get("answer_citations") or []),
        ]
    if isinstance(view.get("answer_check"), Mapping):
        sections += [el("h2", "Answer check"), render_check(view["answer_check"], citations)]
    sections += [
        el("h2", f"Context ({len(citations)} sources)"),
        render_citations(citations, source_link),
    ]
    if grounding.get("reasons") or grounding.get("guidance"):
        sections += [
            el("h2", "Grounding"),
            el("ul", [el("li", r) for r in grounding.get("reasons") or []]),
            el("ul", [el("li", "try: ", g) for g in grounding.get("guidance") or []]),
        ]
    if view.get("settings"):
        sections.append(json_block(view["settings"], "settings of the run"))
    return el("article", sections, class_="run")


def render_run_list(runs: Sequence[Mapping[str, Any]], href: Any) -> Html:
    if not runs:
        return el("p", "No recorded runs yet.", class_="muted")
    rows = []
    for run in runs:
        grounded = run.get("grounded")
        rows.append(
            [
                link(href(run), run.get("created") or run.get("id")),
                run.get("graph"),
                run.get("question") or "—",
                ", ".join(kb.get("name", "") for kb in run.get("knowledge_bases") or []) or "—",
                "—"
                if grounded is None
                else badge("yes" if grounded else "no", "ok" if grounded else "bad"),
                run.get("answer_mode") or "—",
            ]
        )
    return table(["run", "graph", "question", "knowledge bases", "grounded", "answer"], rows)


__all__ = [
    "MALFORMED",
    "context_knowledge_bases",
    "render_answer",
    "render_check",
    "render_citations",
    "render_run",
    "render_run_list",
    "render_timeline",
    "run_view",
    "thread_record",
    "timeline",
    "well_formed",
]
