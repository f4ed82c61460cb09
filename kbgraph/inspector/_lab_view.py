"""HTML of the Search lab: the query form, the grounding verdict, one row per result with
its rank and score in every list, and the "why not this file?" answer."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kbgraph.errors import error_text
from kbgraph.retrieval import file_kinds, search_modes

from ._html import Html, badge, el, join, link, number, table
from ._lab import MAX_TOP_K
from ._runs import render_citations, render_timeline, timeline

Href = Callable[..., str | None]
FATES = {"context": "ok", "budget": "warn", "threshold": "warn", "top_k": "muted"}


def render_form(
    query: Mapping[str, Any], kbs: Sequence[str], files: Sequence[str], action: str
) -> Html:
    chosen = set(query.get("kb") or [])
    mode = query.get("mode") or ""
    kb_boxes = [
        el(
            "label",
            el("input", type="checkbox", name="kb", value=kb, checked=not chosen or kb in chosen),
            f" {kb}",
        )
        for kb in kbs
    ]
    kinds = set(query.get("kind") or [])
    return el(
        "form",
        el(
            "div",
            el("label", "Query", for_="q"),
            el(
                "input",
                id="q",
                name="q",
                type="search",
                value=query.get("q") or "",
                required=True,
                autofocus=True,
                placeholder="How do retries back off?",
            ),
            class_="field wide",
        ),
        el(
            "div",
            el("label", "Mode", for_="mode"),
            el(
                "select",
                el("option", "hybrid (default)", value=""),
                [el("option", m, value=m, selected=m == mode) for m in search_modes()],
                id="mode",
                name="mode",
            ),
            class_="field",
        ),
        el(
            "div",
            el("label", "Top-k", for_="top_k"),
            el(
                "input",
                id="top_k",
                name="top_k",
                type="number",
                min=1,
                max=MAX_TOP_K,
                value=query.get("top_k") or 5,
            ),
            class_="field",
        ),
        el(
            "div",
            el("label", "Paths (globs, comma-separated)", for_="path"),
            el(
                "input",
                id="path",
                name="path",
                value=", ".join(query.get("path") or []),
                placeholder="docs/**, src/",
            ),
            class_="field half",
        ),
        el(
            "fieldset",
            el("legend", "Kinds"),
            [
                el(
                    "label",
                    el("input", type="checkbox", name="kind", value=k, checked=k in kinds),
                    f" {k}",
                )
                for k in file_kinds()
            ],
            class_="kinds half",
        ),
        el("fieldset", el("legend", "Knowledge bases"), kb_boxes, class_="half")
        if len(kbs) > 1
        else None,
        el(
            "div",
            el("label", "Why not this file?", for_="why"),
            el(
                "input",
                id="why",
                name="why",
                value=query.get("why") or "",
                list="indexed-files",
                placeholder="docs/configuration.md",
            ),
            el("datalist", [el("option", value=f) for f in files], id="indexed-files"),
            class_="field half",
        ),
        el("button", "Search", type="submit"),
        method="get",
        action=action,
        class_="lab-form",
        role="search",
    )


def _lists_cell(row: Mapping[str, Any], columns: Sequence[Mapping[str, Any]]) -> Html:
    cells = []
    for column in columns:
        name = column["name"]
        rank = row["ranks"].get(name)
        if rank is None:
            cells.append(el("td", "—", class_="muted"))
            continue
        score = row["scores"].get(name)
        term = row["contributions"].get(name)
        cells.append(
            el(
                "td",
                el("span", f"#{rank}", class_="rank"),
                el("span", f" {number(score)}", class_="raw"),
                el(
                    "span",
                    f"+{term:.4f}",
                    class_="term",
                    title="this list's Reciprocal Rank Fusion term",
                ),
            )
        )
    return join(cells)


def _move(row: Mapping[str, Any]) -> Html:
    move = row.get("move")
    if move is None:
        return el("span", "—", class_="muted")
    if move == 0:
        return el("span", "=", title=f"fused rank {row['fused_rank']}, unchanged")
    arrow = "▲" if move > 0 else "▼"
    return el(
        "span",
        f"{arrow}{abs(move)}",
        class_="up" if move > 0 else "down",
        title=f"fused rank {row['fused_rank']} → {row['position']} after Rerank",
    )


def render_results(report: Mapping[str, Any], href: Href) -> Html:
    columns = report.get("lists") or []
    head = [el("th", "#", scope="col"), el("th", "source", scope="col")]
    head += [
        el(
            "th",
            el("span", c["name"], class_="list"),
            el("br"),
            el("span", c["query"], class_="query"),
            scope="col",
            title=f"{c['ranker']} list of query {c['query']!r}",
        )
        for c in columns
    ]
    head += [el("th", h, scope="col") for h in ("fused", "rerank", "score", "BuildContext")]
    rows = []
    for row in report.get("results") or []:
        target = href(
            {
                "kb": row["kb"],
                "source": row["source"],
                "line_start": row["line_start"],
                "line_end": row["line_end"],
                "page": row.get("page"),
            }
        )
        where = f"{row['source']}:{row['line_start']}-{row['line_end']}"
        fate = row["fate"]
        rows.append(
            el(
                "tr",
                el("td", row["position"]),
                el(
                    "td",
                    link(target, where) if target else where,
                    el("div", (row.get("text") or "")[:160], class_="snippet"),
                ),
                _lists_cell(row, columns),
                el(
                    "td",
                    f"#{row['fused_rank']}" if row.get("fused_rank") else "—",
                    el("div", number(row.get("rrf"), 4), class_="raw"),
                ),
                el("td", _move(row)),
                el("td", number(row.get("score"))),
                el(
                    "td",
                    badge(fate["status"].replace("_", "-"), FATES.get(fate["status"], "")),
                    el("div", fate["text"], class_="raw"),
                ),
                data_fate=fate["status"],
            )
        )
    return el("table", el("thead", el("tr", head)), el("tbody", rows), class_="results")


def render_why(why: Mapping[str, Any], href: Href) -> Html:
    rows = []
    for item in why.get("lists") or []:
        target = href(
            {
                "kb": why.get("kb"),
                "source": why["path"],
                "line_start": item.get("line_start"),
                "line_end": item.get("line_end"),
                "page": item.get("page"),
            }
        )
        chunk = f"lines {item['line_start']}-{item['line_end']}" if item.get("line_start") else "—"
        rows.append(
            [
                item["list"],
                item["query"],
                link(target, chunk) if target else chunk,
                number(item.get("score")),
                item["rank"] or "—",
                item.get("note") or "",
            ]
        )
    return el(
        "section",
        el("h2", f"Why not {why['path']}?"),
        el(
            "p",
            badge(why.get("stage", "?"), "warn" if why.get("stage") != "context" else "ok"),
            " ",
            why.get("verdict"),
        ),
        table(["list", "query", "its best chunk", "score", "rank", "note"], rows) if rows else None,
        class_="why",
        id="why-box",
    )


def render_lab(report: Mapping[str, Any], href: Href, why: Mapping[str, Any] | None) -> Html:
    grounding = report.get("grounding") or {}
    settings = report["settings"]
    verdict = badge("grounded", "ok") if grounding.get("grounded") else badge("not grounded", "bad")
    parts: list[Any] = [
        el("p", verdict, " ", "; ".join(grounding.get("reasons") or []), class_="verdict"),
        el(
            "p",
            f"{report['attempts']} attempt(s) · fusion {settings['fusion']} (k="
            f"{settings['rrf_k']}) · {settings['candidates_per_list']} candidates per list · "
            f"rerank {settings['rerank']} · budget {settings['context_budget_tokens']} "
            "tokens",
            class_="muted",
        ),
    ]
    if not report.get("retrieved"):
        parts.append(el("p", "DecideRetrieve skipped retrieval for this question."))
    for item in report.get("freshness") or []:
        if not item.get("indexed") or item.get("stale") or item.get("rebuild"):
            label = "stale" if item.get("indexed") else "not indexed"
            parts.append(el("p", badge(label, "warn"), f" {item['text']}", class_="stale"))
    for kb, errors in (report.get("errors") or {}).items():
        text = "; ".join(error_text(e) for e in errors)
        parts.append(el("p", badge("error", "bad"), f" {kb}: {text}"))
    if why is not None:
        parts.append(render_why(why, href))
    if report.get("results"):
        parts += [el("h2", "Results"), render_results(report, href)]
    parts += [
        el("h2", f"Context ({len(report.get('citations') or [])} sources)"),
        render_citations(report.get("citations") or [], href),
        el(
            "details",
            el("summary", "Node by node"),
            render_timeline(
                timeline(
                    {
                        "rag_retrieval_debug": {
                            "steps": report.get("steps"),
                            "fallbacks": report.get("fallbacks"),
                            "overrulings": report.get("overrulings"),
                        }
                    }
                )
            ),
        ),
    ]
    return el("section", parts, class_="lab", aria_live="polite")


__all__ = ["render_form", "render_lab", "render_results", "render_why"]
