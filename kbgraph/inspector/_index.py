"""The Index view: a knowledge base's files, chunks per file, the files left out and why,
the model and settings it was built with, its kept versions (restore behind a
confirmation) and what changed in the folder since the last run."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kbgraph.errors import ConfigError, IndexNotFoundError

from ._config import InspectedBase
from ._html import Html, badge, definition_list, el, json_block, link, table, url

MAX_FILES = 5000  # rows of the files table; the JSON twin lists them all


def index_view(base: InspectedBase, kb: Any) -> dict[str, Any]:
    """The JSON twin of the Index view of one knowledge base (``indexed: false`` when the
    folder has no index yet)."""
    out: dict[str, Any] = {"name": base.name, "folder": str(base.folder)}
    try:
        stats = kb.stats().to_dict()
    except IndexNotFoundError as exc:
        return {**out, "indexed": False, "problem": str(exc)}
    files = [
        {
            "path": rel,
            "kind": r.kind,
            "size": r.size,
            "chunks": r.chunk_end - r.chunk_start,
            "chunkStart": r.chunk_start,
            "notes": r.notes,
        }
        for rel, r in sorted(kb.indexed_files().items())
    ]
    try:
        versions: list[dict[str, Any]] | None = [v.to_dict() for v in kb.versions()]
    except ConfigError:  # a database keeps the live version only
        versions = None
    return {
        **out,
        "indexed": True,
        "store": kb.store.location,
        "stats": stats,
        "settings": {
            "chunking": kb.chunk_config.model_dump(mode="json"),
            "scan": kb.scan_config.model_dump(mode="json"),
            "keepVersions": kb.keep_versions,
        },
        "changes": kb.changes().to_dict(),
        "files": files,
        "skipped": [s.to_dict() for s in kb.skipped_files()],
        "versions": versions,
    }


def _chunking(settings: Mapping[str, Any]) -> str:
    chunking = settings.get("chunking") or {}
    parts = [str(chunking.get("strategy", "?"))]
    if chunking.get("chunk_size"):
        parts.append(f"{chunking['chunk_size']} characters, overlap {chunking.get('overlap', 0)}")
    return ", ".join(parts)


def _freshness(changes: Mapping[str, Any]) -> Html:
    if changes.get("rebuild"):
        return el(
            "p",
            badge("rebuild", "warn"),
            " The index was built with other settings: the next run rebuilds it.",
        )
    groups = [(k, changes.get(k) or []) for k in ("added", "modified", "deleted")]
    if not any(items for _, items in groups):
        return el("p", badge("up to date", "ok"), " Nothing changed since the last run.")
    return el(
        "ul",
        [
            el(
                "li",
                el("strong", f"{name} ({len(items)}): "),
                ", ".join(items[:50]),
                " …" if len(items) > 50 else "",
            )
            for name, items in groups
            if items
        ],
        class_="changes",
    )


def _versions(view: Mapping[str, Any], base: str) -> Html:
    versions = view.get("versions")
    if versions is None:
        return el("p", "This store keeps the live version only (back the database up).")
    rows = []
    for n, v in enumerate(versions, 1):
        action: Any = (
            badge("current", "ok")
            if v.get("current")
            else link(
                url(base, f"/index/{view['name']}/restore", generation=v["generation"]),
                "Restore…",
                aria_label=f"Restore generation {v['generation']}",
            )
        )
        rows.append(
            [
                n,
                v["generation"],
                v.get("lastIndexed") or "?",
                v.get("fileCount"),
                v.get("chunkCount"),
                v.get("embedding") or "none (BM25)",
                v.get("problem") or action,
            ]
        )
    return table(["#", "generation", "indexed (UTC)", "files", "chunks", "model", ""], rows)


def render_index(view: Mapping[str, Any], base: str, source_href: Callable[..., str]) -> Html:
    if not view.get("indexed"):
        return el("section", el("h2", view["name"]), el("p", view.get("problem")))
    stats = view["stats"]
    embedding = stats.get("embedding") or {}
    model = (
        f"{embedding.get('provider')}:{embedding.get('model')} ({embedding.get('dims')} dims)"
        if embedding
        else "none (BM25 only)"
    )
    summary = definition_list(
        {
            "folder": view["folder"],
            "store": view.get("store"),
            "model": model,
            "files": stats.get("fileCount"),
            "chunks": stats.get("chunkCount"),
            "size": f"{(stats.get('indexSize') or 0) / 1e6:.1f} MB",
            "last indexed": stats.get("lastIndexed"),
            "versions kept": f"{stats.get('versions')} of {stats.get('keepVersions')}",
            "chunking": _chunking(view.get("settings") or {}),
        }
    )
    files = view.get("files") or []
    file_rows = [
        [
            link(source_href(view["name"], f["path"]), f["path"]),
            f["kind"],
            f["chunks"],
            f"{f['size']:,}",
        ]
        for f in files[:MAX_FILES]
    ]
    skipped_rows = [
        [s["path"], badge(s["reason"]), s.get("detail", "")] for s in view.get("skipped") or []
    ]
    return el(
        "section",
        el("h2", view["name"]),
        summary,
        el("h3", "Freshness"),
        _freshness(view.get("changes") or {}),
        el("h3", "Settings"),
        json_block(view.get("settings"), "chunking and scan settings"),
        el("h3", "Versions"),
        _versions(view, base),
        el("h3", f"Files ({len(files)})"),
        el(
            "label",
            "Filter files ",
            el(
                "input",
                type="search",
                data_filter="files-" + view["name"],
                placeholder="path contains…",
            ),
        ),
        table(
            ["path", "kind", "chunks", "bytes"],
            file_rows,
            id="files-" + view["name"],
            class_="filterable",
        ),
        el("p", f"(first {MAX_FILES} shown; the JSON twin lists all)", class_="muted")
        if len(files) > MAX_FILES
        else None,
        el("h3", f"Left out ({len(skipped_rows)})"),
        table(["path", "reason", "detail"], skipped_rows)
        if skipped_rows
        else el("p", "No file was left out.", class_="muted"),
        class_="index-view",
    )


def render_restore_confirm(name: str, version: Mapping[str, Any], base: str, token: str) -> Html:
    action = url(base, f"/index/{name}/restore")
    return el(
        "section",
        el(
            "p",
            f"Make generation {version['generation']} (indexed {version.get('lastIndexed')}, "
            f"{version.get('fileCount')} files, {version.get('chunkCount')} chunks) the "
            f"current index of {name}?",
        ),
        el(
            "p",
            "The current generation stays kept. The next index run (or a search with "
            "auto_index) updates the restored one from the folder as it is.",
            class_="muted",
        ),
        el(
            "form",
            el("input", type="hidden", name="token", value=token),
            el("input", type="hidden", name="generation", value=version["generation"]),
            el("button", "Restore", type="submit", class_="danger"),
            " ",
            link(url(base, f"/index/{name}"), "Cancel"),
            method="post",
            action=action,
        ),
        class_="confirm",
    )


__all__ = ["MAX_FILES", "index_view", "render_index", "render_restore_confirm"]
