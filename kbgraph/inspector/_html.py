"""Server-rendered HTML without a template engine: :func:`el` builds an element from
escaped text and :class:`Html` (markup already built), so nothing a document, a query or
a run holds can become markup; :func:`page` wraps a view in the shared layout (navigation,
the app's own stylesheet and script, no inline script or style: the pages are served with a
Content-Security-Policy that forbids both)."""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote, urlencode

NAV = (("search", "Search lab"), ("index", "Index"), ("runs", "Runs"), ("evals", "Eval reports"))


class Html(str):
    """Markup that is safe to insert as is (built by :func:`el` or :func:`raw`)."""

    __slots__ = ()


Child = Any  # str (escaped), Html, a number, None (nothing) or an iterable of those


def esc(value: Any) -> Html:
    return value if isinstance(value, Html) else Html(html.escape(str(value), quote=True))


def raw(markup: str) -> Html:
    """Markup written by this package itself (never data)."""
    return Html(markup)


def join(children: Iterable[Child]) -> Html:
    return Html("".join(_render(child) for child in children))


def _render(child: Child) -> str:
    if child is None or child is False:
        return ""
    if isinstance(child, Html):
        return child
    if isinstance(child, str | int | float):
        return html.escape(str(child), quote=True)
    if isinstance(child, Iterable):
        return join(child)
    return html.escape(str(child), quote=True)


_VOID = {"br", "hr", "img", "input", "link", "meta", "source", "col", "wbr"}


def el(tag: str, *children: Child, **attrs: Any) -> Html:
    """``<tag attrs>children</tag>``; ``class_`` → ``class``, ``data_x`` → ``data-x``,
    ``aria_label`` → ``aria-label``; ``True`` gives a bare attribute, ``None``/``False``
    none."""
    parts = [tag]
    for name, value in attrs.items():
        if value is None or value is False:
            continue
        key = name.rstrip("_").replace("_", "-")
        parts.append(key if value is True else f'{key}="{esc(value)}"')
    opening = f"<{' '.join(parts)}>"
    if tag in _VOID:
        return Html(opening)
    return Html(f"{opening}{join(children)}</{tag}>")


def url(base: str, path: str, **query: Any) -> str:
    """``base`` + ``path`` (its segments quoted) + the query (lists repeat the key; empty
    values are left out)."""
    quoted = quote(path, safe="/")
    pairs: list[tuple[str, str]] = []
    for key, value in query.items():
        values = value if isinstance(value, list | tuple) else [value]
        pairs += [(key, str(v)) for v in values if v not in (None, "", False)]
    return base + quoted + (f"?{urlencode(pairs)}" if pairs else "")


def link(href: str, *children: Child, **attrs: Any) -> Html:
    return el("a", *children, href=href, **attrs)


def badge(text: Any, kind: str = "") -> Html:
    return el("span", text, class_=f"badge {kind}".strip())


def table(headers: Iterable[Child], rows: Iterable[Iterable[Child]], **attrs: Any) -> Html:
    head = el("thead", el("tr", [el("th", h, scope="col") for h in headers]))
    body = el("tbody", [el("tr", [el("td", cell) for cell in row]) for row in rows])
    return el("table", head, body, **attrs)


def definition_list(items: Mapping[str, Child]) -> Html:
    return el("dl", [(el("dt", k), el("dd", v)) for k, v in items.items()])


def json_block(value: Any, summary: str = "data") -> Html:
    text = json.dumps(value, ensure_ascii=False, indent=2, default=str)
    return el("details", el("summary", summary), el("pre", el("code", text)))


def number(value: Any, digits: int = 3) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def page(title: str, body: Child, *, base: str, active: str = "") -> Html:
    """A whole document: skip link, navigation (``active`` marked as the current page),
    ``main`` holding ``body``."""
    nav = el(
        "nav",
        el(
            "ul",
            [
                el(
                    "li",
                    link(
                        url(base, f"/{key}"), label, aria_current="page" if key == active else None
                    ),
                )
                for key, label in NAV
            ],
        ),
        aria_label="Inspector",
    )
    head = join(
        [
            raw('<meta charset="utf-8">'),
            el("meta", name="viewport", content="width=device-width, initial-scale=1"),
            el("meta", name="color-scheme", content="light dark"),
            el("title", f"{title} · kbgraph inspect"),
            el("link", rel="stylesheet", href=url(base, "/assets/inspector.css")),
            el("script", src=url(base, "/assets/inspector.js"), defer=True),
        ]
    )
    header = el(
        "header",
        link("#main", "Skip to content", class_="skip"),
        el("span", "kbgraph inspect", class_="brand"),
        nav,
    )
    document = el(
        "html",
        el("head", head),
        el("body", header, el("main", el("h1", title), body, id="main", tabindex="-1")),
        lang="en",
    )
    return Html("<!doctype html>\n" + document)


__all__ = [
    "NAV",
    "Html",
    "badge",
    "definition_list",
    "el",
    "esc",
    "join",
    "json_block",
    "link",
    "number",
    "page",
    "raw",
    "table",
    "url",
]
