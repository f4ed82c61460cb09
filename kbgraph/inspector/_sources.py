"""The Source view: a file of a knowledge base, its lines numbered as the index numbers
them, the cited ones highlighted.

Only files the live index holds are served, so nothing the scan leaves out (secrets,
excluded folders, the index itself) can be read through the inspector, whatever the URL
says. The path is checked before anything is opened (relative, normalised, no ``..``) and
opened one folder at a time from the knowledge base's folder with ``O_NOFOLLOW``: a
symbolic link is followed only when its target resolves inside the folder (the scan
indexes such a link under its own path), never out of it.

What is read and shown is bounded: no more bytes than the index lets a file have
(``max_file_bytes``; a file grown past it since the last run is refused, not read), and no
more than :data:`MAX_SHOWN_LINES` lines at a time, around the ones asked for.

Lines are those of the text the index was built from (:func:`kbgraph.retrieval._loaders.
load_bytes`): a text file's lines (newlines normalised), an HTML file's markup lines, a
PDF page's extracted lines, a Word document's paragraphs.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kbgraph._base.faces import shown_as
from kbgraph.errors import ConfigError, KbgraphError
from kbgraph.retrieval import ScanConfig
from kbgraph.retrieval._internal import SkipFile, file_kind, load_bytes, read_served

from ._html import Html, el, link, url

MAX_BYTES = 64 * 1024 * 1024
MAX_SHOWN_LINES = 2000  # lines of one page (and its JSON twin)
MAX_LINE_CHARS = 10_000  # characters of one line in a page (the JSON twin has all)
_BEFORE = 200  # lines shown above the first one asked for
_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = _FLAGS | getattr(os, "O_DIRECTORY", 0)
_FILE_FLAGS = _FLAGS | getattr(os, "O_NONBLOCK", 0)


@shown_as("kbgraph.inspector")
class RefusedPath(KbgraphError):
    """A path the inspector does not serve (outside the folder, not an indexed file)."""


def check_relative(rel: str) -> list[str]:
    """The parts of a POSIX path relative to a folder; ``RefusedPath`` for an absolute,
    empty, unnormalised or escaping one."""
    parts = rel.split("/")
    if not rel or "\0" in rel or "\\" in rel or rel.startswith("/"):
        raise RefusedPath(f"{rel!r} is not a path relative to the knowledge base folder")
    if any(part in ("", ".", "..") for part in parts):
        raise RefusedPath(f"{rel!r} leaves the knowledge base folder or is not normalised")
    return parts


def _open_parts(root: Path, parts: list[str]) -> int:
    """A descriptor of ``root/parts...`` opened without following any symbolic link."""
    fd = os.open(root, _DIR_FLAGS)
    try:
        for part in parts[:-1]:
            inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = inner
        return os.open(parts[-1], _FILE_FLAGS, dir_fd=fd)
    finally:
        os.close(fd)


def open_inside(root: Path, rel: str) -> int:
    """Open file ``rel`` of folder ``root`` for reading; a link is followed only to a
    target inside ``root`` (then opened by its real path, link-free)."""
    parts = check_relative(rel)
    real_root = Path(os.path.realpath(root))
    try:
        return _open_parts(real_root, parts)
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            raise RefusedPath(f"{rel} cannot be opened: {exc.strerror}") from exc
    target = Path(os.path.realpath(real_root / rel))
    if not target.is_relative_to(real_root) or target == real_root:
        raise RefusedPath(f"{rel} is a link out of the knowledge base folder")
    try:
        return _open_parts(real_root, list(target.relative_to(real_root).parts))
    except OSError as exc:
        raise RefusedPath(f"{rel} cannot be opened: {exc.strerror}") from exc


def read_inside(root: Path, rel: str, limit: int = MAX_BYTES) -> bytes:
    fd = open_inside(root, rel)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise RefusedPath(f"{rel} is not a regular file")
        if info.st_size > limit:
            raise RefusedPath(
                f"{rel} is {info.st_size} bytes now, over max_file_bytes {limit} of its "
                "index: it grew since the last run; run `kbgraph index` to see it again"
            )
        data = handle.read(limit + 1)
    if len(data) > limit:  # grew while being read
        raise RefusedPath(f"{rel} grew past max_file_bytes {limit} while being read")
    return data


@dataclass(frozen=True, slots=True)
class SourceText:
    """The numbered lines of one file (of one PDF page), as the index numbers them."""

    kb: str
    path: str
    kind: str
    lines: list[str]
    first_line: int = 1
    page: int | None = None
    pages: tuple[int, ...] = ()
    unit: str = "lines"
    total_lines: int | None = None  # set when ``lines`` is a window of more

    @property
    def line_count(self) -> int:
        """The lines of the whole text (a final newline ends a line; it starts none)."""
        if self.total_lines is not None:
            return self.total_lines
        return len(self.lines) - (1 if len(self.lines) > 1 and self.lines[-1] == "" else 0)

    def around(self, start: int | None) -> SourceText:
        """At most :data:`MAX_SHOWN_LINES` lines: from a little above ``start`` (the
        first line when None)."""
        total = self.line_count
        if len(self.lines) <= MAX_SHOWN_LINES:
            return self
        offset = 0 if start is None else max(0, start - self.first_line - _BEFORE)
        offset = min(offset, len(self.lines) - MAX_SHOWN_LINES)
        shown = self.lines[offset : offset + MAX_SHOWN_LINES]
        return replace(self, lines=shown, first_line=self.first_line + offset, total_lines=total)

    def to_dict(self, start: int | None = None, end: int | None = None) -> dict[str, Any]:
        return {
            "kb": self.kb,
            "path": self.path,
            "kind": self.kind,
            "unit": self.unit,
            "page": self.page,
            "pages": list(self.pages),
            "firstLine": self.first_line,
            "totalLines": self.line_count,
            "lines": self.lines,
            "highlight": _span(start, end),
        }


def source_text(
    kb: str,
    folder: Path,
    rel: str,
    indexed: Mapping[str, Any],
    page: int | None,
    *,
    limit: int = MAX_BYTES,
    scan: ScanConfig | None = None,
) -> SourceText:
    """The text of ``rel`` if it is a file of the index (``indexed``: its records by
    path) that the scan
    (``scan``: the index's rules) would index now, else ``RefusedPath`` saying why;
    ``limit``: the index's ``max_file_bytes`` (no file of it may be larger)."""
    check_relative(rel)
    if rel not in indexed:
        raise RefusedPath(f"{rel} is not a file of the index of {kb}; only indexed files are shown")
    try:
        # The scan's rules again: a link swapped in since the index run is judged by its
        # target (.git/config, .env, the index itself are refused), a folder is refused.
        data = read_served(
            folder,
            rel,
            scan or ScanConfig(),
            max_bytes=min(limit, MAX_BYTES),
            indexed_sha256=getattr(indexed[rel], "sha256", None),
        )
    except SkipFile as exc:
        raise RefusedPath(f"{rel} is not served now: {exc.skipped.detail}") from None
    kind = file_kind(rel)
    try:
        # HTML: the lines of the markup, which is what an HTML chunk's lines count.
        loaded = load_bytes(data, rel, "text" if kind == "html" else kind)
    except SkipFile as exc:
        raise ConfigError(f"{rel} cannot be shown: {exc}") from exc
    segments = loaded.segments
    if kind == "pdf":
        pages = tuple(s.page for s in segments if s.page is not None)
        chosen = next((s for s in segments if s.page == page), segments[0])
        return SourceText(
            kb, rel, kind, chosen.text.split("\n"), chosen.line_base, chosen.page, pages
        )
    text = "\n".join(s.text for s in segments)
    unit = "paragraphs" if kind == "docx" else "lines"
    return SourceText(kb, rel, kind, text.split("\n"), segments[0].line_base, unit=unit)


def _cut(line: str) -> str:
    if len(line) <= MAX_LINE_CHARS:
        return line
    return f"{line[:MAX_LINE_CHARS]} … ({len(line) - MAX_LINE_CHARS} more characters)"


def _span(start: int | None, end: int | None) -> list[int] | None:
    if start is None:
        return None
    return [start, end if end is not None and end >= start else start]


def parse_lines(value: str | None) -> tuple[int | None, int | None]:
    """``"12-30"`` → (12, 30); ``"7"`` → (7, 7); anything else → (None, None)."""
    if not value:
        return None, None
    first, _, last = value.partition("-")
    try:
        start = int(first)
        end = int(last) if last else start
    except ValueError:
        return None, None
    return (start, max(start, end)) if start >= 1 else (None, None)


def source_href(
    base: str, kb: str, path: str, start: Any = None, end: Any = None, page: Any = None
) -> str:
    lines = f"{start}-{end}" if start else None
    anchor = f"#L{start}" if start else ""
    return url(base, f"/source/{kb}/{path}", lines=lines, page=page) + anchor


def render_source(text: SourceText, start: int | None, end: int | None, base: str) -> Html:
    span = _span(start, end)
    rows = []
    for offset, line in enumerate(text.lines):
        number = text.first_line + offset
        marked = span is not None and span[0] <= number <= span[1]
        rows.append(
            el(
                "tr",
                el("th", el("a", number, href=f"#L{number}"), scope="row", class_="ln"),
                el("td", el("code", _cut(line) or " ")),
                id=f"L{number}",
                class_="hl" if marked else None,
                aria_current="true" if marked and number == span[0] else None,  # type: ignore[index]
            )
        )
    caption = f"{text.kb}: {text.path}"
    if text.page is not None:
        caption += f", page {text.page} (lines of the page's extracted text)"
    if span:
        caption += f", {text.unit} {span[0]}-{span[1]} highlighted"
    if text.total_lines is not None:
        last = text.first_line + len(text.lines) - 1
        caption += (
            f"; showing {text.unit} {text.first_line}-{last} of {text.total_lines} "
            f"{text.unit} (ask for others with ?lines=N)"
        )
    pages = [
        link(
            source_href(base, text.kb, text.path, page=p),
            f"page {p}",
            aria_current="page" if p == text.page else None,
        )
        for p in text.pages
    ]
    return el(
        "section",
        el("p", "Pages: ", pages, class_="pages") if len(pages) > 1 else None,
        el(
            "table",
            el("caption", caption),
            el("tbody", rows),
            class_="source",
            data_first=span[0] if span else None,
        ),
        class_="source-view",
    )


__all__ = [
    "MAX_BYTES",
    "MAX_SHOWN_LINES",
    "RefusedPath",
    "SourceText",
    "check_relative",
    "open_inside",
    "parse_lines",
    "read_inside",
    "render_source",
    "source_href",
    "source_text",
]
