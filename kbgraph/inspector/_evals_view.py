"""HTML of the Eval reports view: the score distributions as SVG bar charts (drawn from
the numbers, no image file), the rows table and a row's drill-down."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ._html import Html, badge, definition_list, el, join, link, number, table, url

Href = Callable[..., str | None]
_W, _H, _PAD = 240, 130, 22
VERDICTS = {"supported": "ok", "not_supported": "warn", "contradicted": "bad"}


def histogram_svg(name: str, counts: Sequence[int], mean: Any) -> Html:
    """Bars of ``counts`` over [0, 1]; each bar has its range and count as a tooltip, and
    the chart a text alternative listing them all."""
    tallest = max(counts) if counts and max(counts) else 1
    width = (_W - 2 * _PAD) / max(1, len(counts))
    bars, described = [], []
    for i, count in enumerate(counts):
        low, high = i / len(counts), (i + 1) / len(counts)
        height = (_H - 2 * _PAD) * count / tallest
        x, y = _PAD + i * width, _H - _PAD - height
        label = f"{low:.1f}–{high:.1f}: {count} rows"
        described.append(label)
        bars.append(
            el(
                "rect",
                el("title", label),
                x=f"{x + 1:.1f}",
                y=f"{y:.1f}",
                width=f"{width - 2:.1f}",
                height=f"{height:.1f}",
                class_="bar",
            )
        )
    axis = [
        el("line", x1=_PAD, y1=_H - _PAD, x2=_W - _PAD, y2=_H - _PAD, class_="axis"),
        el("text", "0", x=_PAD, y=_H - 6, class_="tick"),
        el("text", "0.5", x=_W / 2, y=_H - 6, class_="tick", text_anchor="middle"),
        el("text", "1", x=_W - _PAD, y=_H - 6, class_="tick", text_anchor="end"),
        el("text", f"max {tallest}", x=_PAD, y=14, class_="tick"),
    ]
    title = f"{name}: mean {number(mean)}, n={sum(counts)}"
    return el(
        "figure",
        el(
            "svg",
            el("title", title),
            el("desc", "; ".join(described)),
            bars,
            axis,
            viewBox=f"0 0 {_W} {_H}",
            width=_W,
            height=_H,
            role="img",
            aria_label=title,
        ),
        el("figcaption", el("strong", name), f" mean {number(mean)}, n={sum(counts)}"),
        class_="chart",
    )


def _score_cell(value: Any) -> Html:
    if value is None:
        return el("span", "—", class_="muted")
    tone = "ok" if value >= 0.8 else "warn" if value >= 0.5 else "bad"
    return el("span", f"{value:.3f}", class_=f"score {tone}", data_value=f"{value:.6f}")


def render_report(view: Mapping[str, Any], base: str) -> Html:
    metrics = view.get("metrics") or []
    charts = el(
        "div",
        [histogram_svg(m["name"], m["histogram"], m.get("mean")) for m in metrics],
        class_="charts",
    )
    names = [m["name"] for m in metrics]
    rows = []
    for r in view.get("rows") or []:
        href = url(base, f"/evals/{view['slug']}/rows/{r['id']}")
        status = badge(r.get("status") or "?", "ok" if r.get("status") == "ok" else "bad")
        rows.append(
            [
                link(href, r["id"]),
                r.get("question") or "",
                status,
                *[_score_cell(r.get(n)) for n in names],
            ]
        )
    summary = table(
        ["metric", "mean", "scored", "undetermined", "failed"],
        [
            [
                m["name"],
                number(m.get("mean")),
                m.get("n_scored"),
                m.get("n_undetermined", ""),
                m.get("n_failed", ""),
            ]
            for m in metrics
        ],
    )
    return join(
        [
            definition_list({"folder": view["folder"], **view.get("about", {})}),
            el("h2", "Score distributions"),
            charts,
            summary,
            el("h2", f"Rows ({len(rows)})"),
            el("p", "Select a column header to sort.", class_="muted"),
            table(["id", "question", "status", *names], rows, class_="sortable"),
        ]
    )


def _passage(c: Mapping[str, Any], href: Href) -> Html:
    lines = f"lines {c.get('line_start')}-{c.get('line_end')}" if c.get("line_start") else ""
    target = href(c)
    where = join([c.get("source") or "(no source)", f", {lines}" if lines else ""])
    return el(
        "li",
        el(
            "div",
            el("strong", f"[{c.get('n')}] "),
            link(target, where) if target else where,
            " ",
            badge("gold", "ok") if c.get("gold") else None,
            class_="cite-head",
        ),
        el("pre", el("code", c.get("text") or "")),
        id=f"cite-{c.get('n')}",
    )


def _claims(claims: Sequence[Mapping[str, Any]]) -> Html:
    rows = []
    for claim in claims:
        against = claim.get("judgedAgainst") or []
        rows.append(
            [
                claim.get("claim"),
                badge(claim.get("verdict"), VERDICTS.get(str(claim.get("verdict")), "")),
                number(claim.get("score"), 2),
                " ".join(f"[{c}]" for c in claim.get("citations") or []) or "—",
                join((link(f"#cite-{n}", f"[{n}]"), " ") for n in against) if against else "—",
                claim.get("reason") or "",
            ]
        )
    return table(["claim", "verdict", "support", "cites", "judged against", "why"], rows)


def _gold(items: Sequence[Mapping[str, Any]]) -> Html:
    rows = []
    for item in items:
        options = [
            f"{o.get('path', o.get('id', '?'))}"
            + (f":{o['line_start']}-{o['line_end']}" if o.get("line_start") else "")
            for o in item.get("options") or []
        ]
        found = badge("retrieved", "ok") if item.get("recalled") else badge("missed", "bad")
        rows.append([" or ".join(options), found])
    return table(["gold source", ""], rows)


def render_row(view: Mapping[str, Any], href: Href) -> Html:
    metrics = view.get("metrics") or {}
    metric_rows = [
        [name, badge(m.get("status")), number(m.get("score")), m.get("reason", "")]
        for name, m in metrics.items()
    ]
    parts: list[Any] = [
        definition_list(
            {
                "question": view.get("question"),
                "status": view.get("status"),
                "reference": view.get("reference") or "—",
                "seconds": view.get("seconds"),
            }
        ),
        el("p", badge("failed", "bad"), " ", view["error"]) if view.get("error") else None,
        el("h2", "Answer"),
        el("div", el("p", view.get("answer") or "—"), class_="answer"),
        el("h2", "Metrics"),
        table(["metric", "status", "score", "reason"], metric_rows),
    ]
    if view.get("claims"):
        parts += [el("h2", "Answer claims"), _claims(view["claims"])]
    if view.get("reference_claims"):
        parts += [el("h2", "Reference claims (context recall)"), _claims(view["reference_claims"])]
    if view.get("gold_sources"):
        parts += [el("h2", "Gold sources"), _gold(view["gold_sources"])]
    citations = view.get("citations") or []
    parts += [
        el("h2", f"Retrieved ({len(citations)})"),
        el("ol", [_passage(c, href) for c in citations], class_="citations"),
    ]
    return el("article", parts, class_="eval-row")


def render_report_list(refs: Sequence[Mapping[str, Any]], base: str) -> Html:
    if not refs:
        return el(
            "p",
            "No eval reports found. Pass `--eval DIR` (a `kbgraph eval --out` "
            "folder, or a folder of them).",
            class_="muted",
        )
    rows = [
        [
            link(url(base, f"/evals/{r['slug']}"), r["slug"]),
            r["folder"],
            r.get("created") or "—",
            r.get("rows", "—"),
        ]
        for r in refs
    ]
    return table(["report", "folder", "created", "rows"], rows)


__all__ = ["histogram_svg", "render_report", "render_report_list", "render_row"]
