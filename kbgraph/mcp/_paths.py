"""``read``: lines of a file of a knowledge base, and nothing outside one.

The path is the one search results give (``source``: relative to the knowledge base
folder). It is checked and read by the inspector's source view (:mod:`kbgraph.inspector.
_sources`): only a file the live index holds is served (so nothing the scan leaves out,
secrets and the index itself included, is ever read), the path must be relative and
normalised (no ``..``, no absolute path, no backslash), and it is opened one folder at a
time with ``O_NOFOLLOW``: a symbolic link is followed only to a target inside the folder.
A path is never percent-decoded: ``%2e%2e%2f`` names no indexed file and is refused."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kbgraph.errors import ConfigError

from ._bases import OpenBases
from ._schemas import ReadArgs, ReadOutput, Reply
from ._settings import MAX_READ_CHARS, MAX_READ_LINES, ServedBase

if TYPE_CHECKING:
    from kbgraph.inspector import SourceText


def _holder(bases: OpenBases, kb: str | None, path: str) -> ServedBase:
    """The knowledge base ``kb`` names, else the one whose index holds ``path``."""
    if kb is not None:
        return bases.settings.base(kb)
    every = bases.settings.knowledge_bases
    if len(every) == 1:
        return every[0]
    holding = [b for b in every if path in bases.get(b).indexed_files()]
    if len(holding) == 1:
        return holding[0]
    from kbgraph.inspector import RefusedPath

    names = ", ".join(b.name for b in (holding or every))
    if not holding:
        raise RefusedPath(
            f"{path!r} is not a file of any knowledge base's index ({names}); only "
            "indexed files are read: pass a 'source' that search returned"
        )
    raise ConfigError(f"{path!r} is a file of several knowledge bases ({names}); pass kb")


def source_of(bases: OpenBases, kb: str | None, path: str) -> tuple[ServedBase, SourceText]:
    """The numbered text of ``path`` in knowledge base ``kb`` (``None``: the one whose
    index holds it), or ``RefusedPath`` / ``ConfigError`` saying why not."""
    from kbgraph.inspector import check_relative, source_text

    check_relative(path)  # before any index is opened: '..', '/etc', 'a\\b' ...
    base = _holder(bases, kb, path)
    opened = bases.get(base)
    indexed = opened.indexed_files()
    scan = opened.scan_config
    limit = scan.max_file_bytes
    return base, source_text(base.name, base.folder, path, indexed, None, limit=limit, scan=scan)


def read_lines(bases: OpenBases, args: ReadArgs) -> Reply:
    base, text = source_of(bases, args.kb, args.path)
    total = text.line_count
    last_line = text.first_line + total - 1
    if args.line_start > last_line:
        raise ConfigError(
            f"line_start {args.line_start} is past the end of {args.path} ({total} "
            f"{text.unit}); pass a line_start from {text.first_line} to {last_line}"
        )
    start = max(args.line_start, text.first_line)
    wanted = args.line_end if args.line_end is not None else start + MAX_READ_LINES - 1
    end = min(wanted, last_line, start + MAX_READ_LINES - 1)
    if end < start:
        raise ConfigError(f"line_end {args.line_end} is before line_start {args.line_start}")
    lines = text.lines[start - text.first_line : end - text.first_line + 1]
    lines, note = _within_chars(lines, start, args.path)
    end = start + len(lines) - 1
    body = "\n".join(lines)
    output = ReadOutput(
        kb=base.name,
        path=args.path,
        kind=text.kind,
        line_start=start,
        line_end=end,
        total_lines=total,
        page=text.page,
        citation=bases.settings.cite(base.name, args.path, start, end),
        chars=len(body),
        more=end < last_line,
        note=note,
    )
    return Reply(output, body)


def _within_chars(lines: list[str], start: int, path: str) -> tuple[list[str], str | None]:
    """The first of ``lines`` that fit in :data:`MAX_READ_CHARS` (a longer first line
    cut there), and a note saying what was left out, else None."""
    total = 0
    for count, line in enumerate(lines):
        total += len(line) + (1 if count else 0)
        if total <= MAX_READ_CHARS:
            continue
        if count:
            return lines[:count], (
                f"cut at {MAX_READ_CHARS} characters after line {start + count - 1}: "
                f"read again with line_start {start + count}"
            )
        return [line[:MAX_READ_CHARS]], (
            f"line {start} has {len(line)} characters; its first {MAX_READ_CHARS} are "
            f"shown (a read returns at most {MAX_READ_CHARS}); the rest of that line is "
            f"not served by read: open {path} to see it whole"
        )
    return lines, None


__all__ = ["read_lines", "source_of"]
